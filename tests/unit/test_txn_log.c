/* Transactions in a real partition log: a transactional producer's first
 * offset holds the last stable offset back until its marker; COMMIT and
 * ABORT control batches as Kafka writes them; aborted transactions in the
 * segment's .txnindex (Kafka's 34-byte entries) and what a read_committed
 * fetch is given; the marker checks (stale producer epoch, stale
 * coordinator epoch); KIP-890's verification guards; and all of it after a clean reopen, an unclean one
 * (rebuilt from the log), a truncation, a follower's copy; and the
 * cleaner, which drops aborted records (never letting one shadow a
 * committed value) and, past delete.retention.ms, markers whose
 * transaction has nothing left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/arena.h"
#include "log/cleaner.h"
#include "log/log_names.h"
#include "log/partition_log.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

static int setup(void **state)
{
    kiq_test_log_dir_t *f = kiq_test_log_dir_new("txnlog", "data/txn-0");
    if (!f) return -1;
    *state = f;
    return 0;
}

/* Appends n records of transactional producer pid/epoch from sequence
 * seq; the append's result. */
static int append_guarded(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, const char *value,
                          uint64_t guard)
{
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, 1700000000000);
    if (pid >= 0) {
        kiq_batch_builder_set_producer(&b, pid, epoch, seq);
        b.transactional = true;
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(kiq_batch_builder_add(&b, "k", 1, value, (int32_t)strlen(value), NULL, 0, 1700000000000), 0);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
    kiq_batch_builder_free(&b);
    kiq_log_append_result_t res;
    int rc = kiq_partition_log_append_checked(l, w.buf, w.len, 0, guard, NULL, &res);
    kiq_wr_free(&w);
    return rc;
}

static int append_value(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, const char *value)
{
    return append_guarded(l, n, pid, epoch, seq, value, 0);
}

static int append_txn(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq)
{
    return append_value(l, n, pid, epoch, seq, "v");
}

static int marker(kiq_partition_log_t *l, int64_t pid, int16_t epoch, int32_t coordinator_epoch, bool commit)
{
    kiq_txn_marker_t m = {pid, epoch, coordinator_epoch, commit};
    kiq_log_append_result_t res;
    return kiq_partition_log_append_marker(l, &m, 0, NULL, &res);
}

static int64_t lso(kiq_partition_log_t *l)
{
    kiq_partition_log_set_high_watermark(l, kiq_partition_log_end_offset(l));
    return kiq_partition_log_last_stable_offset(l);
}

static size_t aborted(kiq_partition_log_t *l, int64_t from, kiq_arena_t *a, kiq_aborted_t **out)
{
    return kiq_partition_log_aborted(l, from, INT64_MAX, a, out);
}

static off_t txnindex_size(const kiq_test_log_dir_t *f, int64_t base)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%020lld%s", f->dir, (long long)base, KIQ_TXNINDEX_SUFFIX);
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* The log of the tests: producer 7 commits 0..2 (marker 3), producer 8
 * starts at 4, producer 7 aborts 5..6 (marker 7) while 8 is open; 8 left
 * open. */
static kiq_partition_log_t *two_producers(kiq_test_log_dir_t *f)
{
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_txn(l, 3, 7, 0, 0), 0);
    assert_int_equal(lso(l), 0);
    assert_int_equal(marker(l, 7, 0, 0, true), 0);
    assert_int_equal(lso(l), 4);
    assert_int_equal(append_txn(l, 1, 8, 0, 0), 0);
    assert_int_equal(append_txn(l, 2, 7, 0, 3), 0);
    assert_int_equal(marker(l, 7, 0, 0, false), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 8);
    return l;
}

static void test_markers_move_the_last_stable_offset(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = two_producers(f);
    /* producer 8 holds it at its first offset */
    assert_int_equal(lso(l), 4);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_aborted_t *ab;
    assert_int_equal(aborted(l, 0, &a, &ab), 1);
    assert_int_equal(ab[0].producer_id, 7);
    assert_int_equal(ab[0].first_offset, 5);
    assert_int_equal(ab[0].last_offset, 7);
    assert_int_equal(ab[0].last_stable_offset, 4); /* producer 8 still open then */
    /* a fetch past the abort marker needs not know it */
    assert_int_equal(aborted(l, 8, &a, &ab), 0);
    assert_int_equal(kiq_partition_log_aborted(l, 0, 5, &a, &ab), 0);
    assert_int_equal(txnindex_size(f, 0), KIQ_TXN_INDEX_ENTRY);
    /* the marker is a control batch of one record: COMMIT / ABORT */
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(l, 7, 1 << 20, 8, &w) > 0);
    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_header_parse(w.buf, w.len, &h), 0);
    assert_true(kiq_batch_is_control(&h) && kiq_batch_is_transactional(&h));
    assert_int_equal(h.producer_id, 7);
    assert_int_equal(h.base_sequence, -1);
    assert_int_equal(kiq_batch_control_type(w.buf, kiq_batch_size(&h)), KIQ_CONTROL_ABORT);
    kiq_wr_free(&w);
    assert_int_equal(marker(l, 8, 0, 0, true), 0);
    assert_int_equal(lso(l), 9);
    assert_int_equal(aborted(l, 0, &a, &ab), 1);
    kiq_arena_reset(&a);
    kiq_partition_log_free(l);
}

static void test_markers_are_checked(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_txn(l, 1, 9, 3, 0), 0);
    assert_int_equal(marker(l, 9, 2, 5, false), KIQ_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(marker(l, 9, 3, 5, false), 0);
    assert_int_equal(marker(l, 9, 3, 4, true), KIQ_ERR_TRANSACTION_COORDINATOR_FENCED);
    /* a fence's abort comes at the next epoch; the producer then starts over at sequence 0 */
    assert_int_equal(marker(l, 9, 4, 5, false), 0);
    assert_int_equal(append_txn(l, 1, 9, 3, 1), KIQ_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(append_txn(l, 1, 9, 4, 0), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 4);
    kiq_partition_log_free(l);
}

/* KIP-890's verification guard: a transaction's first records here need
 * the guard taken before its coordinator was asked to still hold; its
 * marker ends it (under v2, a marker newer than the produce's epoch), and
 * so does its first append. */
static void test_verification_guards(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    bool ongoing = true;
    uint64_t g = kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing);
    assert_false(ongoing);
    assert_true(g != 0);
    assert_int_equal(kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing), g); /* the standing one */
    /* the transaction ended while its coordinator was asked: refused, nothing written */
    assert_int_equal(marker(l, 7, 0, 0, false), 0);
    assert_int_equal(append_guarded(l, 1, 7, 0, 0, "late", g), KIQ_ERR_INVALID_TXN_STATE);
    assert_int_equal(kiq_partition_log_end_offset(l), 1);
    /* a guard that holds lets the first records in, and ends there */
    g = kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing);
    assert_int_equal(append_guarded(l, 1, 7, 0, 0, "v", g), 0);
    assert_int_equal(kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing) == g, false);
    assert_true(ongoing);
    /* under way, the next records need no standing guard */
    assert_int_equal(append_guarded(l, 1, 7, 0, 1, "v", g), 0);
    assert_int_equal(marker(l, 7, 0, 0, true), 0);
    /* after the commit, a late batch with the old guard cannot start another */
    assert_int_equal(append_guarded(l, 1, 7, 0, 2, "v", g), KIQ_ERR_INVALID_TXN_STATE);
    /* a refusal ends only the guard it names */
    uint64_t g2 = kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing);
    kiq_partition_log_txn_guard_end(l, 7, g);
    assert_int_equal(kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing), g2);
    kiq_partition_log_txn_guard_end(l, 7, g2);
    assert_true(kiq_partition_log_txn_guard(l, 7, 0, false, &ongoing) != g2);
    /* other producers and appends without a guard are not concerned */
    assert_int_equal(append_txn(l, 1, 8, 0, 0), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 5);
    /* transactions v2: the next transaction (epoch 1) asks while the last
     * one's marker, at the epoch its end bumped to, is still to come: that
     * marker leaves the guard standing, a later one ends it */
    assert_int_equal(append_txn(l, 1, 9, 0, 0), 0);
    g = kiq_partition_log_txn_guard(l, 9, 1, true, &ongoing);
    assert_false(ongoing);
    assert_int_equal(marker(l, 9, 1, 0, true), 0);
    assert_int_equal(append_guarded(l, 1, 9, 1, 0, "next", g), 0);
    assert_int_equal(marker(l, 9, 2, 0, true), 0);
    g = kiq_partition_log_txn_guard(l, 9, 2, true, &ongoing);
    assert_int_equal(marker(l, 9, 3, 0, false), 0);
    assert_int_equal(append_guarded(l, 1, 9, 2, 0, "late", g), KIQ_ERR_INVALID_TXN_STATE);
    assert_int_equal(kiq_partition_log_end_offset(l), 10);
    kiq_partition_log_free(l);
}

static void test_reopen_keeps_transactions(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_free(two_producers(f));
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_aborted_t *ab;
    /* clean: the snapshot and the .txnindex */
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(lso(l), 4);
    assert_int_equal(aborted(l, 0, &a, &ab), 1);
    kiq_partition_log_free(l);
    /* unclean, snapshots and .txnindex gone: rebuilt from the batches */
    char path[512];
    snprintf(path, sizeof path, "%s/%020d%s", f->dir, 0, KIQ_TXNINDEX_SUFFIX);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof path, "%s/%020d.snapshot", f->dir, 8);
    assert_int_equal(unlink(path), 0);
    f->cfg.clean_shutdown = false;
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 0);
    assert_non_null(l);
    assert_int_equal(lso(l), 4);
    assert_int_equal(aborted(l, 0, &a, &ab), 1);
    assert_int_equal(ab[0].first_offset, 5);
    assert_int_equal(ab[0].last_offset, 7);
    assert_int_equal(txnindex_size(f, 0), KIQ_TXN_INDEX_ENTRY);
    /* truncated below the abort marker: the entry goes, file and all */
    assert_int_equal(kiq_partition_log_truncate_to(l, 6), 0);
    assert_int_equal(aborted(l, 0, &a, &ab), 0);
    assert_int_equal(txnindex_size(f, 0), -1);
    /* producer 7's transaction from 5 is open again, as is 8's from 4 */
    assert_int_equal(lso(l), 4);
    kiq_arena_reset(&a);
    kiq_partition_log_free(l);
}

static void test_follower_copies_aborted_transactions(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *leader = two_producers(f);
    kiq_test_log_dir_t *g = kiq_test_log_dir_new("txnfollower", "data/txn-0");
    assert_non_null(g);
    kiq_partition_log_t *follower = kiq_partition_log_open(g->dir, &g->cfg);
    assert_non_null(follower);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(leader, 0, 1 << 20, 8, &w) > 0);
    kiq_log_append_result_t res;
    assert_int_equal(kiq_partition_log_append_follower(follower, w.buf, w.len, &res), 0);
    kiq_wr_free(&w);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_aborted_t *ab;
    assert_int_equal(aborted(follower, 0, &a, &ab), 1);
    assert_int_equal(ab[0].first_offset, 5);
    assert_int_equal(lso(follower), 4);
    kiq_arena_reset(&a);
    kiq_partition_log_free(follower);
    kiq_test_log_dir_free(g);
    kiq_partition_log_free(leader);
}

static int value_of_k(const kiq_record_t *rec, void *ctx)
{
    char *out = ctx;
    if (rec->value.p && rec->value.len < 32) {
        memcpy(out, rec->value.p, (size_t)rec->value.len);
        out[rec->value.len] = '\0';
    }
    return 0;
}

static void test_cleaner_drops_aborted_records(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = 100; /* a segment per batch: all but the last closed */
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "committed"), 0);
    assert_int_equal(append_value(l, 1, 7, 0, 0, "aborted"), 0);
    assert_int_equal(marker(l, 7, 0, 0, false), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "other"), 0); /* the active segment */
    kiq_partition_log_set_high_watermark(l, kiq_partition_log_end_offset(l));
    kiq_cleaner_options_t o = {.now_ms = 1700000000000 + 1000, .delete_retention_ms = 86400000};
    assert_true(kiq_log_clean(l, &o, NULL) > 0);
    /* offset 0 keeps its committed value, offset 1 is gone, the marker stays */
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(l, 0, 1 << 20, 3, &w) > 0);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, w.buf, w.len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int n = 0;
    char value[32] = "";
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        if (n == 0) {
            assert_int_equal(h.base_offset, 0);
            assert_int_equal(kiq_batch_foreach_record(batch, blen, 1 << 20, value_of_k, value), 0);
        } else {
            assert_int_equal(h.base_offset, 2);
            assert_true(kiq_batch_is_control(&h));
        }
        n++;
    }
    assert_int_equal(n, 2);
    assert_string_equal(value, "committed");
    kiq_wr_free(&w);
    kiq_partition_log_free(l);
}

static void test_cleaner_stops_at_an_open_transaction(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = 100;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_value(l, 1, 7, 0, 0, "open"), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "a"), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "b"), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "c"), 0);
    kiq_partition_log_set_high_watermark(l, kiq_partition_log_end_offset(l));
    assert_int_equal(lso(l), 0);
    kiq_cleaner_options_t o = {.now_ms = 1700000000000 + 1000, .delete_retention_ms = 86400000};
    assert_int_equal(kiq_log_clean(l, &o, NULL), 0);
    kiq_partition_log_free(l);
}

static void test_cleaner_drops_markers_with_nothing_left(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = 100;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    /* a committed value at 0 (marker 1) superseded at 2; a transaction at 3
     * (marker 4) whose value stays; the active segment at 5 */
    assert_int_equal(append_value(l, 1, 7, 0, 0, "old"), 0);
    assert_int_equal(marker(l, 7, 0, 0, true), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "new"), 0);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, 1700000000000);
    kiq_batch_builder_set_producer(&bb, 8, 0, 0);
    bb.transactional = true;
    assert_int_equal(kiq_batch_builder_add(&bb, "other", 5, "kept", 4, NULL, 0, 1700000000000), 0);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&bb, &w), 0);
    kiq_batch_builder_free(&bb);
    kiq_log_append_result_t res;
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 0, 0, NULL, &res), 0);
    kiq_wr_free(&w);
    assert_int_equal(marker(l, 8, 0, 0, true), 0);
    assert_int_equal(append_value(l, 1, -1, 0, 0, "active"), 0);
    kiq_partition_log_set_high_watermark(l, kiq_partition_log_end_offset(l));
    /* within delete.retention.ms the empty transaction's marker stays */
    kiq_cleaner_options_t o = {.now_ms = 1700000000000 + 1000, .delete_retention_ms = 86400000};
    assert_true(kiq_log_clean(l, &o, NULL) > 0);
    int64_t want_early[] = {1, 2, 3, 4};
    int64_t want_late[] = {2, 3, 4};
    const int64_t *want[] = {want_early, want_late};
    size_t nwant[] = {4, 3};
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            /* markers carry the wall clock's time */
            o.now_ms = (int64_t)time(NULL) * 1000 + 2 * 86400000LL;
            assert_true(kiq_log_clean(l, &o, NULL) > 0);
        }
        kiq_wr_init(&w);
        assert_true(kiq_partition_log_read(l, 0, 1 << 20, 5, &w) > 0);
        kiq_batch_iter_t it;
        kiq_batch_iter_init(&it, w.buf, w.len, false);
        const uint8_t *batch;
        size_t blen;
        kiq_batch_header_t h;
        size_t n = 0;
        while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
            assert_true(n < nwant[round]);
            assert_int_equal(h.base_offset, want[round][n]);
            n++;
        }
        assert_int_equal(n, nwant[round]);
        kiq_wr_free(&w);
    }
    /* a reopen finds no open transaction: nothing holds the LSO back */
    kiq_partition_log_free(l);
    f->cfg.clean_shutdown = false;
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 0);
    assert_non_null(l);
    assert_int_equal(lso(l), kiq_partition_log_end_offset(l));
    kiq_partition_log_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_markers_move_the_last_stable_offset, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_markers_are_checked, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_verification_guards, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_keeps_transactions, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_follower_copies_aborted_transactions, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_drops_aborted_records, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_stops_at_an_open_transaction, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_cleaner_drops_markers_with_nothing_left, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
