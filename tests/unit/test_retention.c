/* Rolling by segment.ms (less segment.jitter.ms), retention by time and by size, the log start
 * offset moved by DeleteRecords and by retention, and its checkpoint
 * surviving a reopen of the topics. Real files; timestamps are explicit in
 * the batches and the retention clock is a value passed in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "log/log_retention.h"
#include "log/topics.h"
#include "support/log_fixture.h"

#define HOUR 3600000LL

static int setup(void **state)
{
    *state = kiq_test_log_dir_new("ret", "t-0");
    return *state ? 0 : -1;
}

/* Appends one batch of n 100-byte records stamped ts. */
static int64_t append(kiq_partition_log_t *l, int n, int64_t ts)
{
    char value[100];
    memset(value, 'v', sizeof value);
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, ts);
    for (int i = 0; i < n; i++) assert_int_equal(kiq_batch_builder_add(&b, "k", 1, value, sizeof value, NULL, 0, ts), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
    kiq_batch_builder_free(&b);
    int64_t base;
    assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 0, &base, NULL), 0);
    kiq_wr_free(&w);
    return base;
}

static int nsegs(kiq_partition_log_t *l) { return kiq_partition_log_segments(l, NULL, 0); }

static int64_t seg_base(kiq_partition_log_t *l, int i)
{
    kiq_log_segment_info_t info[16];
    assert_true(kiq_partition_log_segments(l, info, 16) > i);
    return info[i].base_offset;
}

static bool file_exists(const char *dir, int64_t base)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%020lld.log", dir, (long long)base);
    return access(path, F_OK) == 0;
}

static void test_roll_by_segment_ms(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_partition_log_set_retention(l, HOUR, -1, -1);
    int64_t t0 = 1700000000000LL;
    append(l, 1, t0);
    append(l, 1, t0 + HOUR); /* exactly segment.ms later: no roll yet */
    assert_int_equal(nsegs(l), 1);
    append(l, 1, t0 + HOUR + 1);
    assert_int_equal(nsegs(l), 2);
    assert_int_equal(seg_base(l, 1), 2);
    /* measured from the new segment's first batch, not the old one */
    append(l, 1, t0 + 2 * HOUR);
    assert_int_equal(nsegs(l), 2);
    kiq_partition_log_free(l);

    /* after a reopen the first batch's timestamp is read back from the file */
    l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_partition_log_set_retention(l, HOUR, -1, -1);
    append(l, 1, t0 + 2 * HOUR);
    assert_int_equal(nsegs(l), 2);
    append(l, 1, t0 + 2 * HOUR + 2);
    assert_int_equal(nsegs(l), 3);
    /* -1 turns rolling by time off */
    kiq_partition_log_set_retention(l, -1, -1, -1);
    append(l, 1, t0 + 100 * HOUR);
    assert_int_equal(nsegs(l), 3);
    kiq_partition_log_free(l);
}

/* segment.jitter.ms: each segment rolls a random amount below it early.
 * Batches exactly segment.ms apart roll only with a jitter (it is 0 with
 * probability 1/segment.ms per segment), and a jitter above segment.ms is
 * drawn below segment.ms, so equal timestamps never roll. */
static void test_roll_jitter(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    kiq_partition_log_set_retention(l, HOUR, -1, -1);
    int64_t t0 = 1700000000000LL;
    for (int i = 0; i < 10; i++) append(l, 1, t0 + i * HOUR);
    assert_int_equal(nsegs(l), 5); /* two batches a segment without jitter */
    kiq_partition_log_set_roll_jitter(l, HOUR);
    int64_t t1 = t0 + 20 * HOUR;
    for (int i = 0; i < 10; i++) append(l, 1, t1 + i * HOUR);
    assert_true(nsegs(l) >= 5 + 9); /* a batch a segment */
    kiq_partition_log_set_roll_jitter(l, 100 * HOUR);
    int before = nsegs(l);
    int64_t t2 = t1 + 20 * HOUR;
    append(l, 1, t2);
    append(l, 1, t2);
    append(l, 1, t2);
    assert_true(nsegs(l) <= before + 1);
    kiq_partition_log_free(l);
}

/* Four segments of two one-record batches each: offsets 0-1 at ts 1h,
 * 2-3 at 2h, 4-5 at 3h, 6-7 (active) at 4h. */
static kiq_partition_log_t *four_segments(kiq_test_log_dir_t *f, uint64_t *seg_size)
{
    kiq_partition_log_t *l = kiq_partition_log_open(f->dir, &f->cfg);
    assert_non_null(l);
    for (int s = 0; s < 4; s++) {
        append(l, 1, (s + 1) * HOUR);
        append(l, 1, (s + 1) * HOUR);
        if (s < 3) {
            /* roll by making the next batch too big for segment.bytes */
            kiq_log_config_t cfg = f->cfg;
            kiq_log_segment_info_t info[8];
            int n = kiq_partition_log_segments(l, info, 8);
            cfg.segment_bytes = (int32_t)info[n - 1].size + 1;
            kiq_partition_log_set_config(l, &cfg);
            *seg_size = info[n - 1].size;
        }
    }
    assert_int_equal(nsegs(l), 4);
    for (int i = 0; i < 4; i++) assert_int_equal(seg_base(l, i), 2 * i);
    return l;
}

static void test_retention_by_time(void **state)
{
    kiq_test_log_dir_t *f = *state;
    uint64_t size;
    kiq_partition_log_t *l = four_segments(f, &size);
    kiq_partition_log_set_retention(l, -1, HOUR, -1);
    /* at 3h + 1ms only the 1h segment is more than an hour old */
    assert_int_equal(kiq_partition_log_enforce_retention(l, 3 * HOUR), 1);
    assert_int_equal(kiq_partition_log_start_offset(l), 2);
    assert_false(file_exists(f->dir, 0));
    assert_true(file_exists(f->dir, 2));
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_partition_log_read(l, 1, 1 << 20, INT64_MAX, &w), KIQ_LOG_OUT_OF_RANGE);
    assert_true(kiq_partition_log_read(l, 2, 1 << 20, INT64_MAX, &w) > 0);
    kiq_wr_free(&w);
    /* far in the future everything is expired, but the active one stays
     * while its records are not all committed */
    kiq_partition_log_set_high_watermark(l, 7);
    assert_int_equal(kiq_partition_log_enforce_retention(l, 1000 * HOUR), 2);
    assert_int_equal(nsegs(l), 1);
    assert_int_equal(kiq_partition_log_start_offset(l), 6);
    assert_int_equal(kiq_partition_log_end_offset(l), 8);
    assert_true(file_exists(f->dir, 6));
    assert_int_equal(kiq_partition_log_enforce_retention(l, 1000 * HOUR), 0);
    /* once they are, it goes too (as in Kafka), an empty one rolled in its place */
    kiq_partition_log_set_high_watermark(l, 8);
    assert_int_equal(kiq_partition_log_enforce_retention(l, 1000 * HOUR), 1);
    assert_int_equal(nsegs(l), 1);
    assert_int_equal(kiq_partition_log_start_offset(l), 8);
    assert_int_equal(kiq_partition_log_end_offset(l), 8);
    assert_false(file_exists(f->dir, 6));
    assert_true(file_exists(f->dir, 8));
    assert_int_equal(kiq_partition_log_enforce_retention(l, 1000 * HOUR), 0);
    kiq_partition_log_free(l);
}

static void test_retention_by_time_forever(void **state)
{
    kiq_test_log_dir_t *f = *state;
    uint64_t size;
    kiq_partition_log_t *l = four_segments(f, &size);
    kiq_partition_log_set_retention(l, -1, -1, -1);
    assert_int_equal(kiq_partition_log_enforce_retention(l, 1000 * HOUR), 0);
    assert_int_equal(nsegs(l), 4);
    kiq_partition_log_free(l);
}

static void test_retention_by_size(void **state)
{
    kiq_test_log_dir_t *f = *state;
    uint64_t size;
    kiq_partition_log_t *l = four_segments(f, &size);
    /* 4 equal segments; keeping at least 2.5 segments' worth deletes one */
    kiq_partition_log_set_retention(l, -1, -1, (int64_t)(size * 5 / 2));
    assert_int_equal(kiq_partition_log_enforce_retention(l, 0), 1);
    assert_int_equal(seg_base(l, 0), 2);
    assert_int_equal(kiq_partition_log_start_offset(l), 2);
    /* exactly two segments' worth: one more goes (Kafka deletes while what is left stays >= retention.bytes) */
    kiq_partition_log_set_retention(l, -1, -1, (int64_t)(size * 2));
    assert_int_equal(kiq_partition_log_enforce_retention(l, 0), 1);
    assert_int_equal(nsegs(l), 2);
    /* zero bytes: everything but the active segment */
    kiq_partition_log_set_retention(l, -1, -1, 0);
    assert_int_equal(kiq_partition_log_enforce_retention(l, 0), 1);
    assert_int_equal(nsegs(l), 1);
    assert_int_equal(kiq_partition_log_start_offset(l), 6);
    assert_true(file_exists(f->dir, 6));
    kiq_partition_log_free(l);
}

static void test_advance_start(void **state)
{
    kiq_test_log_dir_t *f = *state;
    uint64_t size;
    kiq_partition_log_t *l = four_segments(f, &size);
    /* inside segment 2: segment 0 goes, segment 2 stays */
    assert_int_equal(kiq_partition_log_advance_start(l, 3), 0);
    assert_int_equal(kiq_partition_log_start_offset(l), 3);
    assert_int_equal(seg_base(l, 0), 2);
    assert_false(file_exists(f->dir, 0));
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_partition_log_read(l, 2, 1 << 20, INT64_MAX, &w), KIQ_LOG_OUT_OF_RANGE);
    assert_true(kiq_partition_log_read(l, 3, 1 << 20, INT64_MAX, &w) > 0);
    kiq_wr_free(&w);
    /* lower: nothing changes; beyond the end: refused */
    assert_int_equal(kiq_partition_log_advance_start(l, 1), 0);
    assert_int_equal(kiq_partition_log_start_offset(l), 3);
    assert_int_equal(kiq_partition_log_advance_start(l, 9), KIQ_LOG_OUT_OF_RANGE);
    assert_int_equal(kiq_partition_log_start_offset(l), 3);
    /* up to the end: every segment but the active one goes */
    assert_int_equal(kiq_partition_log_advance_start(l, 8), 0);
    assert_int_equal(nsegs(l), 1);
    assert_int_equal(kiq_partition_log_start_offset(l), 8);
    /* the log goes on from there */
    assert_int_equal(append(l, 1, HOUR), 8);
    kiq_partition_log_free(l);
}

static kiq_topics_t *open_topics(kiq_test_log_dir_t *f)
{
    kiq_topics_t *t = kiq_topics_open(f->root, &f->cfg);
    assert_non_null(t);
    return t;
}

static kiq_partition_log_t *topic_log(kiq_topics_t *t, const char *name, int p, kiq_topic_t **topic)
{
    *topic = kiq_topics_get(t, KIQ_STR(name));
    assert_non_null(*topic);
    return (*topic)->partitions[p]->log;
}

static void test_log_start_checkpoint(void **state)
{
    kiq_test_log_dir_t *f = *state;
    kiq_topics_t *t = open_topics(f);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("cp"), 2, 1, false), 0);
    kiq_topic_t *topic;
    kiq_partition_log_t *l = topic_log(t, "cp", 1, &topic);
    for (int i = 0; i < 5; i++) append(l, 1, HOUR);
    assert_int_equal(kiq_partition_log_advance_start(l, 3), 0);
    assert_int_equal(kiq_topics_checkpoint_log_start(t), 0);
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    char path[256], text[256] = {0};
    snprintf(path, sizeof path, "%s/log-start-offset-checkpoint", f->root);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_true(fread(text, 1, sizeof text - 1, fp) > 0);
    fclose(fp);
    assert_string_equal(text, "0\n2\ncp 0 0\ncp 1 3\n");

    /* the start is above the first segment's base: reads below stay out of range */
    t = open_topics(f);
    l = topic_log(t, "cp", 1, &topic);
    assert_int_equal(kiq_partition_log_start_offset(l), 3);
    assert_int_equal(kiq_partition_log_end_offset(l), 5);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_partition_log_read(l, 2, 1 << 20, INT64_MAX, &w), KIQ_LOG_OUT_OF_RANGE);
    kiq_wr_free(&w);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

static int set_retention_bytes(kiq_topic_configs_t *c, void *ctx)
{
    (void)ctx;
    return kiq_topic_configs_set(c, "retention.bytes", 15, "0", 1);
}

static void test_retention_pass_uses_topic_configs(void **state)
{
    kiq_test_log_dir_t *f = *state;
    f->cfg.segment_bytes = 100; /* every batch gets its own segment */
    kiq_config_t *config = kiq_config_new();
    assert_non_null(config);
    kiq_topics_t *t = open_topics(f);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("sz"), 1, 1, false), 0);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("keep"), 1, 1, false), 0);
    kiq_topic_t *sz, *keep;
    kiq_partition_log_t *lsz = topic_log(t, "sz", 0, &sz);
    kiq_partition_log_t *lkeep = topic_log(t, "keep", 0, &keep);
    int64_t now = 1700000000000LL;
    for (int i = 0; i < 4; i++) {
        append(lsz, 1, now);
        append(lkeep, 1, now);
    }
    assert_int_equal(nsegs(lsz), 4);
    /* broker defaults: 7 days, unlimited size; nothing is old enough */
    assert_int_equal(kiq_log_retention_run(t, config, now + 1000), 0);
    assert_int_equal(kiq_topics_update_configs(t, sz, set_retention_bytes, NULL, false), 0);
    assert_int_equal(kiq_log_retention_run(t, config, now + 1000), 3);
    assert_int_equal(kiq_partition_log_start_offset(lsz), 3);
    assert_int_equal(nsegs(lkeep), 4);
    /* log.retention.ms wins over log.retention.hours */
    assert_int_equal(kiq_config_set(config, "log.retention.hours", "1000"), 0);
    assert_int_equal(kiq_config_set(config, "log.retention.ms", "60000"), 0);
    assert_int_equal(kiq_log_retention_run(t, config, now + 60001), 3);
    assert_int_equal(kiq_partition_log_start_offset(lkeep), 3);
    kiq_topic_unref(sz);
    kiq_topic_unref(keep);
    kiq_topics_free(t);
    kiq_config_free(config);

    /* the pass saved the new starts */
    t = open_topics(f);
    lkeep = topic_log(t, "keep", 0, &keep);
    assert_int_equal(kiq_partition_log_start_offset(lkeep), 3);
    kiq_topic_unref(keep);
    kiq_topics_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roll_by_segment_ms, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_roll_jitter, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_time, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_time_forever, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_retention_by_size, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_advance_start, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_log_start_checkpoint, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_retention_pass_uses_topic_configs, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
