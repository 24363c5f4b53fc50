/* Share groups' group configs; see group_configs.h. */
#include "config/group_configs.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

const char *const kiq_group_config_names[KIQ_GROUP_CFG__COUNT] = {
    "share.auto.offset.reset",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.isolation.level",
};

int kiq_group_config_find(kiq_str_t name)
{
    for (int i = 0; i < KIQ_GROUP_CFG__COUNT; i++)
        if (kiq_str_eq(name, kiq_group_config_names[i])) return i;
    return -1;
}

/* A whole decimal number in [min, max]. */
static bool int_in(kiq_str_t v, long min, long max)
{
    if (v.len <= 0 || v.len > 12) return false;
    char buf[16];
    memcpy(buf, v.p, (size_t)v.len);
    buf[v.len] = 0;
    char *end;
    long n = strtol(buf, &end, 10);
    return *end == 0 && n >= min && n <= max;
}

static int invalid(int i, kiq_str_t value, const char *why)
{
    kiq_error_set("Invalid value " KIQ_STR_FMT " for configuration %s: %s", KIQ_STR_ARG(value),
                  kiq_group_config_names[i], why);
    return KIQ_ERR_INVALID_CONFIG;
}

int kiq_group_configs_set(kiq_group_configs_t *c, int i, kiq_str_t value)
{
    if (value.p) {
        switch (i) {
        case KIQ_GROUP_CFG_AUTO_OFFSET_RESET:
            if (!kiq_str_eq(value, "latest") && !kiq_str_eq(value, "earliest"))
                return invalid(i, value, "String must be one of: latest, earliest");
            break;
        case KIQ_GROUP_CFG_LOCK_DURATION_MS:
            if (!int_in(value, 1000, 3600000)) return invalid(i, value, "Value must be in [1000, 3600000]");
            break;
        case KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT:
            if (!int_in(value, 2, 10)) return invalid(i, value, "Value must be in [2, 10]");
            break;
        default:
            if (!kiq_str_eq(value, "read_uncommitted") && !kiq_str_eq(value, "read_committed"))
                return invalid(i, value, "String must be one of: read_committed, read_uncommitted");
            break;
        }
    }
    char *d = NULL;
    if (value.p && !(d = strndup(value.p, (size_t)value.len))) return -1;
    free(c->v[i]);
    c->v[i] = d;
    return 0;
}

int kiq_group_configs_copy(kiq_group_configs_t *dst, const kiq_group_configs_t *src)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < KIQ_GROUP_CFG__COUNT; i++)
        if (src->v[i] && !(dst->v[i] = strdup(src->v[i]))) {
            kiq_group_configs_clear(dst);
            return -1;
        }
    return 0;
}

void kiq_group_configs_clear(kiq_group_configs_t *c)
{
    for (int i = 0; i < KIQ_GROUP_CFG__COUNT; i++) {
        free(c->v[i]);
        c->v[i] = NULL;
    }
}
