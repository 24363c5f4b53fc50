/* The group data model: the group -> __consumer_offsets partition mapping
 * (Java's String.hashCode over UTF-16 units, Kafka's Utils.abs), protocol
 * selection and support checks, members (lookup by id and instance id,
 * unlinking, replacing protocols) and committed offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/coordinator_key.h"
#include "group/group.h"

/* ---- partition_for ---- */

/* Java's String.hashCode, s[0]*31^(n-1) + ... + s[n-1] in int arithmetic,
 * over UTF-16 code units written out by hand. */
static int32_t java_hash(const uint16_t *units, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) h = h * 31u + units[i];
    return (int32_t)h;
}

/* Kafka: Utils.abs(groupId.hashCode) % n, Utils.abs(MIN_VALUE) being 0. */
static int32_t kafka_partition(int32_t hash, int32_t n)
{
    int32_t a = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash);
    return a % n;
}

static int32_t part(const char *utf8, int32_t n) { return kiq_coordinator_partition(utf8, strlen(utf8), n); }

static void test_partition_ascii(void **state)
{
    (void)state;
    /* "" hashes to 0 */
    assert_int_equal(part("", 50), 0);
    assert_int_equal(part("", 7), 0);

    /* "g1": 'g' * 31 + '1' = 103 * 31 + 49 = 3242 */
    static const uint16_t g1[] = {'g', '1'};
    assert_int_equal(java_hash(g1, 2), 3242);
    assert_int_equal(part("g1", 50), 3242 % 50); /* 42 */
    assert_int_equal(part("g1", 7), 3242 % 7);   /* 1 */
    assert_int_equal(part("g1", 1), 0);

    /* "my-group" overflows to a negative hash: -1906497762 */
    static const uint16_t mg[] = {'m', 'y', '-', 'g', 'r', 'o', 'u', 'p'};
    assert_int_equal(java_hash(mg, 8), -1906497762);
    assert_int_equal(part("my-group", 50), 1906497762 % 50); /* 12 */
    assert_int_equal(part("my-group", 7), 1906497762 % 7);   /* 1 */

    /* "test-group": 627841412, positive after overflow */
    static const uint16_t tg[] = {'t', 'e', 's', 't', '-', 'g', 'r', 'o', 'u', 'p'};
    assert_int_equal(java_hash(tg, 10), 627841412);
    assert_int_equal(part("test-group", 50), 627841412 % 50);

    /* "group-negative": -1607370813 */
    static const uint16_t gn[] = {'g', 'r', 'o', 'u', 'p', '-', 'n', 'e', 'g', 'a', 't', 'i', 'v', 'e'};
    assert_int_equal(java_hash(gn, 14), -1607370813);
    assert_int_equal(part("group-negative", 50), 1607370813 % 50); /* 13 */
    assert_int_equal(part("group-negative", 7), 1607370813 % 7);   /* 6 */
}

/* Strings known to hash to Integer.MIN_VALUE (FindBugs' and a Stack
 * Overflow answer's examples): Math.abs would stay negative; Kafka's
 * Utils.abs makes them 0, so they live in partition 0. */
static void test_partition_min_value(void **state)
{
    (void)state;
    static const char *ids[] = {"polygenelubricants", "DESIGNING WORKHOUSES", "HZcxf_"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        uint16_t u[32];
        size_t n = strlen(ids[i]);
        for (size_t j = 0; j < n; j++) u[j] = (uint8_t)ids[i][j];
        assert_int_equal(java_hash(u, n), INT32_MIN);
        assert_int_equal(part(ids[i], 50), 0);
        assert_int_equal(part(ids[i], 7), 0);
    }
}

static void test_partition_non_ascii(void **state)
{
    (void)state;
    /* "grüppe": ü is U+00FC, one UTF-16 unit (two UTF-8 bytes) */
    static const uint16_t gr[] = {'g', 'r', 0x00FC, 'p', 'p', 'e'};
    int32_t h = java_hash(gr, 6);
    assert_int_equal(h, -1233264812);
    assert_int_equal(part("gr\xC3\xBCppe", 50), kafka_partition(h, 50)); /* 12 */
    assert_int_equal(part("gr\xC3\xBCppe", 7), kafka_partition(h, 7));   /* 3 */
    /* not the hash of the UTF-8 bytes taken as units */
    static const uint16_t bytes[] = {'g', 'r', 0xC3, 0xBC, 'p', 'p', 'e'};
    assert_int_not_equal(kafka_partition(java_hash(bytes, 7), 50), kafka_partition(h, 50));

    /* a three-byte character: "€" U+20AC, one unit */
    static const uint16_t eur[] = {'x', 0x20AC};
    h = java_hash(eur, 2);
    assert_int_equal(part("x\xE2\x82\xAC", 50), kafka_partition(h, 50));
    assert_int_equal(part("x\xE2\x82\xAC", 13), kafka_partition(h, 13));

    /* U+1F600 (an emoji) is the surrogate pair D83D DE00 */
    static const uint16_t emoji[] = {0xD83D, 0xDE00};
    h = java_hash(emoji, 2);
    assert_int_equal(h, 1772899);
    assert_int_equal(part("\xF0\x9F\x98\x80", 50), 1772899 % 50); /* 49 */
    assert_int_equal(part("\xF0\x9F\x98\x80", 7), 1772899 % 7);   /* 2 */
    static const uint16_t g_emoji[] = {'g', 0xD83D, 0xDE00};
    h = java_hash(g_emoji, 3);
    assert_int_equal(h, 1871882);
    assert_int_equal(part("g\xF0\x9F\x98\x80", 50), 1871882 % 50); /* 32 */
    assert_int_equal(part("g\xF0\x9F\x98\x80", 7), 1871882 % 7);   /* 5 */

    /* the length is what counts, not a NUL */
    assert_int_equal(kiq_coordinator_partition("g1xyz", 2, 50), 42);
}

/* ---- members and protocols ---- */

static kiq_group_member_t *add_member(kiq_group_t *g, const char *id, const char *instance_id, const char *const *protos,
                                      int n)
{
    kiq_group_member_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->id = strdup(id);
    m->instance_id = instance_id ? strdup(instance_id) : NULL;
    m->client_id = strdup("client");
    m->client_host = strdup("/127.0.0.1");
    kiq_group_protocol_t p[8];
    assert_true(n <= 8);
    for (int i = 0; i < n; i++) {
        p[i].name = (char *)protos[i];
        p[i].metadata = (uint8_t *)protos[i]; /* anything recognisable */
        p[i].metadata_len = (int32_t)strlen(protos[i]);
    }
    assert_int_equal(kiq_group_member_set_protocols(m, p, n), 0);
    /* appended: join order */
    kiq_group_member_t **pp = &g->members;
    while (*pp) pp = &(*pp)->next;
    *pp = m;
    g->nmembers++;
    return m;
}

static kiq_group_protocol_t proto(const char *name) { return (kiq_group_protocol_t){(char *)name, NULL, 0}; }

static void test_new_free(void **state)
{
    (void)state;
    kiq_group_t *g = kiq_group_new("my-groupXYZ", 8, 12);
    assert_non_null(g);
    assert_string_equal(g->id, "my-group");
    assert_int_equal(g->offsets_partition, 12);
    assert_int_equal(g->state, KIQ_GROUP_EMPTY);
    assert_int_equal(g->nmembers, 0);
    assert_null(g->members);
    assert_null(kiq_group_select_protocol(g));
    assert_string_equal(kiq_group_state_name(KIQ_GROUP_EMPTY), "Empty");
    assert_string_equal(kiq_group_state_name(KIQ_GROUP_PREPARING_REBALANCE), "PreparingRebalance");
    assert_string_equal(kiq_group_state_name(KIQ_GROUP_COMPLETING_REBALANCE), "CompletingRebalance");
    assert_string_equal(kiq_group_state_name(KIQ_GROUP_STABLE), "Stable");
    assert_string_equal(kiq_group_state_name(KIQ_GROUP_DEAD), "Dead");
    kiq_group_free(g);
    kiq_group_free(NULL);
}

static void test_select_protocol(void **state)
{
    (void)state;
    kiq_group_t *g = kiq_group_new("g", 1, 0);
    static const char *const a[] = {"range", "roundrobin"};
    static const char *const b[] = {"roundrobin", "range"};
    static const char *const c[] = {"roundrobin"};
    add_member(g, "m1", NULL, a, 2);
    /* one member: its first choice */
    assert_string_equal(kiq_group_select_protocol(g), "range");
    add_member(g, "m2", NULL, b, 2);
    /* a 1-1 tie: the first member's order decides */
    assert_string_equal(kiq_group_select_protocol(g), "range");
    add_member(g, "m3", NULL, c, 1);
    /* range is no longer supported by all; roundrobin is, with 3 votes */
    assert_string_equal(kiq_group_select_protocol(g), "roundrobin");
    kiq_group_free(g);

    /* every member supports both; the majority's first choice wins even
     * though the first member prefers the other */
    g = kiq_group_new("g", 1, 0);
    add_member(g, "m1", NULL, a, 2);
    add_member(g, "m2", NULL, b, 2);
    add_member(g, "m3", NULL, b, 2);
    assert_string_equal(kiq_group_select_protocol(g), "roundrobin");
    kiq_group_free(g);

    /* a member's vote goes to its first protocol that everyone supports,
     * skipping one that others lack */
    g = kiq_group_new("g", 1, 0);
    static const char *const d[] = {"sticky", "range", "roundrobin"};
    static const char *const e[] = {"range", "roundrobin"};
    static const char *const f[] = {"cooperative", "roundrobin", "range"};
    add_member(g, "m1", NULL, d, 3); /* votes range (sticky not common) */
    add_member(g, "m2", NULL, f, 3); /* votes roundrobin */
    add_member(g, "m3", NULL, f, 3); /* votes roundrobin */
    add_member(g, "m4", NULL, e, 2); /* votes range */
    add_member(g, "m5", NULL, f, 3); /* votes roundrobin */
    assert_string_equal(kiq_group_select_protocol(g), "roundrobin");
    kiq_group_free(g);

    /* nothing in common */
    g = kiq_group_new("g", 1, 0);
    static const char *const r[] = {"range"};
    add_member(g, "m1", NULL, r, 1);
    add_member(g, "m2", NULL, c, 1);
    assert_null(kiq_group_select_protocol(g));
    kiq_group_free(g);
}

static void test_supports(void **state)
{
    (void)state;
    kiq_group_t *g = kiq_group_new("g", 1, 0);
    kiq_group_protocol_t range = proto("range"), rr = proto("roundrobin"), sticky = proto("sticky");
    kiq_group_protocol_t both[] = {sticky, rr};
    /* an empty group supports anything offered */
    assert_true(kiq_group_supports(g, &range, 1));
    assert_false(kiq_group_supports(g, &range, 0));

    static const char *const a[] = {"range", "roundrobin"};
    static const char *const c[] = {"roundrobin"};
    add_member(g, "m1", NULL, a, 2);
    add_member(g, "m2", NULL, c, 1);
    assert_true(kiq_group_supports(g, &rr, 1));
    assert_false(kiq_group_supports(g, &range, 1));  /* m2 lacks it */
    assert_false(kiq_group_supports(g, &sticky, 1)); /* nobody has it */
    assert_true(kiq_group_supports(g, both, 2));     /* one of them is enough */
    kiq_group_free(g);
}

static void test_members(void **state)
{
    (void)state;
    kiq_group_t *g = kiq_group_new("g", 1, 0);
    static const char *const a[] = {"range"};
    kiq_group_member_t *m1 = add_member(g, "consumer-1-aaa", NULL, a, 1);
    kiq_group_member_t *m2 = add_member(g, "consumer-2-bbb", "instance-2", a, 1);
    kiq_group_member_t *m3 = add_member(g, "consumer-3-ccc", "instance-3", a, 1);
    assert_int_equal(g->nmembers, 3);

    assert_ptr_equal(kiq_group_find_member(g, KIQ_STR("consumer-1-aaa")), m1);
    assert_ptr_equal(kiq_group_find_member(g, KIQ_STR("consumer-3-ccc")), m3);
    assert_null(kiq_group_find_member(g, KIQ_STR("consumer-1")));         /* a prefix */
    assert_null(kiq_group_find_member(g, KIQ_STR("consumer-1-aaaa")));    /* longer */
    assert_null(kiq_group_find_member(g, KIQ_STR("")));
    assert_null(kiq_group_find_member(g, KIQ_STR_NULL));
    /* a view into a larger buffer: only len bytes count */
    kiq_str_t view = {"consumer-2-bbb-and-more", 14};
    assert_ptr_equal(kiq_group_find_member(g, view), m2);

    assert_ptr_equal(kiq_group_find_instance(g, KIQ_STR("instance-2")), m2);
    assert_ptr_equal(kiq_group_find_instance(g, KIQ_STR("instance-3")), m3);
    assert_null(kiq_group_find_instance(g, KIQ_STR("instance-1")));
    /* a null instance id never matches the dynamic member */
    assert_null(kiq_group_find_instance(g, KIQ_STR_NULL));
    /* instance ids and member ids are separate namespaces */
    assert_null(kiq_group_find_instance(g, KIQ_STR("consumer-2-bbb")));
    assert_null(kiq_group_find_member(g, KIQ_STR("instance-2")));

    /* unlinking the middle, then the head, keeps the order of the rest */
    kiq_group_unlink_member(g, m2);
    assert_int_equal(g->nmembers, 2);
    assert_null(m2->next);
    assert_ptr_equal(g->members, m1);
    assert_ptr_equal(m1->next, m3);
    assert_null(kiq_group_find_member(g, KIQ_STR("consumer-2-bbb")));
    assert_null(kiq_group_find_instance(g, KIQ_STR("instance-2")));
    /* unlinking something not linked changes nothing */
    kiq_group_unlink_member(g, m2);
    assert_int_equal(g->nmembers, 2);
    kiq_group_member_free(m2);

    kiq_group_unlink_member(g, m1);
    assert_int_equal(g->nmembers, 1);
    assert_ptr_equal(g->members, m3);
    kiq_group_member_free(m1);
    kiq_group_unlink_member(g, m3);
    assert_int_equal(g->nmembers, 0);
    assert_null(g->members);
    kiq_group_member_free(m3);
    kiq_group_member_free(NULL);
    kiq_group_free(g);
}

static void test_set_protocols(void **state)
{
    (void)state;
    kiq_group_member_t *m = calloc(1, sizeof *m);
    m->id = strdup("m");
    uint8_t meta1[] = {0, 1, 2, 3}, meta2[] = {9, 8};
    char name1[] = "range", name2[] = "roundrobin";
    kiq_group_protocol_t p[] = {{name1, meta1, 4}, {name2, meta2, 2}};
    assert_int_equal(kiq_group_member_set_protocols(m, p, 2), 0);
    /* copies: changing the caller's buffers changes nothing */
    name1[0] = 'X';
    meta1[0] = 0x7F;
    assert_int_equal(m->nprotocols, 2);
    assert_string_equal(m->protocols[0].name, "range");
    assert_string_equal(m->protocols[1].name, "roundrobin");
    const kiq_group_protocol_t *got = kiq_group_member_protocol(m, "range");
    assert_non_null(got);
    assert_int_equal(got->metadata_len, 4);
    static const uint8_t want1[] = {0, 1, 2, 3};
    assert_memory_equal(got->metadata, want1, 4);
    got = kiq_group_member_protocol(m, "roundrobin");
    assert_non_null(got);
    assert_int_equal(got->metadata_len, 2);
    assert_memory_equal(got->metadata, meta2, 2);
    assert_null(kiq_group_member_protocol(m, "sticky"));
    assert_null(kiq_group_member_protocol(m, NULL));

    /* replacing: the old list is gone, the new one is whole */
    char name3[] = "cooperative-sticky";
    kiq_group_protocol_t q[] = {{name3, NULL, 0}};
    assert_int_equal(kiq_group_member_set_protocols(m, q, 1), 0);
    assert_int_equal(m->nprotocols, 1);
    assert_null(kiq_group_member_protocol(m, "range"));
    got = kiq_group_member_protocol(m, "cooperative-sticky");
    assert_non_null(got);
    assert_int_equal(got->metadata_len, 0);

    /* an empty list */
    assert_int_equal(kiq_group_member_set_protocols(m, NULL, 0), 0);
    assert_int_equal(m->nprotocols, 0);
    assert_null(kiq_group_member_protocol(m, "cooperative-sticky"));
    kiq_group_member_free(m);
}

/* ---- offsets ---- */

static kiq_group_offset_t *offset(const char *topic, int32_t partition, int64_t off, const char *metadata)
{
    kiq_group_offset_t *o = calloc(1, sizeof *o);
    o->topic = strdup(topic);
    o->partition = partition;
    o->offset = off;
    o->leader_epoch = -1;
    o->metadata = metadata ? (kiq_str_t){strdup(metadata), (int32_t)strlen(metadata)} : KIQ_STR_NULL;
    o->commit_ts_ms = 1000;
    o->expire_ts_ms = -1;
    return o;
}

static void test_offsets(void **state)
{
    (void)state;
    kiq_group_t *g = kiq_group_new("g", 1, 0);
    assert_null(kiq_group_get_offset(g, "orders", 6, 0));

    kiq_group_offset_t *a0 = offset("orders", 0, 10, "meta"), *a1 = offset("orders", 1, 11, NULL);
    kiq_group_offset_t *b0 = offset("orders-eu", 0, 20, NULL);
    assert_int_equal(kiq_group_put_offset(g, a0), 0);
    assert_int_equal(kiq_group_put_offset(g, a1), 0);
    assert_int_equal(kiq_group_put_offset(g, b0), 0);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 0), a0);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 1), a1);
    assert_ptr_equal(kiq_group_get_offset(g, "orders-eu", 9, 0), b0);
    assert_null(kiq_group_get_offset(g, "orders", 6, 2));
    /* the topic is a length-delimited view */
    assert_ptr_equal(kiq_group_get_offset(g, "orders-eu", 6, 1), a1);
    assert_null(kiq_group_get_offset(g, "order", 5, 0));
    /* whole 32-bit partition numbers count, not just their low byte */
    kiq_group_offset_t *big = offset("orders", 256, 30, NULL);
    assert_int_equal(kiq_group_put_offset(g, big), 0);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 256), big);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 0), a0);
    assert_null(kiq_group_get_offset(g, "orders", 6, 512));
    assert_int_equal(kiq_str_map_count(g->offsets), 4);

    /* replacing frees the old one (checked by sanitizers/valgrind) and the
     * new one is found */
    kiq_group_offset_t *a0b = offset("orders", 0, 15, "newer");
    assert_int_equal(kiq_group_put_offset(g, a0b), 0);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 0), a0b);
    assert_int_equal(kiq_group_get_offset(g, "orders", 6, 0)->offset, 15);
    assert_string_equal(kiq_group_get_offset(g, "orders", 6, 0)->metadata.p, "newer");
    assert_int_equal(kiq_str_map_count(g->offsets), 4);
    /* putting the same object again keeps it alive */
    assert_int_equal(kiq_group_put_offset(g, a0b), 0);
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 0), a0b);
    assert_int_equal(a0b->offset, 15);

    kiq_group_remove_offset(g, "orders", 6, 1);
    assert_null(kiq_group_get_offset(g, "orders", 6, 1));
    assert_ptr_equal(kiq_group_get_offset(g, "orders", 6, 0), a0b);
    assert_int_equal(kiq_str_map_count(g->offsets), 3);
    /* removing what is not there is harmless */
    kiq_group_remove_offset(g, "orders", 6, 1);
    kiq_group_remove_offset(g, "nope", 4, 0);
    assert_int_equal(kiq_str_map_count(g->offsets), 3);
    /* the rest are freed with the group */
    kiq_group_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_ascii),
        cmocka_unit_test(test_partition_min_value),
        cmocka_unit_test(test_partition_non_ascii),
        cmocka_unit_test(test_new_free),
        cmocka_unit_test(test_select_protocol),
        cmocka_unit_test(test_supports),
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_set_protocols),
        cmocka_unit_test(test_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
