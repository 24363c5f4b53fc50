/* Durability of the partition log on real files: flush.messages and
 * flush.ms fsync accounting, the recovery point and its checkpoint
 * (`recovery-point-offset-checkpoint`, saved and read back by the topics
 * registry), and recovery from the recovery point after an unclean
 * shutdown: a torn tail cut off, and a corrupt batch in the middle of an
 * older segment detected, the log truncated there and later segments
 * dropped. Segment files deleted or cut under an open log: written back
 * from its descriptors, or the loss recorded (log/data_loss.h) and kept
 * across opens until acknowledged. Damage is made by editing the segment
 * files. */
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

#include "log/data_loss.h"
#include "log/log_names.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "log/topics.h"
#include "support/log_fixture.h"

/* Appends one batch of n records; returns its base offset. */
static int64_t append_n(kiq_partition_log_t *l, int n)
{
    int64_t base = -1;
    assert_int_equal(kiq_test_append_batch(l, n, 1000, 0, &base, NULL), 0);
    return base;
}

static int setup(void **state)
{
    kiq_test_log_dir_t *f = kiq_test_log_dir_new("dur", "orders-0");
    if (!f) return -1;
    f->cfg.index_interval_bytes = 256;
    *state = f;
    return 0;
}

static void segment_file(const kiq_test_log_dir_t *f, int64_t base, char *buf, size_t n)
{
    assert_int_equal(kiq_log_segment_path(buf, n, f->dir, base, KIQ_LOG_SUFFIX), 0);
}

/* Flips one bit inside the records of the batch at `batch` (0-based) of
 * the segment at base. */
static void flip_bit(const kiq_test_log_dir_t *f, int64_t base, int batch)
{
    char path[256];
    segment_file(f, base, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t at = (off_t)((size_t)batch * f->batch_size + KIQ_BATCH_HEADER_SIZE + 20);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

/* 9 batches of 3 records in segments of 3 batches: 0-8, 9-17, 18-26. */
static void write_three_segments(kiq_test_log_dir_t *f)
{
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int i = 0; i < 9; i++) assert_int_equal(append_n(l, 3), 3 * i);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 3);
    kiq_partition_log_free(l);
}

static void test_flush_messages(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    /* Kafka's default: no fsync on append at all. */
    for (int i = 0; i < 5; i++) append_n(l, 1);
    assert_int_equal(kiq_partition_log_flush_count(l), 0);
    assert_int_equal(kiq_partition_log_recovery_point(l), 0);

    assert_int_equal(kiq_partition_log_flush(l), 0);
    assert_int_equal(kiq_partition_log_flush_count(l), 1);
    assert_int_equal(kiq_partition_log_recovery_point(l), 5);

    kiq_partition_log_set_flush(l, 3, INT64_MAX);
    append_n(l, 1);
    append_n(l, 1);
    assert_int_equal(kiq_partition_log_flush_count(l), 1);
    assert_int_equal(kiq_partition_log_recovery_point(l), 5);
    append_n(l, 1);
    assert_int_equal(kiq_partition_log_flush_count(l), 2);
    assert_int_equal(kiq_partition_log_recovery_point(l), 8);
    append_n(l, 1);
    append_n(l, 1);
    assert_int_equal(kiq_partition_log_flush_count(l), 2);
    assert_int_equal(kiq_partition_log_recovery_point(l), 8);
    /* A batch counts all its records. */
    append_n(l, 2);
    assert_int_equal(kiq_partition_log_flush_count(l), 3);
    assert_int_equal(kiq_partition_log_recovery_point(l), 12);

    /* flush.messages=1: every append is on disk before it returns. */
    kiq_partition_log_set_flush(l, 1, INT64_MAX);
    for (int i = 0; i < 4; i++) {
        int64_t base = append_n(l, 2);
        assert_int_equal(kiq_partition_log_recovery_point(l), base + 2);
    }
    assert_int_equal(kiq_partition_log_flush_count(l), 7);
    kiq_partition_log_free(l);
}

static void test_flush_ms(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_partition_log_set_flush(l, INT64_MAX, 500);
    int64_t now = kiq_partition_log_now_ms();
    /* Nothing unflushed: nothing due however late. */
    assert_int_equal(kiq_partition_log_flush_if_due(l, now + 10000, NULL), 0);
    append_n(l, 3);
    int64_t after = kiq_partition_log_now_ms();
    assert_int_equal(kiq_partition_log_flush_if_due(l, now - 1, NULL), 0);
    assert_int_equal(kiq_partition_log_flush_count(l), 0);
    /* Measured from the oldest unflushed append, not the last one. */
    append_n(l, 3);
    assert_int_equal(kiq_partition_log_flush_if_due(l, after + 500, NULL), 1);
    assert_int_equal(kiq_partition_log_flush_count(l), 1);
    assert_int_equal(kiq_partition_log_recovery_point(l), 6);
    assert_int_equal(kiq_partition_log_flush_if_due(l, after + 5000, NULL), 0);
    /* Default flush.ms: the flusher never flushes. */
    kiq_partition_log_set_flush(l, INT64_MAX, INT64_MAX);
    append_n(l, 3);
    assert_int_equal(kiq_partition_log_flush_if_due(l, INT64_MAX / 2, NULL), 0);
    /* An explicit flush moves the recovery point to the log end. */
    assert_int_equal(kiq_partition_log_flush(l), 0);
    assert_int_equal(kiq_partition_log_recovery_point(l), 9);
    kiq_partition_log_free(l);
}

static void test_roll_and_truncate_move_recovery_point(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(2 * f->batch_size);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    append_n(l, 3);
    append_n(l, 3);
    assert_int_equal(kiq_partition_log_recovery_point(l), 0);
    /* The roll seals (and syncs) the full segment. */
    append_n(l, 3);
    assert_int_equal(kiq_partition_log_recovery_point(l), 6);
    assert_int_equal(kiq_partition_log_flush(l), 0);
    assert_int_equal(kiq_partition_log_recovery_point(l), 9);
    assert_int_equal(kiq_partition_log_truncate_to(l, 3), 0);
    assert_int_equal(kiq_partition_log_recovery_point(l), 3);
    kiq_partition_log_free(l);
}

static void read_checkpoint(const kiq_test_log_dir_t *f, char *buf, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", f->root);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t r = fread(buf, 1, n - 1, fp);
    buf[r] = 0;
    fclose(fp);
}

static void write_checkpoint(const kiq_test_log_dir_t *f, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/recovery-point-offset-checkpoint", f->root);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static kiq_partition_log_t *orders_log(kiq_topics_t *t)
{
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    kiq_partition_log_t *l = topic->partitions[0]->log;
    kiq_topic_unref(topic);
    return l;
}

static void test_recovery_point_checkpoint(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = (int32_t)(3 * f->batch_size);
    kiq_topics_t *t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("orders"), 1, 1, false), 0);
    kiq_partition_log_t *l = orders_log(t);
    for (int i = 0; i < 9; i++) append_n(l, 3);
    /* Rolls synced the first two segments; the active one is not yet. */
    char text[256];
    assert_int_equal(kiq_topics_checkpoint_recovery_points(t), 0);
    read_checkpoint(f, text, sizeof text);
    assert_string_equal(text, "0\n1\norders 0 18\n");
    assert_int_equal(kiq_partition_log_flush(l), 0);
    assert_int_equal(kiq_topics_checkpoint_recovery_points(t), 0);
    read_checkpoint(f, text, sizeof text);
    assert_string_equal(text, "0\n1\norders 0 27\n");
    kiq_topics_free(t);

    /* Damage below the saved recovery point goes unseen by an unclean
     * open: the checkpoint was read back and recovery started there. */
    flip_bit(f, 0, 1);
    f->cfg.clean_shutdown = false;
    t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    l = orders_log(t);
    assert_int_equal(kiq_partition_log_end_offset(l), 27);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, 0);
    assert_false(rep.corrupt_middle);
    kiq_topics_free(t);
    /* The clean close flushed and saved everything. */
    read_checkpoint(f, text, sizeof text);
    assert_string_equal(text, "0\n1\norders 0 27\n");

    /* With the recovery point at 0 the whole log is scanned and the
     * damage found: the log ends before the corrupt batch. */
    write_checkpoint(f, "0\n1\norders 0 0\n");
    t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    l = orders_log(t);
    assert_int_equal(kiq_partition_log_end_offset(l), 3);
    kiq_partition_log_recovery(l, &rep);
    assert_true(rep.corrupt_middle);
    assert_int_equal(rep.truncated_at, 3);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 1);
    kiq_topics_free(t);
}

static void test_torn_tail_from_recovery_point(void **state)
{
    kiq_test_log_dir_t *f = *state;
    write_three_segments(f);
    char path[256];
    segment_file(f, 18, path, sizeof path);
    assert_int_equal(truncate(path, (off_t)(3 * f->batch_size - 7)), 0);

    f->cfg.clean_shutdown = false;
    kiq_partition_log_t *l = kiq_partition_log_open_at(f->dir, &f->cfg, 9);
    assert_non_null(l);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    /* Segments 9 and 18 were scanned whole, every batch checked (segment 0
     * only from its last index entry). */
    assert_true(rep.batches >= 5);
    assert_true(rep.index_rebuilt);
    assert_int_equal(rep.bytes_truncated, f->batch_size - 7);
    assert_int_equal(rep.batches_dropped, 1);
    assert_int_equal(rep.truncated_at, 24);
    assert_false(rep.corrupt_middle);
    assert_int_equal(kiq_partition_log_end_offset(l), 24);
    assert_int_equal(kiq_partition_log_recovery_point(l), 24);
    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)(8 * f->batch_size));
    kiq_wr_free(&out);
    /* The lost offsets are assigned again: the log stays dense. */
    assert_int_equal(append_n(l, 3), 24);
    kiq_partition_log_free(l);
}

static void test_corrupt_middle_batch_in_older_segment(void **state)
{
    kiq_test_log_dir_t *f = *state;
    write_three_segments(f);
    /* Batch 12..14, in the middle of segment 9. */
    flip_bit(f, 9, 1);

    /* A recovery point past it trusts that segment. */
    f->cfg.clean_shutdown = false;
    kiq_partition_log_t *l = kiq_partition_log_open_at(f->dir, &f->cfg, 18);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 27);
    kiq_partition_log_free(l);

    /* One before it: found, the log cut there, segment 18 dropped. */
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 3);
    assert_non_null(l);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_true(rep.corrupt_middle);
    assert_int_equal(rep.truncated_at, 12);
    assert_int_equal(rep.batches_dropped, 2);
    assert_int_equal(rep.bytes_truncated, 2 * f->batch_size);
    assert_int_equal(kiq_partition_log_end_offset(l), 12);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 2);
    char path[256];
    struct stat st;
    segment_file(f, 18, path, sizeof path);
    assert_int_equal(stat(path, &st), -1);
    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 9, 1 << 20, INT64_MAX, &out), (int)f->batch_size);
    kiq_wr_free(&out);
    assert_int_equal(append_n(l, 3), 12);
    kiq_partition_log_free(l);

    /* Reopened after that, the log is whole and sound. */
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 0);
    assert_non_null(l);
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, 0);
    assert_int_equal(kiq_partition_log_end_offset(l), 15);
    kiq_partition_log_free(l);
}

/* Reads the whole log from offset 0: the offsets it holds, in order. */
static int read_offsets(kiq_partition_log_t *l, int64_t *offsets, int max)
{
    int n = 0;
    for (int64_t at = 0; at < kiq_partition_log_end_offset(l) && n < max;) {
        kiq_wr_t out;
        kiq_wr_init(&out);
        int got = kiq_partition_log_read(l, at, 1 << 20, INT64_MAX, &out);
        assert_true(got > 0);
        for (size_t pos = 0; pos < out.len && n < max;) {
            kiq_batch_header_t h;
            assert_int_equal(kiq_batch_header_parse(out.buf + pos, out.len - pos, &h), 0);
            for (int64_t o = h.base_offset; o <= kiq_batch_last_offset(&h) && n < max; o++) offsets[n++] = o;
            at = kiq_batch_last_offset(&h) + 1;
            pos += kiq_batch_size(&h);
        }
        kiq_wr_free(&out);
    }
    return n;
}

static void test_deleted_segment_files_written_back(void **state)
{
    kiq_test_log_dir_t *f = *state;
    write_three_segments(f);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    char closed[256], act[256];
    segment_file(f, 0, closed, sizeof closed);
    segment_file(f, 18, act, sizeof act);
    assert_int_equal(unlink(closed), 0);
    assert_int_equal(unlink(act), 0);
    assert_int_equal(kiq_partition_log_check_files(l, false), 1); /* the active one only */
    assert_int_equal(access(act, F_OK), 0);
    assert_int_equal(access(closed, F_OK), -1);
    assert_int_equal(kiq_partition_log_check_files(l, true), 1);
    assert_int_equal(access(closed, F_OK), 0);
    assert_int_equal(kiq_partition_log_check_files(l, true), 0);
    /* appends land in the file written back */
    assert_int_equal(append_n(l, 3), 27);
    kiq_data_loss_t loss;
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 0);
    kiq_partition_log_free(l);

    f->cfg.clean_shutdown = false;
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 30);
    assert_non_null(l);
    int64_t offsets[40];
    assert_int_equal(read_offsets(l, offsets, 40), 30);
    for (int i = 0; i < 30; i++) assert_int_equal(offsets[i], i);
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 0);
    kiq_partition_log_free(l);
}

/* Deleted while nobody looked (the broker killed before its check): the
 * index files left behind tell of it at open, though the recovery point
 * does not reach into that segment. */
static void test_deleted_active_segment_found_at_open(void **state)
{
    kiq_test_log_dir_t *f = *state;
    write_three_segments(f);
    char path[256];
    segment_file(f, 18, path, sizeof path);
    assert_int_equal(unlink(path), 0);
    f->cfg.clean_shutdown = false;
    kiq_partition_log_t *l = kiq_partition_log_open_at(f->dir, &f->cfg, 18);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_end_offset(l), 18);
    kiq_data_loss_t loss;
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 1);
    assert_int_equal(loss.from, 18);
    assert_true(loss.to > 18 && loss.to <= 27);
    kiq_partition_log_free(l);
    l = kiq_partition_log_open_at(f->dir, &f->cfg, 18);
    assert_non_null(l);
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 1);
    assert_int_equal(loss.findings, 1);
    kiq_partition_log_free(l);
}

static void test_cut_segment_file_recorded_until_acknowledged(void **state)
{
    kiq_test_log_dir_t *f = *state;
    write_three_segments(f);
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    char path[256];
    segment_file(f, 9, path, sizeof path);
    /* one whole batch left, and a part of the next */
    assert_int_equal(truncate(path, (off_t)(f->batch_size + 10)), 0);
    assert_int_equal(kiq_partition_log_check_files(l, true), 1);
    assert_int_equal(kiq_partition_log_check_files(l, true), 0);
    kiq_data_loss_t loss;
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 1);
    assert_int_equal(loss.from, 12);
    assert_int_equal(loss.to, 18);
    assert_int_equal(loss.findings, 1);
    /* a replica fetches it again from the leader */
    assert_int_equal(kiq_partition_log_damaged(l, NULL, 0), 9);
    /* the rest is served, the gap skipped */
    int64_t offsets[40];
    assert_int_equal(read_offsets(l, offsets, 40), 21);
    assert_int_equal(offsets[11], 11);
    assert_int_equal(offsets[12], 18);
    kiq_partition_log_free(l);

    /* across opens, found cut again or not, until acknowledged */
    for (int round = 0; round < 2; round++) {
        f->cfg.clean_shutdown = round == 0;
        l = kiq_partition_log_open_at(f->dir, &f->cfg, 27);
        assert_non_null(l);
        assert_int_equal(kiq_partition_log_end_offset(l), 27);
        assert_int_equal(kiq_partition_log_data_loss(l, &loss), 1);
        assert_int_equal(loss.from, 12);
        assert_int_equal(loss.findings, 1);
        assert_int_equal(read_offsets(l, offsets, 40), 21);
        kiq_partition_log_free(l);
    }
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    assert_int_equal(kiq_data_loss_acknowledge(f->dir), 0);
    assert_int_equal(kiq_data_loss_acknowledge(f->dir), 1);
    kiq_partition_log_check_files(l, false);
    assert_int_equal(kiq_partition_log_data_loss(l, &loss), 0);
    kiq_partition_log_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_messages, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_flush_ms, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_roll_and_truncate_move_recovery_point, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_recovery_point_checkpoint, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_from_recovery_point, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_middle_batch_in_older_segment, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_segment_files_written_back, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_deleted_active_segment_found_at_open, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_cut_segment_file_recorded_until_acknowledged, setup,
                                        kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
