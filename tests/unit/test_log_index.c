/* The sparse offset index and the time index: lookups at and between
 * entries, before the first and after the last, empty indexes, the byte
 * layout Kafka uses, reloading, and the sanity checks that trigger a
 * rebuild. Real files in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "log/offset_index.h"
#include "log/time_index.h"
#include "support/log_fixture.h"

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (kiq_test_temp_dir(f->dir, sizeof f->dir, "index") != 0) return -1;
    snprintf(f->path, sizeof f->path, "%s/00000000000000000100.index", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_test_remove_tree(f->dir);
    free(f);
    return 0;
}

static size_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static void read_file(const char *path, uint8_t *buf, size_t n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(buf, 1, n, fp), n);
    fclose(fp);
}

static void append_bytes(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "ab");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, n, fp), n);
    fclose(fp);
}

/* Base 100; entries (110, 0x100), (120, 0x200), (130, 0x300). */
static void fill_offset_index(kiq_offset_index_t *ix, const char *path)
{
    assert_int_equal(kiq_offset_index_open(ix, path, 100, 1024, true), 0);
    assert_int_equal(kiq_offset_index_append(ix, 110, 0x100), 0);
    assert_int_equal(kiq_offset_index_append(ix, 120, 0x200), 0);
    assert_int_equal(kiq_offset_index_append(ix, 130, 0x300), 0);
}

static void test_offset_lookup(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    kiq_offset_entry_t e;
    fill_offset_index(&ix, f->path);

    assert_true(kiq_offset_index_lookup(&ix, 120, &e)); /* exact */
    assert_int_equal(e.offset, 120);
    assert_int_equal(e.position, 0x200);
    assert_true(kiq_offset_index_lookup(&ix, 129, &e)); /* between */
    assert_int_equal(e.offset, 120);
    assert_int_equal(e.position, 0x200);
    assert_true(kiq_offset_index_lookup(&ix, 110, &e)); /* first */
    assert_int_equal(e.offset, 110);
    assert_int_equal(e.position, 0x100);
    assert_false(kiq_offset_index_lookup(&ix, 105, &e)); /* before first: segment start */
    assert_int_equal(e.offset, 100);
    assert_int_equal(e.position, 0);
    assert_true(kiq_offset_index_lookup(&ix, 1000000, &e)); /* after last */
    assert_int_equal(e.offset, 130);
    assert_int_equal(e.position, 0x300);
    assert_true(kiq_offset_index_last(&ix, &e));
    assert_int_equal(e.offset, 130);
    kiq_offset_index_close(&ix);
}

static void test_offset_lookup_empty(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    kiq_offset_entry_t e = {-5, 77};
    assert_int_equal(kiq_offset_index_open(&ix, f->path, 100, 1024, true), 0);
    assert_false(kiq_offset_index_lookup(&ix, 150, &e));
    assert_int_equal(e.offset, 100);
    assert_int_equal(e.position, 0);
    assert_false(kiq_offset_index_last(&ix, &e));
    assert_int_equal(kiq_offset_index_check(&ix, 0), 0);
    kiq_offset_index_close(&ix);
}

static void test_offset_lookup_many(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    kiq_offset_entry_t e;
    assert_int_equal(kiq_offset_index_open(&ix, f->path, 0, 1 << 20, true), 0);
    for (int i = 1; i <= 1000; i++) assert_int_equal(kiq_offset_index_append(&ix, i * 10, (uint32_t)i * 100), 0);
    for (int t = 0; t < 10020; t += 7) {
        bool found = kiq_offset_index_lookup(&ix, t, &e);
        int want = t / 10 > 1000 ? 1000 : t / 10;
        assert_int_equal(found, want > 0);
        assert_int_equal(e.offset, want * 10);
        assert_int_equal(e.position, want * 100);
    }
    kiq_offset_index_close(&ix);
}

static void test_offset_append_rules(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    /* 24 bytes: room for three entries. */
    assert_int_equal(kiq_offset_index_open(&ix, f->path, 100, 24, true), 0);
    assert_int_equal(kiq_offset_index_append(&ix, 99, 0x10), -1); /* below base */
    assert_int_equal(kiq_offset_index_append(&ix, 110, 0x100), 0);
    assert_int_equal(kiq_offset_index_append(&ix, 110, 0x200), -1); /* offset not increasing */
    assert_int_equal(kiq_offset_index_append(&ix, 111, 0x100), -1); /* position not increasing */
    assert_int_equal(kiq_offset_index_append(&ix, 120, 0x200), 0);
    assert_false(kiq_offset_index_full(&ix));
    assert_int_equal(kiq_offset_index_append(&ix, 130, 0x300), 0);
    assert_true(kiq_offset_index_full(&ix));
    assert_int_equal(kiq_offset_index_append(&ix, 140, 0x400), -1);
    assert_int_equal(ix.count, 3);
    assert_int_equal(file_size(f->path), 24);
    kiq_offset_index_close(&ix);
}

static void test_offset_file_layout_and_reload(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    kiq_offset_entry_t e;
    fill_offset_index(&ix, f->path);
    kiq_offset_index_close(&ix);

    /* Relative offset u32 BE, then position u32 BE. */
    uint8_t buf[24];
    assert_int_equal(file_size(f->path), 24);
    read_file(f->path, buf, sizeof buf);
    const uint8_t want[8] = {0, 0, 0, 20, 0, 0, 0x02, 0x00};
    assert_memory_equal(buf + 8, want, 8);

    assert_int_equal(kiq_offset_index_open(&ix, f->path, 100, 1024, false), 0);
    assert_int_equal(ix.count, 3);
    assert_int_equal(kiq_offset_index_check(&ix, 0x1000), 0);
    assert_true(kiq_offset_index_lookup(&ix, 125, &e));
    assert_int_equal(e.offset, 120);
    assert_int_equal(e.position, 0x200);
    /* An entry pointing past the end of the log fails the check. */
    assert_int_equal(kiq_offset_index_check(&ix, 0x300), -1);
    kiq_offset_index_close(&ix);
}

static void test_offset_check_detects_damage(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    fill_offset_index(&ix, f->path);
    kiq_offset_index_close(&ix);

    /* A torn trailing entry. */
    append_bytes(f->path, "\0\0\0", 3);
    assert_int_equal(kiq_offset_index_open(&ix, f->path, 100, 1024, false), 0);
    assert_int_equal(ix.count, 3);
    assert_int_equal(kiq_offset_index_check(&ix, 0x1000), -1);
    assert_int_equal(kiq_offset_index_reset(&ix), 0);
    assert_int_equal(file_size(f->path), 0);
    assert_int_equal(kiq_offset_index_check(&ix, 0x1000), 0);
    kiq_offset_index_close(&ix);

    /* An entry going backwards. */
    const uint8_t entries[16] = {0, 0, 0, 20, 0, 0, 1, 0, 0, 0, 0, 10, 0, 0, 2, 0};
    append_bytes(f->path, entries, sizeof entries);
    assert_int_equal(kiq_offset_index_open(&ix, f->path, 100, 1024, false), 0);
    assert_int_equal(kiq_offset_index_check(&ix, 0x1000), -1);
    kiq_offset_index_close(&ix);
}

static void test_offset_truncate(void **state)
{
    fixture_t *f = *state;
    kiq_offset_index_t ix;
    kiq_offset_entry_t e;
    fill_offset_index(&ix, f->path);
    assert_int_equal(kiq_offset_index_truncate_position(&ix, 0x200), 0);
    assert_int_equal(ix.count, 1);
    assert_int_equal(file_size(f->path), 8);
    assert_true(kiq_offset_index_lookup(&ix, 125, &e));
    assert_int_equal(e.offset, 110);
    /* Appending resumes right after the kept entry. */
    assert_int_equal(kiq_offset_index_append(&ix, 115, 0x180), 0);
    assert_int_equal(file_size(f->path), 16);
    kiq_offset_index_close(&ix);
}

/* Base 100; entries (1000, 105), (2000, 115), (3000, 125). */
static void fill_time_index(kiq_time_index_t *ix, const char *path)
{
    assert_int_equal(kiq_time_index_open(ix, path, 100, 1200, true), 0);
    assert_int_equal(kiq_time_index_maybe_append(ix, 1000, 105, false), 0);
    assert_int_equal(kiq_time_index_maybe_append(ix, 2000, 115, false), 0);
    /* Not above the largest so far: nothing is added. */
    assert_int_equal(kiq_time_index_maybe_append(ix, 1500, 118, false), 0);
    assert_int_equal(kiq_time_index_maybe_append(ix, 2000, 119, false), 0);
    assert_int_equal(kiq_time_index_maybe_append(ix, 3000, 125, false), 0);
    assert_int_equal(ix->count, 3);
}

static void test_time_lookup(void **state)
{
    fixture_t *f = *state;
    kiq_time_index_t ix;
    kiq_time_entry_t e;
    fill_time_index(&ix, f->path);

    /* Nothing is older than 1000: the search starts at the segment start. */
    assert_false(kiq_time_index_lookup(&ix, 500, &e));
    assert_int_equal(e.offset, 100);
    assert_false(kiq_time_index_lookup(&ix, 1000, &e));
    /* Everything up to 105 is older than 1001. */
    assert_true(kiq_time_index_lookup(&ix, 1001, &e));
    assert_int_equal(e.timestamp, 1000);
    assert_int_equal(e.offset, 105);
    assert_true(kiq_time_index_lookup(&ix, 2000, &e));
    assert_int_equal(e.offset, 105);
    assert_true(kiq_time_index_lookup(&ix, 2500, &e));
    assert_int_equal(e.timestamp, 2000);
    assert_int_equal(e.offset, 115);
    assert_true(kiq_time_index_lookup(&ix, 1 << 30, &e));
    assert_int_equal(e.timestamp, 3000);
    assert_int_equal(e.offset, 125);
    assert_true(kiq_time_index_last(&ix, &e));
    assert_int_equal(e.timestamp, 3000);
    kiq_time_index_close(&ix);

    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 1200, true), 0);
    assert_false(kiq_time_index_lookup(&ix, 5000, &e));
    assert_false(kiq_time_index_last(&ix, &e));
    /* -1 (no timestamp) is never recorded. */
    assert_int_equal(kiq_time_index_maybe_append(&ix, -1, 100, false), 0);
    assert_int_equal(ix.count, 0);
    kiq_time_index_close(&ix);
}

static void test_time_rules_and_layout(void **state)
{
    fixture_t *f = *state;
    kiq_time_index_t ix;
    kiq_time_entry_t e;
    /* 24 bytes: two entries. */
    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 24, true), 0);
    assert_int_equal(kiq_time_index_maybe_append(&ix, 1000, 99, false), -1); /* below base */
    assert_int_equal(kiq_time_index_maybe_append(&ix, 1000, 110, false), 0);
    assert_int_equal(kiq_time_index_maybe_append(&ix, 2000, 105, false), -1); /* offset backwards */
    assert_int_equal(kiq_time_index_maybe_append(&ix, 2000, 110, false), 0); /* same offset is fine */
    assert_true(kiq_time_index_full(&ix));
    assert_int_equal(kiq_time_index_maybe_append(&ix, 3000, 120, false), -1);
    /* The final entry of a sealed segment goes in regardless. */
    assert_int_equal(kiq_time_index_maybe_append(&ix, 3000, 120, true), 0);
    kiq_time_index_close(&ix);

    uint8_t buf[36];
    assert_int_equal(file_size(f->path), 36);
    read_file(f->path, buf, sizeof buf);
    const uint8_t want[12] = {0, 0, 0, 0, 0, 0, 0x0b, 0xb8, 0, 0, 0, 20};
    assert_memory_equal(buf + 24, want, 12);

    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 24, false), 0);
    assert_int_equal(ix.count, 3);
    assert_int_equal(kiq_time_index_check(&ix), 0);
    assert_true(kiq_time_index_lookup(&ix, 2500, &e));
    assert_int_equal(e.timestamp, 2000);
    assert_int_equal(e.offset, 110);
    kiq_time_index_close(&ix);
}

static void test_time_check_and_truncate(void **state)
{
    fixture_t *f = *state;
    kiq_time_index_t ix;
    kiq_time_entry_t e;
    fill_time_index(&ix, f->path);
    assert_int_equal(kiq_time_index_truncate_offset(&ix, 115), 0);
    assert_int_equal(ix.count, 1);
    assert_int_equal(file_size(f->path), 12);
    assert_true(kiq_time_index_last(&ix, &e));
    assert_int_equal(e.offset, 105);
    kiq_time_index_close(&ix);

    /* Timestamps going backwards on disk fail the check. */
    const uint8_t entry[12] = {0, 0, 0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 30};
    append_bytes(f->path, entry, sizeof entry);
    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 1200, false), 0);
    assert_int_equal(ix.count, 2);
    assert_int_equal(kiq_time_index_check(&ix), -1);
    kiq_time_index_close(&ix);

    /* So does a torn entry. */
    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 1200, true), 0);
    kiq_time_index_close(&ix);
    append_bytes(f->path, entry, 7);
    assert_int_equal(kiq_time_index_open(&ix, f->path, 100, 1200, false), 0);
    assert_int_equal(kiq_time_index_check(&ix), -1);
    kiq_time_index_close(&ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_offset_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_lookup_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_lookup_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_append_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_file_layout_and_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_check_detects_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_truncate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_rules_and_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_check_and_truncate, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
