/* The log cleaner: many updates per key compacted to the latest record of
 * each key at its original offset, the active segment untouched, tombstones
 * kept until delete.retention.ms and then gone, compressed batches rebuilt
 * with their codec, offset gaps read back through locate/read, and the swap
 * finished or undone by the next open. Real files; the clock is passed in. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log/cleaner.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

#define HOUR 3600000LL
#define T0 1700000000000LL
#define NKEYS 10
#define MAXREC 4096

static int setup(void **state)
{
    kiq_test_log_dir_t *f = kiq_test_log_dir_new("clean", "t-0");
    if (!f) return -1;
    f->cfg.segment_bytes = 1024;
    f->cfg.index_interval_bytes = 128;
    *state = f;
    return 0;
}

/* Record i has key "k<key_base + i % NKEYS>" and value "v<i>", or a null value when
 * tombstone(i); batches of `per_batch` records stamped ts. */
static void fill(kiq_partition_log_t *l, int n, int per_batch, int codec, int64_t ts, bool (*tombstone)(int),
                 int key_base)
{
    for (int i = 0; i < n; i += per_batch) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        kiq_batch_builder_t b;
        kiq_batch_builder_init(&b, codec, ts);
        for (int j = i; j < i + per_batch && j < n; j++) {
            char key[16], value[32];
            int kl = snprintf(key, sizeof key, "k%d", key_base + j % NKEYS);
            int vl = snprintf(value, sizeof value, "v%d-padding-padding", j);
            bool dead = tombstone && tombstone(j);
            assert_int_equal(kiq_batch_builder_add(&b, key, kl, dead ? NULL : value, dead ? -1 : vl, NULL, 0, ts), 0);
        }
        assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
        kiq_batch_builder_free(&b);
        assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 7, NULL, NULL), 0);
        kiq_wr_free(&w);
    }
}

/* What a read from the start gives back. */
typedef struct rec {
    int64_t offset;
    char key[16];
    char value[32]; /* "" for a tombstone */
    bool tombstone;
    int codec;
    int32_t leader_epoch;
} rec_t;

typedef struct readback {
    rec_t r[MAXREC];
    int n;
} readback_t;

static int collect(const kiq_record_t *r, void *ctx)
{
    readback_t *rb = ctx;
    assert_true(rb->n < MAXREC);
    rec_t *o = &rb->r[rb->n++];
    memset(o, 0, sizeof *o);
    o->offset = r->offset;
    if (r->key.p) memcpy(o->key, r->key.p, (size_t)r->key.len);
    o->tombstone = r->value.p == NULL;
    if (r->value.p) memcpy(o->value, r->value.p, (size_t)r->value.len);
    o->codec = kiq_batch_codec(r->batch);
    o->leader_epoch = r->batch->partition_leader_epoch;
    return 0;
}

/* Reads everything through kiq_partition_log_read, which goes through
 * locate, from the log start on; offsets must only increase. */
static void read_all(kiq_partition_log_t *l, readback_t *rb)
{
    rb->n = 0;
    int64_t offset = kiq_partition_log_start_offset(l), leo = kiq_partition_log_end_offset(l);
    while (offset < leo) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        int got = kiq_partition_log_read(l, offset, 4096, INT64_MAX, &w);
        assert_true(got > 0);
        kiq_batch_iter_t it;
        const uint8_t *b;
        size_t blen;
        kiq_batch_header_t h;
        kiq_batch_iter_init(&it, w.buf, w.len, false);
        while (kiq_batch_iter_next(&it, &b, &blen, &h) == 1) {
            assert_int_equal(kiq_batch_check(b, blen, NULL), 0);
            if (kiq_batch_last_offset(&h) < offset) continue;
            assert_int_equal(kiq_batch_foreach_record(b, blen, KIQ_BATCH_MAX_DECOMPRESSED, collect, rb), 0);
            offset = kiq_batch_last_offset(&h) + 1;
        }
        kiq_wr_free(&w);
    }
    for (int i = 1; i < rb->n; i++) assert_true(rb->r[i].offset > rb->r[i - 1].offset);
}

static int find_key(const readback_t *rb, const char *key, int from, int to)
{
    int count = 0;
    for (int i = from; i < to; i++) count += strcmp(rb->r[i].key, key) == 0;
    return count;
}

static kiq_cleaner_options_t opts(int64_t now, int64_t delete_retention)
{
    return (kiq_cleaner_options_t){.now_ms = now, .delete_retention_ms = delete_retention};
}

/* Checks the log after a clean against what was read before it: every
 * record of the closed segments whose key has a later record there is
 * gone, the others are there unchanged at the same offset, and the
 * active segment reads back identically. */
static void check_compacted(kiq_partition_log_t *l, const readback_t *before, int64_t active_base, bool tombs_gone)
{
    static readback_t after;
    read_all(l, &after);
    int j = 0;
    for (int i = 0; i < before->n; i++) {
        const rec_t *r = &before->r[i];
        bool superseded = false;
        if (r->offset < active_base)
            for (int k = i + 1; k < before->n && before->r[k].offset < active_base; k++)
                if (strcmp(before->r[k].key, r->key) == 0) superseded = true;
        bool expect = r->offset >= active_base || (!superseded && !(tombs_gone && r->tombstone));
        if (!expect) {
            assert_true(j >= after.n || after.r[j].offset != r->offset);
            continue;
        }
        assert_true(j < after.n);
        assert_int_equal(after.r[j].offset, r->offset);
        assert_string_equal(after.r[j].key, r->key);
        assert_string_equal(after.r[j].value, r->value);
        assert_int_equal(after.r[j].tombstone, r->tombstone);
        assert_int_equal(after.r[j].codec, r->codec);
        assert_int_equal(after.r[j].leader_epoch, r->leader_epoch);
        j++;
    }
    assert_int_equal(j, after.n);
}

/* A pass as the broker's cleaner makes it: the high watermark (which the
 * replication layer moves) at the log end, so everything is committed. */
static int clean(kiq_partition_log_t *l, const kiq_cleaner_options_t *o, kiq_cleaner_stats_t *st)
{
    kiq_partition_log_set_high_watermark(l, kiq_partition_log_end_offset(l));
    return kiq_log_clean(l, o, st);
}

static int64_t active_base(kiq_partition_log_t *l)
{
    kiq_log_segment_info_t info[256];
    int n = kiq_partition_log_segments(l, info, 256);
    assert_true(n > 0 && n <= 256);
    return info[n - 1].base_offset;
}

static void compact_many_updates(kiq_test_log_dir_t *f, int codec, int per_batch)
{
    static readback_t before, after;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    fill(l, 400, per_batch, codec, T0, NULL, 0);
    kiq_log_segment_info_t seg_before[256], seg_after[256];
    int nseg = kiq_partition_log_segments(l, seg_before, 256);
    assert_true(nseg > 3);
    int64_t leo = kiq_partition_log_end_offset(l), abase = active_base(l);
    read_all(l, &before);
    assert_int_equal(before.n, 400);

    kiq_cleaner_options_t o = opts(T0 + HOUR, 24 * HOUR);
    kiq_cleaner_stats_t st;
    int replaced = clean(l, &o, &st);
    assert_true(replaced > 0);
    assert_int_equal(st.segments_cleaned, replaced);
    assert_true(st.bytes_after < st.bytes_before);

    /* same offsets, same segments by base; the active one byte for byte */
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
    assert_int_equal(kiq_partition_log_start_offset(l), 0);
    assert_int_equal(kiq_partition_log_segments(l, seg_after, 256), nseg);
    for (int i = 0; i < nseg; i++) assert_int_equal(seg_after[i].base_offset, seg_before[i].base_offset);
    assert_int_equal(seg_after[nseg - 1].size, seg_before[nseg - 1].size);
    assert_int_equal(seg_after[nseg - 1].next_offset, seg_before[nseg - 1].next_offset);
    check_compacted(l, &before, abase, false);

    /* one record per key below the active segment, the latest value */
    read_all(l, &after);
    int closed = 0;
    while (closed < after.n && after.r[closed].offset < abase) closed++;
    for (int k = 0; k < NKEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        assert_true(find_key(&after, key, 0, closed) <= 1);
    }
    assert_true(closed <= NKEYS);

    /* a second pass finds nothing to drop; a reopen reads the same */
    assert_int_equal(clean(l, &o, NULL), 0);
    kiq_partition_log_free(l);
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    check_compacted(l, &before, abase, false);
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
    kiq_partition_log_free(l);
}

static void test_many_updates(void **state) { compact_many_updates(*state, KIQ_CODEC_NONE, 3); }
static void test_many_updates_lz4(void **state) { compact_many_updates(*state, KIQ_CODEC_LZ4, 7); }
static void test_many_updates_zstd(void **state) { compact_many_updates(*state, KIQ_CODEC_ZSTD, 5); }
static void test_many_updates_gzip(void **state) { compact_many_updates(*state, KIQ_CODEC_GZIP, 4); }

/* Every key gets a last record that is a tombstone for keys 0..4. */
static bool late_tombstone(int i) { return i >= 190 && i < 200 && i % NKEYS < 5; }

static void test_tombstones(void **state)
{
    kiq_test_log_dir_t *f = *state;
    static readback_t before, after;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    fill(l, 200, 2, KIQ_CODEC_NONE, T0, late_tombstone, 0);
    /* later segments of other keys keep the tombstones' segment closed */
    fill(l, 60, 30, KIQ_CODEC_NONE, T0 + 2 * HOUR, NULL, NKEYS);
    int64_t abase = active_base(l);
    assert_true(abase > 200);
    read_all(l, &before);

    /* within delete.retention.ms: the tombstones stay, older values go */
    kiq_cleaner_options_t o = opts(T0 + 3 * HOUR, 24 * HOUR);
    assert_true(clean(l, &o, NULL) > 0);
    check_compacted(l, &before, abase, false);
    read_all(l, &after);
    int tombs = 0;
    for (int i = 0; i < after.n; i++) tombs += after.r[i].tombstone;
    assert_int_equal(tombs, 5);

    /* min.compaction.lag.ms newer than every segment: nothing happens */
    o = opts(T0 + 48 * HOUR, 24 * HOUR);
    o.min_compaction_lag_ms = 100 * HOUR;
    assert_int_equal(clean(l, &o, NULL), 0);

    /* past it: gone, and the keys with them */
    o.min_compaction_lag_ms = 0;
    assert_true(clean(l, &o, NULL) > 0);
    check_compacted(l, &before, abase, true);
    read_all(l, &after);
    for (int i = 0; i < after.n; i++) {
        assert_false(after.r[i].tombstone);
        if (after.r[i].offset < abase) {
            int k = atoi(after.r[i].key + 1);
            assert_true(k >= 5); /* keys 0..4 ended with a tombstone */
        }
    }
    kiq_partition_log_free(l);
}

static void test_keyless_records_dropped(void **state)
{
    kiq_test_log_dir_t *f = *state;
    static readback_t after;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 60; i++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        kiq_batch_builder_t b;
        kiq_batch_builder_init(&b, KIQ_CODEC_NONE, T0);
        assert_int_equal(kiq_batch_builder_add(&b, NULL, -1, "no-key-value-padding", 20, NULL, 0, T0), 0);
        assert_int_equal(kiq_batch_builder_add(&b, "k", 1, "keyed-value-padding", 19, NULL, 0, T0), 0);
        assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
        kiq_batch_builder_free(&b);
        assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 0, NULL, NULL), 0);
        kiq_wr_free(&w);
    }
    int64_t abase = active_base(l);
    kiq_cleaner_options_t o = opts(T0, HOUR);
    assert_true(clean(l, &o, NULL) > 0);
    read_all(l, &after);
    int closed = 0;
    for (int i = 0; i < after.n; i++) closed += after.r[i].offset < abase;
    assert_int_equal(closed, abase >= 2 ? 1 : 0);
    kiq_partition_log_free(l);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    assert_int_equal(fread(p, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const uint8_t *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    fclose(fp);
}

/* A crash after the swap file was complete but before it replaced the
 * segment: the next open finishes the swap; a partial .cleaned goes. */
static void test_interrupted_swap(void **state)
{
    kiq_test_log_dir_t *f = *state;
    static readback_t before, after, reopened;
    char logp[256], swap[256], cleaned[256], index[256];
    snprintf(logp, sizeof logp, "%s/%020d.log", f->dir, 0);
    snprintf(swap, sizeof swap, "%s/%020d" KIQ_SWAP_SUFFIX, f->dir, 0);
    snprintf(cleaned, sizeof cleaned, "%s/%020d" KIQ_CLEANED_SUFFIX, f->dir, 0);
    snprintf(index, sizeof index, "%s/%020d.index", f->dir, 0);

    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    fill(l, 300, 3, KIQ_CODEC_NONE, T0, NULL, 0);
    read_all(l, &before);
    kiq_partition_log_free(l);
    size_t old_len, new_len;
    uint8_t *old_bytes = slurp(logp, &old_len);

    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_cleaner_options_t o = opts(T0, HOUR);
    assert_true(clean(l, &o, NULL) > 0);
    read_all(l, &after);
    kiq_partition_log_free(l);
    uint8_t *new_bytes = slurp(logp, &new_len);
    assert_true(new_len < old_len);

    /* the old segment back in place with its old index, the cleaned one as
     * a swap, and a torn .cleaned beside them */
    spit(logp, old_bytes, old_len);
    spit(swap, new_bytes, new_len);
    spit(cleaned, new_bytes, new_len / 2);
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(access(swap, F_OK), -1);
    assert_int_equal(access(cleaned, F_OK), -1);
    assert_int_equal(access(index, F_OK), 0);
    read_all(l, &reopened);
    assert_int_equal(reopened.n, after.n);
    for (int i = 0; i < after.n; i++) {
        assert_int_equal(reopened.r[i].offset, after.r[i].offset);
        assert_string_equal(reopened.r[i].value, after.r[i].value);
    }
    assert_true(after.n < before.n);
    kiq_partition_log_free(l);
    free(old_bytes);
    free(new_bytes);
}

/* A reader holding slices of a segment keeps reading its old bytes after
 * the segment was swapped out. */
static void test_reader_keeps_old_file(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    fill(l, 300, 3, KIQ_CODEC_NONE, T0, NULL, 0);
    kiq_log_slices_t sl;
    int total = kiq_partition_log_locate(l, 0, 600, INT64_MAX, &sl);
    assert_true(total > 0);
    uint8_t *first = malloc((size_t)total);
    assert_int_equal(pread(sl.s[0].fd, first, sl.s[0].length, (off_t)sl.s[0].position), sl.s[0].length);
    kiq_cleaner_options_t o = opts(T0, HOUR);
    assert_true(clean(l, &o, NULL) > 0);
    uint8_t *again = malloc((size_t)total);
    assert_int_equal(pread(sl.s[0].fd, again, sl.s[0].length, (off_t)sl.s[0].position), sl.s[0].length);
    assert_memory_equal(first, again, sl.s[0].length);
    kiq_log_slices_release(&sl);
    free(first);
    free(again);
    kiq_partition_log_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_updates, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_many_updates_lz4, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_many_updates_zstd, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_many_updates_gzip, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_tombstones, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_keyless_records_dropped, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_swap, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reader_keeps_old_file, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
