/* Client-metrics resources' configs; see client_metrics_configs.h. */
#include "config/client_metrics_configs.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

const char *const kiq_client_metrics_config_names[KIQ_CM_CFG__COUNT] = {"interval.ms", "match", "metrics"};

static const char *const selectors[] = {"client_instance_id",      "client_id",             "client_software_name",
                                        "client_software_version", "client_source_address", "client_source_port"};
#define NSELECTORS (sizeof selectors / sizeof selectors[0])

int kiq_client_metrics_config_find(kiq_str_t name)
{
    for (int i = 0; i < KIQ_CM_CFG__COUNT; i++)
        if (kiq_str_eq(name, kiq_client_metrics_config_names[i])) return i;
    return -1;
}

static int invalid(int i, kiq_str_t value, const char *why)
{
    kiq_error_set("Invalid value " KIQ_STR_FMT " for configuration %s: %s", KIQ_STR_ARG(value),
                  kiq_client_metrics_config_names[i], why);
    return KIQ_ERR_INVALID_CONFIG;
}

/* The next comma-separated item of *s (spaces around it dropped) into
 * item; false at the end. */
static bool next_item(const char **s, char *item, size_t size)
{
    while (**s == ' ' || **s == ',') (*s)++;
    if (!**s) return false;
    const char *end = strchr(*s, ',');
    size_t n = end ? (size_t)(end - *s) : strlen(*s);
    const char *start = *s;
    *s += n;
    while (n && start[n - 1] == ' ') n--;
    if (n >= size) n = size - 1;
    memcpy(item, start, n);
    item[n] = '\0';
    return true;
}

/* Selector `key=regex` item's selector index, its anchored regex compiled
 * into re (regfree it); -1 when it is not one. */
static int selector(const char *item, regex_t *re)
{
    const char *eq = strchr(item, '=');
    if (!eq) return -1;
    size_t klen = (size_t)(eq - item);
    for (size_t k = 0; k < NSELECTORS; k++) {
        if (strlen(selectors[k]) != klen || strncmp(item, selectors[k], klen) != 0) continue;
        char anchored[600];
        snprintf(anchored, sizeof anchored, "^(%s)$", eq + 1);
        return regcomp(re, anchored, REG_EXTENDED | REG_NOSUB) == 0 ? (int)k : -1;
    }
    return -1;
}

static int check_match(kiq_str_t value)
{
    char buf[1024], item[512];
    if (value.len >= (int32_t)sizeof buf) return invalid(KIQ_CM_CFG_MATCH, value, "too long");
    snprintf(buf, sizeof buf, KIQ_STR_FMT, KIQ_STR_ARG(value));
    const char *s = buf;
    while (next_item(&s, item, sizeof item)) {
        regex_t re;
        if (selector(item, &re) < 0)
            return invalid(KIQ_CM_CFG_MATCH, value,
                           "each entry is selector=regex, the selector one of client_instance_id, client_id, "
                           "client_software_name, client_software_version, client_source_address, "
                           "client_source_port, the regex valid");
        regfree(&re);
    }
    return 0;
}

int kiq_client_metrics_configs_set(kiq_client_metrics_configs_t *c, int i, kiq_str_t value)
{
    if (value.p && i == KIQ_CM_CFG_INTERVAL_MS) {
        char buf[16] = "";
        char *end = buf;
        long n = -1;
        if (value.len > 0 && value.len < (int32_t)sizeof buf) {
            memcpy(buf, value.p, (size_t)value.len);
            n = strtol(buf, &end, 10);
        }
        if (end == buf || *end || n < 100 || n > 3600000) return invalid(i, value, "Value must be in [100, 3600000]");
    } else if (value.p && i == KIQ_CM_CFG_MATCH) {
        int err = check_match(value);
        if (err) return err;
    }
    char *d = NULL;
    if (value.p && !(d = strndup(value.p, (size_t)value.len))) return -1;
    free(c->v[i]);
    c->v[i] = d;
    return 0;
}

int kiq_client_metrics_configs_copy(kiq_client_metrics_configs_t *dst, const kiq_client_metrics_configs_t *src)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < KIQ_CM_CFG__COUNT; i++)
        if (src->v[i] && !(dst->v[i] = strdup(src->v[i]))) {
            kiq_client_metrics_configs_clear(dst);
            return -1;
        }
    return 0;
}

void kiq_client_metrics_configs_clear(kiq_client_metrics_configs_t *c)
{
    for (int i = 0; i < KIQ_CM_CFG__COUNT; i++) {
        free(c->v[i]);
        c->v[i] = NULL;
    }
}

bool kiq_client_metrics_matches(const kiq_client_metrics_configs_t *c, const kiq_client_selector_t *who)
{
    const char *values[NSELECTORS] = {who->client_instance_id,      who->client_id,
                                      who->client_software_name,    who->client_software_version,
                                      who->client_source_address,   who->client_source_port};
    const char *s = c->v[KIQ_CM_CFG_MATCH];
    char item[512];
    while (s && next_item(&s, item, sizeof item)) {
        regex_t re;
        int k = selector(item, &re);
        if (k < 0) return false;
        bool ok = regexec(&re, values[k] ? values[k] : "", 0, NULL, 0) == 0;
        regfree(&re);
        if (!ok) return false;
    }
    return true;
}
