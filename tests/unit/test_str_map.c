/* The byte-string hash map: put/get/replace/remove, growth over many keys,
 * keys that hold NUL bytes or are empty, and iteration that visits every key
 * exactly once (including over an empty map and after removals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/str_map.h"

static int v1, v2, v3;

static void test_put_get_replace_remove(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    assert_non_null(m);
    assert_int_equal(kiq_str_map_count(m), 0);
    assert_null(kiq_str_map_get(m, "a", 1));

    assert_int_equal(kiq_str_map_put(m, "a", 1, &v1), 0);
    assert_int_equal(kiq_str_map_put(m, "ab", 2, &v2), 0);
    assert_int_equal(kiq_str_map_count(m), 2);
    assert_ptr_equal(kiq_str_map_get(m, "a", 1), &v1);
    assert_ptr_equal(kiq_str_map_get(m, "ab", 2), &v2);
    /* a prefix of a key, or the key with a length too long, is another key */
    assert_null(kiq_str_map_get(m, "abc", 2 + 1));
    assert_null(kiq_str_map_get(m, "b", 1));

    /* replacing keeps the count and changes the value */
    assert_int_equal(kiq_str_map_put(m, "a", 1, &v3), 0);
    assert_int_equal(kiq_str_map_count(m), 2);
    assert_ptr_equal(kiq_str_map_get(m, "a", 1), &v3);

    assert_ptr_equal(kiq_str_map_remove(m, "a", 1), &v3);
    assert_int_equal(kiq_str_map_count(m), 1);
    assert_null(kiq_str_map_get(m, "a", 1));
    /* removing again, or a key never there, returns NULL and changes nothing */
    assert_null(kiq_str_map_remove(m, "a", 1));
    assert_null(kiq_str_map_remove(m, "zz", 2));
    assert_int_equal(kiq_str_map_count(m), 1);
    assert_ptr_equal(kiq_str_map_get(m, "ab", 2), &v2);

    /* a removed key can come back */
    assert_int_equal(kiq_str_map_put(m, "a", 1, &v1), 0);
    assert_ptr_equal(kiq_str_map_get(m, "a", 1), &v1);
    assert_int_equal(kiq_str_map_count(m), 2);
    kiq_str_map_free(m);
    kiq_str_map_free(NULL);
}

static void test_keys_are_copied(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    char key[8];
    strcpy(key, "topic");
    assert_int_equal(kiq_str_map_put(m, key, 5, &v1), 0);
    strcpy(key, "xxxxx");
    assert_ptr_equal(kiq_str_map_get(m, "topic", 5), &v1);
    assert_null(kiq_str_map_get(m, "xxxxx", 5));
    kiq_str_map_free(m);
}

static void test_nul_bytes_and_empty_key(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    /* keys equal up to their first NUL must stay distinct */
    static const char k1[] = {'t', 0, 1, 0, 0, 0};
    static const char k2[] = {'t', 0, 2, 0, 0, 0};
    static const char k3[] = {'t', 0};
    assert_int_equal(kiq_str_map_put(m, k1, sizeof k1, &v1), 0);
    assert_int_equal(kiq_str_map_put(m, k2, sizeof k2, &v2), 0);
    assert_int_equal(kiq_str_map_put(m, k3, sizeof k3, &v3), 0);
    assert_int_equal(kiq_str_map_count(m), 3);
    assert_ptr_equal(kiq_str_map_get(m, k1, sizeof k1), &v1);
    assert_ptr_equal(kiq_str_map_get(m, k2, sizeof k2), &v2);
    assert_ptr_equal(kiq_str_map_get(m, k3, sizeof k3), &v3);
    assert_null(kiq_str_map_get(m, "t", 1));

    /* the empty key is a key like any other */
    assert_null(kiq_str_map_get(m, "", 0));
    assert_int_equal(kiq_str_map_put(m, "", 0, &v1), 0);
    assert_ptr_equal(kiq_str_map_get(m, "", 0), &v1);
    assert_int_equal(kiq_str_map_count(m), 4);

    assert_ptr_equal(kiq_str_map_remove(m, k2, sizeof k2), &v2);
    assert_ptr_equal(kiq_str_map_get(m, k1, sizeof k1), &v1);
    assert_null(kiq_str_map_get(m, k2, sizeof k2));

    /* iteration hands back the whole key, NULs included */
    kiq_str_map_iter_t it;
    const void *key;
    size_t len;
    void *value;
    int seen_k1 = 0, seen_k3 = 0, seen_empty = 0, n = 0;
    kiq_str_map_iter_init(&it, m);
    while (kiq_str_map_next(&it, &key, &len, &value)) {
        n++;
        if (len == sizeof k1 && memcmp(key, k1, len) == 0) seen_k1++;
        if (len == sizeof k3 && memcmp(key, k3, len) == 0) seen_k3++;
        if (len == 0) seen_empty++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(seen_k1, 1);
    assert_int_equal(seen_k3, 1);
    assert_int_equal(seen_empty, 1);
    kiq_str_map_free(m);
}

#define MANY 10000

/* The value stored for key i: a distinct pointer we can map back to i. */
static char slots[MANY];

static size_t key_of(char *buf, size_t cap, int i) { return (size_t)snprintf(buf, cap, "group-%d", i); }

static void test_many_keys(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    char k[32];
    for (int i = 0; i < MANY; i++) {
        size_t len = key_of(k, sizeof k, i);
        assert_int_equal(kiq_str_map_put(m, k, len, &slots[i]), 0);
        assert_int_equal(kiq_str_map_count(m), (size_t)i + 1);
    }
    /* everything survives the growth steps */
    for (int i = 0; i < MANY; i++) {
        size_t len = key_of(k, sizeof k, i);
        assert_ptr_equal(kiq_str_map_get(m, k, len), &slots[i]);
    }
    assert_null(kiq_str_map_get(m, "group-10000", 11));

    /* iteration visits each key exactly once with its own value */
    int *visits = calloc(MANY, sizeof *visits);
    kiq_str_map_iter_t it;
    const void *key;
    size_t len;
    void *value;
    size_t n = 0;
    kiq_str_map_iter_init(&it, m);
    while (kiq_str_map_next(&it, &key, &len, &value)) {
        int i = (int)((char *)value - slots);
        assert_in_range(i, 0, MANY - 1);
        size_t want = key_of(k, sizeof k, i);
        assert_int_equal(len, want);
        assert_memory_equal(key, k, len);
        visits[i]++;
        n++;
    }
    assert_int_equal(n, MANY);
    for (int i = 0; i < MANY; i++) assert_int_equal(visits[i], 1);
    /* a finished iterator stays finished */
    assert_false(kiq_str_map_next(&it, &key, &len, &value));

    /* remove every odd key, then the rest are still there and iterate once */
    for (int i = 1; i < MANY; i += 2) {
        size_t l = key_of(k, sizeof k, i);
        assert_ptr_equal(kiq_str_map_remove(m, k, l), &slots[i]);
    }
    assert_int_equal(kiq_str_map_count(m), MANY / 2);
    memset(visits, 0, MANY * sizeof *visits);
    n = 0;
    kiq_str_map_iter_init(&it, m);
    while (kiq_str_map_next(&it, NULL, NULL, &value)) {
        int i = (int)((char *)value - slots);
        assert_int_equal(i % 2, 0);
        visits[i]++;
        n++;
    }
    assert_int_equal(n, MANY / 2);
    for (int i = 0; i < MANY; i += 2) assert_int_equal(visits[i], 1);
    for (int i = 0; i < MANY; i++) {
        size_t l = key_of(k, sizeof k, i);
        assert_ptr_equal(kiq_str_map_get(m, k, l), i % 2 ? NULL : (void *)&slots[i]);
    }
    free(visits);
    kiq_str_map_free(m);
}

static void test_empty_iteration(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    kiq_str_map_iter_t it;
    const void *key = "untouched";
    size_t len = 99;
    void *value = &v1;
    kiq_str_map_iter_init(&it, m);
    assert_false(kiq_str_map_next(&it, &key, &len, &value));
    assert_false(kiq_str_map_next(&it, &key, &len, &value));

    /* emptied by removals: nothing left to visit either */
    assert_int_equal(kiq_str_map_put(m, "x", 1, &v1), 0);
    assert_ptr_equal(kiq_str_map_remove(m, "x", 1), &v1);
    assert_int_equal(kiq_str_map_count(m), 0);
    kiq_str_map_iter_init(&it, m);
    assert_false(kiq_str_map_next(&it, &key, &len, &value));
    kiq_str_map_free(m);
}

/* One-byte keys that differ only above their low 4 bits share a bucket of
 * the initial 16 (FNV-1a's low bits depend only on the key's low bits), so
 * this builds one long chain: removals from its head, middle and tail must
 * leave the rest reachable and iterated once. */
static void test_chains(void **state)
{
    (void)state;
    kiq_str_map_t *m = kiq_str_map_new();
    uint8_t k[1];
    for (int i = 0; i < 8; i++) {
        k[0] = (uint8_t)(i * 16);
        assert_int_equal(kiq_str_map_put(m, k, 1, &slots[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        k[0] = (uint8_t)(i * 16);
        assert_ptr_equal(kiq_str_map_get(m, k, 1), &slots[i]);
    }
    static const int gone[] = {0, 4, 7};
    for (size_t j = 0; j < sizeof gone / sizeof gone[0]; j++) {
        k[0] = (uint8_t)(gone[j] * 16);
        assert_ptr_equal(kiq_str_map_remove(m, k, 1), &slots[gone[j]]);
    }
    int seen[8] = {0};
    kiq_str_map_iter_t it;
    const void *key;
    size_t len;
    void *value;
    kiq_str_map_iter_init(&it, m);
    while (kiq_str_map_next(&it, &key, &len, &value)) {
        assert_int_equal(len, 1);
        int i = *(const uint8_t *)key / 16;
        assert_ptr_equal(value, &slots[i]);
        seen[i]++;
    }
    for (int i = 0; i < 8; i++) assert_int_equal(seen[i], i == 0 || i == 4 || i == 7 ? 0 : 1);
    for (int i = 0; i < 8; i++) {
        k[0] = (uint8_t)(i * 16);
        assert_ptr_equal(kiq_str_map_get(m, k, 1), seen[i] ? (void *)&slots[i] : NULL);
    }
    kiq_str_map_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace_remove),
        cmocka_unit_test(test_keys_are_copied),
        cmocka_unit_test(test_nul_bytes_and_empty_key),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_empty_iteration),
        cmocka_unit_test(test_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
