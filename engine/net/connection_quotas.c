/* Connection quotas; see connection_quotas.h. */
#include "net/connection_quotas.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/str_map.h"

struct kiq_connection_quotas {
    int32_t max_connections, max_per_ip;
    kiq_str_map_t *overrides; /* address -> limit (intptr_t) */
    pthread_mutex_t mu;       /* guards what follows */
    kiq_str_map_t *per_ip;    /* address -> open connections (intptr_t) */
    int32_t open;
    uint64_t refused_per_ip;
};

static int parse_overrides(kiq_connection_quotas_t *q, const char *s)
{
    while (s && *s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *colon = memchr(s, ':', len);
        char *num_end;
        long v = colon ? strtol(colon + 1, &num_end, 10) : -1;
        if (!colon || colon == s || num_end != s + len || v < 0 || v > INT32_MAX)
            return kiq_error_set("max.connections.per.ip.overrides: \"%.*s\" is not host:count", (int)len, s);
        if (kiq_str_map_put(q->overrides, s, (size_t)(colon - s), (void *)(intptr_t)v) != 0)
            return kiq_error_set("out of memory");
        s = end ? end + 1 : NULL;
    }
    return 0;
}

void kiq_connection_quotas_free(kiq_connection_quotas_t *q)
{
    if (!q) return;
    kiq_str_map_free(q->overrides);
    kiq_str_map_free(q->per_ip);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

kiq_connection_quotas_t *kiq_connection_quotas_new(int32_t max_connections, int32_t max_per_ip, const char *overrides)
{
    kiq_connection_quotas_t *q = calloc(1, sizeof *q);
    if (!q) {
        kiq_error_set("out of memory");
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    q->max_connections = max_connections;
    q->max_per_ip = max_per_ip;
    if (!(q->overrides = kiq_str_map_new()) || !(q->per_ip = kiq_str_map_new())) {
        kiq_error_set("out of memory");
        kiq_connection_quotas_free(q);
        return NULL;
    }
    if (parse_overrides(q, overrides) != 0) {
        kiq_connection_quotas_free(q);
        return NULL;
    }
    return q;
}

enum kiq_connection_verdict kiq_connection_quotas_admit(kiq_connection_quotas_t *q, const char *ip)
{
    size_t len = strlen(ip);
    void *limit = kiq_str_map_get(q->overrides, ip, len);
    int32_t max_ip = limit ? (int32_t)(intptr_t)limit : q->max_per_ip;
    pthread_mutex_lock(&q->mu);
    enum kiq_connection_verdict v = KIQ_CONNECTION_ADMITTED;
    intptr_t n = (intptr_t)kiq_str_map_get(q->per_ip, ip, len);
    if (q->open >= q->max_connections) {
        v = KIQ_CONNECTION_OVER_MAX;
    } else if (n >= max_ip) {
        v = KIQ_CONNECTION_OVER_IP;
        q->refused_per_ip++;
    } else if (kiq_str_map_put(q->per_ip, ip, len, (void *)(n + 1)) != 0) {
        v = KIQ_CONNECTION_OVER_IP; /* out of memory: as good as over */
    } else {
        q->open++;
    }
    pthread_mutex_unlock(&q->mu);
    return v;
}

int kiq_connection_quotas_full(kiq_connection_quotas_t *q)
{
    pthread_mutex_lock(&q->mu);
    int full = q->open >= q->max_connections;
    pthread_mutex_unlock(&q->mu);
    return full;
}

void kiq_connection_quotas_release(kiq_connection_quotas_t *q, const char *ip)
{
    size_t len = strlen(ip);
    pthread_mutex_lock(&q->mu);
    intptr_t n = (intptr_t)kiq_str_map_get(q->per_ip, ip, len);
    if (n > 1)
        kiq_str_map_put(q->per_ip, ip, len, (void *)(n - 1));
    else if (n == 1)
        kiq_str_map_remove(q->per_ip, ip, len);
    if (n > 0) q->open--;
    pthread_mutex_unlock(&q->mu);
}

void kiq_connection_quotas_stats(kiq_connection_quotas_t *q, kiq_connection_quotas_stats_t *out)
{
    pthread_mutex_lock(&q->mu);
    out->open = q->open;
    out->refused_per_ip = q->refused_per_ip;
    pthread_mutex_unlock(&q->mu);
}
