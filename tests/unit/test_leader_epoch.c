/* The leader-epoch cache: its rules one by one (assign, end offsets by
 * epoch, truncation at either end), its checkpoint in Kafka's exact text
 * and the refusal of malformed ones; then through a real partition log:
 * epochs recorded by appends, a follower's appends (offsets and epochs
 * kept, overlaps refused, producer state replayed), truncation, the cache
 * after clean and unclean reopens and rebuilt from the batch headers, and
 * the high watermark with its replication-offset-checkpoint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/error.h"
#include "log/leader_epoch_cache.h"
#include "log/partition_log.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"
#include "log/topics.h"
#include "support/log_fixture.h"

#define PID 4242

static int setup(void **state)
{
    *state = kiq_test_log_dir_new("epoch", "t-0");
    return *state ? 0 : -1;
}

static void expect_entries(const kiq_leader_epoch_cache_t *c, const kiq_epoch_entry_t *want, size_t n)
{
    assert_int_equal(kiq_leader_epoch_cache_count(c), n);
    for (size_t i = 0; i < n; i++) {
        kiq_epoch_entry_t e = kiq_leader_epoch_cache_entry(c, i);
        assert_int_equal(e.epoch, want[i].epoch);
        assert_int_equal(e.start_offset, want[i].start_offset);
    }
}

static void expect_log_entries(kiq_partition_log_t *l, const kiq_epoch_entry_t *want, int n)
{
    kiq_epoch_entry_t got[16];
    assert_int_equal(kiq_partition_log_epochs(l, got, 16), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(got[i].epoch, want[i].epoch);
        assert_int_equal(got[i].start_offset, want[i].start_offset);
    }
}

static void expect_end(kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t leo, int32_t want_epoch, int64_t want_end)
{
    int32_t e = -7;
    int64_t o = -7;
    kiq_leader_epoch_cache_end_offset_for(c, epoch, leo, &e, &o);
    assert_int_equal(e, want_epoch);
    assert_int_equal(o, want_end);
}

static void expect_log_end(kiq_partition_log_t *l, int32_t epoch, int32_t want_epoch, int64_t want_end)
{
    int32_t e = -7;
    int64_t o = -7;
    assert_int_equal(kiq_partition_log_end_offset_for_epoch(l, epoch, &e, &o), 0);
    assert_int_equal(e, want_epoch);
    assert_int_equal(o, want_end);
}

/* (1,10) (3,20) (6,35) */
static kiq_leader_epoch_cache_t *three_epochs(void)
{
    kiq_leader_epoch_cache_t *c = kiq_leader_epoch_cache_new();
    assert_non_null(c);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 1, 10), 1);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 3, 20), 1);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 6, 35), 1);
    return c;
}

static void read_text(const char *path, char *buf, size_t n)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t r = fread(buf, 1, n - 1, fp);
    buf[r] = 0;
    fclose(fp);
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void checkpoint_path(const kiq_test_log_dir_t *f, char *buf, size_t n)
{
    snprintf(buf, n, "%s/" KIQ_LEADER_EPOCH_CHECKPOINT, f->dir);
}

/* ---- The cache alone ---- */

static void test_assign_rules(void **state)
{
    (void)state;
    kiq_leader_epoch_cache_t *c = kiq_leader_epoch_cache_new();
    assert_int_equal(kiq_leader_epoch_cache_latest_epoch(c), KIQ_UNDEFINED_EPOCH);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 0, 0), 1);
    /* the same epoch again keeps its first start offset */
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 0, 5), 0);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 2, 10), 1);
    /* a lower epoch, an older start offset, no epoch at all: ignored */
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 1, 20), 0);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 3, 5), 0);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 2, 4), 0);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, -1, 30), 0);
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 4, -1), 0);
    expect_entries(c, (kiq_epoch_entry_t[]){{0, 0}, {2, 10}}, 2);
    assert_int_equal(kiq_leader_epoch_cache_latest_epoch(c), 2);
    /* epoch 2 wrote nothing before epoch 4 started: it has no range left */
    assert_int_equal(kiq_leader_epoch_cache_assign(c, 4, 10), 1);
    expect_entries(c, (kiq_epoch_entry_t[]){{0, 0}, {4, 10}}, 2);
    kiq_leader_epoch_cache_clear(c);
    assert_int_equal(kiq_leader_epoch_cache_count(c), 0);
    kiq_leader_epoch_cache_free(c);
}

static void test_end_offset_for(void **state)
{
    (void)state;
    kiq_leader_epoch_cache_t *c = three_epochs();
    expect_end(c, 6, 50, 6, 50);  /* the latest: the log end */
    expect_end(c, 3, 50, 3, 35);  /* a middle one: where the next starts */
    expect_end(c, 1, 50, 1, 20);
    expect_end(c, 4, 50, 3, 35);  /* unknown, between known ones: the one below */
    expect_end(c, 5, 50, 3, 35);
    expect_end(c, 2, 50, 1, 20);
    expect_end(c, 0, 50, 0, 10);  /* below the first: where the first starts */
    expect_end(c, 7, 50, -1, -1); /* above the latest */
    expect_end(c, -1, 50, -1, -1);
    kiq_leader_epoch_cache_clear(c);
    expect_end(c, 0, 50, -1, -1);
    kiq_leader_epoch_cache_free(c);
}

static void test_epoch_for_offset(void **state)
{
    (void)state;
    kiq_leader_epoch_cache_t *c = three_epochs();
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 9), KIQ_UNDEFINED_EPOCH);
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 10), 1);
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 19), 1);
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 20), 3);
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 34), 3);
    assert_int_equal(kiq_leader_epoch_cache_epoch_for_offset(c, 1000), 6);
    kiq_leader_epoch_cache_free(c);
}

static void test_truncate_from_end(void **state)
{
    (void)state;
    kiq_leader_epoch_cache_t *c = three_epochs();
    assert_false(kiq_leader_epoch_cache_truncate_from_end(c, 36));
    assert_int_equal(kiq_leader_epoch_cache_count(c), 3);
    /* an epoch starting at the new end wrote nothing that is left */
    assert_true(kiq_leader_epoch_cache_truncate_from_end(c, 35));
    expect_entries(c, (kiq_epoch_entry_t[]){{1, 10}, {3, 20}}, 2);
    assert_false(kiq_leader_epoch_cache_truncate_from_end(c, 21));
    assert_true(kiq_leader_epoch_cache_truncate_from_end(c, 10));
    assert_int_equal(kiq_leader_epoch_cache_count(c), 0);
    kiq_leader_epoch_cache_free(c);
}

static void test_truncate_from_start(void **state)
{
    (void)state;
    kiq_leader_epoch_cache_t *c = three_epochs();
    assert_false(kiq_leader_epoch_cache_truncate_from_start(c, 5));
    assert_false(kiq_leader_epoch_cache_truncate_from_start(c, 10));
    expect_entries(c, (kiq_epoch_entry_t[]){{1, 10}, {3, 20}, {6, 35}}, 3);
    assert_true(kiq_leader_epoch_cache_truncate_from_start(c, 25));
    expect_entries(c, (kiq_epoch_entry_t[]){{3, 25}, {6, 35}}, 2);
    assert_true(kiq_leader_epoch_cache_truncate_from_start(c, 35));
    expect_entries(c, (kiq_epoch_entry_t[]){{6, 35}}, 1);
    assert_true(kiq_leader_epoch_cache_truncate_from_start(c, 40));
    expect_entries(c, (kiq_epoch_entry_t[]){{6, 40}}, 1);
    kiq_leader_epoch_cache_free(c);
}

static void test_checkpoint_text_and_round_trip(void **state)
{
    kiq_test_log_dir_t *f = *state;
    char path[256], text[256];
    snprintf(path, sizeof path, "%s/" KIQ_LEADER_EPOCH_CHECKPOINT, f->root);
    kiq_leader_epoch_cache_t *c = kiq_leader_epoch_cache_new();
    assert_int_equal(kiq_leader_epoch_cache_load(c, f->root), 1); /* no file */
    assert_int_equal(kiq_leader_epoch_cache_save(c, f->root), 0);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n0\n");
    kiq_leader_epoch_cache_free(c);

    c = three_epochs();
    assert_int_equal(kiq_leader_epoch_cache_save(c, f->root), 0);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n3\n1 10\n3 20\n6 35\n");
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(access(tmp, F_OK), -1);
    kiq_leader_epoch_cache_t *back = kiq_leader_epoch_cache_new();
    assert_int_equal(kiq_leader_epoch_cache_assign(back, 9, 99), 1); /* replaced by the load */
    assert_int_equal(kiq_leader_epoch_cache_load(back, f->root), 0);
    expect_entries(back, (kiq_epoch_entry_t[]){{1, 10}, {3, 20}, {6, 35}}, 3);
    /* Kafka's files: no trailing newline is fine too */
    write_text(path, "0\n2\n0 0\n4 17");
    assert_int_equal(kiq_leader_epoch_cache_load(back, f->root), 0);
    expect_entries(back, (kiq_epoch_entry_t[]){{0, 0}, {4, 17}}, 2);
    kiq_leader_epoch_cache_free(back);
    kiq_leader_epoch_cache_free(c);
}

static void test_malformed_checkpoints_are_refused(void **state)
{
    kiq_test_log_dir_t *f = *state;
    static const char *const bad[] = {
        "",                       /* empty */
        "1\n0\n",                 /* unknown version */
        "0\n",                    /* no count */
        "0\n2\n1 10\n",           /* fewer entries than announced */
        "0\n1\n1 10\n3 20\n",     /* more */
        "0\n1\nx 10\n",           /* not a number */
        "0\n1\n1 -5\n",           /* negative offset */
        "0\n1\n1 10 7\n",         /* a third field */
        "0\n1\n1\n",              /* a missing field */
        "0\n2\n3 10\n1 20\n",     /* epochs going backwards */
        "0\n2\n1 20\n3 10\n",     /* offsets going backwards */
        "0\n1\n99999999999 1\n",  /* epoch beyond int32 */
    };
    char path[256];
    snprintf(path, sizeof path, "%s/" KIQ_LEADER_EPOCH_CHECKPOINT, f->root);
    kiq_leader_epoch_cache_t *c = kiq_leader_epoch_cache_new();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(path, bad[i]);
        assert_int_equal(kiq_leader_epoch_cache_assign(c, 50, 500), 1);
        if (kiq_leader_epoch_cache_load(c, f->root) != -1) fail_msg("accepted checkpoint %zu: \"%s\"", i, bad[i]);
        assert_int_equal(kiq_leader_epoch_cache_count(c), 0);
    }
    kiq_leader_epoch_cache_free(c);
}

/* ---- Through a partition log ---- */

/* One 3-record batch per epoch in epochs[], through the leader path. */
static void leader_appends(kiq_partition_log_t *l, const int32_t *epochs, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t base;
        assert_int_equal(kiq_test_append_batch(l, 3, 1000 + i, epochs[i], &base, NULL), 0);
        assert_int_equal(base, 3 * i);
    }
}

/* Epochs 0,0,2,2,5: offsets 0..14, epoch 2 from 6, epoch 5 from 12. */
static kiq_partition_log_t *five_appends(kiq_test_log_dir_t *f)
{
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    leader_appends(l, (const int32_t[]){0, 0, 2, 2, 5}, 5);
    return l;
}

static const kiq_epoch_entry_t FIVE[] = {{0, 0}, {2, 6}, {5, 12}};

static void test_leader_appends_record_epochs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_latest_epoch(l), -1);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), -1);
    expect_log_end(l, 0, -1, -1);
    leader_appends(l, (const int32_t[]){0, 0, 2, 2, 5}, 5);
    expect_log_entries(l, FIVE, 3);
    assert_int_equal(kiq_partition_log_latest_epoch(l), 5);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), 5);
    expect_log_end(l, 1, 0, 6);
    expect_log_end(l, 0, 0, 6);
    expect_log_end(l, 2, 2, 12);
    expect_log_end(l, 4, 2, 12);
    expect_log_end(l, 5, 5, 15);
    expect_log_end(l, 6, -1, -1);
    /* the checkpoint is written as each epoch starts, not only at close */
    char path[256], text[128];
    checkpoint_path(f, path, sizeof path);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n3\n0 0\n2 6\n5 12\n");
    /* the stamped epochs are in the batches */
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(l, 6, 1 << 20, INT64_MAX, &w) > 0);
    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_header_parse(w.buf, w.len, &h), 0);
    assert_int_equal(h.partition_leader_epoch, 2);
    kiq_wr_free(&w);
    kiq_partition_log_free(l);
}

/* Everything the log holds, as a leader's fetch would send it. */
static void read_all(kiq_partition_log_t *l, int64_t from, kiq_wr_t *w)
{
    kiq_wr_init(w);
    assert_true(kiq_partition_log_read(l, from, 1 << 24, INT64_MAX, w) > 0);
}

static void test_follower_append_keeps_offsets_and_epochs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *leader = five_appends(f);
    char fdir[256];
    snprintf(fdir, sizeof fdir, "%s/follower-0", f->root);
    kiq_partition_log_t *fl = kiq_partition_log_open(fdir, &f->cfg);
    assert_non_null(fl);

    /* the first two batches, then the rest */
    kiq_wr_t all;
    read_all(leader, 0, &all);
    size_t two = 2 * f->batch_size;
    kiq_log_append_result_t res;
    assert_int_equal(kiq_partition_log_append_follower(fl, all.buf, two, &res), 0);
    assert_int_equal(res.base_offset, 0);
    assert_int_equal(res.last_offset, 5);
    assert_int_equal(kiq_partition_log_last_batch_epoch(fl), 0);
    assert_int_equal(kiq_partition_log_append_follower(fl, all.buf + two, all.len - two, &res), 0);
    assert_int_equal(res.base_offset, 6);
    assert_int_equal(res.last_offset, 14);
    assert_int_equal(kiq_partition_log_end_offset(fl), 15);
    expect_log_entries(fl, FIVE, 3);
    assert_int_equal(kiq_partition_log_last_batch_epoch(fl), 5);

    /* byte for byte what the leader has: nothing was restamped */
    kiq_wr_t copy;
    read_all(fl, 0, &copy);
    assert_int_equal(copy.len, all.len);
    assert_memory_equal(copy.buf, all.buf, all.len);
    kiq_wr_free(&copy);

    /* an overlap is refused and changes nothing */
    assert_int_equal(kiq_partition_log_append_follower(fl, all.buf + two, all.len - two, &res), -1);
    assert_non_null(strstr(kiq_error_get(), "below the log end"));
    assert_int_equal(kiq_partition_log_end_offset(fl), 15);

    /* a corrupt batch is refused */
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_test_make_batch(&w, 3, 5000);
    kiq_batch_set_base_offset(w.buf, 15);
    kiq_batch_set_leader_epoch(w.buf, 5);
    w.buf[w.len - 1] ^= 1;
    assert_int_equal(kiq_partition_log_append_follower(fl, w.buf, w.len, &res), -1);
    w.buf[w.len - 1] ^= 1;
    /* two batches whose offsets do not increase are refused */
    kiq_test_make_batch(&w, 3, 5000);
    kiq_batch_set_base_offset(w.buf + w.len / 2, 17);
    assert_int_equal(kiq_partition_log_append_follower(fl, w.buf, w.len, &res), -1);
    assert_int_equal(kiq_partition_log_end_offset(fl), 15);
    /* a gap (a compacted leader's log) is accepted; a new epoch starts there */
    kiq_batch_set_base_offset(w.buf + w.len / 2, 20);
    kiq_batch_set_leader_epoch(w.buf + w.len / 2, 7);
    assert_int_equal(kiq_partition_log_append_follower(fl, w.buf, w.len, &res), 0);
    assert_int_equal(res.base_offset, 15);
    assert_int_equal(res.last_offset, 22);
    assert_int_equal(kiq_partition_log_end_offset(fl), 23);
    expect_log_entries(fl, (kiq_epoch_entry_t[]){{0, 0}, {2, 6}, {5, 12}, {7, 20}}, 4);
    assert_int_equal(kiq_partition_log_last_batch_epoch(fl), 7);
    kiq_wr_free(&w);

    kiq_wr_free(&all);
    kiq_partition_log_free(fl);
    kiq_partition_log_free(leader);
}

/* One batch of n records of producer PID from seq, stamped as a leader
 * would have: base offset and leader epoch. */
static void idempotent_batch(kiq_wr_t *w, int n, int32_t seq, int64_t base, int32_t epoch)
{
    kiq_wr_init(w);
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, 1700000000000);
    kiq_batch_builder_set_producer(&b, PID, 0, seq);
    for (int i = 0; i < n; i++) assert_int_equal(kiq_batch_builder_add(&b, "k", 1, "v", 1, NULL, 0, 1700000000000), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, w), 0);
    kiq_batch_builder_free(&b);
    kiq_batch_set_base_offset(w->buf, base);
    kiq_batch_set_leader_epoch(w->buf, epoch);
}


/* What an append watch was told. */
typedef struct watched {
    int calls;
    int64_t base, last;
} watched_t;

static void watch_append(void *ctx, const kiq_log_append_result_t *res)
{
    watched_t *w = ctx;
    w->calls++;
    w->base = res->base_offset;
    w->last = res->last_offset;
}

static void test_follower_replays_producer_state(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_wr_t w;
    kiq_log_append_result_t res;
    idempotent_batch(&w, 4, 0, 0, 1);
    assert_int_equal(kiq_partition_log_append_follower(l, w.buf, w.len, &res), 0);
    kiq_wr_free(&w);
    /* a sequence gap: refused by a leader, taken from one */
    idempotent_batch(&w, 2, 10, 4, 1);
    assert_int_equal(kiq_partition_log_append_follower(l, w.buf, w.len, &res), 0);
    kiq_wr_free(&w);
    kiq_producer_entry_t e;
    assert_int_equal(kiq_partition_log_producer(l, PID, &e), 1);
    assert_int_equal(e.nbatches, 2);
    assert_int_equal(e.batches[1].first_seq, 10);
    assert_int_equal(e.batches[1].first_offset, 4);

    /* after a leader change, the producer retries its first batch here:
     * the follower's replay makes it a duplicate with its offsets */
    watched_t seen = {0};
    kiq_log_append_watch_t watch = {watch_append, &seen};
    idempotent_batch(&w, 4, 0, 0, 0);
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 2, 0, &watch, &res), 0);
    assert_true(res.duplicate);
    assert_int_equal(seen.calls, 0); /* nothing written: nothing to tell */
    assert_int_equal(res.base_offset, 0);
    assert_int_equal(res.last_offset, 3);
    kiq_wr_free(&w);
    /* and its next batch follows the replicated sequence */
    idempotent_batch(&w, 1, 12, 0, 0);
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 2, 0, &watch, &res), 0);
    assert_false(res.duplicate);
    assert_int_equal(res.base_offset, 6);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.base, 6);
    assert_int_equal(seen.last, 6);
    kiq_wr_free(&w);
    idempotent_batch(&w, 1, 20, 0, 0);
    assert_int_equal(kiq_partition_log_append_checked(l, w.buf, w.len, 2, 0, &watch, &res), KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(seen.calls, 1);
    kiq_wr_free(&w);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{1, 0}, {2, 6}}, 2);
    kiq_partition_log_free(l);
}

static void test_truncation_cuts_the_epochs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = five_appends(f);
    kiq_partition_log_set_high_watermark(l, 14);
    assert_int_equal(kiq_partition_log_truncate_to(l, 9), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 9);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{0, 0}, {2, 6}}, 2);
    expect_log_end(l, 2, 2, 9);
    expect_log_end(l, 0, 0, 6);
    expect_log_end(l, 5, -1, -1);
    assert_int_equal(kiq_partition_log_latest_epoch(l), 2);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), 2);
    assert_int_equal(kiq_partition_log_high_watermark(l), 9);
    char path[256], text[128];
    checkpoint_path(f, path, sizeof path);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n2\n0 0\n2 6\n");
    /* cutting inside a batch removes the whole batch */
    assert_int_equal(kiq_partition_log_truncate_to(l, 7), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 6);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{0, 0}}, 1);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), 0);
    /* the leader goes on in a new epoch */
    assert_int_equal(kiq_test_append_batch(l, 3, 2000, 8, NULL, NULL), 0);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{0, 0}, {8, 6}}, 2);
    assert_int_equal(kiq_partition_log_truncate_to(l, 0), 0);
    assert_int_equal(kiq_partition_log_epochs(l, NULL, 0), 0);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), -1);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n0\n");
    kiq_partition_log_free(l);
}

static void test_log_start_cuts_the_epochs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(2 * f->batch_size);
    kiq_partition_log_t *l = five_appends(f);
    kiq_partition_log_set_high_watermark(l, 0);
    assert_int_equal(kiq_partition_log_high_watermark(l), 0);
    /* DeleteRecords inside epoch 2 */
    assert_int_equal(kiq_partition_log_advance_start(l, 8), 0);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{2, 8}, {5, 12}}, 2);
    assert_int_equal(kiq_partition_log_high_watermark(l), 8);
    expect_log_end(l, 1, 1, 8); /* below the first known: from where the log starts */
    char path[256], text[128];
    checkpoint_path(f, path, sizeof path);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n2\n2 8\n5 12\n");
    /* retention deleting whole segments: the first left starts at 12 */
    kiq_partition_log_set_retention(l, -1, -1, (int64_t)f->batch_size);
    assert_true(kiq_partition_log_enforce_retention(l, 0) > 0);
    assert_int_equal(kiq_partition_log_start_offset(l), 12);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{5, 12}}, 1);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n1\n5 12\n");
    kiq_partition_log_free(l);
}

static void test_reopen_gives_the_same_cache(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(2 * f->batch_size);
    kiq_partition_log_free(five_appends(f));
    char path[256], text[128];
    checkpoint_path(f, path, sizeof path);

    /* clean */
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), 5);
    kiq_partition_log_free(l);

    /* unclean, everything rescanned */
    kiq_log_config_t unclean = f->cfg;
    unclean.clean_shutdown = false;
    l = kiq_partition_log_open_at(f->dir, &unclean, 0);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    kiq_partition_log_free(l);

    /* no checkpoint: rebuilt from the batch headers and written */
    assert_int_equal(unlink(path), 0);
    l = kiq_partition_log_open_at(f->dir, &unclean, -1);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n3\n0 0\n2 6\n5 12\n");
    kiq_partition_log_free(l);

    /* a malformed one: the same */
    write_text(path, "0\n3\n0 0\n2 six\n");
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n3\n0 0\n2 6\n5 12\n");
    kiq_partition_log_free(l);

    /* one missing the last epoch (a crash before it was written):
     * completed from the headers after its latest entry */
    write_text(path, "0\n1\n0 0\n");
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    kiq_partition_log_free(l);

    /* one naming epochs past the log end (their batches were lost) */
    write_text(path, "0\n4\n0 0\n2 6\n5 12\n9 15\n");
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    expect_log_entries(l, FIVE, 3);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n3\n0 0\n2 6\n5 12\n");
    kiq_partition_log_free(l);
}

static void test_torn_tail_drops_its_epoch(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_free(five_appends(f));
    /* the last batch (epoch 5, offsets 12..14) is torn */
    char seg[256];
    snprintf(seg, sizeof seg, "%s/%020d.log", f->dir, 0);
    assert_int_equal(truncate(seg, (off_t)(5 * f->batch_size - 10)), 0);
    kiq_log_config_t unclean = f->cfg;
    unclean.clean_shutdown = false;
    kiq_partition_log_t *l = kiq_partition_log_open_at(f->dir, &unclean, 0);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 12);
    expect_log_entries(l, (kiq_epoch_entry_t[]){{0, 0}, {2, 6}}, 2);
    assert_int_equal(kiq_partition_log_last_batch_epoch(l), 2);
    expect_log_end(l, 2, 2, 12);
    kiq_partition_log_free(l);
}

static void test_high_watermark_clamps(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = five_appends(f);
    /* the LEO found at open, and not following appends on its own */
    assert_int_equal(kiq_partition_log_high_watermark(l), 0);
    kiq_partition_log_free(l);
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_high_watermark(l), 15);
    assert_int_equal(kiq_test_append_batch(l, 3, 3000, 5, NULL, NULL), 0);
    assert_int_equal(kiq_partition_log_high_watermark(l), 15);
    kiq_partition_log_set_high_watermark(l, 100);
    assert_int_equal(kiq_partition_log_high_watermark(l), 18);
    kiq_partition_log_set_high_watermark(l, -5);
    assert_int_equal(kiq_partition_log_high_watermark(l), 0);
    kiq_partition_log_set_high_watermark(l, 10);
    assert_int_equal(kiq_partition_log_high_watermark(l), 10);
    /* a truncation above it leaves it alone */
    assert_int_equal(kiq_partition_log_truncate_to(l, 12), 0);
    assert_int_equal(kiq_partition_log_high_watermark(l), 10);
    kiq_partition_log_free(l);
}

static kiq_partition_log_t *topic_log(kiq_topics_t *t, int32_t p)
{
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    kiq_partition_log_t *l = topic->partitions[p]->log;
    kiq_topic_unref(topic);
    return l;
}

static void test_high_watermark_checkpoint(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_topics_t *t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("orders"), 2, 1, false), 0);
    for (int i = 0; i < 4; i++) assert_int_equal(kiq_test_append_batch(topic_log(t, 0), 3, 1000, 0, NULL, NULL), 0);
    assert_int_equal(kiq_test_append_batch(topic_log(t, 1), 3, 1000, 0, NULL, NULL), 0);
    kiq_partition_log_set_high_watermark(topic_log(t, 0), 9);
    kiq_partition_log_set_high_watermark(topic_log(t, 1), 3);
    assert_int_equal(kiq_topics_checkpoint_high_watermarks(t), 0);
    char path[256], text[256];
    snprintf(path, sizeof path, "%s/replication-offset-checkpoint", f->root);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n2\norders 0 9\norders 1 3\n");
    kiq_partition_log_set_high_watermark(topic_log(t, 1), 1);
    kiq_topics_free(t); /* writes it too */
    read_text(path, text, sizeof text);
    assert_string_equal(text, "0\n2\norders 0 9\norders 1 1\n");

    t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    assert_int_equal(kiq_partition_log_high_watermark(topic_log(t, 0)), 9);
    assert_int_equal(kiq_partition_log_high_watermark(topic_log(t, 1)), 1);
    assert_int_equal(kiq_partition_log_end_offset(topic_log(t, 0)), 12);
    kiq_topics_free(t);

    /* a value past the log end is clamped; a partition not named starts at its LEO */
    write_text(path, "0\n1\norders 0 500\n");
    t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    assert_int_equal(kiq_partition_log_high_watermark(topic_log(t, 0)), 12);
    assert_int_equal(kiq_partition_log_high_watermark(topic_log(t, 1)), 3);
    kiq_topics_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_rules),
        cmocka_unit_test(test_end_offset_for),
        cmocka_unit_test(test_epoch_for_offset),
        cmocka_unit_test(test_truncate_from_end),
        cmocka_unit_test(test_truncate_from_start),
        cmocka_unit_test_setup_teardown(test_checkpoint_text_and_round_trip, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_malformed_checkpoints_are_refused, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_leader_appends_record_epochs, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_follower_append_keeps_offsets_and_epochs, setup,
                                        kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_follower_replays_producer_state, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_truncation_cuts_the_epochs, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_log_start_cuts_the_epochs, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_gives_the_same_cache, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_drops_its_epoch, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_high_watermark_clamps, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_high_watermark_checkpoint, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
