/* The partition log on real files: directory naming, offset assignment
 * and stamping, rolling at log.segment.bytes with Kafka's file names,
 * reopening, recovery of a torn tail and of a corrupt batch in the last
 * segment, Fetch read semantics, timestamp lookup, truncation, deletion,
 * and appends racing reads from several threads. */
#include <fcntl.h>
#include <pthread.h>
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
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

static int setup(void **state)
{
    kiq_test_log_dir_t *f = kiq_test_log_dir_new("plog", "data/orders-0");
    if (!f) return -1;
    f->cfg.index_interval_bytes = 256;
    *state = f;
    return 0;
}

/* Appends one 3-record batch with timestamps from ts; returns its base offset. */
static int64_t append_one(kiq_partition_log_t *l, int64_t ts)
{
    int64_t base = -1, last = -1;
    assert_int_equal(kiq_test_append_batch(l, 3, ts, 5, &base, &last), 0);
    assert_int_equal(last, base + 2);
    return base;
}

static bool exists(const char *dir, int64_t base, const char *suffix)
{
    char path[256];
    struct stat st;
    assert_int_equal(kiq_log_segment_path(path, sizeof path, dir, base, suffix), 0);
    return stat(path, &st) == 0;
}

static void segment_file(const kiq_test_log_dir_t *f, int64_t base, char *buf, size_t n)
{
    assert_int_equal(kiq_log_segment_path(buf, n, f->dir, base, KIQ_LOG_SUFFIX), 0);
}

static void test_dir_names(void **state)
{
    char buf[64], topic[32];
    int32_t p;
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "orders", 3), 0);
    assert_string_equal(buf, "orders-3");
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "a.b_c-d", 0), 0);
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "../etc", 0), -1);
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "a/b", 0), -1);
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "..", 0), -1);
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "", 0), -1);
    assert_int_equal(kiq_log_dir_name(buf, sizeof buf, "orders", -1), -1);
    assert_int_equal(kiq_log_dir_name(buf, 8, "orders", 10), -1);

    assert_int_equal(kiq_log_dir_parse("my-topic-12", topic, sizeof topic, &p), 0);
    assert_string_equal(topic, "my-topic");
    assert_int_equal(p, 12);
    assert_int_equal(kiq_log_dir_parse("nodash", topic, sizeof topic, &p), -1);
    assert_int_equal(kiq_log_dir_parse("topic-", topic, sizeof topic, &p), -1);
    assert_int_equal(kiq_log_dir_parse("topic-1x", topic, sizeof topic, &p), -1);

    int64_t base;
    assert_int_equal(kiq_log_segment_path(buf, sizeof buf, "d", 368769, ".log"), 0);
    assert_string_equal(buf, "d/00000000000000368769.log");
    assert_true(kiq_log_segment_name_parse("00000000000000368769.log", ".log", &base));
    assert_int_equal(base, 368769);
    assert_false(kiq_log_segment_name_parse("00000000000000368769.index", ".log", &base));
    assert_false(kiq_log_segment_name_parse("0000000000000036876.log", ".log", &base));
    assert_false(kiq_log_segment_name_parse("99999999999999999999.log", ".log", &base));
}

static void test_open_empty(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_string_equal(kiq_partition_log_dir(l), f->dir);
    assert_int_equal(kiq_partition_log_start_offset(l), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 0);
    assert_true(exists(f->dir, 0, ".log"));
    assert_true(exists(f->dir, 0, ".index"));
    assert_true(exists(f->dir, 0, ".timeindex"));
    kiq_log_segment_info_t info[4];
    assert_int_equal(kiq_partition_log_segments(l, info, 4), 1);
    assert_int_equal(info[0].base_offset, 0);
    assert_int_equal(info[0].size, 0);

    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1000, INT64_MAX, &out), 0);
    assert_int_equal(kiq_partition_log_read(l, 1, 1000, INT64_MAX, &out), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(kiq_partition_log_read(l, -1, 1000, INT64_MAX, &out), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(out.len, 0);
    int64_t off = 7;
    assert_int_equal(kiq_partition_log_offset_for_time(l, 0, &off), 0);
    assert_int_equal(off, -1);
    kiq_partition_log_free(l);

    /* Reopening an empty log keeps it empty. */
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 0);
    kiq_partition_log_free(l);

    kiq_log_config_t bad = f->cfg;
    bad.segment_bytes = 10;
    assert_null(kiq_partition_log_open(f->dir, &bad));
}

static void test_append_assigns_and_stamps(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_one(l, 1000), 0);
    assert_int_equal(append_one(l, 2000), 3);
    assert_int_equal(append_one(l, 3000), 6);

    /* Two batches in one call: 3 and 2 records. */
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_test_make_batch(&w, 3, 4000);
    kiq_test_make_batch(&w, 2, 5000);
    int64_t base, last;
    assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 9, &base, &last), 0);
    assert_int_equal(base, 9);
    assert_int_equal(last, 13);
    assert_int_equal(kiq_partition_log_end_offset(l), 14);
    /* Stamped in the caller's buffer too. */
    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_header_parse(w.buf, w.len, &h), 0);
    assert_int_equal(h.base_offset, 9);
    assert_int_equal(h.partition_leader_epoch, 9);

    /* Garbage and empty appends change nothing. */
    assert_int_equal(kiq_partition_log_append(l, w.buf, 0, 9, &base, &last), -1);
    assert_int_equal(kiq_partition_log_append(l, w.buf, 30, 9, &base, &last), -1);
    assert_int_equal(kiq_partition_log_end_offset(l), 14);
    kiq_wr_free(&w);

    kiq_wr_t out;
    kiq_wr_init(&out);
    int n = kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out);
    assert_int_equal(n, (int)out.len);
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, NULL), 5);
    /* Epoch 5 on the single appends, 9 on the pair. */
    assert_int_equal(kiq_batch_header_parse(out.buf, out.len, &h), 0);
    assert_int_equal(h.partition_leader_epoch, 5);
    assert_int_equal(h.max_timestamp, 1002);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_roll_names_segments(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 10; i++) assert_int_equal(append_one(l, 1000 * i), 3 * i);

    kiq_log_segment_info_t info[8];
    assert_int_equal(kiq_partition_log_segments(l, info, 8), 4);
    const int64_t bases[] = {0, 9, 18, 27};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(info[i].base_offset, bases[i]);
        assert_true(info[i].size <= (uint64_t)f->cfg.segment_bytes);
        assert_true(exists(f->dir, bases[i], ".log"));
        assert_true(exists(f->dir, bases[i], ".index"));
        assert_true(exists(f->dir, bases[i], ".timeindex"));
    }
    assert_int_equal(info[0].next_offset, 9);
    assert_int_equal(info[3].size, f->batch_size);
    /* Sealed segments carry their largest timestamp in the time index. */
    assert_true(info[0].time_index_entries >= 1);
    assert_int_equal(info[1].max_timestamp, 5002);

    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)(10 * f->batch_size));
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, NULL), 10);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_oversized_batch(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)f->batch_size - 10;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    /* Bigger than a segment: goes into the empty one, then each into its own. */
    assert_int_equal(append_one(l, 0), 0);
    assert_int_equal(append_one(l, 0), 3);
    assert_int_equal(append_one(l, 0), 6);
    kiq_log_segment_info_t info[4];
    assert_int_equal(kiq_partition_log_segments(l, info, 4), 3);
    assert_int_equal(info[0].size, f->batch_size);
    assert_int_equal(info[2].base_offset, 6);
    kiq_partition_log_free(l);
}

static void reopen_and_compare(kiq_test_log_dir_t *f, bool clean, const kiq_wr_t *before, int64_t leo)
{
    f->cfg.clean_shutdown = clean;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
    assert_int_equal(kiq_partition_log_start_offset(l), 0);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, 0);
    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)before->len);
    assert_memory_equal(out.buf, before->buf, before->len);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_reopen_same_data(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(4 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 10; i++) append_one(l, 1000 * i);
    kiq_wr_t before;
    kiq_wr_init(&before);
    assert_true(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &before) > 0);
    assert_int_equal(kiq_partition_log_flush(l), 0);
    kiq_partition_log_free(l);

    reopen_and_compare(f, true, &before, 30);
    reopen_and_compare(f, false, &before, 30);

    /* Appends continue from the recovered end, in the last segment. */
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(append_one(l, 99), 30);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 3);
    kiq_partition_log_free(l);
    kiq_wr_free(&before);
}

static void test_torn_tail_recovered(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 9; i++) append_one(l, 1000 * i);
    kiq_partition_log_free(l);

    /* The last batch loses its last 5 bytes, as if the machine died mid-write. */
    char path[256];
    segment_file(f, 18, path, sizeof path);
    assert_int_equal(truncate(path, (off_t)(3 * f->batch_size - 5)), 0);

    f->cfg.clean_shutdown = false;
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 24);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, f->batch_size - 5);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, (off_t)(2 * f->batch_size));

    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 24, 1 << 20, INT64_MAX, &out), 0);
    assert_int_equal(kiq_partition_log_read(l, 25, 1 << 20, INT64_MAX, &out), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)(8 * f->batch_size));
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, NULL), 8);
    kiq_wr_free(&out);
    /* The lost offsets are assigned again. */
    assert_int_equal(append_one(l, 0), 24);
    kiq_partition_log_free(l);
}

static void test_corrupt_batch_in_last_segment(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(5 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 10; i++) append_one(l, 1000 * i);
    kiq_partition_log_free(l);

    /* A flipped bit in the records of the third batch of the last segment
     * (offsets 15..29, that batch holds 21..23). */
    char path[256];
    segment_file(f, 15, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t at = (off_t)(2 * f->batch_size + KIQ_BATCH_HEADER_SIZE + 20);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x01;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);

    f->cfg.clean_shutdown = false;
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 21);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, 3 * f->batch_size);
    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 15, 1 << 20, INT64_MAX, &out), (int)(2 * f->batch_size));
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 15, NULL), 2);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_read_semantics(void **state)
{
    kiq_test_log_dir_t *f = *state;
    const int32_t B = (int32_t)f->batch_size;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 5; i++) append_one(l, 1000 * i); /* offsets 0..14 */
    kiq_wr_t out;
    kiq_wr_init(&out);

    /* At least one whole batch, even past max_bytes. */
    assert_int_equal(kiq_partition_log_read(l, 0, 1, INT64_MAX, &out), B);
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, NULL), 1);
    out.len = 0;
    assert_int_equal(kiq_partition_log_read(l, 0, 0, INT64_MAX, &out), B);
    out.len = 0;
    /* Whole batches up to max_bytes. */
    assert_int_equal(kiq_partition_log_read(l, 0, 2 * B, INT64_MAX, &out), 2 * B);
    out.len = 0;
    assert_int_equal(kiq_partition_log_read(l, 0, 3 * B - 1, INT64_MAX, &out), 2 * B);
    out.len = 0;
    /* From inside a batch: that batch first. */
    assert_int_equal(kiq_partition_log_read(l, 4, 1, INT64_MAX, &out), B);
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 3, NULL), 1);
    out.len = 0;
    /* max_offset (exclusive): batches starting below it only. */
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, 4, &out), 2 * B);
    out.len = 0;
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, 3, &out), B);
    out.len = 0;
    assert_int_equal(kiq_partition_log_read(l, 3, 1 << 20, 3, &out), 0);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, 0, &out), 0);
    /* Appending to a writer that already holds bytes. */
    kiq_wr_raw(&out, "abc", 3);
    assert_int_equal(kiq_partition_log_read(l, 12, 1 << 20, INT64_MAX, &out), B);
    assert_int_equal(out.len, 3 + (size_t)B);
    assert_int_equal(kiq_test_check_batches(out.buf + 3, out.len - 3, 12, NULL), 1);
    out.len = 0;
    /* The end and beyond. */
    assert_int_equal(kiq_partition_log_read(l, 15, 1 << 20, INT64_MAX, &out), 0);
    assert_int_equal(kiq_partition_log_read(l, 16, 1 << 20, INT64_MAX, &out), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(kiq_partition_log_read(l, -1, 1 << 20, INT64_MAX, &out), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(out.len, 0);

    /* locate reports where the bytes are, for sendfile. */
    kiq_log_slices_t sl;
    assert_int_equal(kiq_partition_log_locate(l, 7, 2 * B, INT64_MAX, &sl), 2 * B);
    assert_int_equal(sl.n, 1);
    assert_int_equal(sl.s[0].position, 2 * (uint64_t)B);
    assert_int_equal(sl.s[0].length, 2 * B);
    assert_int_equal(sl.s[0].base_offset, 6);
    assert_int_equal(sl.s[0].last_offset, 11);
    assert_true(kiq_partition_log_unchanged(l, sl.generation));
    kiq_log_slices_release(&sl);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_read_across_segments(void **state)
{
    kiq_test_log_dir_t *f = *state;
    const int32_t B = (int32_t)f->batch_size;
    f->cfg.segment_bytes = 2 * B;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 7; i++) append_one(l, 1000 * i); /* segments 0, 6, 12, 18 */
    kiq_wr_t out;
    kiq_wr_init(&out);
    /* From the second batch of the first segment, through two more segments. */
    assert_int_equal(kiq_partition_log_read(l, 3, 4 * B, INT64_MAX, &out), 4 * B);
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 3, NULL), 4);
    out.len = 0;
    kiq_log_slices_t sl;
    assert_int_equal(kiq_partition_log_locate(l, 3, 4 * B, 15, &sl), 4 * B);
    assert_int_equal(sl.n, 3);
    assert_int_equal(sl.s[0].base_offset, 3);
    assert_int_equal(sl.s[1].base_offset, 6);
    assert_int_equal(sl.s[2].base_offset, 12);
    assert_int_equal(sl.s[2].last_offset, 14);
    kiq_log_slices_release(&sl);
    assert_int_equal(kiq_partition_log_read(l, 20, 1, INT64_MAX, &out), B);
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 18, NULL), 1);
    kiq_wr_free(&out);
    kiq_partition_log_free(l);
}

static void test_offset_for_time(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    f->cfg.index_interval_bytes = 0;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    /* Batch i holds timestamps 10000 + 1000 i .. + 2. */
    for (int i = 0; i < 10; i++) append_one(l, 10000 + 1000 * i);
    int64_t off;
    assert_int_equal(kiq_partition_log_offset_for_time(l, 0, &off), 0);
    assert_int_equal(off, 0);
    assert_int_equal(kiq_partition_log_offset_for_time(l, 15000, &off), 0);
    assert_int_equal(off, 15);
    /* Batch granularity: 15001 is inside batch 5. */
    assert_int_equal(kiq_partition_log_offset_for_time(l, 15001, &off), 0);
    assert_int_equal(off, 15);
    assert_int_equal(kiq_partition_log_offset_for_time(l, 15003, &off), 0);
    assert_int_equal(off, 18);
    assert_int_equal(kiq_partition_log_offset_for_time(l, 19002, &off), 0);
    assert_int_equal(off, 27);
    assert_int_equal(kiq_partition_log_offset_for_time(l, 19003, &off), 0);
    assert_int_equal(off, -1);
    kiq_partition_log_free(l);

    /* The same answers after a reopen. */
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_offset_for_time(l, 15003, &off), 0);
    assert_int_equal(off, 18);
    kiq_partition_log_free(l);
}

static void test_truncate_to(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 10; i++) append_one(l, 1000 * i); /* segments 0, 9, 18, 27 */
    assert_int_equal(kiq_partition_log_truncate_to(l, 31), -1);
    assert_int_equal(kiq_partition_log_truncate_to(l, 30), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 30);

    kiq_log_slices_t sl;
    assert_int_equal(kiq_partition_log_locate(l, 0, 1, INT64_MAX, &sl), (int)f->batch_size);
    /* Offset 10 is inside batch 9..11, the first of segment 9. */
    assert_int_equal(kiq_partition_log_truncate_to(l, 10), 0);
    assert_false(kiq_partition_log_unchanged(l, sl.generation));
    kiq_log_slices_release(&sl);
    assert_int_equal(kiq_partition_log_end_offset(l), 9);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 2);
    assert_true(exists(f->dir, 9, ".log"));
    assert_false(exists(f->dir, 18, ".log"));
    assert_false(exists(f->dir, 27, ".index"));
    assert_int_equal(append_one(l, 0), 9);

    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)(4 * f->batch_size));
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, NULL), 4);
    kiq_wr_free(&out);

    assert_int_equal(kiq_partition_log_truncate_to(l, 0), 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 0);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 1);
    kiq_partition_log_free(l);

    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 0);
    kiq_partition_log_free(l);
}

static void test_delete(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(2 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 5; i++) append_one(l, 0);
    /* A stray file of a later feature goes too. */
    char path[256];
    snprintf(path, sizeof path, "%s/leader-epoch-checkpoint", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);

    /* A reader that located data keeps reading it after the delete. */
    kiq_log_slices_t sl;
    assert_int_equal(kiq_partition_log_locate(l, 0, 1, INT64_MAX, &sl), (int)f->batch_size);
    assert_int_equal(kiq_partition_log_delete(l), 0);
    struct stat st;
    assert_int_equal(stat(f->dir, &st), -1);
    uint8_t *buf = malloc(sl.s[0].length);
    assert_int_equal(pread(sl.s[0].fd, buf, sl.s[0].length, (off_t)sl.s[0].position), (ssize_t)sl.s[0].length);
    assert_int_equal(kiq_test_check_batches(buf, sl.s[0].length, 0, NULL), 1);
    free(buf);
    kiq_log_slices_release(&sl);
}

static void test_orphan_index_removed(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    append_one(l, 0);
    kiq_partition_log_free(l);
    char path[256];
    assert_int_equal(kiq_log_segment_path(path, sizeof path, f->dir, 77, ".index"), 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_false(exists(f->dir, 77, ".index"));
    assert_int_equal(kiq_partition_log_end_offset(l), 3);
    kiq_partition_log_free(l);
}

#define WRITERS 3
#define APPENDS 150

static void *writer(void *arg)
{
    kiq_partition_log_t *l = arg;
    for (int i = 0; i < APPENDS; i++) {
        int64_t base, last;
        int rc = kiq_test_append_batch(l, 2, i, 1, &base, &last);
        if (rc != 0 || last != base + 1) return (void *)1;
    }
    return NULL;
}

static void test_concurrent_appends_and_reads(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = 4096; /* rolls while readers read */
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    pthread_t t[WRITERS];
    for (int i = 0; i < WRITERS; i++) assert_int_equal(pthread_create(&t[i], NULL, writer, l), 0);

    /* Read along until every record is seen: each read must continue
     * exactly where the previous one ended. */
    const int64_t total = WRITERS * APPENDS * 2;
    int64_t next = 0;
    kiq_wr_t out;
    kiq_wr_init(&out);
    while (next < total) {
        out.len = 0;
        int n = kiq_partition_log_read(l, next, 1000, INT64_MAX, &out);
        assert_true(n >= 0);
        if (n == 0) continue;
        int batches = kiq_test_check_batches(out.buf, out.len, next, NULL);
        assert_true(batches >= 1);
        next += 2 * batches;
    }
    kiq_wr_free(&out);
    for (int i = 0; i < WRITERS; i++) {
        void *res;
        assert_int_equal(pthread_join(t[i], &res), 0);
        assert_null(res);
    }
    assert_int_equal(next, total);
    assert_int_equal(kiq_partition_log_end_offset(l), total);
    assert_true(kiq_partition_log_segments(l, NULL, 0) > 1);
    kiq_partition_log_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dir_names),
        cmocka_unit_test_setup_teardown(test_open_empty, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_append_assigns_and_stamps, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_roll_names_segments, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_oversized_batch, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_reopen_same_data, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_recovered, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_batch_in_last_segment, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_semantics, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_across_segments, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_offset_for_time, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_truncate_to, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_orphan_index_removed, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_appends_and_reads, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
