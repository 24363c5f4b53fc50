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

/* Ranges and allowed values follow Kafka's LogConfig definitions. */
const kiq_topic_config_def_t kiq_topic_config_defs[KIQ_TOPIC_CONFIG_COUNT] = {
    [KIQ_TCFG_CLEANUP_POLICY] = {"cleanup.policy", KIQ_CFG_LOG_CLEANUP_POLICY, NULL, 1, KIQ_CONFIG_WIRE_LIST,
                                 0, 0, "compact,delete"},
    [KIQ_TCFG_COMPRESSION_TYPE] = {"compression.type", KIQ_CFG_COMPRESSION_TYPE, NULL, 1,
                                   KIQ_CONFIG_WIRE_STRING, 0, 0,
                                   "uncompressed,zstd,lz4,snappy,gzip,producer"},
    [KIQ_TCFG_DELETE_RETENTION_MS] = {"delete.retention.ms", -1, "86400000", 1, KIQ_CONFIG_WIRE_LONG, 0,
                                      INT64_MAX, NULL},
    [KIQ_TCFG_FLUSH_MESSAGES] = {"flush.messages", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG, 1,
                                 INT64_MAX, NULL},
    [KIQ_TCFG_FLUSH_MS] = {"flush.ms", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG, 0, INT64_MAX,
                           NULL},
    [KIQ_TCFG_INDEX_INTERVAL_BYTES] = {"index.interval.bytes", KIQ_CFG_LOG_INDEX_INTERVAL_BYTES, NULL, 1,
                                       KIQ_CONFIG_WIRE_INT, 0, INT32_MAX, NULL},
    [KIQ_TCFG_MAX_MESSAGE_BYTES] = {"max.message.bytes", KIQ_CFG_MESSAGE_MAX_BYTES, NULL, 1,
                                    KIQ_CONFIG_WIRE_INT, 0, INT32_MAX, NULL},
    [KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE] = {"message.timestamp.type", KIQ_CFG_MESSAGE_TIMESTAMP_TYPE, NULL, 1,
                                         KIQ_CONFIG_WIRE_STRING, 0, 0, "CreateTime,LogAppendTime"},
    [KIQ_TCFG_MIN_CLEANABLE_DIRTY_RATIO] = {"min.cleanable.dirty.ratio", -1, "0.5", 1,
                                            KIQ_CONFIG_WIRE_DOUBLE, 0, 1, NULL},
    [KIQ_TCFG_MIN_COMPACTION_LAG_MS] = {"min.compaction.lag.ms", -1, "0", 1, KIQ_CONFIG_WIRE_LONG, 0,
                                        INT64_MAX, NULL},
    [KIQ_TCFG_MIN_INSYNC_REPLICAS] = {"min.insync.replicas", KIQ_CFG_MIN_INSYNC_REPLICAS, NULL, 1,
                                      KIQ_CONFIG_WIRE_INT, 1, INT32_MAX, NULL},
    [KIQ_TCFG_RETENTION_BYTES] = {"retention.bytes", KIQ_CFG_LOG_RETENTION_BYTES, NULL, 1, KIQ_CONFIG_WIRE_LONG,
                                  L64, NULL},
    [KIQ_TCFG_RETENTION_MS] = {"retention.ms", KIQ_CFG_LOG_RETENTION_HOURS, NULL, 3600000,
                               KIQ_CONFIG_WIRE_LONG, -1, INT64_MAX, NULL},
    /* 14: Kafka's smallest legacy record, its lower bound */
    [KIQ_TCFG_SEGMENT_BYTES] = {"segment.bytes", KIQ_CFG_LOG_SEGMENT_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT, 14,
                                INT32_MAX, NULL},
    [KIQ_TCFG_SEGMENT_INDEX_BYTES] = {"segment.index.bytes", KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES, NULL, 1,
                                      KIQ_CONFIG_WIRE_INT, 4, INT32_MAX, NULL},
    [KIQ_TCFG_SEGMENT_MS] = {"segment.ms", KIQ_CFG_LOG_ROLL_HOURS, NULL, 3600000, KIQ_CONFIG_WIRE_LONG, 1,
                             INT64_MAX, NULL},
    [KIQ_TCFG_UNCLEAN_LEADER_ELECTION_ENABLE] = {"unclean.leader.election.enable", -1, "false", 1,
                                                 KIQ_CONFIG_WIRE_BOOLEAN, 0, 0, NULL},
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

static int check_list(const kiq_topic_config_def_t *d, const char *value, int len)
{
    if (len == 0) return bad_value(d, value, len, "the list must not be empty");
    const char *p = value, *end = value + len;
    while (p <= end) {
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

int kiq_topic_config_check(int i, const char *value, int len)
{
    if (i < 0 || i >= kiq_topic_config_count) return kiq_error_set("no such topic config"), KIQ_ERR_INVALID_CONFIG;
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    if (!value || len < 0) {
        kiq_error_set("Null value not supported for topic config %s", d->name);
        return KIQ_ERR_INVALID_CONFIG;
    }
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

/* Topic configs Kafka 3.x deprecated but still takes (they do nothing
 * with RecordBatch v2 only, or are superseded): accepted and ignored. */
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
            KIQ_WARN("topic configuration %s is deprecated and ignored here (as Kafka 3.x ignores it)", deprecated[k]);
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

int64_t kiq_topic_configs_int(const kiq_topic_configs_t *c, int i, int64_t dflt)
{
    if (!c->value[i]) return dflt;
    return strtoll(c->value[i], NULL, 10);
}
