/* The broker's metrics registry; see registry.h. */
#include "metrics/registry.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

enum { MAX_LABELS = 8 };

typedef struct sample {
    const char *suffix;
    kiq_metric_label_t labels[MAX_LABELS];
    int nlabels;
    double value;
    struct sample *next;
} sample_t;

typedef struct family {
    const char *name, *help;
    kiq_metric_type_t type;
    sample_t *first, *last;
} family_t;

struct kiq_metric_out {
    kiq_arena_t arena;
    family_t *families;
    int n, cap;
    family_t *current;
    int failed;
};

/* A source; its memory stays put while a collection runs it. */
typedef struct source {
    kiq_metric_source_fn fn;
    void *src;
    int busy;     /* collections running it now */
    bool removed; /* its remove waits for busy to reach 0 */
    struct source *next;
} source_t;

struct kiq_metrics {
    /* guards the list; never held while a source runs, so a source may
     * take locks that the code adding or removing sources holds */
    pthread_mutex_t mu;
    pthread_cond_t idle; /* a source's busy went back to 0 */
    source_t *head, *tail;
};

const char *kiq_metric_type_name(kiq_metric_type_t t)
{
    switch (t) {
    case KIQ_METRIC_COUNTER: return "counter";
    case KIQ_METRIC_GAUGE: return "gauge";
    case KIQ_METRIC_SUMMARY: return "summary";
    default: return "untyped";
    }
}

static char *dup(kiq_metric_out_t *o, const char *s)
{
    return s ? kiq_arena_strndup(&o->arena, s, strlen(s)) : NULL;
}

void kiq_metric_family(kiq_metric_out_t *o, const char *name, kiq_metric_type_t type, const char *help)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->families[i].name, name) == 0) {
            o->current = &o->families[i];
            return;
        }
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        family_t *grown = realloc(o->families, (size_t)cap * sizeof *grown);
        if (!grown) {
            o->failed = 1;
            o->current = NULL;
            return;
        }
        o->families = grown;
        o->cap = cap;
    }
    o->current = &o->families[o->n++];
    *o->current = (family_t){.name = dup(o, name), .help = dup(o, help), .type = type};
}

void kiq_metric_sample(kiq_metric_out_t *o, const char *suffix, double value, ...)
{
    if (!o->current) return;
    sample_t *s = kiq_arena_calloc(&o->arena, 1, sizeof *s);
    s->suffix = dup(o, suffix ? suffix : "");
    s->value = value;
    va_list ap;
    va_start(ap, value);
    for (const char *name; (name = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        if (s->nlabels < MAX_LABELS) s->labels[s->nlabels++] = (kiq_metric_label_t){dup(o, name), dup(o, v ? v : "")};
    }
    va_end(ap);
    family_t *f = o->current;
    if (f->last)
        f->last->next = s;
    else
        f->first = s;
    f->last = s;
}

kiq_metrics_t *kiq_metrics_new(void)
{
    kiq_metrics_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->idle, NULL);
    return m;
}

void kiq_metrics_free(kiq_metrics_t *m)
{
    if (!m) return;
    for (source_t *s = m->head, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    pthread_cond_destroy(&m->idle);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int kiq_metrics_add(kiq_metrics_t *m, kiq_metric_source_fn fn, void *src)
{
    if (!m) return 0;
    source_t *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->fn = fn;
    s->src = src;
    pthread_mutex_lock(&m->mu);
    if (m->tail)
        m->tail->next = s;
    else
        m->head = s;
    m->tail = s;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

void kiq_metrics_remove(kiq_metrics_t *m, void *src)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    for (source_t *s = m->head; s; s = s->next)
        if (s->src == src) s->removed = true;
    for (;;) {
        bool busy = false;
        for (source_t *s = m->head; s; s = s->next) busy |= s->removed && s->busy > 0;
        if (!busy) break;
        pthread_cond_wait(&m->idle, &m->mu);
    }
    source_t **link = &m->head, *last = NULL;
    while (*link) {
        source_t *s = *link;
        if (s->src == src) {
            *link = s->next;
            free(s);
        } else {
            last = s;
            link = &s->next;
        }
    }
    m->tail = last;
    pthread_mutex_unlock(&m->mu);
}

int kiq_metrics_collect(kiq_metrics_t *m, const kiq_metric_sink_t *sink)
{
    kiq_metric_out_t o;
    memset(&o, 0, sizeof o);
    kiq_arena_init(&o.arena);
    pthread_mutex_lock(&m->mu);
    for (source_t *s = m->head; s; s = s->next) {
        if (s->removed) continue;
        s->busy++;
        pthread_mutex_unlock(&m->mu);
        o.current = NULL;
        s->fn(s->src, &o);
        pthread_mutex_lock(&m->mu);
        if (--s->busy == 0 && s->removed) pthread_cond_broadcast(&m->idle);
    }
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < o.n; i++) {
        const family_t *f = &o.families[i];
        sink->family(sink->ctx, f->name, f->type, f->help);
        for (const sample_t *s = f->first; s; s = s->next)
            sink->sample(sink->ctx, f->name, s->suffix, s->labels, s->nlabels, s->value);
    }
    int rc = o.failed ? -1 : 0;
    free(o.families);
    kiq_arena_reset(&o.arena);
    return rc;
}
