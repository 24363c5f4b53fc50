/* The journey journal on its own: journeys offered and written are found
 * by offset and by trace, newest first, across a reopening and among many
 * files (each summarized, the summaries kept up with the writes); a torn tail
 * and a foreign file are read past; the retention by bytes deletes the
 * oldest files; a full queue drops and counts. And W3C traceparent values,
 * good and bad, as the OTLP exporter reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "journey/journal.h"
#include "journey/otlp.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kiq-journal-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static kiq_journey_t *journey(const char *topic, int32_t partition, int64_t first, int64_t last, uint64_t trace,
                              int nstages)
{
    kiq_journey_t *j = calloc(1, sizeof *j);
    snprintf(j->topic, sizeof j->topic, "%s", topic);
    j->partition = partition;
    j->first_offset = first;
    j->last_offset = last;
    j->traces[0] = trace;
    j->nstages = nstages;
    for (int i = 0; i < nstages; i++) {
        j->stages[i].point = KIQ_POINT_RECEIVED + i;
        j->stages[i].t_ns = 1000 * (i + 1);
        j->stages[i].first_offset = first;
    }
    return j;
}

static void test_written_journeys_are_found_after_reopening(void **state)
{
    (void)state;
    kiq_journal_t *jl = kiq_journal_open(dir, -1, -1);
    assert_non_null(jl);
    for (int64_t o = 0; o < 10; o++) {
        kiq_journey_t *j = journey("t", 0, o * 2, o * 2 + 1, 100 + (uint64_t)o, 1 + (int)(o % 5));
        assert_true(o < 5 ? kiq_journal_offer(jl, j) : kiq_journal_write_now(jl, j) == 0);
        free(j);
    }
    kiq_journey_t *out = malloc(sizeof *out);
    assert_true(kiq_journal_find(jl, "t", 0, 7, out));
    assert_int_equal(out->first_offset, 6);
    assert_int_equal(out->nstages, 4);
    assert_int_equal(out->stages[3].t_ns, 4000);
    assert_false(kiq_journal_find(jl, "t", 1, 7, out));
    assert_false(kiq_journal_find(jl, "u", 0, 7, out));
    kiq_journal_close(jl);

    jl = kiq_journal_open(dir, -1, -1);
    assert_non_null(jl);
    assert_true(kiq_journal_find(jl, "t", 0, 19, out));
    assert_int_equal(out->first_offset, 18);
    assert_true(kiq_journal_find_trace(jl, 103, out));
    assert_int_equal(out->first_offset, 6);
    assert_false(kiq_journal_find_trace(jl, 999, out));
    /* a newer journey of the same batch wins */
    kiq_journey_t *j = journey("t", 0, 6, 7, 103, 5);
    assert_int_equal(kiq_journal_write_now(jl, j), 0);
    free(j);
    assert_true(kiq_journal_find(jl, "t", 0, 6, out));
    assert_int_equal(out->nstages, 5);
    kiq_journal_stats_t st;
    kiq_journal_stats(jl, &st);
    assert_int_equal(st.written, 1); /* since it was opened */
    assert_int_equal(st.dropped, 0);
    kiq_journal_close(jl);
    free(out);
}

static void test_damaged_files_are_read_past(void **state)
{
    (void)state;
    char path[128];
    /* a foreign file, and a journal file with a torn tail */
    snprintf(path, sizeof path, "%s/00000000000000000001.journal", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 3000; i++) fputc(0xff, f);
    fclose(f);
    kiq_journal_t *jl = kiq_journal_open(dir, -1, -1);
    assert_non_null(jl);
    kiq_journey_t *j = journey("torn", 0, 0, 0, 1, 3);
    assert_int_equal(kiq_journal_write_now(jl, j), 0);
    kiq_journal_close(jl);
    free(j);
    snprintf(path, sizeof path, "ls -t %s/*.journal | head -1 | xargs truncate -s -10", dir);
    assert_int_equal(system(path), 0);
    jl = kiq_journal_open(dir, -1, -1);
    kiq_journey_t *out = malloc(sizeof *out);
    assert_false(kiq_journal_find(jl, "torn", 0, 0, out));
    j = journey("torn", 0, 1, 1, 1, 3);
    assert_int_equal(kiq_journal_write_now(jl, j), 0);
    assert_true(kiq_journal_find(jl, "torn", 0, 1, out));
    kiq_journal_close(jl);
    free(j);
    free(out);
}

static void test_retention_bytes_deletes_the_oldest(void **state)
{
    (void)state;
    /* files of 4096 bytes at least, 40000 bytes kept */
    kiq_journal_t *jl = kiq_journal_open(dir, -1, 40000);
    assert_non_null(jl);
    for (int64_t o = 0; o < 200; o++) {
        kiq_journey_t *j = journey("r", o % 2, o, o, 1000 + (uint64_t)o, KIQ_JOURNEY_STAGES);
        assert_int_equal(kiq_journal_write_now(jl, j), 0);
        free(j);
    }
    kiq_journal_stats_t st;
    kiq_journal_stats(jl, &st);
    assert_true(st.bytes <= 40000 + 2 * (int64_t)sizeof(kiq_journey_t));
    assert_true(st.segments >= 2);
    kiq_journey_t *out = malloc(sizeof *out);
    assert_false(kiq_journal_find(jl, "r", 0, 0, out));
    assert_true(kiq_journal_find(jl, "r", 1, 199, out));
    /* each file says what it holds: a lookup finds the one it needs among many */
    assert_true(kiq_journal_find(jl, "r", 0, 196, out));
    assert_int_equal(out->first_offset, 196);
    assert_false(kiq_journal_find(jl, "r", 1, 196, out));
    assert_true(kiq_journal_find_trace(jl, 1000 + 197, out));
    assert_int_equal(out->first_offset, 197);
    assert_false(kiq_journal_find_trace(jl, 1000 + 1, out));
    /* and sees what was written since */
    kiq_journey_t *j = journey("r", 0, 200, 200, 5, 2);
    assert_int_equal(kiq_journal_write_now(jl, j), 0);
    free(j);
    assert_true(kiq_journal_find(jl, "r", 0, 200, out));
    assert_true(kiq_journal_find_trace(jl, 5, out));
    kiq_journal_close(jl);
    free(out);
}

static void test_a_full_queue_drops_and_counts(void **state)
{
    (void)state;
    kiq_journal_t *jl = kiq_journal_open(dir, -1, -1);
    assert_non_null(jl);
    kiq_journey_t *j = journey("q", 0, 0, 0, 0, 1);
    int taken = 0;
    for (int i = 0; i < 5000; i++) taken += kiq_journal_offer(jl, j);
    /* the writer drains it meanwhile, far slower than offers come */
    kiq_journal_stats_t st;
    kiq_journal_stats(jl, &st);
    assert_true(taken >= 512 && taken < 5000);
    assert_int_equal(st.dropped, 5000 - taken);
    kiq_journal_close(jl);
    free(j);
}

static void test_traceparent(void **state)
{
    (void)state;
    uint8_t t[16], s[8];
    assert_true(kiq_otlp_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 55, t, s));
    assert_int_equal(t[0], 0x4b);
    assert_int_equal(t[15], 0x36);
    assert_int_equal(s[0], 0x00);
    assert_int_equal(s[7], 0xb7);
    const char *bad[] = {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      /* short */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero span id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* version 00 with more */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(kiq_otlp_traceparent(bad[i], strlen(bad[i]), t, s));
    /* a later version may carry more */
    assert_true(kiq_otlp_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abc", 59, t, s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_written_journeys_are_found_after_reopening, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_damaged_files_are_read_past, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_retention_bytes_deletes_the_oldest, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_a_full_queue_drops_and_counts, make_dir, remove_dir),
        cmocka_unit_test(test_traceparent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
