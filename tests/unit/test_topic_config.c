/* Topic configs: every one Kafka 4.x defines, documented; typed validation
 * of each kind (int, long, double, boolean, enumerated string, list) and
 * Kafka's own checks (gzip levels, throttled replica lists, no tiered
 * storage, the compaction lags together), unknown names and null values, APPEND and
 * SUBTRACT on lists, the file store's round trip and pruning, and the
 * topic registry keeping configs across a reopen and forgetting them with
 * the topic. */
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

#include "config/topic_config.h"
#include "core/error.h"
#include "core/say.h"
#include "proto/errors.h"
#include "log/topic_config_store.h"
#include "log/topics.h"
#include "support/log_fixture.h"

static int check(const char *name, const char *value)
{
    int i = kiq_topic_config_find(name, (int)strlen(name));
    assert_true(i >= 0);
    kiq_error_clear();
    return kiq_topic_config_check(i, value, (int)strlen(value));
}

/* The refusal is INVALID_CONFIG and its message names config and value. */
static void assert_refused(const char *name, const char *value)
{
    assert_int_equal(check(name, value), KIQ_ERR_INVALID_CONFIG);
    assert_non_null(strstr(kiq_error_get(), name));
    assert_non_null(strstr(kiq_error_get(), value));
}

static void test_int_and_long(void **state)
{
    (void)state;
    assert_int_equal(check("segment.bytes", "14"), 0);
    assert_int_equal(check("segment.bytes", " 1048576 "), 0);
    assert_refused("segment.bytes", "13");
    assert_refused("segment.bytes", "2147483648"); /* past int32 */
    assert_refused("segment.bytes", "12abc");
    assert_refused("segment.index.bytes", "3");
    assert_int_equal(check("min.insync.replicas", "1"), 0);
    assert_refused("min.insync.replicas", "0");
    assert_int_equal(check("max.message.bytes", "0"), 0);
    assert_refused("max.message.bytes", "-1");
    assert_int_equal(check("retention.ms", "-1"), 0);
    assert_int_equal(check("retention.ms", "9223372036854775807"), 0);
    assert_refused("retention.ms", "-2");
    assert_refused("retention.ms", "9223372036854775808");
    assert_int_equal(check("retention.bytes", "-100"), 0);
    assert_refused("flush.messages", "0");
    assert_refused("segment.ms", "0");
    assert_int_equal(check("index.interval.bytes", "0"), 0);
}

static void test_double_bool_string_list(void **state)
{
    (void)state;
    assert_int_equal(check("min.cleanable.dirty.ratio", "0.25"), 0);
    assert_int_equal(check("min.cleanable.dirty.ratio", "1"), 0);
    assert_refused("min.cleanable.dirty.ratio", "1.5");
    assert_refused("min.cleanable.dirty.ratio", "half");
    assert_int_equal(check("unclean.leader.election.enable", "TRUE"), 0);
    assert_int_equal(check("unclean.leader.election.enable", "false"), 0);
    assert_refused("unclean.leader.election.enable", "yes");
    assert_int_equal(check("message.timestamp.type", "LogAppendTime"), 0);
    assert_refused("message.timestamp.type", "logappendtime");
    static const char *codecs[] = {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"};
    for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++)
        assert_int_equal(check("compression.type", codecs[i]), 0);
    assert_refused("compression.type", "brotli");
    assert_int_equal(check("cleanup.policy", "compact"), 0);
    assert_int_equal(check("cleanup.policy", "compact,delete"), 0);
    assert_int_equal(check("cleanup.policy", " delete , compact "), 0);
    assert_refused("cleanup.policy", "compact,shred");
    /* Kafka 4.2+: no policy at all, records kept for ever */
    assert_int_equal(check("cleanup.policy", ""), 0);
}

/* Every topic config Kafka 4.4's LogConfig defines (DescribeConfigs of a
 * topic on Apache Kafka 4.4.0 lists these 37). */
static const char *const kafka4_names[] = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "errors.deadletterqueue.group.enable", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.decompressed.message.bytes", "max.message.bytes",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable", "remote.log.delete.on.disable",
    "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
    "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
};

/* Each of them is known, documented, and takes its own default. */
static void test_every_kafka4_config_known(void **state)
{
    (void)state;
    size_t n = sizeof kafka4_names / sizeof *kafka4_names;
    assert_int_equal(kiq_topic_config_count, (int)n);
    kiq_config_t *c = kiq_config_new();
    assert_non_null(c);
    for (size_t k = 0; k < n; k++) {
        int i = kiq_topic_config_find(kafka4_names[k], (int)strlen(kafka4_names[k]));
        assert_int_equal(i, (int)k); /* in name order, as DescribeConfigs lists them */
        const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
        assert_non_null(d->doc);
        assert_true(strlen(d->doc) > 20);
        char buf[32];
        int source;
        const char *dflt = kiq_topic_config_default(c, i, buf, sizeof buf, &source);
        assert_non_null(dflt);
        assert_int_equal(source, KIQ_CONFIG_SOURCE_DEFAULT);
        kiq_error_clear();
        if (d->type != KIQ_CONFIG_WIRE_LIST || *dflt) assert_int_equal(check(d->name, dflt), 0);
    }
    /* Kafka 4.0's defaults for the new ones */
    char buf[32];
    int source;
    assert_string_equal(kiq_topic_config_default(c, KIQ_TCFG_MESSAGE_TIMESTAMP_AFTER_MAX_MS, buf, sizeof buf, &source),
                        "3600000");
    assert_string_equal(kiq_topic_config_default(c, KIQ_TCFG_LOCAL_RETENTION_MS, buf, sizeof buf, &source), "-2");
    assert_string_equal(kiq_topic_config_default(c, KIQ_TCFG_COMPRESSION_ZSTD_LEVEL, buf, sizeof buf, &source), "3");
    /* what is not acted on says so */
    assert_ptr_equal(strstr(kiq_topic_config_defs[KIQ_TCFG_PREALLOCATE].doc, KIQ_TOPIC_CONFIG_IGNORED),
                     kiq_topic_config_defs[KIQ_TCFG_PREALLOCATE].doc);
    assert_null(strstr(kiq_topic_config_defs[KIQ_TCFG_SEGMENT_JITTER_MS].doc, KIQ_TOPIC_CONFIG_IGNORED));
    kiq_config_free(c);
}

static void test_kafka4_validation(void **state)
{
    (void)state;
    assert_int_equal(check("compression.gzip.level", "-1"), 0);
    assert_int_equal(check("compression.gzip.level", "9"), 0);
    assert_refused("compression.gzip.level", "0");
    assert_refused("compression.gzip.level", "10");
    assert_refused("compression.gzip.level", "fast");
    assert_int_equal(check("compression.lz4.level", "17"), 0);
    assert_refused("compression.lz4.level", "18");
    assert_int_equal(check("compression.zstd.level", "-131072"), 0);
    assert_refused("compression.zstd.level", "23");
    assert_refused("max.compaction.lag.ms", "0");
    assert_int_equal(check("max.compaction.lag.ms", "1"), 0);
    assert_refused("segment.jitter.ms", "-1");
    assert_refused("file.delete.delay.ms", "-1");
    assert_int_equal(check("local.retention.ms", "-2"), 0);
    assert_refused("local.retention.bytes", "-3");
    assert_refused("message.timestamp.after.max.ms", "-1");
    assert_refused("message.timestamp.before.max.ms", "soon");
    assert_int_equal(check("preallocate", "True"), 0);
    assert_refused("preallocate", "1");
    assert_int_equal(check("remote.log.copy.disable", "true"), 0);
    /* no tiered storage: Kafka's answer when the broker has it disabled */
    assert_int_equal(check("remote.storage.enable", "false"), 0);
    assert_int_equal(check("remote.storage.enable", "true"), KIQ_ERR_INVALID_CONFIG);
    assert_string_equal(kiq_error_get(), "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                                         "configured with remote log storage.");
    assert_refused("remote.storage.enable", "maybe");
    /* "*", empty, or partition:broker items */
    static const char *good[] = {"*", "", "0:1", "0:1,1:2", " 0:1 , 12:345 ", "0:1,,1:2"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(check("leader.replication.throttled.replicas", good[i]), 0);
        assert_int_equal(check("follower.replication.throttled.replicas", good[i]), 0);
    }
    static const char *bad[] = {"*,0:1", "0", "0:", ":1", "a:1", "0:1:2", "0-1", "**"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_refused("leader.replication.throttled.replicas", bad[i]);
        assert_non_null(strstr(kiq_error_get(), "must be the literal '*'"));
    }
    assert_refused("follower.replication.throttled.replicas", "x");
}

/* Kafka's check of the two compaction lags together. */
static void test_lags_checked_together(void **state)
{
    (void)state;
    kiq_topic_configs_t c = {0};
    assert_int_equal(kiq_topic_configs_check_together(&c), 0);
    assert_int_equal(kiq_topic_configs_set(&c, "min.compaction.lag.ms", 21, "5000", 4), 0);
    assert_int_equal(kiq_topic_configs_check_together(&c), 0); /* max: Long.MAX */
    assert_int_equal(kiq_topic_configs_set(&c, "max.compaction.lag.ms", 21, "5000", 4), 0);
    assert_int_equal(kiq_topic_configs_check_together(&c), 0);
    assert_int_equal(kiq_topic_configs_set(&c, "max.compaction.lag.ms", 21, "4999", 4), 0);
    assert_int_equal(kiq_topic_configs_check_together(&c), KIQ_ERR_INVALID_CONFIG);
    assert_string_equal(kiq_error_get(),
                        "conflict topic config setting min.compaction.lag.ms (5000) > max.compaction.lag.ms (4999)");
    kiq_topic_configs_clear(&c);
}

static void test_set_unknown_null_trim(void **state)
{
    (void)state;
    kiq_topic_configs_t c = {0};
    assert_int_equal(kiq_topic_configs_set(&c, "no.such.config", 14, "1", 1), KIQ_ERR_INVALID_CONFIG);
    assert_non_null(strstr(kiq_error_get(), "no.such.config"));
    assert_int_equal(kiq_topic_configs_set(&c, "retention.ms", 12, NULL, -1), KIQ_ERR_INVALID_CONFIG);
    assert_non_null(strstr(kiq_error_get(), "retention.ms"));
    assert_int_equal(kiq_topic_configs_set(&c, "retention.ms", 12, " 1000 ", 6), 0);
    assert_string_equal(c.value[KIQ_TCFG_RETENTION_MS], "1000");
    assert_int_equal(kiq_topic_configs_int(&c, KIQ_TCFG_RETENTION_MS, 7), 1000);
    assert_int_equal(kiq_topic_configs_int(&c, KIQ_TCFG_SEGMENT_MS, 7), 7);
    /* a refused value leaves the previous one */
    assert_int_equal(kiq_topic_configs_set(&c, "retention.ms", 12, "-5", 2), KIQ_ERR_INVALID_CONFIG);
    assert_string_equal(c.value[KIQ_TCFG_RETENTION_MS], "1000");
    kiq_topic_configs_t copy = {0};
    assert_int_equal(kiq_topic_configs_copy(&copy, &c), 0);
    assert_string_equal(copy.value[KIQ_TCFG_RETENTION_MS], "1000");
    assert_ptr_not_equal(copy.value[KIQ_TCFG_RETENTION_MS], c.value[KIQ_TCFG_RETENTION_MS]);
    kiq_topic_configs_clear(&c);
    kiq_topic_configs_clear(&copy);
    assert_null(c.value[KIQ_TCFG_RETENTION_MS]);
}

static void test_list_ops(void **state)
{
    (void)state;
    kiq_topic_configs_t c = {0};
    int i = KIQ_TCFG_CLEANUP_POLICY;
    assert_int_equal(kiq_topic_configs_append(&c, i, "delete", "compact", 7), 0);
    assert_string_equal(c.value[i], "delete,compact");
    /* already there: not twice */
    assert_int_equal(kiq_topic_configs_append(&c, i, c.value[i], "delete", 6), 0);
    assert_string_equal(c.value[i], "delete,compact");
    assert_int_equal(kiq_topic_configs_subtract(&c, i, c.value[i], "delete", 6), 0);
    assert_string_equal(c.value[i], "compact");
    /* subtracting what is absent changes nothing */
    assert_int_equal(kiq_topic_configs_subtract(&c, i, c.value[i], "delete", 6), 0);
    assert_string_equal(c.value[i], "compact");
    /* down to no policy (Kafka 4.2+: neither deleted nor compacted) */
    assert_int_equal(kiq_topic_configs_subtract(&c, i, c.value[i], "compact", 7), 0);
    assert_string_equal(c.value[i], "");
    assert_false(kiq_topic_config_policy_has(NULL, &c, "delete"));
    assert_false(kiq_topic_config_policy_has(NULL, &c, "compact"));
    assert_int_equal(kiq_topic_configs_append(&c, i, c.value[i], "compact", 7), 0);
    assert_string_equal(c.value[i], "compact");
    assert_int_equal(kiq_topic_configs_append(&c, i, c.value[i], "shred", 5), KIQ_ERR_INVALID_CONFIG);
    assert_non_null(strstr(kiq_error_get(), "cleanup.policy"));
    /* lists only */
    assert_int_equal(kiq_topic_configs_append(&c, KIQ_TCFG_RETENTION_MS, "1", "2", 1), KIQ_ERR_INVALID_CONFIG);
    assert_non_null(strstr(kiq_error_get(), "retention.ms"));
    assert_int_equal(kiq_topic_configs_subtract(&c, KIQ_TCFG_COMPRESSION_TYPE, "gzip", "gzip", 4),
                     KIQ_ERR_INVALID_CONFIG);
    kiq_topic_configs_clear(&c);
}

static char root[64];

static int setup_dir(void **state)
{
    (void)state;
    return kiq_test_temp_dir(root, sizeof root, "tcfg");
}

static int teardown_dir(void **state)
{
    (void)state;
    kiq_test_remove_tree(root);
    return 0;
}

static bool file_exists(const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    struct stat st;
    return stat(p, &st) == 0;
}

static bool only_keep(const char *topic, void *ctx)
{
    return strcmp(topic, ctx) == 0;
}

static void test_store_round_trip(void **state)
{
    (void)state;
    kiq_topic_config_store_t *s = kiq_topic_config_store_files_new(root);
    assert_non_null(s);
    kiq_topic_configs_t c = {0}, back = {0};
    assert_int_equal(kiq_topic_configs_set(&c, "cleanup.policy", 14, "compact,delete", 14), 0);
    assert_int_equal(kiq_topic_configs_set(&c, "max.message.bytes", 17, "2048", 4), 0);
    assert_int_equal(kiq_topic_config_store_save(s, "a.b_c-1", &c), 0);
    assert_true(file_exists(".topic-configs/a.b_c-1.properties"));
    assert_int_equal(kiq_topic_config_store_load(s, "a.b_c-1", &back), 0);
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        if (c.value[i]) assert_string_equal(back.value[i], c.value[i]);
        else assert_null(back.value[i]);
    }
    kiq_topic_configs_clear(&back);
    /* nothing saved: empty, no error */
    assert_int_equal(kiq_topic_config_store_load(s, "other", &back), 0);
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) assert_null(back.value[i]);
    /* an empty set removes the file */
    assert_int_equal(kiq_topic_config_store_save(s, "other", &c), 0);
    kiq_topic_configs_t empty = {0};
    assert_int_equal(kiq_topic_config_store_save(s, "other", &empty), 0);
    assert_false(file_exists(".topic-configs/other.properties"));
    /* pruning drops the configs of topics that are gone and unfinished saves */
    assert_int_equal(kiq_topic_config_store_save(s, "gone", &c), 0);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.topic-configs/half.properties.tmp", root);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("max.message.bytes=1", f);
    fclose(f);
    s->ops->prune(s, only_keep, "a.b_c-1");
    assert_true(file_exists(".topic-configs/a.b_c-1.properties"));
    assert_false(file_exists(".topic-configs/gone.properties"));
    assert_false(file_exists(".topic-configs/half.properties.tmp"));
    /* a hand-edited bad line is skipped, the rest kept */
    snprintf(tmp, sizeof tmp, "%s/.topic-configs/edited.properties", root);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("# comment\nsegment.bytes=1\nretention.ms=5000\nnot a line\n", f);
    fclose(f);
    assert_int_equal(kiq_topic_config_store_load(s, "edited", &back), 0);
    assert_null(back.value[KIQ_TCFG_SEGMENT_BYTES]);
    assert_string_equal(back.value[KIQ_TCFG_RETENTION_MS], "5000");
    kiq_topic_configs_clear(&back);
    assert_int_equal(kiq_topic_config_store_remove(s, "a.b_c-1"), 0);
    assert_false(file_exists(".topic-configs/a.b_c-1.properties"));
    assert_int_equal(kiq_topic_config_store_remove(s, "a.b_c-1"), 0);
    kiq_topic_configs_clear(&c);
    kiq_topic_config_store_free(s);
}

static int set_ms(kiq_topic_configs_t *c, void *ctx)
{
    return kiq_topic_configs_set(c, "message.timestamp.type", 22, ctx, (int)strlen(ctx));
}

static void test_topics_keep_configs(void **state)
{
    (void)state;
    kiq_log_config_t lc;
    kiq_log_config_default(&lc);
    kiq_topics_t *t = kiq_topics_open(root, &lc);
    assert_non_null(t);
    kiq_topic_configs_t c = {0};
    assert_int_equal(kiq_topic_configs_set(&c, "max.message.bytes", 17, "500", 3), 0);
    assert_int_equal(kiq_topics_create_with_configs(t, KIQ_STR("cfg"), 2, 1, &c, false), 0);
    kiq_topic_configs_clear(&c);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("cfg"));
    assert_non_null(topic);
    assert_int_equal(atomic_load(&topic->max_message_bytes), 500);
    assert_int_equal(atomic_load(&topic->log_append_time), -1);
    /* validate_only and a refused edit change nothing */
    assert_int_equal(kiq_topics_update_configs(t, topic, set_ms, "LogAppendTime", true), 0);
    assert_int_equal(atomic_load(&topic->log_append_time), -1);
    assert_int_equal(kiq_topics_update_configs(t, topic, set_ms, "Never", false), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_topics_update_configs(t, topic, set_ms, "LogAppendTime", false), 0);
    assert_int_equal(atomic_load(&topic->log_append_time), 1);
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    t = kiq_topics_open(root, &lc);
    assert_non_null(t);
    topic = kiq_topics_get(t, KIQ_STR("cfg"));
    assert_non_null(topic);
    assert_int_equal(atomic_load(&topic->max_message_bytes), 500);
    assert_int_equal(atomic_load(&topic->log_append_time), 1);
    assert_int_equal(kiq_topic_configs_snapshot(topic, &c), 0);
    assert_string_equal(c.value[KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE], "LogAppendTime");
    kiq_topic_configs_clear(&c);
    assert_int_equal(kiq_topics_delete(t, topic), 0);
    assert_false(file_exists(".topic-configs/cfg.properties"));
    /* the deleted topic takes no more changes */
    assert_int_equal(kiq_topics_update_configs(t, topic, set_ms, "CreateTime", false),
                     KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_false(file_exists(".topic-configs/cfg.properties"));
    kiq_topic_unref(topic);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("cfg"), 1, 1, false), 0);
    topic = kiq_topics_get(t, KIQ_STR("cfg"));
    assert_int_equal(atomic_load(&topic->max_message_bytes), -1);
    assert_int_equal(kiq_topic_configs_snapshot(topic, &c), 0);
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) assert_null(c.value[i]);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

int main(void)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_and_long),
        cmocka_unit_test(test_double_bool_string_list),
        cmocka_unit_test(test_every_kafka4_config_known),
        cmocka_unit_test(test_kafka4_validation),
        cmocka_unit_test(test_lags_checked_together),
        cmocka_unit_test(test_set_unknown_null_trim),
        cmocka_unit_test(test_list_ops),
        cmocka_unit_test_setup_teardown(test_store_round_trip, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_topics_keep_configs, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
