/* One log segment on real files: appending and finding batches through the
 * sparse index, reading bytes back, reopening, recovery from a torn tail
 * and from a corrupt CRC, rebuilding a damaged index, truncation, the
 * tail found without reading the file, and the timestamp search. Batches come from the record batch builder. */
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

#include "log/log_names.h"
#include "log/segment.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

#define BASE 1000
#define MAX_BATCHES 64

typedef struct fixture {
    kiq_test_log_dir_t *ld;            /* the segment files go right in ld->dir */
    kiq_wr_t all;                      /* every byte appended, in order */
    size_t pos[MAX_BATCHES + 1];       /* position of batch i; pos[n] = end */
    int64_t first[MAX_BATCHES];        /* base offset of batch i */
    int n;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !(f->ld = kiq_test_log_dir_new("segment", NULL))) {
        free(f);
        return -1;
    }
    f->ld->cfg.index_interval_bytes = 200;
    kiq_wr_init(&f->all);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_test_log_dir_free(f->ld);
    kiq_wr_free(&f->all);
    free(f);
    return 0;
}

/* One uncompressed batch of n records with timestamps ts, ts+1, ... and
 * value_len-byte values, its base offset set to base. */
static void make_batch(kiq_wr_t *w, int64_t base, int n, int64_t ts, int value_len)
{
    char value[512];
    memset(value, 'v', sizeof value);
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, ts);
    for (int i = 0; i < n; i++)
        assert_int_equal(kiq_batch_builder_add(&b, "k", 1, value, value_len, NULL, 0, ts + i), 0);
    size_t at = w->len;
    assert_int_equal(kiq_batch_builder_finish(&b, w), 0);
    kiq_batch_builder_free(&b);
    kiq_batch_set_base_offset(w->buf + at, base);
}

/* Appends `count` batches of 3 records (one append call each) and records
 * where they went. */
static void append_batches(fixture_t *f, kiq_segment_t *seg, int count, int64_t ts)
{
    for (int i = 0; i < count; i++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        int64_t base = f->n == 0 ? BASE : f->first[f->n - 1] + 3;
        make_batch(&w, base, 3, ts + f->n * 10, 40);
        assert_int_equal(kiq_segment_append(seg, w.buf, w.len), 0);
        f->first[f->n] = base;
        f->pos[f->n] = f->all.len;
        kiq_wr_raw(&f->all, w.buf, w.len);
        f->n++;
        f->pos[f->n] = f->all.len;
        kiq_wr_free(&w);
    }
}

static void seg_path(fixture_t *f, const char *suffix, char *buf, size_t n)
{
    assert_int_equal(kiq_log_segment_path(buf, n, f->ld->dir, BASE, suffix), 0);
}

static off_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void cut_file(const char *path, off_t size) { assert_int_equal(truncate(path, size), 0); }

static void flip_byte(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

/* Every index entry names the last offset of the batch starting at its position. */
static int check_entry(const kiq_batch_loc_t *loc, void *ctx)
{
    *(int64_t *)ctx = loc->last_offset;
    return 1;
}

static void assert_index_matches_log(kiq_segment_t *seg)
{
    for (size_t i = 0; i < seg->oix.count; i++) {
        int64_t last = -1;
        assert_int_equal(kiq_segment_walk(seg, seg->oix.slots[i].pos, check_entry, &last), 1);
        assert_int_equal(last, seg->base_offset + seg->oix.slots[i].rel);
    }
}

static void test_append_find_read(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 30, 1000000);

    /* Three more batches in a single append. */
    kiq_wr_t w;
    kiq_wr_init(&w);
    for (int i = 0; i < 3; i++) {
        size_t at = w.len;
        make_batch(&w, f->first[f->n - 1] + 3, 3, 2000000, 40);
        f->first[f->n] = f->first[f->n - 1] + 3;
        f->pos[f->n] = f->all.len + at;
        f->n++;
    }
    assert_int_equal(kiq_segment_append(seg, w.buf, w.len), 0);
    kiq_wr_raw(&f->all, w.buf, w.len);
    f->pos[f->n] = f->all.len;
    kiq_wr_free(&w);

    assert_int_equal(seg->size, f->all.len);
    assert_int_equal(seg->next_offset, BASE + 3 * f->n);
    assert_int_equal(seg->max_timestamp, 2000002);
    /* ~200-byte batches with a 200-byte interval: an entry every other batch. */
    assert_true(seg->oix.count >= (size_t)f->n / 3);
    assert_true(seg->tix.count >= 1);
    assert_index_matches_log(seg);

    for (int b = 0; b < f->n; b++) {
        for (int64_t off = f->first[b]; off < f->first[b] + 3; off++) {
            kiq_batch_loc_t loc;
            assert_int_equal(kiq_segment_find(seg, off, &loc), 1);
            assert_int_equal(loc.position, f->pos[b]);
            assert_int_equal(loc.size, f->pos[b + 1] - f->pos[b]);
            assert_int_equal(loc.base_offset, f->first[b]);
            assert_int_equal(loc.last_offset, f->first[b] + 2);
        }
    }
    kiq_batch_loc_t loc;
    assert_int_equal(kiq_segment_find(seg, BASE - 10, &loc), 1);
    assert_int_equal(loc.position, 0);
    assert_int_equal(kiq_segment_find(seg, seg->next_offset, &loc), 0);

    uint8_t *buf = malloc(f->all.len);
    assert_int_equal(kiq_segment_read(seg, 0, buf, f->all.len), 0);
    assert_memory_equal(buf, f->all.buf, f->all.len);
    assert_int_equal(kiq_segment_read(seg, f->pos[5], buf, f->pos[6] - f->pos[5]), 0);
    assert_memory_equal(buf, f->all.buf + f->pos[5], f->pos[6] - f->pos[5]);
    assert_int_equal(kiq_segment_read(seg, 1, buf, f->all.len), -1);
    free(buf);
    kiq_segment_close(seg);
}

static void test_append_rejects_bad_input(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 2, 1000);
    char path[256];
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);

    kiq_wr_t w;
    kiq_wr_init(&w);
    make_batch(&w, BASE + 5, 3, 1000, 10); /* overlaps offsets already stored */
    assert_int_equal(kiq_segment_append(seg, w.buf, w.len), -1);
    kiq_batch_set_base_offset(w.buf, BASE + 6);
    assert_int_equal(kiq_segment_append(seg, w.buf, w.len - 1), -1); /* truncated */
    w.buf[KIQ_BATCH_POS_MAGIC] = 1;
    assert_int_equal(kiq_segment_append(seg, w.buf, w.len), -1); /* old format */
    assert_int_equal(kiq_segment_append(seg, w.buf, 0), 0);

    assert_int_equal(seg->size, f->all.len);
    assert_int_equal(file_size(path), (off_t)f->all.len);
    assert_int_equal(seg->next_offset, BASE + 6);

    /* Gaps are allowed (compacted logs have them). */
    w.buf[KIQ_BATCH_POS_MAGIC] = 2;
    kiq_batch_set_base_offset(w.buf, BASE + 100);
    assert_int_equal(kiq_segment_append(seg, w.buf, w.len), 0);
    assert_int_equal(seg->next_offset, BASE + 103);
    kiq_batch_loc_t loc;
    assert_int_equal(kiq_segment_find(seg, BASE + 50, &loc), 1);
    assert_int_equal(loc.base_offset, BASE + 100);
    kiq_wr_free(&w);
    kiq_segment_close(seg);

    /* A second create of the same segment refuses to clobber it. */
    assert_null(kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg));
}

static void test_reopen(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 20, 5000);
    size_t entries = seg->oix.count;
    int64_t max_ts = seg->max_timestamp;
    kiq_segment_close(seg);

    kiq_segment_recovery_t rep = {0};
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, false, &rep);
    assert_non_null(seg);
    assert_false(rep.index_rebuilt);
    assert_int_equal(rep.bytes_truncated, 0);
    /* Only the tail after the last index entry was scanned. */
    assert_true(rep.batches >= 1 && rep.batches < f->n);
    assert_int_equal(seg->size, f->all.len);
    assert_int_equal(seg->next_offset, BASE + 3 * f->n);
    assert_int_equal(seg->max_timestamp, max_ts);
    assert_int_equal(seg->oix.count, entries);
    /* The close added the final time index entry for the largest timestamp. */
    kiq_time_entry_t te;
    assert_true(kiq_time_index_last(&seg->tix, &te));
    assert_int_equal(te.timestamp, max_ts);
    assert_int_equal(te.offset, seg->next_offset - 1);

    /* Appending goes on where it stopped. */
    append_batches(f, seg, 5, 9000);
    assert_int_equal(seg->next_offset, BASE + 3 * f->n);
    assert_index_matches_log(seg);
    kiq_segment_close(seg);

    memset(&rep, 0, sizeof rep);
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, true, &rep);
    assert_non_null(seg);
    assert_true(rep.index_rebuilt);
    assert_int_equal(rep.batches, f->n);
    assert_int_equal(rep.bytes_truncated, 0);
    assert_int_equal(seg->size, f->all.len);
    assert_index_matches_log(seg);
    kiq_segment_close(seg);
}

static void torn_tail(void **state, bool full_scan)
{
    fixture_t *f = *state;
    /* ~205-byte batches: index entries at batches 2 and 4, so a scan from
     * the last entry starts one batch before the torn one. */
    f->ld->cfg.index_interval_bytes = 300;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 6, 1000);
    kiq_offset_entry_t last;
    assert_true(kiq_offset_index_last(&seg->oix, &last));
    assert_int_equal(last.position, f->pos[4]);
    kiq_segment_close(seg);

    char path[256];
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);
    cut_file(path, (off_t)f->all.len - 3);

    kiq_segment_recovery_t rep = {0};
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, full_scan, &rep);
    assert_non_null(seg);
    assert_int_equal(rep.bytes_truncated, f->pos[6] - f->pos[5] - 3);
    assert_int_equal(rep.index_rebuilt, full_scan);
    assert_int_equal(rep.batches, full_scan ? 5 : 1);
    assert_int_equal(seg->size, f->pos[5]);
    assert_int_equal(file_size(path), (off_t)f->pos[5]);
    assert_int_equal(seg->next_offset, f->first[5]);
    assert_int_equal(seg->max_timestamp, 1000 + 4 * 10 + 2);
    assert_int_equal(seg->oix.count, 2);
    assert_index_matches_log(seg);
    kiq_batch_loc_t loc;
    assert_int_equal(kiq_segment_find(seg, f->first[5], &loc), 0);
    assert_int_equal(kiq_segment_find(seg, f->first[3], &loc), 1);
    assert_int_equal(loc.position, f->pos[3]);

    /* The next append lands right where the torn batch was. */
    f->n = 5;
    f->all.len = f->pos[5];
    append_batches(f, seg, 1, 7000);
    assert_int_equal(seg->next_offset, f->first[5] + 3);
    kiq_segment_close(seg);
    assert_int_equal(file_size(path), (off_t)f->all.len);
}

static void test_torn_tail_full_scan(void **state) { torn_tail(state, true); }

static void test_torn_tail_from_last_index_entry(void **state) { torn_tail(state, false); }

static void test_header_only_remnant(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 3, 1000);
    kiq_segment_close(seg);

    /* Fewer bytes than a header left after the last whole batch. */
    char path[256];
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);
    cut_file(path, (off_t)f->pos[2] + 20);
    kiq_segment_recovery_t rep = {0};
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, true, &rep);
    assert_non_null(seg);
    assert_int_equal(rep.batches, 2);
    assert_int_equal(rep.bytes_truncated, 20);
    assert_int_equal(seg->size, f->pos[2]);
    kiq_segment_close(seg);
}

static void test_corrupt_crc_in_the_middle(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 6, 1000);
    kiq_segment_close(seg);

    /* A byte of batch 2's records changes: its CRC no longer matches. */
    char path[256];
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);
    flip_byte(path, (off_t)f->pos[2] + KIQ_BATCH_HEADER_SIZE + 10);

    kiq_segment_recovery_t rep = {0};
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, true, &rep);
    assert_non_null(seg);
    assert_int_equal(rep.batches, 2);
    assert_int_equal(rep.bytes_truncated, f->all.len - f->pos[2]);
    assert_int_equal(seg->size, f->pos[2]);
    assert_int_equal(seg->next_offset, f->first[2]);
    assert_index_matches_log(seg);
    /* No time index entry may name a lost offset. */
    kiq_time_entry_t te;
    if (kiq_time_index_last(&seg->tix, &te)) assert_true(te.offset < seg->next_offset);
    kiq_segment_close(seg);
}

static void test_damaged_index_rebuilt(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 12, 1000);
    size_t entries = seg->oix.count;
    assert_true(entries >= 2);
    kiq_segment_close(seg);

    /* Overwrite the second entry with one that goes backwards. */
    char path[256];
    seg_path(f, KIQ_INDEX_SUFFIX, path, sizeof path);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    const uint8_t bad[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(pwrite(fd, bad, sizeof bad, 8), 8);
    close(fd);

    kiq_segment_recovery_t rep = {0};
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, false, &rep);
    assert_non_null(seg);
    assert_true(rep.index_rebuilt);
    assert_int_equal(rep.bytes_truncated, 0);
    assert_int_equal(seg->oix.count, entries);
    assert_int_equal(seg->size, f->all.len);
    assert_index_matches_log(seg);
    for (int b = 0; b < f->n; b++) {
        kiq_batch_loc_t loc;
        assert_int_equal(kiq_segment_find(seg, f->first[b] + 1, &loc), 1);
        assert_int_equal(loc.position, f->pos[b]);
    }
    kiq_segment_close(seg);

    /* An index entry pointing at something that is not its batch. */
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    uint8_t last[8];
    kiq_put_be32(last, (uint32_t)(f->first[f->n - 1] + 2 - BASE));
    kiq_put_be32(last + 4, (uint32_t)f->pos[f->n - 1] + 5);
    assert_int_equal(pwrite(fd, last, sizeof last, (off_t)(entries - 1) * 8), 8);
    close(fd);
    memset(&rep, 0, sizeof rep);
    seg = kiq_segment_open(f->ld->dir, BASE, &f->ld->cfg, false, &rep);
    assert_non_null(seg);
    assert_true(rep.index_rebuilt);
    assert_int_equal(rep.bytes_truncated, 0);
    assert_int_equal(seg->size, f->all.len);
    assert_int_equal(seg->next_offset, BASE + 3 * f->n);
    kiq_segment_close(seg);
}

static void test_truncate_to(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 10, 1000);

    /* An offset inside batch 6: that whole batch goes. */
    assert_int_equal(kiq_segment_truncate_to(seg, f->first[6] + 1), 0);
    assert_int_equal(seg->size, f->pos[6]);
    assert_int_equal(seg->next_offset, f->first[6]);
    assert_int_equal(seg->max_timestamp, 1000 + 5 * 10 + 2);
    for (size_t i = 0; i < seg->oix.count; i++) assert_true(seg->oix.slots[i].pos < f->pos[6]);
    assert_index_matches_log(seg);
    /* Past the end: nothing to do. */
    assert_int_equal(kiq_segment_truncate_to(seg, f->first[6] + 100), 0);
    assert_int_equal(seg->size, f->pos[6]);

    f->n = 6;
    f->all.len = f->pos[6];
    append_batches(f, seg, 4, 50000);
    assert_int_equal(seg->size, f->all.len);
    for (int b = 0; b < f->n; b++) {
        kiq_batch_loc_t loc;
        assert_int_equal(kiq_segment_find(seg, f->first[b], &loc), 1);
        assert_int_equal(loc.position, f->pos[b]);
    }
    assert_int_equal(kiq_segment_truncate_to(seg, BASE), 0);
    assert_int_equal(seg->size, 0);
    assert_int_equal(seg->next_offset, BASE);
    assert_int_equal(seg->oix.count, 0);
    assert_int_equal(seg->tix.count, 0);
    assert_int_equal(seg->max_timestamp, -1);
    kiq_segment_close(seg);
}

/* A walk's batches, in order. */
typedef struct seen {
    kiq_batch_loc_t loc[MAX_BATCHES];
    int n;
} seen_t;

static int see(const kiq_batch_loc_t *loc, void *ctx)
{
    seen_t *s = ctx;
    if (s->n < MAX_BATCHES) s->loc[s->n++] = *loc;
    return 0;
}

/* A reader at the tail (a consumer or follower waiting for the next batch)
 * asks for the last batch appended: found from what the append noted, not
 * from the file, and never stale after a truncation. */
static void test_tail_found_without_reading(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 8, 1000);
    /* the last batch's base offset altered on disk: a lookup that read the
     * file would see it (the header is not covered by the CRC) */
    char path[4096];
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);
    flip_byte(path, (off_t)f->pos[7] + 7);
    for (int64_t o = f->first[7]; o < f->first[7] + 3; o++) {
        kiq_batch_loc_t loc;
        assert_int_equal(kiq_segment_find(seg, o, &loc), 1);
        assert_int_equal(loc.position, f->pos[7]);
        assert_int_equal(loc.size, f->pos[8] - f->pos[7]);
        assert_int_equal(loc.base_offset, f->first[7]);
        assert_int_equal(loc.last_offset, f->first[7] + 2);
    }
    seen_t s = {.n = 0};
    assert_int_equal(kiq_segment_walk(seg, f->pos[7], see, &s), 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.loc[0].base_offset, f->first[7]);
    flip_byte(path, (off_t)f->pos[7] + 7);
    /* earlier batches are still found through the index and the file */
    kiq_batch_loc_t loc;
    assert_int_equal(kiq_segment_find(seg, f->first[6] + 1, &loc), 1);
    assert_int_equal(loc.position, f->pos[6]);
    s.n = 0;
    assert_int_equal(kiq_segment_walk(seg, f->pos[5], see, &s), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.loc[2].position, f->pos[7]);
    /* past the end: nothing */
    assert_int_equal(kiq_segment_find(seg, f->first[7] + 3, &loc), 0);

    /* cut inside batch 7 then appended again: the new tail, not the old */
    assert_int_equal(kiq_segment_truncate_to(seg, f->first[7]), 0);
    f->n = 7;
    f->all.len = f->pos[7];
    assert_int_equal(kiq_segment_find(seg, f->first[6] + 2, &loc), 1);
    assert_int_equal(loc.position, f->pos[6]);
    append_batches(f, seg, 1, 9000);
    assert_int_equal(kiq_segment_find(seg, f->first[7], &loc), 1);
    assert_int_equal(loc.position, f->pos[7]);
    assert_int_equal(loc.max_timestamp, 9000 + 7 * 10 + 2);
    kiq_segment_close(seg);
}

static void test_find_time(void **state)
{
    fixture_t *f = *state;
    f->ld->cfg.index_interval_bytes = 0; /* an index entry at every batch */
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    const int64_t ts[] = {1000, 3000, 2000, 5000, 4000, 5500};
    for (int i = 0; i < 6; i++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        make_batch(&w, BASE + 2 * i, 2, ts[i] - 1, 10); /* max timestamp ts[i] */
        assert_int_equal(kiq_segment_append(seg, w.buf, w.len), 0);
        kiq_wr_free(&w);
    }
    assert_int_equal(seg->max_timestamp, 5500);
    /* The time index only records new maxima. */
    assert_int_equal(seg->tix.count, 3);

    kiq_batch_loc_t loc;
    assert_int_equal(kiq_segment_find_time(seg, 0, &loc), 1);
    assert_int_equal(loc.base_offset, BASE);
    assert_int_equal(kiq_segment_find_time(seg, 1000, &loc), 1);
    assert_int_equal(loc.base_offset, BASE);
    assert_int_equal(kiq_segment_find_time(seg, 1001, &loc), 1);
    assert_int_equal(loc.base_offset, BASE + 2);
    assert_int_equal(kiq_segment_find_time(seg, 2500, &loc), 1);
    assert_int_equal(loc.base_offset, BASE + 2);
    assert_int_equal(kiq_segment_find_time(seg, 4500, &loc), 1);
    assert_int_equal(loc.base_offset, BASE + 6);
    assert_int_equal(loc.max_timestamp, 5000);
    assert_int_equal(kiq_segment_find_time(seg, 5001, &loc), 1);
    assert_int_equal(loc.base_offset, BASE + 10);
    assert_int_equal(kiq_segment_find_time(seg, 5501, &loc), 0);
    kiq_segment_close(seg);
}

/* A segment's path: the directory, the base offset in 20 digits, the
 * suffix; a negative base or a buffer without room for it all is refused. */
static void test_segment_path(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(kiq_log_segment_path(buf, sizeof buf, "d/t-0", 42, ".log"), 0);
    assert_string_equal(buf, "d/t-0/00000000000000000042.log");
    assert_int_equal(kiq_log_segment_path(buf, sizeof buf, "x", INT64_MAX, ".index"), 0);
    assert_string_equal(buf, "x/09223372036854775807.index");
    assert_int_equal(kiq_log_segment_path(buf, sizeof buf, "x", 0, ""), 0);
    assert_string_equal(buf, "x/00000000000000000000");
    assert_int_equal(kiq_log_segment_path(buf, sizeof buf, "x", -1, ".log"), -1);
    /* "x/" + 20 digits + ".log" is 26 bytes: 27 with its NUL fit, 26 do not */
    assert_int_equal(kiq_log_segment_path(buf, 27, "x", 7, ".log"), 0);
    assert_string_equal(buf, "x/00000000000000000007.log");
    memset(buf, '#', sizeof buf);
    assert_int_equal(kiq_log_segment_path(buf, 26, "x", 7, ".log"), -1);
    assert_int_equal(buf[0], '#'); /* nothing written */
}

static void test_delete_keeps_references_readable(void **state)
{
    fixture_t *f = *state;
    kiq_segment_t *seg = kiq_segment_create(f->ld->dir, BASE, &f->ld->cfg);
    assert_non_null(seg);
    append_batches(f, seg, 3, 1000);
    kiq_segment_t *ref = kiq_segment_ref(seg);
    assert_int_equal(kiq_segment_delete(seg), 0);
    char path[256];
    struct stat st;
    seg_path(f, KIQ_LOG_SUFFIX, path, sizeof path);
    assert_int_equal(stat(path, &st), -1);
    seg_path(f, KIQ_INDEX_SUFFIX, path, sizeof path);
    assert_int_equal(stat(path, &st), -1);
    seg_path(f, KIQ_TIMEINDEX_SUFFIX, path, sizeof path);
    assert_int_equal(stat(path, &st), -1);

    uint8_t *buf = malloc(f->all.len);
    assert_int_equal(pread(ref->fd, buf, f->all.len, 0), (ssize_t)f->all.len);
    assert_memory_equal(buf, f->all.buf, f->all.len);
    free(buf);
    kiq_segment_unref(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_find_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_rejects_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_full_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_from_last_index_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_only_remnant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_crc_in_the_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_index_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_to, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_found_without_reading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_keeps_references_readable, setup, teardown),
        cmocka_unit_test(test_segment_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
