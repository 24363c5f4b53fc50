#include "config/topic_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/say.h"
#include "proto/errors.h"

#define L64 INT64_MIN, INT64_MAX
#define I32 INT32_MIN, INT32_MAX
#define IGNORED KIQ_TOPIC_CONFIG_IGNORED

static int gzip_level(const kiq_topic_config_def_t *d, const char *value, int len);
static int throttled_replicas(const kiq_topic_config_def_t *d, const char *value, int len);
static int no_tiered_storage(const kiq_topic_config_def_t *d, const char *value, int len);

/* Names, types, defaults, ranges and allowed values follow Kafka 4.x's
 * LogConfig. */
const kiq_topic_config_def_t kiq_topic_config_defs[KIQ_TOPIC_CONFIG_COUNT] = {
    [KIQ_TCFG_CLEANUP_POLICY] = {"cleanup.policy", KIQ_CFG_LOG_CLEANUP_POLICY, NULL, 1, KIQ_CONFIG_WIRE_LIST,
                                 0, 0, "compact,delete", NULL,
                                 "delete: old segments go by retention.ms and retention.bytes; compact: the "
                                 "log cleaner keeps the latest record of each key; both; or none (empty): "
                                 "every record is kept."},
    [KIQ_TCFG_COMPRESSION_GZIP_LEVEL] = {"compression.gzip.level", -1, "-1", 1, KIQ_CONFIG_WIRE_INT, I32, NULL,
                                         gzip_level,
                                         IGNORED "the broker never recompresses (see compression.type), so "
                                         "it has no level to choose."},
    [KIQ_TCFG_COMPRESSION_LZ4_LEVEL] = {"compression.lz4.level", -1, "9", 1, KIQ_CONFIG_WIRE_INT, 1, 17, NULL,
                                        NULL,
                                        IGNORED "the broker never recompresses (see compression.type), so it "
                                        "has no level to choose."},
    [KIQ_TCFG_COMPRESSION_TYPE] = {"compression.type", KIQ_CFG_COMPRESSION_TYPE, NULL, 1,
                                   KIQ_CONFIG_WIRE_STRING, 0, 0, "uncompressed,zstd,lz4,snappy,gzip,producer",
                                   NULL,
                                   IGNORED "batches are stored as the producer compressed them, as with "
                                   "'producer'; the broker does not recompress."},
    [KIQ_TCFG_COMPRESSION_ZSTD_LEVEL] = {"compression.zstd.level", -1, "3", 1, KIQ_CONFIG_WIRE_INT, -131072, 22,
                                         NULL, NULL,
                                         IGNORED "the broker never recompresses (see compression.type), so "
                                         "it has no level to choose."},
    [KIQ_TCFG_DELETE_RETENTION_MS] = {"delete.retention.ms", -1, "86400000", 1, KIQ_CONFIG_WIRE_LONG, 0,
                                      INT64_MAX, NULL, NULL,
                                      "How long the log cleaner keeps tombstones (and transaction markers) "
                                      "of a compacted topic, from their segment's newest timestamp."},
    [KIQ_TCFG_ERRORS_DEADLETTERQUEUE_GROUP_ENABLE] = {
        "errors.deadletterqueue.group.enable", -1, "false", 1, KIQ_CONFIG_WIRE_BOOLEAN, 0, 0, NULL, NULL,
        IGNORED "there are no share groups yet, so no records go to a dead-letter queue."},
    [KIQ_TCFG_FILE_DELETE_DELAY_MS] = {"file.delete.delay.ms", -1, "60000", 1, KIQ_CONFIG_WIRE_LONG, 0,
                                       INT64_MAX, NULL, NULL,
                                       IGNORED "a deleted segment's files are unlinked at once; a reader "
                                       "still holding them reads on, so no delay is needed."},
    [KIQ_TCFG_FLUSH_MESSAGES] = {"flush.messages", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG, 1,
                                 INT64_MAX, NULL, NULL,
                                 "fsync a partition's log after this many records have been appended since the "
                                 "last flush."},
    [KIQ_TCFG_FLUSH_MS] = {"flush.ms", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG, 0, INT64_MAX, NULL,
                           NULL, "fsync a partition's log once its oldest unflushed record is this old."},
    [KIQ_TCFG_FOLLOWER_REPLICATION_THROTTLED_REPLICAS] = {
        "follower.replication.throttled.replicas", -1, "", 1, KIQ_CONFIG_WIRE_LIST, 0, 0, NULL, throttled_replicas,
        IGNORED "replication is not throttled (there are no replication quotas); the list is checked."},
    [KIQ_TCFG_INDEX_INTERVAL_BYTES] = {"index.interval.bytes", KIQ_CFG_LOG_INDEX_INTERVAL_BYTES, NULL, 1,
                                       KIQ_CONFIG_WIRE_INT, 0, INT32_MAX, NULL, NULL,
                                       "Log bytes between two entries of a segment's offset index."},
    [KIQ_TCFG_LEADER_REPLICATION_THROTTLED_REPLICAS] = {
        "leader.replication.throttled.replicas", -1, "", 1, KIQ_CONFIG_WIRE_LIST, 0, 0, NULL, throttled_replicas,
        IGNORED "replication is not throttled (there are no replication quotas); the list is checked."},
    [KIQ_TCFG_LOCAL_RETENTION_BYTES] = {"local.retention.bytes", -1, "-2", 1, KIQ_CONFIG_WIRE_LONG, -2,
                                        INT64_MAX, NULL, NULL,
                                        IGNORED "there is no tiered storage, so every segment is local and "
                                        "retention.bytes alone applies (as in Kafka without it)."},
    [KIQ_TCFG_LOCAL_RETENTION_MS] = {"local.retention.ms", -1, "-2", 1, KIQ_CONFIG_WIRE_LONG, -2, INT64_MAX, NULL,
                                     NULL,
                                     IGNORED "there is no tiered storage, so every segment is local and "
                                     "retention.ms alone applies (as in Kafka without it)."},
    [KIQ_TCFG_MAX_COMPACTION_LAG_MS] = {"max.compaction.lag.ms", -1, "9223372036854775807", 1,
                                        KIQ_CONFIG_WIRE_LONG, 1, INT64_MAX, NULL, NULL,
                                        "The longest a record of a compacted topic stays uncompactable: its "
                                        "active segment rolls once this much newer data arrives (when shorter "
                                        "than segment.ms), and the cleaner compacts every closed segment on "
                                        "each pass."},
    [KIQ_TCFG_MAX_DECOMPRESSED_MESSAGE_BYTES] = {
        "max.decompressed.message.bytes", -1, "2147483639", 1, KIQ_CONFIG_WIRE_INT, 1, INT32_MAX, NULL, NULL,
        "The largest a compressed record batch may decompress to (MESSAGE_TOO_LARGE past it); the broker's "
        "kafkaiq.max.decompressed.batch.bytes bounds it too."},
    [KIQ_TCFG_MAX_MESSAGE_BYTES] = {"max.message.bytes", KIQ_CFG_MESSAGE_MAX_BYTES, NULL, 1,
                                    KIQ_CONFIG_WIRE_INT, 0, INT32_MAX, NULL, NULL,
                                    "The largest record batch (after compression) a produce may write."},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_AFTER_MAX_MS] = {
        "message.timestamp.after.max.ms", KIQ_CFG_LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS, NULL, 1,
        KIQ_CONFIG_WIRE_LONG, 0, INT64_MAX, NULL, NULL,
        "With CreateTime, a produce whose record timestamp is more than this ahead of the broker's clock is "
        "refused with INVALID_TIMESTAMP."},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS] = {
        "message.timestamp.before.max.ms", KIQ_CFG_LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS, NULL, 1,
        KIQ_CONFIG_WIRE_LONG, 0, INT64_MAX, NULL, NULL,
        "With CreateTime, a produce whose record timestamp is more than this behind the broker's clock is "
        "refused with INVALID_TIMESTAMP."},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE] = {"message.timestamp.type", KIQ_CFG_MESSAGE_TIMESTAMP_TYPE, NULL, 1,
                                         KIQ_CONFIG_WIRE_STRING, 0, 0, "CreateTime,LogAppendTime", NULL,
                                         "CreateTime keeps the producer's timestamps; LogAppendTime stamps each "
                                         "batch with the broker's clock as it is appended."},
    [KIQ_TCFG_MIN_CLEANABLE_DIRTY_RATIO] = {"min.cleanable.dirty.ratio", -1, "0.5", 1, KIQ_CONFIG_WIRE_DOUBLE, 0,
                                            1, NULL, NULL,
                                            IGNORED "the cleaner compacts every closed segment of a compacted "
                                            "topic on each pass (log.cleaner.backoff.ms), whatever the ratio."},
    [KIQ_TCFG_MIN_COMPACTION_LAG_MS] = {"min.compaction.lag.ms", -1, "0", 1, KIQ_CONFIG_WIRE_LONG, 0,
                                        INT64_MAX, NULL, NULL,
                                        "The cleaner leaves a segment whose newest record is younger than this, "
                                        "and those after it, uncompacted."},
    [KIQ_TCFG_MIN_INSYNC_REPLICAS] = {"min.insync.replicas", KIQ_CFG_MIN_INSYNC_REPLICAS, NULL, 1,
                                      KIQ_CONFIG_WIRE_INT, 1, INT32_MAX, NULL, NULL,
                                      "In-sync replicas an acks=all produce needs (NOT_ENOUGH_REPLICAS below)."},
    [KIQ_TCFG_PREALLOCATE] = {"preallocate", -1, "false", 1, KIQ_CONFIG_WIRE_BOOLEAN, 0, 0, NULL, NULL,
                              IGNORED "segment files grow as they are written."},
    [KIQ_TCFG_REMOTE_COPY_LAG_BYTES] = {"remote.copy.lag.bytes", -1, "-1", 1, KIQ_CONFIG_WIRE_LONG, -1,
                                        INT64_MAX, NULL, NULL, IGNORED "there is no tiered storage to copy to."},
    [KIQ_TCFG_REMOTE_COPY_LAG_MS] = {"remote.copy.lag.ms", -1, "0", 1, KIQ_CONFIG_WIRE_LONG, -1, INT64_MAX, NULL,
                                     NULL, IGNORED "there is no tiered storage to copy to."},
    [KIQ_TCFG_REMOTE_LOG_COPY_DISABLE] = {"remote.log.copy.disable", -1, "false", 1, KIQ_CONFIG_WIRE_BOOLEAN, 0,
                                          0, NULL, NULL,
                                          IGNORED "there is no tiered storage to copy to."},
    [KIQ_TCFG_REMOTE_LOG_DELETE_ON_DISABLE] = {"remote.log.delete.on.disable", -1, "false", 1,
                                               KIQ_CONFIG_WIRE_BOOLEAN, 0, 0, NULL, NULL,
                                               IGNORED "there is no tiered storage to delete from."},
    [KIQ_TCFG_REMOTE_STORAGE_ENABLE] = {"remote.storage.enable", -1, "false", 1, KIQ_CONFIG_WIRE_BOOLEAN, 0, 0,
                                        NULL, no_tiered_storage,
                                        IGNORED "there is no tiered storage; true is refused, as a Kafka broker "
                                        "with tiered storage disabled refuses it."},
    [KIQ_TCFG_RETENTION_BYTES] = {"retention.bytes", KIQ_CFG_LOG_RETENTION_BYTES, NULL, 1, KIQ_CONFIG_WIRE_LONG,
                                  L64, NULL, NULL,
                                  "With the delete policy, the oldest segments of a partition larger than this "
                                  "go (negative: no limit)."},
    [KIQ_TCFG_RETENTION_MS] = {"retention.ms", KIQ_CFG_LOG_RETENTION_HOURS, NULL, 3600000,
                               KIQ_CONFIG_WIRE_LONG, -1, INT64_MAX, NULL, NULL,
                               "With the delete policy, segments whose newest record is older than this go "
                               "(-1: kept forever)."},
    /* 14: Kafka's smallest legacy record, its lower bound */
    [KIQ_TCFG_SEGMENT_BYTES] = {"segment.bytes", KIQ_CFG_LOG_SEGMENT_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT, 14,
                                INT32_MAX, NULL, NULL,
                                "A partition's active segment rolls before it would pass this size."},
    [KIQ_TCFG_SEGMENT_INDEX_BYTES] = {"segment.index.bytes", KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES, NULL, 1,
                                      KIQ_CONFIG_WIRE_INT, 4, INT32_MAX, NULL, NULL,
                                      "The largest offset or time index of a segment; a full index rolls it."},
    [KIQ_TCFG_SEGMENT_JITTER_MS] = {"segment.jitter.ms", -1, "0", 1, KIQ_CONFIG_WIRE_LONG, 0, INT64_MAX, NULL,
                                    NULL,
                                    "Each segment rolls by time a random amount below this (and below "
                                    "segment.ms) early, so partitions do not all roll at once."},
    [KIQ_TCFG_SEGMENT_MS] = {"segment.ms", KIQ_CFG_LOG_ROLL_HOURS, NULL, 3600000, KIQ_CONFIG_WIRE_LONG, 1,
                             INT64_MAX, NULL, NULL,
                             "The active segment rolls when a batch arrives whose timestamp is more than this "
                             "past its first batch's."},
    [KIQ_TCFG_UNCLEAN_LEADER_ELECTION_ENABLE] = {"unclean.leader.election.enable", -1, "false", 1,
                                                 KIQ_CONFIG_WIRE_BOOLEAN, 0, 0, NULL, NULL,
                                                 "Whether a replica outside the ISR may be elected leader when no "
                                                 "ISR member is alive (may lose acknowledged records)."},
};
const int kiq_topic_config_count = KIQ_TOPIC_CONFIG_COUNT;

int kiq_topic_config_find(const char *name, int len)
{
    if (!name || len < 0) return -1;
    for (int i = 0; i < kiq_topic_config_count; i++)
        if ((int)strlen(kiq_topic_config_defs[i].name) == len &&
            memcmp(kiq_topic_config_defs[i].name, name, (size_t)len) == 0)
            return i;
    return -1;
}

static const char *const synonym_names[KIQ_TOPIC_CONFIG_COUNT][4] = {
    [KIQ_TCFG_CLEANUP_POLICY] = {"log.cleanup.policy"},
    [KIQ_TCFG_COMPRESSION_GZIP_LEVEL] = {"compression.gzip.level"},
    [KIQ_TCFG_COMPRESSION_LZ4_LEVEL] = {"compression.lz4.level"},
    [KIQ_TCFG_COMPRESSION_TYPE] = {"compression.type"},
    [KIQ_TCFG_COMPRESSION_ZSTD_LEVEL] = {"compression.zstd.level"},
    [KIQ_TCFG_DELETE_RETENTION_MS] = {"log.cleaner.delete.retention.ms"},
    [KIQ_TCFG_FILE_DELETE_DELAY_MS] = {"log.segment.delete.delay.ms"},
    [KIQ_TCFG_FLUSH_MESSAGES] = {"log.flush.interval.messages"},
    [KIQ_TCFG_FLUSH_MS] = {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
    [KIQ_TCFG_INDEX_INTERVAL_BYTES] = {"log.index.interval.bytes"},
    [KIQ_TCFG_LOCAL_RETENTION_BYTES] = {"log.local.retention.bytes"},
    [KIQ_TCFG_LOCAL_RETENTION_MS] = {"log.local.retention.ms"},
    [KIQ_TCFG_MAX_COMPACTION_LAG_MS] = {"log.cleaner.max.compaction.lag.ms"},
    [KIQ_TCFG_MAX_DECOMPRESSED_MESSAGE_BYTES] = {"max.decompressed.message.bytes"},
    [KIQ_TCFG_MAX_MESSAGE_BYTES] = {"message.max.bytes"},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_AFTER_MAX_MS] = {"log.message.timestamp.after.max.ms"},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS] = {"log.message.timestamp.before.max.ms"},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE] = {"log.message.timestamp.type"},
    [KIQ_TCFG_MIN_CLEANABLE_DIRTY_RATIO] = {"log.cleaner.min.cleanable.ratio"},
    [KIQ_TCFG_MIN_COMPACTION_LAG_MS] = {"log.cleaner.min.compaction.lag.ms"},
    [KIQ_TCFG_MIN_INSYNC_REPLICAS] = {"min.insync.replicas"},
    [KIQ_TCFG_PREALLOCATE] = {"log.preallocate"},
    [KIQ_TCFG_REMOTE_COPY_LAG_BYTES] = {"log.remote.copy.lag.bytes"},
    [KIQ_TCFG_REMOTE_COPY_LAG_MS] = {"log.remote.copy.lag.ms"},
    [KIQ_TCFG_RETENTION_BYTES] = {"log.retention.bytes"},
    [KIQ_TCFG_RETENTION_MS] = {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
    [KIQ_TCFG_SEGMENT_BYTES] = {"log.segment.bytes"},
    [KIQ_TCFG_SEGMENT_INDEX_BYTES] = {"log.index.size.max.bytes"},
    [KIQ_TCFG_SEGMENT_JITTER_MS] = {"log.roll.jitter.ms", "log.roll.jitter.hours"},
    [KIQ_TCFG_SEGMENT_MS] = {"log.roll.ms", "log.roll.hours"},
    [KIQ_TCFG_UNCLEAN_LEADER_ELECTION_ENABLE] = {"unclean.leader.election.enable"},
};

const char *const *kiq_topic_config_synonyms(int i) { return synonym_names[i]; }

/* Broker configs that, when set explicitly, win over the one in the table
 * (Kafka's precedence: log.retention.ms > minutes > hours, log.roll.ms >
 * log.roll.hours), most precise first. */
static const struct {
    int topic_config;
    enum kiq_config_id broker_config;
    int64_t scale;
} preferred_synonyms[] = {
    {KIQ_TCFG_RETENTION_MS, KIQ_CFG_LOG_RETENTION_MS, 1},
    {KIQ_TCFG_RETENTION_MS, KIQ_CFG_LOG_RETENTION_MINUTES, 60000},
    {KIQ_TCFG_SEGMENT_MS, KIQ_CFG_LOG_ROLL_MS, 1},
};

const char *kiq_topic_config_default(const kiq_config_t *c, int i, char *buf, size_t n, int *source)
{
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    *source = KIQ_CONFIG_SOURCE_DEFAULT;
    for (size_t k = 0; k < sizeof preferred_synonyms / sizeof *preferred_synonyms; k++) {
        bool is_default;
        if (preferred_synonyms[k].topic_config != i) continue;
        kiq_config_text(c, preferred_synonyms[k].broker_config, &is_default);
        if (is_default) continue;
        int64_t v = kiq_config_int(c, preferred_synonyms[k].broker_config);
        *source = (int)kiq_config_source(c, preferred_synonyms[k].broker_config);
        snprintf(buf, n, "%lld", (long long)(v < 0 ? -1 : v * preferred_synonyms[k].scale));
        return buf;
    }
    if (d->broker_config < 0) return d->fixed;
    bool is_default;
    const char *text = kiq_config_text(c, d->broker_config, &is_default);
    if (!is_default) *source = (int)kiq_config_source(c, d->broker_config);
    if (d->scale == 1) return text;
    int64_t v = kiq_config_int(c, d->broker_config);
    snprintf(buf, n, "%lld", (long long)(v < 0 ? -1 : v * d->scale));
    return buf;
}

const char *kiq_topic_config_effective(const kiq_config_t *c, const kiq_topic_configs_t *tc, int i,
                                       char *buf, size_t n, int *source)
{
    if (tc && tc->value[i]) {
        *source = KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC;
        return tc->value[i];
    }
    return kiq_topic_config_default(c, i, buf, n, source);
}

enum kiq_config_wire_type kiq_config_wire_type(enum kiq_config_id id)
{
    /* text configs Kafka defines as lists */
    switch (id) {
    case KIQ_CFG_LISTENERS:
    case KIQ_CFG_ADVERTISED_LISTENERS:
    case KIQ_CFG_LOG_DIRS:
    case KIQ_CFG_CONTROLLER_QUORUM_VOTERS:
    case KIQ_CFG_PROCESS_ROLES:
    case KIQ_CFG_LOG_CLEANUP_POLICY: return KIQ_CONFIG_WIRE_LIST;
    default: break;
    }
    switch (kiq_config_defs[id].type) {
    case KIQ_CFG_INT: return KIQ_CONFIG_WIRE_INT;
    case KIQ_CFG_LONG: return KIQ_CONFIG_WIRE_LONG;
    case KIQ_CFG_BOOL: return KIQ_CONFIG_WIRE_BOOLEAN;
    default: return KIQ_CONFIG_WIRE_STRING;
    }
}

static void trim(const char **p, int *len)
{
    while (*len > 0 && (**p == ' ' || **p == '\t')) (*p)++, (*len)--;
    while (*len > 0 && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t')) (*len)--;
}

/* Whether [p, p+len) is one of the comma-separated words of `valid`. */
static bool one_of(const char *valid, const char *p, int len)
{
    for (const char *w = valid; *w;) {
        const char *end = strchr(w, ',');
        int wl = end ? (int)(end - w) : (int)strlen(w);
        if (wl == len && memcmp(w, p, (size_t)len) == 0) return true;
        if (!end) break;
        w = end + 1;
    }
    return false;
}

static int bad_value(const kiq_topic_config_def_t *d, const char *value, int len, const char *why)
{
    kiq_error_set("Invalid value %.*s for configuration %s: %s", len, value, d->name, why);
    return KIQ_ERR_INVALID_CONFIG;
}

/* Kafka's CompressionType.GZIP level validator: Deflater's 1..9, or -1
 * for zlib's default. */
static int gzip_level(const kiq_topic_config_def_t *d, const char *value, int len)
{
    char buf[32]; /* value is not terminated; its type check passed, so it fits */
    snprintf(buf, sizeof buf, "%.*s", len, value);
    long long n = strtoll(buf, NULL, 10);
    if (n == -1 || (n >= 1 && n <= 9)) return 0;
    return bad_value(d, value, len, "Value must be between 1 and 9 or equal to -1");
}

static bool digits(const char *p, const char *end)
{
    if (p >= end) return false;
    for (; p < end; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

/* Kafka's ThrottledReplicaListValidator: "*" alone, or items that are
 * empty or partition:broker (digits). */
static int throttled_replicas(const kiq_topic_config_def_t *d, const char *value, int len)
{
    if (len == 1 && value[0] == '*') return 0;
    const char *p = value, *end = value + len;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item = p;
        int il = (int)((comma ? comma : end) - p);
        trim(&item, &il);
        const char *colon = memchr(item, ':', (size_t)il);
        if (il > 0 && !(colon && digits(item, colon) && digits(colon + 1, item + il))) {
            char why[256];
            snprintf(why, sizeof why,
                     "%s must be the literal '*' or a list of replicas in the following format: "
                     "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
                     d->name);
            return bad_value(d, value, len, why);
        }
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* Kafka without tiered storage (remote.log.storage.system.enable=false,
 * which is all KafkaIQ has) refuses a topic that asks for it, with this. */
static int no_tiered_storage(const kiq_topic_config_def_t *d, const char *value, int len)
{
    (void)d;
    if (len == 4 && strncasecmp(value, "true", 4) == 0) {
        kiq_error_set("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
                      "remote log storage.");
        return KIQ_ERR_INVALID_CONFIG;
    }
    return 0;
}

static int check_list(const kiq_topic_config_def_t *d, const char *value, int len)
{
    if (!d->valid) return 0; /* a list of its own kind: d->check */
    /* empty is allowed: cleanup.policy, its one user, then names no policy
     * (Kafka 4.2+, where that keeps every record) */
    const char *p = value, *end = value + len;
    while (len > 0 && p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item = p;
        int il = (int)((comma ? comma : end) - p);
        trim(&item, &il);
        if (!one_of(d->valid, item, il)) {
            char why[160];
            snprintf(why, sizeof why, "each item must be one of %s", d->valid);
            return bad_value(d, value, len, why);
        }
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

/* value's type, range and allowed values; value and len untrimmed. */
static int check_type(const kiq_topic_config_def_t *d, const char *value, int len)
{
    const char *v = value;
    int vl = len;
    trim(&v, &vl);
    char buf[64];
    switch (d->type) {
    case KIQ_CONFIG_WIRE_INT:
    case KIQ_CONFIG_WIRE_LONG: {
        if (vl == 0 || vl >= (int)sizeof buf) return bad_value(d, value, len, "not a number");
        memcpy(buf, v, (size_t)vl);
        buf[vl] = '\0';
        char *end;
        errno = 0;
        long long n = strtoll(buf, &end, 10);
        bool is_int = d->type == KIQ_CONFIG_WIRE_INT;
        if (*end || errno == ERANGE || (is_int && (n < INT32_MIN || n > INT32_MAX)))
            return bad_value(d, value, len, is_int ? "expected a 32-bit integer" : "expected a 64-bit integer");
        if (n < d->min) {
            snprintf(buf, sizeof buf, "Value must be at least %lld", (long long)d->min);
            return bad_value(d, value, len, buf);
        }
        if (n > d->max) {
            snprintf(buf, sizeof buf, "Value must be no more than %lld", (long long)d->max);
            return bad_value(d, value, len, buf);
        }
        return 0;
    }
    case KIQ_CONFIG_WIRE_DOUBLE: {
        if (vl == 0 || vl >= (int)sizeof buf) return bad_value(d, value, len, "not a number");
        memcpy(buf, v, (size_t)vl);
        buf[vl] = '\0';
        char *end;
        double x = strtod(buf, &end);
        if (*end || isnan(x)) return bad_value(d, value, len, "not a number");
        if (x < (double)d->min || x > (double)d->max) {
            snprintf(buf, sizeof buf, "Value must be between %lld and %lld", (long long)d->min,
                     (long long)d->max);
            return bad_value(d, value, len, buf);
        }
        return 0;
    }
    case KIQ_CONFIG_WIRE_BOOLEAN:
        if ((vl == 4 && strncasecmp(v, "true", 4) == 0) || (vl == 5 && strncasecmp(v, "false", 5) == 0))
            return 0;
        return bad_value(d, value, len, "Expected value to be either true or false");
    case KIQ_CONFIG_WIRE_LIST: return check_list(d, v, vl);
    case KIQ_CONFIG_WIRE_STRING:
        if (!d->valid || one_of(d->valid, v, vl)) return 0;
        snprintf(buf, sizeof buf, "String must be one of: %s", d->valid);
        return bad_value(d, value, len, buf);
    }
    return 0;
}

int kiq_topic_config_check(int i, const char *value, int len)
{
    if (i < 0 || i >= kiq_topic_config_count) return kiq_error_set("no such topic config"), KIQ_ERR_INVALID_CONFIG;
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    if (!value || len < 0) {
        kiq_error_set("Null value not supported for topic config %s", d->name);
        return KIQ_ERR_INVALID_CONFIG;
    }
    int err = check_type(d, value, len);
    if (err || !d->check) return err;
    trim(&value, &len);
    return d->check(d, value, len);
}

int kiq_topic_configs_check_together(const kiq_topic_configs_t *c)
{
    int64_t min_lag = kiq_topic_configs_int(c, KIQ_TCFG_MIN_COMPACTION_LAG_MS, 0);
    int64_t max_lag = kiq_topic_configs_int(c, KIQ_TCFG_MAX_COMPACTION_LAG_MS, INT64_MAX);
    if (min_lag > max_lag) {
        kiq_error_set("conflict topic config setting min.compaction.lag.ms (%lld) > max.compaction.lag.ms (%lld)",
                      (long long)min_lag, (long long)max_lag);
        return KIQ_ERR_INVALID_CONFIG;
    }
    return 0;
}

void kiq_topic_configs_clear(kiq_topic_configs_t *c)
{
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        free(c->value[i]);
        c->value[i] = NULL;
    }
}

int kiq_topic_configs_copy(kiq_topic_configs_t *dst, const kiq_topic_configs_t *src)
{
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        dst->value[i] = src->value[i] ? strdup(src->value[i]) : NULL;
        if (src->value[i] && !dst->value[i]) {
            kiq_topic_configs_clear(dst);
            return kiq_error_set("out of memory");
        }
    }
    return 0;
}

/* Stores the checked value, trimmed. */
static int store(kiq_topic_configs_t *c, int i, const char *value, int len)
{
    int err = kiq_topic_config_check(i, value, len);
    if (err) return err;
    trim(&value, &len);
    char *copy = strndup(value, (size_t)len);
    if (!copy) return kiq_error_set("out of memory"), KIQ_ERR_INVALID_CONFIG;
    free(c->value[i]);
    c->value[i] = copy;
    return 0;
}

/* Topic configs Kafka 3.x deprecated and 4.0 removed (4.x refuses them as
 * unknown): accepted and ignored, so that older tools that still send
 * them keep working. They mean nothing with RecordBatch v2 only, and
 * message.timestamp.before/after.max.ms supersede the difference. */
static const char *const deprecated[] = {
    "message.format.version",
    "message.timestamp.difference.max.ms",
    "message.downconversion.enable",
};

int kiq_topic_configs_set(kiq_topic_configs_t *c, const char *name, int name_len, const char *value,
                          int value_len)
{
    for (size_t k = 0; name && k < sizeof deprecated / sizeof deprecated[0]; k++)
        if ((int)strlen(deprecated[k]) == name_len && memcmp(deprecated[k], name, (size_t)name_len) == 0) {
            KIQ_WARN("topic configuration %s was removed in Kafka 4.0: ignored", deprecated[k]);
            return KIQ_ERR_NONE;
        }
    int i = kiq_topic_config_find(name, name_len);
    if (i < 0) {
        kiq_error_set("Unknown topic config name: %.*s", name ? name_len : 4, name ? name : "null");
        return KIQ_ERR_INVALID_CONFIG;
    }
    return store(c, i, value, value_len);
}

static bool list_has(const char *list, const char *item, int len)
{
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        const char *w = p;
        int wl = comma ? (int)(comma - p) : (int)strlen(p);
        trim(&w, &wl);
        if (wl == len && memcmp(w, item, (size_t)len) == 0) return true;
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

/* Builds the new list from `current` and `items`: appending adds the items
 * not in current, subtracting keeps the current items not in items. */
static int list_op(kiq_topic_configs_t *c, int i, const char *current, const char *items, int items_len,
                   bool append)
{
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    if (d->type != KIQ_CONFIG_WIRE_LIST) {
        kiq_error_set("Config value %s is not allowed for config key: %s", append ? "append" : "subtract",
                      d->name);
        return KIQ_ERR_INVALID_CONFIG;
    }
    if (!items) {
        kiq_error_set("Null value not supported for topic config %s", d->name);
        return KIQ_ERR_INVALID_CONFIG;
    }
    if (!current) current = "";
    char *items_z = strndup(items, (size_t)items_len);
    size_t cap = strlen(current) + (size_t)items_len + 2;
    char *out = malloc(cap);
    if (!items_z || !out) {
        free(items_z);
        free(out);
        return kiq_error_set("out of memory"), KIQ_ERR_INVALID_CONFIG;
    }
    size_t n = 0;
    const char *filter = append ? NULL : items_z;
    for (int pass = 0; pass < (append ? 2 : 1); pass++) {
        const char *src = pass == 0 ? current : items_z;
        for (const char *p = src; *p;) {
            const char *comma = strchr(p, ',');
            const char *w = p;
            int wl = comma ? (int)(comma - p) : (int)strlen(p);
            trim(&w, &wl);
            bool keep = wl > 0;
            if (keep && filter && list_has(filter, w, wl)) keep = false;
            if (keep && pass == 1) {
                out[n] = '\0';
                if (list_has(out, w, wl)) keep = false;
            }
            if (keep) {
                if (n) out[n++] = ',';
                memcpy(out + n, w, (size_t)wl);
                n += (size_t)wl;
            }
            if (!comma) break;
            p = comma + 1;
        }
    }
    out[n] = '\0';
    int err = store(c, i, out, (int)n);
    free(items_z);
    free(out);
    return err;
}

int kiq_topic_configs_append(kiq_topic_configs_t *c, int i, const char *current, const char *items,
                             int items_len)
{
    return list_op(c, i, current, items, items_len, true);
}

int kiq_topic_configs_subtract(kiq_topic_configs_t *c, int i, const char *current, const char *items,
                               int items_len)
{
    return list_op(c, i, current, items, items_len, false);
}

bool kiq_topic_config_policy_has(const kiq_config_t *c, const kiq_topic_configs_t *tc, const char *policy)
{
    char buf[64];
    int source;
    const char *v = kiq_topic_config_effective(c, tc, KIQ_TCFG_CLEANUP_POLICY, buf, sizeof buf, &source);
    return v && list_has(v, policy, (int)strlen(policy));
}

bool kiq_topic_config_default_has(const kiq_config_t *c, int i, const char *item)
{
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    const char *v = d->broker_config >= 0 ? kiq_config_str(c, d->broker_config) : d->fixed;
    return v && list_has(v, item, (int)strlen(item));
}

int64_t kiq_topic_configs_int(const kiq_topic_configs_t *c, int i, int64_t dflt)
{
    if (!c->value[i]) return dflt;
    return strtoll(c->value[i], NULL, 10);
}
