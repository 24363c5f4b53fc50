/* The idempotent producer's state in a real partition log: duplicates of
 * any of the last five batches answered with their original offsets, gaps,
 * stale and new epochs, unknown producers, sequence wraparound, several
 * batches in one append, racing appends of the same batches, and the state
 * after a clean reopen (snapshot), an unclean one (header scan), a corrupt
 * snapshot and a truncation. Also the producer id allocator. */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log/file_io.h"
#include "log/partition_log.h"
#include "log/producer_state.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"
#include "server/producer_ids.h"
#include "support/log_fixture.h"

#define PID 1000

static int setup(void **state)
{
    kiq_test_log_dir_t *f = kiq_test_log_dir_new("pstate", "data/idem-0");
    if (!f) return -1;
    f->cfg.index_interval_bytes = 256;
    *state = f;
    return 0;
}

/* One batch of n records of producer pid/epoch from sequence seq. */
static void make_batch(kiq_wr_t *w, int n, int64_t pid, int16_t epoch, int32_t seq)
{
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, 1700000000000);
    kiq_batch_builder_set_producer(&b, pid, epoch, seq);
    for (int i = 0; i < n; i++) assert_int_equal(kiq_batch_builder_add(&b, "k", 1, "value", 5, NULL, 0, 1700000000000 + i), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, w), 0);
    kiq_batch_builder_free(&b);
}

/* Appends one batch; returns the append's result code, *res filled. */
static int append(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, kiq_log_append_result_t *res)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    make_batch(&w, n, pid, epoch, seq);
    int rc = kiq_partition_log_append_checked(l, w.buf, w.len, 0, 0, NULL, res);
    kiq_wr_free(&w);
    return rc;
}

/* Appends and expects a new batch at base. */
static void append_new(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, int64_t base)
{
    kiq_log_append_result_t res;
    assert_int_equal(append(l, n, pid, epoch, seq, &res), 0);
    assert_false(res.duplicate);
    assert_int_equal(res.base_offset, base);
    assert_int_equal(res.last_offset, base + n - 1);
}

/* Appends and expects a duplicate answered with base..base+n-1, the log unchanged. */
static void append_dup(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, int64_t base)
{
    int64_t leo = kiq_partition_log_end_offset(l);
    kiq_log_append_result_t res;
    assert_int_equal(append(l, n, pid, epoch, seq, &res), 0);
    assert_true(res.duplicate);
    assert_int_equal(res.base_offset, base);
    assert_int_equal(res.last_offset, base + n - 1);
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
}

/* Appends and expects the Kafka error err, the log unchanged. */
static void append_err(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, int err)
{
    int64_t leo = kiq_partition_log_end_offset(l);
    kiq_log_append_result_t res;
    assert_int_equal(append(l, n, pid, epoch, seq, &res), err);
    assert_false(res.duplicate);
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
}

/* Seven batches of 3 records of PID epoch 0: sequences 0, 3, ..., 18 at
 * the same offsets. */
static void seven_batches(kiq_partition_log_t *l)
{
    for (int i = 0; i < 7; i++) append_new(l, 3, PID, 0, i * 3, i * 3);
}

/* What a reopened log must still know after seven_batches. */
static void check_seven_known(kiq_partition_log_t *l)
{
    kiq_producer_entry_t e;
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.epoch, 0);
    assert_int_equal(e.nbatches, KIQ_PRODUCER_BATCHES_KEPT);
    assert_int_equal(e.batches[0].first_seq, 6);
    assert_int_equal(e.batches[4].last_seq, 20);
    append_dup(l, 3, PID, 0, 18, 18);
    append_dup(l, 3, PID, 0, 6, 6);
    append_err(l, 3, PID, 0, 3, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append_new(l, 3, PID, 0, 21, 21);
}

static int count_snapshots(const char *dir)
{
    int64_t *offs;
    int n = kiq_producer_state_list_snapshots(dir, &offs);
    free(offs);
    return n;
}

static void test_duplicates_of_the_last_five(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    seven_batches(l);
    append_dup(l, 3, PID, 0, 18, 18); /* the last */
    append_dup(l, 3, PID, 0, 15, 15);
    append_dup(l, 3, PID, 0, 6, 6); /* the fifth from last */
    /* the sixth from last is forgotten: not next in line either */
    append_err(l, 3, PID, 0, 3, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* same first sequence, other length: not the same batch */
    append_err(l, 2, PID, 0, 18, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append_new(l, 1, PID, 0, 21, 21);
    kiq_partition_log_free(l);
}

static void test_gap_and_epochs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    append_new(l, 3, PID, 0, 0, 0);
    append_err(l, 3, PID, 0, 4, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER); /* 3 expected */
    append_new(l, 3, PID, 0, 3, 3);
    /* a new epoch must start at 0 */
    append_err(l, 3, PID, 1, 5, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append_new(l, 2, PID, 1, 0, 6);
    kiq_producer_entry_t e;
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.epoch, 1);
    assert_int_equal(e.nbatches, 1);
    /* the old epoch is fenced, even for what would have been next */
    append_err(l, 3, PID, 0, 6, KIQ_ERR_INVALID_PRODUCER_EPOCH);
    append_new(l, 1, PID, 1, 2, 8);
    /* an unknown producer is taken at any sequence (Kafka since KIP-360),
     * and its next batch must follow */
    append_new(l, 1, 2000, 0, 3, 9);
    append_err(l, 1, 2000, 0, 5, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* batches without a producer id are never checked */
    append_new(l, 2, -1, -1, -1, 10);
    append_new(l, 2, -1, -1, -1, 12);
    assert_int_equal(kiq_partition_log_producer_count(l), 2);
    kiq_partition_log_free(l);
}

/* Notes a refusal of the batch n records of pid/epoch from seq with err. */
static void refuse(kiq_partition_log_t *l, int n, int64_t pid, int16_t epoch, int32_t seq, int16_t err)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    make_batch(&w, n, pid, epoch, seq);
    kiq_partition_log_note_refused(l, w.buf, w.len, err);
    kiq_wr_free(&w);
}

/* A batch refused before its sequence was checked (a follower about to
 * lead, too few in-sync replicas): the pipelined batch behind it gets the
 * same retriable error instead of OUT_OF_ORDER_SEQUENCE_NUMBER, until the
 * refused one comes again; a gap nobody refused is still out of order. */
static void test_the_batch_behind_a_refused_one_waits_for_it(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    append_new(l, 3, PID, 0, 0, 0);
    /* refusals of another producer, another epoch or another sequence than
     * the missing one do not count */
    refuse(l, 3, PID + 1, 0, 3, KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    refuse(l, 3, PID, 1, 3, KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    refuse(l, 3, PID, 0, 6, KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    append_err(l, 3, PID, 0, 6, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* the missing batch refused: those behind it wait for it */
    refuse(l, 3, PID, 0, 3, KIQ_ERR_NOT_ENOUGH_REPLICAS);
    append_err(l, 3, PID, 0, 6, KIQ_ERR_NOT_ENOUGH_REPLICAS);
    append_err(l, 3, PID, 0, 9, KIQ_ERR_NOT_ENOUGH_REPLICAS);
    /* in order again: taken */
    append_new(l, 3, PID, 0, 3, 3);
    append_new(l, 3, PID, 0, 6, 6);
    /* a gap where nothing was refused is out of order */
    append_err(l, 3, PID, 0, 12, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    kiq_partition_log_free(l);
}

static void test_sequence_wraps(void **state)
{
    kiq_test_log_dir_t *f = *state;
    /* a producer known (from a snapshot) right below the wrap */
    kiq_producer_state_t *s = kiq_producer_state_new();
    kiq_producer_entry_t e;
    kiq_producer_entry_init(&e, PID, 3);
    e.nbatches = 1;
    e.batches[0] = (kiq_producer_batch_t){INT32_MAX - 4, INT32_MAX - 2, 0, 0, 0};
    assert_int_equal(kiq_producer_state_put(s, &e), 0);
    assert_int_equal(kiq_mkdir_p(f->dir), 0);
    assert_int_equal(kiq_producer_state_write_snapshot(s, f->dir, 0), 0);
    kiq_producer_state_free(s);

    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    /* INT32_MAX - 1, INT32_MAX, 0 */
    append_new(l, 3, PID, 3, INT32_MAX - 1, 0);
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.batches[e.nbatches - 1].last_seq, 0);
    append_dup(l, 3, PID, 3, INT32_MAX - 1, 0);
    append_err(l, 1, PID, 3, 0, KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    append_new(l, 1, PID, 3, 1, 3);
    kiq_partition_log_free(l);

    /* a batch ending exactly at INT32_MAX is followed by 0 */
    kiq_producer_entry_init(&e, PID, 0);
    e.nbatches = 1;
    e.batches[0] = (kiq_producer_batch_t){INT32_MAX - 1, INT32_MAX, 0, 1, 0};
    kiq_batch_header_t h = {.producer_id = PID, .producer_epoch = 0, .base_sequence = 0, .last_offset_delta = 0};
    bool dup;
    assert_int_equal(kiq_producer_entry_check(&e, &h, &dup, NULL), 0);
    assert_false(dup);
    h.base_sequence = 1;
    assert_int_equal(kiq_producer_entry_check(&e, &h, &dup, NULL), KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
}

static void test_several_batches_in_one_append(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_wr_t w;
    kiq_wr_init(&w);
    make_batch(&w, 2, PID, 0, 0);
    make_batch(&w, 2, PID, 0, 2);
    make_batch(&w, 1, 77, 0, 0);
    kiq_log_append_result_t res;
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 0, 0, NULL, &res), 0);
    assert_false(res.duplicate);
    assert_int_equal(res.base_offset, 0);
    assert_int_equal(res.last_offset, 4);
    /* the same request retried: answered with its first batch's offsets */
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 0, 0, NULL, &res), 0);
    assert_true(res.duplicate);
    assert_int_equal(res.base_offset, 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 5);
    kiq_wr_free(&w);
    /* a gap inside one append refuses the whole append */
    kiq_wr_init(&w);
    make_batch(&w, 1, PID, 0, 4);
    make_batch(&w, 1, PID, 0, 6);
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 0, 0, NULL, &res),
                     KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(kiq_partition_log_end_offset(l), 5);
    kiq_producer_entry_t e;
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.batches[e.nbatches - 1].last_seq, 3);
    kiq_wr_free(&w);
    /* the plain append refuses what the checks refuse */
    kiq_wr_init(&w);
    make_batch(&w, 1, PID, 0, 9);
    assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 0, NULL, NULL), -1);
    kiq_wr_free(&w);
    kiq_partition_log_free(l);
}

#define RACE_THREADS 4
#define RACE_BATCHES 300

typedef struct race {
    kiq_partition_log_t *l;
    int bad; /* answers with the wrong offset, or unexpected codes */
} race_t;

/* Every thread sends the same batches (one record each, sequence k at
 * offset k), like several connections of one producer retrying. */
static void *race_main(void *arg)
{
    race_t *r = arg;
    for (int k = 0; k < RACE_BATCHES; k++) {
        kiq_log_append_result_t res;
        int rc = append(r->l, 1, PID, 0, k, &res);
        /* a thread far behind is told it is out of order */
        if (rc == KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER) continue;
        if (rc != 0 || res.base_offset != k) __atomic_add_fetch(&r->bad, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_racing_appends_are_atomic(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    race_t r = {l, 0};
    pthread_t t[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) assert_int_equal(pthread_create(&t[i], NULL, race_main, &r), 0);
    for (int i = 0; i < RACE_THREADS; i++) pthread_join(t[i], NULL);
    assert_int_equal(r.bad, 0);
    assert_int_equal(kiq_partition_log_end_offset(l), RACE_BATCHES);
    kiq_partition_log_free(l);
}

static void test_clean_reopen_uses_the_snapshot(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(count_snapshots(f->dir), 0);
    seven_batches(l);
    kiq_partition_log_free(l);
    int64_t *offs;
    assert_int_equal(kiq_producer_state_list_snapshots(f->dir, &offs), 1);
    assert_int_equal(offs[0], 21);
    free(offs);
    kiq_log_config_t cfg = f->cfg;
    cfg.clean_shutdown = true;
    l = kiq_partition_log_open(f->dir, &cfg);
    assert_non_null(l);
    check_seven_known(l);
    kiq_partition_log_free(l);
}

static void test_unclean_reopen_scans_headers(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    seven_batches(l);
    kiq_partition_log_free(l);
    /* as if the process died before its close wrote the snapshot */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%020d.snapshot", f->dir, 21);
    assert_int_equal(unlink(path), 0);
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    check_seven_known(l);
    kiq_partition_log_free(l);
}

/* Small segments: every batch of 3 records rolls, and each roll snapshots. */
static kiq_partition_log_t *open_rolling(kiq_test_log_dir_t *f, bool clean)
{
    kiq_log_config_t cfg = f->cfg;
    cfg.segment_bytes = 150;
    cfg.clean_shutdown = clean;
    return kiq_partition_log_open(f->dir, &cfg);
}

static void test_rolls_keep_two_snapshots_and_a_corrupt_one_is_skipped(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = open_rolling(f, false);
    assert_non_null(l);
    seven_batches(l);
    kiq_log_segment_info_t segs[16];
    assert_true(kiq_partition_log_segments(l, segs, 16) >= 5);
    assert_int_equal(count_snapshots(f->dir), KIQ_SNAPSHOTS_KEPT);
    kiq_partition_log_free(l);
    int64_t *offs;
    assert_int_equal(kiq_producer_state_list_snapshots(f->dir, &offs), KIQ_SNAPSHOTS_KEPT);
    assert_int_equal(offs[KIQ_SNAPSHOTS_KEPT - 1], 21);
    /* tear the newest snapshot: the older one plus the headers after it */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%020lld.snapshot", f->dir, (long long)offs[KIQ_SNAPSHOTS_KEPT - 1]);
    assert_int_equal(truncate(path, 20), 0);
    free(offs);
    l = open_rolling(f, false);
    assert_non_null(l);
    assert_int_equal(access(path, F_OK), -1); /* removed */
    check_seven_known(l);
    kiq_partition_log_free(l);
    /* a flipped byte in every snapshot: everything is scanned */
    assert_int_equal(kiq_producer_state_list_snapshots(f->dir, &offs), KIQ_SNAPSHOTS_KEPT);
    for (int i = 0; i < KIQ_SNAPSHOTS_KEPT; i++) {
        snprintf(path, sizeof path, "%s/%020lld.snapshot", f->dir, (long long)offs[i]);
        FILE *fp = fopen(path, "r+");
        assert_non_null(fp);
        fseek(fp, 30, SEEK_SET);
        int c = fgetc(fp);
        fseek(fp, 30, SEEK_SET);
        fputc(c ^ 0x40, fp);
        fclose(fp);
    }
    free(offs);
    l = open_rolling(f, false);
    assert_non_null(l);
    assert_int_equal(count_snapshots(f->dir), 0);
    append_dup(l, 3, PID, 0, 21, 21);
    append_dup(l, 3, PID, 0, 9, 9);
    append_new(l, 3, PID, 0, 24, 24);
    kiq_partition_log_free(l);
}

static void test_truncation_rebuilds_the_state(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = open_rolling(f, false);
    assert_non_null(l);
    seven_batches(l);
    /* drop the batches from offset 12 on (sequences 12..20) */
    assert_int_equal(kiq_partition_log_truncate_to(l, 12), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 12);
    int64_t *offs;
    int n = kiq_producer_state_list_snapshots(f->dir, &offs);
    for (int i = 0; i < n; i++) assert_true(offs[i] <= 12);
    free(offs);
    kiq_producer_entry_t e;
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.batches[e.nbatches - 1].last_seq, 11);
    /* the truncated batches are appended again, not taken for duplicates */
    append_new(l, 3, PID, 0, 12, 12);
    append_dup(l, 3, PID, 0, 9, 9);
    /* truncation to before the producer's first batch forgets it */
    assert_int_equal(kiq_partition_log_truncate_to(l, 0), 0);
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 0);
    /* a retry of the producer's later batches goes on (what Kafka answers) */
    append_new(l, 3, PID, 0, 3, 0);
    kiq_partition_log_free(l);
    /* and the reopened log agrees */
    l = open_rolling(f, false);
    assert_non_null(l);
    append_dup(l, 3, PID, 0, 3, 0);
    append_new(l, 3, PID, 0, 6, 3);
    kiq_partition_log_free(l);
}

static void test_producer_ids_survive_restarts(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_producer_ids_t *p = kiq_producer_ids_new(f->root, 10);
    assert_non_null(p);
    int64_t id;
    for (int i = 0; i < 12; i++) {
        assert_int_equal(kiq_producer_ids_next(p, &id), 0);
        assert_int_equal(id, i);
    }
    kiq_producer_ids_free(p);
    /* the rest of the reserved block is skipped, never handed out twice */
    p = kiq_producer_ids_new(f->root, 10);
    assert_non_null(p);
    assert_int_equal(kiq_producer_ids_next(p, &id), 0);
    assert_int_equal(id, 20);
    kiq_producer_ids_free(p);
    /* a damaged file is refused rather than guessed */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" KIQ_PRODUCER_IDS_FILE, f->root);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("garbage\n", fp);
    fclose(fp);
    assert_null(kiq_producer_ids_new(f->root, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_duplicates_of_the_last_five, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_gap_and_epochs, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_the_batch_behind_a_refused_one_waits_for_it, setup,
                                        kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_sequence_wraps, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_several_batches_in_one_append, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_racing_appends_are_atomic, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_clean_reopen_uses_the_snapshot, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_unclean_reopen_scans_headers, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_rolls_keep_two_snapshots_and_a_corrupt_one_is_skipped, setup,
                                        kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_truncation_rebuilds_the_state, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_producer_ids_survive_restarts, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
