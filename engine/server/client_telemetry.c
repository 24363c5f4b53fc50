#include "server/client_telemetry.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "metrics/otlp_metrics.h"

#define RESOURCE_ATTRS 8

/* One client instance's newest push. */
typedef struct client {
    kiq_uuid_t id;
    char client_id[128];
    char address[64];
    int64_t last_push_ms; /* wall clock; 0: subscribed, never pushed */
    uint64_t pushes;
    bool terminating;
    /* monotonic: its last GetTelemetrySubscriptions, its last push taken;
     * and whether it asked since that push */
    int64_t asked_mono_ms, taken_mono_ms;
    bool asked_since;
    kiq_otlp_attr_t resource[RESOURCE_ATTRS];
    int nresource;
    kiq_otlp_point_t *points; /* malloc'd */
    int npoints;
} client_t;

struct kiq_client_telemetry {
    pthread_mutex_t mu; /* guards the rest */
    client_t clients[KIQ_TELEMETRY_CLIENTS];
    int n;
    kiq_str_map_t *resources; /* name -> kiq_client_metrics_configs_t */
};

kiq_client_telemetry_t *kiq_client_telemetry_new(void)
{
    kiq_client_telemetry_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    pthread_mutex_init(&t->mu, NULL);
    if (!(t->resources = kiq_str_map_new())) {
        kiq_client_telemetry_free(t);
        return NULL;
    }
    return t;
}

void kiq_client_telemetry_free(kiq_client_telemetry_t *t)
{
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->clients[i].points);
    kiq_client_metrics_map_free(t->resources);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* A push being decoded, before it replaces the instance's last. */
typedef struct decoded {
    kiq_otlp_attr_t resource[RESOURCE_ATTRS];
    int nresource;
    kiq_otlp_point_t *points;
    int npoints, cap;
    bool oom;
} decoded_t;

static void on_resource(void *ctx, const kiq_otlp_attr_t *a)
{
    decoded_t *d = ctx;
    if (d->nresource < RESOURCE_ATTRS) d->resource[d->nresource++] = *a;
}

static void on_point(void *ctx, const kiq_otlp_point_t *p)
{
    decoded_t *d = ctx;
    if (d->oom || d->npoints == KIQ_TELEMETRY_POINTS) return;
    if (d->npoints == d->cap) {
        int cap = d->cap ? d->cap * 2 : 32;
        kiq_otlp_point_t *grown = realloc(d->points, (size_t)cap * sizeof *grown);
        if (!grown) {
            d->oom = true;
            return;
        }
        d->points = grown;
        d->cap = cap;
    }
    d->points[d->npoints++] = *p;
}

static void set_str(char *out, size_t size, const char *s) { snprintf(out, size, "%s", s ? s : ""); }

/* Under mu: instance id's entry, made (in place of the one pushed to
 * longest ago when full) if there is none. */
static client_t *slot_of(kiq_client_telemetry_t *t, const kiq_uuid_t *id)
{
    int i = 0;
    while (i < t->n && memcmp(&t->clients[i].id, id, sizeof *id) != 0) i++;
    if (i == t->n && t->n < KIQ_TELEMETRY_CLIENTS) {
        t->clients[t->n++] = (client_t){.id = *id};
    } else if (i == t->n) {
        i = 0;
        for (int k = 1; k < t->n; k++)
            if (t->clients[k].last_push_ms < t->clients[i].last_push_ms) i = k;
        free(t->clients[i].points);
        t->clients[i] = (client_t){.id = *id};
    }
    return &t->clients[i];
}

void kiq_client_telemetry_asked(kiq_client_telemetry_t *t, const kiq_uuid_t *id, const char *client_id,
                                const char *address, int64_t now_mono_ms)
{
    pthread_mutex_lock(&t->mu);
    client_t *c = slot_of(t, id);
    set_str(c->client_id, sizeof c->client_id, client_id);
    set_str(c->address, sizeof c->address, address);
    c->asked_mono_ms = now_mono_ms;
    c->asked_since = true;
    pthread_mutex_unlock(&t->mu);
}

bool kiq_client_telemetry_may_push(kiq_client_telemetry_t *t, const kiq_uuid_t *id, int32_t interval_ms,
                                   int64_t now_mono_ms)
{
    pthread_mutex_lock(&t->mu);
    client_t *c = slot_of(t, id);
    /* the first push after asking may come early: clients jitter it */
    int64_t last = c->asked_mono_ms > c->taken_mono_ms ? c->asked_mono_ms : c->taken_mono_ms;
    bool ok = c->asked_since || now_mono_ms - last >= interval_ms;
    if (ok) {
        c->taken_mono_ms = now_mono_ms;
        c->asked_since = false;
    }
    pthread_mutex_unlock(&t->mu);
    return ok;
}

int kiq_client_telemetry_push(kiq_client_telemetry_t *t, const kiq_uuid_t *id, const char *client_id,
                              const char *address, bool terminating, const uint8_t *metrics, size_t len,
                              int64_t now_ms)
{
    decoded_t d = {0};
    kiq_otlp_sink_t sink = {on_resource, on_point, &d};
    if (kiq_otlp_metrics_decode(metrics, len, &sink) != 0 || d.oom) {
        free(d.points);
        return d.oom ? kiq_error_set("out of memory") : -1;
    }
    pthread_mutex_lock(&t->mu);
    client_t *c = slot_of(t, id);
    set_str(c->client_id, sizeof c->client_id, client_id);
    set_str(c->address, sizeof c->address, address);
    c->last_push_ms = now_ms;
    c->pushes++;
    c->terminating = terminating;
    memcpy(c->resource, d.resource, sizeof d.resource);
    c->nresource = d.nresource;
    free(c->points);
    c->points = d.points;
    c->npoints = d.npoints;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

static int newest_first(const void *a, const void *b)
{
    const client_t *x = *(const client_t *const *)a, *y = *(const client_t *const *)b;
    return (x->last_push_ms < y->last_push_ms) - (x->last_push_ms > y->last_push_ms);
}

static void view_client(const client_t *c, bool points, const kiq_view_t *v)
{
    char id[32];
    kiq_uuid_to_base64(&c->id, id);
    v->open(v->ctx, NULL, false);
    v->string(v->ctx, "client_instance_id", id);
    v->string(v->ctx, "client_id", c->client_id);
    v->string(v->ctx, "address", c->address);
    v->number(v->ctx, "last_push_ms", (double)c->last_push_ms);
    v->number(v->ctx, "pushes", (double)c->pushes);
    v->boolean(v->ctx, "terminating", c->terminating);
    v->open(v->ctx, "resource", false);
    for (int i = 0; i < c->nresource; i++) v->string(v->ctx, c->resource[i].key, c->resource[i].value);
    v->close(v->ctx);
    if (!points) {
        v->number(v->ctx, "metric_count", c->npoints);
        v->close(v->ctx);
        return;
    }
    v->open(v->ctx, "metrics", true);
    for (int i = 0; i < c->npoints; i++) {
        const kiq_otlp_point_t *p = &c->points[i];
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "name", p->metric);
        v->string(v->ctx, "kind", p->kind);
        v->number(v->ctx, "value", p->value);
        v->open(v->ctx, "attributes", false);
        for (int k = 0; k < p->nattrs; k++) v->string(v->ctx, p->attrs[k].key, p->attrs[k].value);
        v->close(v->ctx);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->close(v->ctx);
}

int kiq_client_telemetry_view(kiq_client_telemetry_t *t, const char *client_id, bool cut, bool points,
                              const kiq_view_t *v)
{
    const client_t *order[KIQ_TELEMETRY_CLIENTS];
    size_t want = client_id ? strlen(client_id) : 0;
    pthread_mutex_lock(&t->mu);
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        const char *have = t->clients[i].client_id;
        if (!client_id || (cut ? strncmp(have, client_id, want) == 0 : strcmp(have, client_id) == 0))
            order[n++] = &t->clients[i];
    }
    qsort(order, (size_t)n, sizeof order[0], newest_first);
    for (int i = 0; i < n; i++) view_client(order[i], points, v);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

/* name as Prometheus takes it into out: [a-zA-Z0-9_], the rest '_'. */
static void prom_name(char *out, size_t size, const char *prefix, const char *name)
{
    static const char java_prefix[] = "org.apache.kafka.";
    if (strncmp(name, java_prefix, sizeof java_prefix - 1) == 0) name += sizeof java_prefix - 1;
    int n = snprintf(out, size, "%s%s", prefix, name);
    size_t end = n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
    for (size_t i = strlen(prefix); i < end; i++)
        if (!isalnum((unsigned char)out[i]) && out[i] != '_') out[i] = '_';
}

void kiq_client_telemetry_metrics(void *src, kiq_metric_out_t *o)
{
    kiq_client_telemetry_t *t = src;
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->n; i++) {
        const client_t *c = &t->clients[i];
        char id[32];
        kiq_uuid_to_base64(&c->id, id);
        for (int j = 0; j < c->npoints; j++) {
            const kiq_otlp_point_t *p = &c->points[j];
            char family[KIQ_OTLP_NAME + 16], help[KIQ_OTLP_NAME + 48];
            char keys[KIQ_OTLP_ATTRS][KIQ_OTLP_NAME + 2];
            prom_name(family, sizeof family, "kafkaiq_client_", p->metric);
            snprintf(help, sizeof help, "%s, as the client pushed it (KIP-714)", p->metric);
            for (char *h = help; *h; h++) /* a help line ends at a newline, escapes with a backslash */
                if ((unsigned char)*h < 0x20 || *h == '\\') *h = '_';
            const char *l[2 * (KIQ_OTLP_ATTRS + 2) + 1] = {"client_id", c->client_id, "client_instance_id", id};
            int nl = 4;
            for (int k = 0; k < p->nattrs; k++) {
                prom_name(keys[k], sizeof keys[k], "", p->attrs[k].key);
                if (!keys[k][0] || isdigit((unsigned char)keys[k][0]) || strcmp(keys[k], "client_id") == 0 ||
                    strcmp(keys[k], "client_instance_id") == 0)
                    continue; /* not a label name Prometheus takes, or ours */
                l[nl++] = keys[k];
                l[nl++] = p->attrs[k].value;
            }
            kiq_metric_family(o, family, strcmp(p->kind, "sum") == 0 ? KIQ_METRIC_COUNTER : KIQ_METRIC_GAUGE, help);
            kiq_metric_sample(o, "", p->value, l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], l[8], l[9], l[10],
                              l[11], l[12], l[13], l[14], l[15], NULL);
        }
    }
    pthread_mutex_unlock(&t->mu);
}

int kiq_client_telemetry_resource_get(kiq_client_telemetry_t *t, kiq_str_t name, kiq_client_metrics_configs_t *out)
{
    pthread_mutex_lock(&t->mu);
    const kiq_client_metrics_configs_t *c = name.p ? kiq_str_map_get(t->resources, name.p, (size_t)name.len) : NULL;
    int rc = !c ? 0 : kiq_client_metrics_configs_copy(out, c) == 0 ? 1 : -1;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int kiq_client_telemetry_resource_put(kiq_client_telemetry_t *t, kiq_str_t name, kiq_client_metrics_configs_t *cfg)
{
    bool empty = true;
    for (int i = 0; i < KIQ_CM_CFG__COUNT; i++) empty = empty && !cfg->v[i];
    kiq_client_metrics_configs_t *own = empty ? NULL : malloc(sizeof *own);
    if (!empty && !own) {
        kiq_client_metrics_configs_clear(cfg);
        return kiq_error_set("out of memory");
    }
    if (own) *own = *cfg;
    pthread_mutex_lock(&t->mu);
    kiq_client_metrics_configs_t *old = kiq_str_map_remove(t->resources, name.p, (size_t)name.len);
    int rc = own && kiq_str_map_put(t->resources, name.p, (size_t)name.len, own) != 0 ? -1 : 0;
    pthread_mutex_unlock(&t->mu);
    if (old) kiq_client_metrics_configs_clear(old);
    free(old);
    if (rc != 0) {
        kiq_client_metrics_configs_clear(own);
        free(own);
        return kiq_error_set("out of memory");
    }
    return 0;
}

void kiq_client_metrics_map_free(kiq_str_map_t *m)
{
    if (!m) return;
    kiq_str_map_iter_t it;
    void *v;
    kiq_str_map_iter_init(&it, m);
    while (kiq_str_map_next(&it, NULL, NULL, &v)) {
        kiq_client_metrics_configs_clear(v);
        free(v);
    }
    kiq_str_map_free(m);
}

void kiq_client_telemetry_resources_replace(kiq_client_telemetry_t *t, kiq_str_map_t *fresh)
{
    pthread_mutex_lock(&t->mu);
    kiq_str_map_t *old = t->resources;
    t->resources = fresh;
    pthread_mutex_unlock(&t->mu);
    kiq_client_metrics_map_free(old);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int kiq_client_telemetry_resource_names(kiq_client_telemetry_t *t, void (*fn)(void *ctx, const char *name), void *ctx)
{
    pthread_mutex_lock(&t->mu);
    size_t n = kiq_str_map_count(t->resources);
    char **names = calloc(n ? n : 1, sizeof *names);
    kiq_str_map_iter_t it;
    const void *key;
    size_t len;
    size_t got = 0;
    kiq_str_map_iter_init(&it, t->resources);
    while (names && kiq_str_map_next(&it, &key, &len, NULL))
        if ((names[got] = strndup(key, len))) got++;
    pthread_mutex_unlock(&t->mu);
    if (!names) return -1;
    qsort(names, got, sizeof *names, by_name);
    for (size_t i = 0; i < got; i++) {
        fn(ctx, names[i]);
        free(names[i]);
    }
    free(names);
    return got == n ? (int)n : -1;
}

bool kiq_client_telemetry_subscription(kiq_client_telemetry_t *t, const kiq_client_selector_t *who, char *metrics,
                                       size_t size, int32_t *interval_ms)
{
    bool any = false;
    size_t used = 0;
    metrics[0] = '\0';
    *interval_ms = INT32_MAX;
    pthread_mutex_lock(&t->mu);
    kiq_str_map_iter_t it;
    void *v;
    kiq_str_map_iter_init(&it, t->resources);
    while (kiq_str_map_next(&it, NULL, NULL, &v)) {
        const kiq_client_metrics_configs_t *c = v;
        if (!kiq_client_metrics_matches(c, who)) continue;
        any = true;
        int32_t interval = c->v[KIQ_CM_CFG_INTERVAL_MS] ? (int32_t)atoi(c->v[KIQ_CM_CFG_INTERVAL_MS])
                                                        : KIQ_CLIENT_METRICS_DEFAULT_INTERVAL_MS;
        if (interval < *interval_ms) *interval_ms = interval;
        const char *m = c->v[KIQ_CM_CFG_METRICS];
        if (m && *m && used + strlen(m) + 2 < size)
            used += (size_t)snprintf(metrics + used, size - used, "%s%s", used ? "," : "", m);
    }
    pthread_mutex_unlock(&t->mu);
    return any;
}
