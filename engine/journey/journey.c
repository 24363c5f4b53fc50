#include "journey/journey.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/request.h"
#include "record/batch.h"

#define STRIPES 16
#define PENDING_SLOTS 64   /* requests whose batches are on their way, per stripe */
#define PENDING_BATCHES 8  /* partitions one produce request's journeys may cover */
#define EARLY_STAGES 3     /* received, enqueued, dequeued */

/* A batch's journey in a ring; gen tells a slot's journeys apart. */
typedef struct slot {
    uint64_t gen; /* 0: empty */
    kiq_journey_t j;
} slot_t;

/* One stripe of journeys, the partitions that hash to it. */
typedef struct stripe {
    pthread_mutex_t mu; /* guards the rest */
    slot_t *ring;
    size_t n, next;
    uint64_t gen;
} stripe_t;

/* A produce request between its receipt and its answer: its first
 * stages, the partitions validated and the journeys made of them. */
typedef struct pending {
    const void *request; /* NULL: free */
    uint64_t seq;        /* when it came: the oldest is reused when full */
    kiq_journey_stage_t early[EARLY_STAGES];
    int nearly;
    struct {
        char topic[KIQ_JOURNEY_TOPIC];
        int32_t partition;
        kiq_journey_stage_t validated;
        char trace[KIQ_JOURNEY_TRACE];
        uint64_t traces[KIQ_JOURNEY_TRACES];
        int stripe;
        size_t slot;
        uint64_t gen; /* 0 until its journey exists */
    } batches[PENDING_BATCHES];
    int nbatches;
} pending_t;

typedef struct pending_stripe {
    pthread_mutex_t mu; /* guards the slots */
    pending_t slots[PENDING_SLOTS];
    uint64_t seq;
} pending_stripe_t;

struct kiq_journeys {
    int32_t broker;
    stripe_t stripes[STRIPES];
    pending_stripe_t pending[STRIPES];
    atomic_uint_fast64_t recorded;
};

/* ---- helpers ---- */

static uint32_t hash_partition(const char *topic, int32_t partition)
{
    uint32_t h = 2166136261u;
    for (const char *p = topic; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    return (h ^ (uint32_t)partition) * 16777619u;
}

static stripe_t *stripe_of(kiq_journeys_t *j, const char *topic, int32_t partition)
{
    return &j->stripes[hash_partition(topic, partition) % STRIPES];
}

static pending_stripe_t *pending_of(kiq_journeys_t *j, const void *request)
{
    uintptr_t p = (uintptr_t)request;
    return &j->pending[(p >> 6 ^ p >> 12) % STRIPES];
}

static void copy_text(char *dst, size_t n, const char *src, size_t len)
{
    if (!src) {
        dst[0] = '\0';
        return;
    }
    if (len >= n) len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The stage an event makes. */
static kiq_journey_stage_t stage_of(const kiq_event_t *e)
{
    kiq_journey_stage_t s = {
        .point = e->point,
        .t_ns = e->t_ns,
        .broker = e->broker,
        .thread = e->thread,
        .peer = e->peer,
        .version = -1,
        .error = e->error,
        .flags = e->flags,
        .first_offset = e->first_offset,
        .before = e->before,
        .after = e->after,
        .position = e->position,
        .bytes = e->bytes,
        .records = e->records,
        .extra = e->extra,
    };
    if (e->file) {
        const char *base = strrchr(e->file, '/');
        base = base ? base + 1 : e->file;
        copy_text(s.where, sizeof s.where, base, strlen(base));
    }
    if (e->request) {
        const kiq_request_t *r = e->request;
        if (e->point == KIQ_POINT_RECEIVED || e->point == KIQ_POINT_RECORDS_FETCHED) {
            copy_text(s.who, sizeof s.who, r->header.client_id.p, r->header.client_id.p ? (size_t)r->header.client_id.len : 0);
            copy_text(s.where, sizeof s.where, r->peer, strlen(r->peer));
            s.version = r->header.api_version;
        }
    }
    return s;
}

static void add_stage(kiq_journey_t *jr, const kiq_journey_stage_t *s)
{
    if (jr->nstages < KIQ_JOURNEY_STAGES) jr->stages[jr->nstages++] = *s;
}

static int count_stages(const kiq_journey_t *jr, enum kiq_point point, int32_t peer)
{
    int n = 0;
    for (int i = 0; i < jr->nstages; i++)
        if (jr->stages[i].point == point && (peer < 0 || jr->stages[i].peer == peer)) n++;
    return n;
}

static uint64_t trace_hash(const char *s, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
    return h ? h : 1;
}

/* The trace ids the records carry (the first KIQ_JOURNEY_TRACES), in
 * uncompressed batches (a compressed one is not opened for them). */
typedef struct traces {
    char *first; /* KIQ_JOURNEY_TRACE bytes */
    uint64_t *hashes;
    int n;
} traces_t;

static int note_trace(const kiq_record_t *rec, void *ctx)
{
    traces_t *t = ctx;
    kiq_record_header_iter_t it;
    kiq_record_header_t h;
    kiq_record_headers_init(&it, rec);
    while (kiq_record_headers_next(&it, &h) == 1) {
        if (!kiq_str_eq(h.key, KIQ_JOURNEY_TRACE_HEADER) || !h.value.p) continue;
        if (t->n == 0) copy_text(t->first, KIQ_JOURNEY_TRACE, (const char *)h.value.p, (size_t)h.value.len);
        t->hashes[t->n++] = trace_hash((const char *)h.value.p, (size_t)h.value.len);
        return t->n == KIQ_JOURNEY_TRACES;
    }
    return 0;
}

static void traces_of(const uint8_t *p, size_t len, char *first, uint64_t *hashes)
{
    first[0] = '\0';
    kiq_batch_iter_t it;
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    kiq_batch_iter_init(&it, p, len, false);
    traces_t t = {first, hashes, 0};
    while (t.n < KIQ_JOURNEY_TRACES && kiq_batch_iter_next(&it, &batch, &blen, &h) == 1)
        if (kiq_batch_codec(&h) == 0) kiq_batch_foreach_record(batch, blen, 0, note_trace, &t);
}

/* ---- the pending requests (under their stripe's lock) ---- */

static pending_t *pending_find(pending_stripe_t *ps, const void *request)
{
    for (int i = 0; i < PENDING_SLOTS; i++)
        if (ps->slots[i].request == request) return &ps->slots[i];
    return NULL;
}

static pending_t *pending_take(pending_stripe_t *ps, const void *request)
{
    pending_t *free_slot = NULL, *oldest = &ps->slots[0];
    for (int i = 0; i < PENDING_SLOTS && !free_slot; i++) {
        if (!ps->slots[i].request) free_slot = &ps->slots[i];
        else if (ps->slots[i].seq < oldest->seq) oldest = &ps->slots[i];
    }
    pending_t *p = free_slot ? free_slot : oldest; /* one never answered (acks=0) goes first */
    memset(p, 0, sizeof *p);
    p->request = request;
    p->seq = ++ps->seq;
    return p;
}

/* ---- the rings ---- */

/* Under st->mu: the newest journey of the partition holding offset. */
static slot_t *find_slot(stripe_t *st, const char *topic, int32_t partition, int64_t offset)
{
    for (size_t k = 0; k < st->n; k++) {
        slot_t *s = &st->ring[(st->next + st->n - 1 - k) % st->n];
        if (s->gen && s->j.partition == partition && offset >= s->j.first_offset && offset <= s->j.last_offset &&
            strcmp(s->j.topic, topic) == 0)
            return s;
    }
    return NULL;
}

/* Under st->mu: a slot for a new journey, the oldest overwritten. */
static slot_t *new_slot(stripe_t *st, size_t *index)
{
    *index = st->next;
    slot_t *s = &st->ring[st->next];
    st->next = (st->next + 1) % st->n;
    memset(&s->j, 0, sizeof s->j);
    s->gen = ++st->gen;
    return s;
}

/* A produce's batch appended here: its journey begins with what the
 * request went through before. */
static void appended_as_leader(kiq_journeys_t *j, const kiq_event_t *e)
{
    pending_stripe_t *ps = pending_of(j, e->request);
    pthread_mutex_lock(&ps->mu);
    pending_t *p = pending_find(ps, e->request);
    int b = -1;
    for (int i = 0; p && i < p->nbatches && b < 0; i++)
        if (p->batches[i].partition == e->partition && !p->batches[i].gen && strcmp(p->batches[i].topic, e->topic) == 0)
            b = i;
    stripe_t *st = stripe_of(j, e->topic, e->partition);
    pthread_mutex_lock(&st->mu);
    size_t index;
    slot_t *s = new_slot(st, &index);
    copy_text(s->j.topic, sizeof s->j.topic, e->topic, strlen(e->topic));
    s->j.partition = e->partition;
    s->j.first_offset = e->first_offset;
    s->j.last_offset = e->last_offset;
    for (int i = 0; p && i < p->nearly; i++) add_stage(&s->j, &p->early[i]);
    if (b >= 0) {
        add_stage(&s->j, &p->batches[b].validated);
        memcpy(s->j.trace, p->batches[b].trace, sizeof s->j.trace);
        memcpy(s->j.traces, p->batches[b].traces, sizeof s->j.traces);
        p->batches[b].stripe = (int)(st - j->stripes);
        p->batches[b].slot = index;
        p->batches[b].gen = s->gen;
    }
    kiq_journey_stage_t stage = stage_of(e);
    add_stage(&s->j, &stage);
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_unlock(&ps->mu);
    atomic_fetch_add_explicit(&j->recorded, 1, memory_order_relaxed);
}

/* A follower's append: its own part of the leader's journey. */
static void appended_as_follower(kiq_journeys_t *j, const kiq_event_t *e)
{
    stripe_t *st = stripe_of(j, e->topic, e->partition);
    pthread_mutex_lock(&st->mu);
    size_t index;
    slot_t *s = new_slot(st, &index);
    copy_text(s->j.topic, sizeof s->j.topic, e->topic, strlen(e->topic));
    s->j.partition = e->partition;
    s->j.first_offset = e->first_offset;
    s->j.last_offset = e->last_offset;
    kiq_journey_stage_t stage = stage_of(e);
    add_stage(&s->j, &stage);
    pthread_mutex_unlock(&st->mu);
    atomic_fetch_add_explicit(&j->recorded, 1, memory_order_relaxed);
}

/* Whether the event concerns the batch of journey jr, and so is one of its
 * stages (each follower's fetch and LEO once, the commit once, consumer
 * fetches up to KIQ_JOURNEY_CONSUMERS). */
static bool concerns(const kiq_journey_t *jr, const kiq_event_t *e)
{
    if (count_stages(jr, KIQ_POINT_APPENDED, -1) == 0) return false;
    switch (e->point) {
    case KIQ_POINT_FOLLOWER_FETCHED:
        return e->first_offset <= jr->last_offset && e->first_offset >= jr->first_offset - 1000000 &&
               count_stages(jr, KIQ_POINT_FOLLOWER_LEO, e->peer) == 0 &&
               count_stages(jr, KIQ_POINT_FOLLOWER_FETCHED, e->peer) == 0;
    case KIQ_POINT_FOLLOWER_LEO:
        return e->before <= jr->last_offset && e->after > jr->last_offset &&
               count_stages(jr, KIQ_POINT_FOLLOWER_LEO, e->peer) == 0;
    case KIQ_POINT_HW_ADVANCED:
        return e->before <= jr->last_offset && e->after > jr->last_offset &&
               count_stages(jr, KIQ_POINT_HW_ADVANCED, -1) == 0;
    case KIQ_POINT_RECORDS_FETCHED:
        return e->first_offset <= jr->last_offset && e->last_offset > jr->first_offset &&
               count_stages(jr, KIQ_POINT_RECORDS_FETCHED, -1) < KIQ_JOURNEY_CONSUMERS;
    case KIQ_POINT_ANSWERED:
        return e->first_offset == jr->first_offset && count_stages(jr, KIQ_POINT_ANSWERED, -1) == 0;
    default: return false;
    }
}

/* A partition's event: a stage of each kept journey it concerns. */
static void partition_event(kiq_journeys_t *j, const kiq_event_t *e)
{
    stripe_t *st = stripe_of(j, e->topic, e->partition);
    kiq_journey_stage_t stage = stage_of(e);
    pthread_mutex_lock(&st->mu);
    for (size_t k = 0; k < st->n; k++) {
        slot_t *s = &st->ring[k];
        if (s->gen && s->j.partition == e->partition && strcmp(s->j.topic, e->topic) == 0 && concerns(&s->j, e))
            add_stage(&s->j, &stage);
    }
    pthread_mutex_unlock(&st->mu);
}

/* The fsync of the batch just appended. */
static void flushed(kiq_journeys_t *j, const kiq_event_t *e)
{
    stripe_t *st = stripe_of(j, e->topic, e->partition);
    kiq_journey_stage_t stage = stage_of(e);
    pthread_mutex_lock(&st->mu);
    slot_t *s = find_slot(st, e->topic, e->partition, e->after - 1);
    if (s) add_stage(&s->j, &stage);
    pthread_mutex_unlock(&st->mu);
}

/* A request's event once its batches' journeys exist: a stage of each. */
static void request_event(kiq_journeys_t *j, const kiq_event_t *e, bool last)
{
    pending_stripe_t *ps = pending_of(j, e->request);
    kiq_journey_stage_t stage = stage_of(e);
    pthread_mutex_lock(&ps->mu);
    pending_t *p = pending_find(ps, e->request);
    if (p && p->nbatches == 0 && p->nearly < EARLY_STAGES) {
        p->early[p->nearly++] = stage;
    } else if (p) {
        for (int i = 0; i < p->nbatches; i++) {
            if (!p->batches[i].gen) continue;
            stripe_t *st = &j->stripes[p->batches[i].stripe];
            pthread_mutex_lock(&st->mu);
            slot_t *s = &st->ring[p->batches[i].slot];
            if (s->gen == p->batches[i].gen) add_stage(&s->j, &stage);
            pthread_mutex_unlock(&st->mu);
        }
    }
    if (p && last) p->request = NULL;
    pthread_mutex_unlock(&ps->mu);
}

static void on_event(void *ctx, const kiq_event_t *e)
{
    kiq_journeys_t *j = ctx;
    switch (e->point) {
    case KIQ_POINT_RECEIVED: {
        const kiq_request_t *r = e->request;
        if (!r || r->header.api_key != 0) return; /* Produce only */
        pending_stripe_t *ps = pending_of(j, r);
        kiq_journey_stage_t stage = stage_of(e);
        pthread_mutex_lock(&ps->mu);
        pending_t *p = pending_take(ps, r);
        p->early[p->nearly++] = stage;
        pthread_mutex_unlock(&ps->mu);
        return;
    }
    case KIQ_POINT_ENQUEUED:
    case KIQ_POINT_DEQUEUED:
    case KIQ_POINT_HANDLED:
    case KIQ_POINT_RESPONSE_QUEUED: request_event(j, e, false); return;
    case KIQ_POINT_SENT: request_event(j, e, true); return;
    case KIQ_POINT_VALIDATED: {
        pending_stripe_t *ps = pending_of(j, e->request);
        pthread_mutex_lock(&ps->mu);
        pending_t *p = pending_find(ps, e->request);
        if (p && p->nbatches < PENDING_BATCHES) {
            int i = p->nbatches++;
            copy_text(p->batches[i].topic, sizeof p->batches[i].topic, e->topic, strlen(e->topic));
            p->batches[i].partition = e->partition;
            p->batches[i].validated = stage_of(e);
            p->batches[i].gen = 0;
            memset(p->batches[i].traces, 0, sizeof p->batches[i].traces);
            if (e->payload) traces_of(e->payload, e->payload_len, p->batches[i].trace, p->batches[i].traces);
        }
        pthread_mutex_unlock(&ps->mu);
        return;
    }
    case KIQ_POINT_APPENDED:
        if (!e->topic) return;
        if (e->flags & KIQ_EVENT_FOLLOWER)
            appended_as_follower(j, e);
        else
            appended_as_leader(j, e);
        return;
    case KIQ_POINT_FLUSHED:
        /* an append's own fsync (flush.messages); the flusher's are for no
         * batch in particular */
        if (e->request && e->topic) flushed(j, e);
        return;
    case KIQ_POINT_FOLLOWER_FETCHED:
    case KIQ_POINT_FOLLOWER_LEO:
    case KIQ_POINT_HW_ADVANCED:
    case KIQ_POINT_RECORDS_FETCHED:
    case KIQ_POINT_ANSWERED:
        if (e->topic) partition_event(j, e);
        return;
    default: return;
    }
}

/* ---- the recorder ---- */

kiq_journeys_t *kiq_journeys_new(int32_t broker, int max_batches)
{
    kiq_journeys_t *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->broker = broker;
    size_t per = ((size_t)max_batches + STRIPES - 1) / STRIPES;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&j->stripes[i].mu, NULL);
        pthread_mutex_init(&j->pending[i].mu, NULL);
        j->stripes[i].n = per;
        j->stripes[i].ring = calloc(per, sizeof *j->stripes[i].ring);
        if (!j->stripes[i].ring) {
            kiq_journeys_free(j);
            return NULL;
        }
    }
    atomic_init(&j->recorded, 0);
    return j;
}

void kiq_journeys_free(kiq_journeys_t *j)
{
    if (!j) return;
    for (int i = 0; i < STRIPES; i++) {
        free(j->stripes[i].ring);
        pthread_mutex_destroy(&j->stripes[i].mu);
        pthread_mutex_destroy(&j->pending[i].mu);
    }
    free(j);
}

kiq_observer_t kiq_journeys_observer(kiq_journeys_t *j)
{
    uint32_t points = 0;
    for (int p = 0; p < KIQ__POINTS; p++) points |= 1u << p;
    return (kiq_observer_t){on_event, j, points};
}

bool kiq_journeys_find(kiq_journeys_t *j, const char *topic, int32_t partition, int64_t offset, kiq_journey_t *out)
{
    stripe_t *st = stripe_of(j, topic, partition);
    pthread_mutex_lock(&st->mu);
    slot_t *s = find_slot(st, topic, partition, offset);
    if (s) *out = s->j;
    pthread_mutex_unlock(&st->mu);
    return s != NULL;
}

bool kiq_journeys_find_trace(kiq_journeys_t *j, const char *trace, kiq_journey_t *out)
{
    bool found = false;
    uint64_t newest = 0, want = trace_hash(trace, strlen(trace));
    for (int i = 0; i < STRIPES; i++) {
        stripe_t *st = &j->stripes[i];
        pthread_mutex_lock(&st->mu);
        for (size_t k = 0; k < st->n; k++) {
            slot_t *s = &st->ring[k];
            bool carried = false;
            for (int t = 0; s->gen && t < KIQ_JOURNEY_TRACES && s->j.traces[t] && !carried; t++)
                carried = s->j.traces[t] == want;
            if (!carried) continue;
            /* the newest: stripes' generations are their own, times are shared */
            uint64_t t = (uint64_t)s->j.stages[0].t_ns;
            if (!found || t > newest) {
                *out = s->j;
                newest = t;
                found = true;
            }
        }
        pthread_mutex_unlock(&st->mu);
    }
    return found;
}

void kiq_journeys_stats(kiq_journeys_t *j, kiq_journeys_stats_t *out)
{
    *out = (kiq_journeys_stats_t){.recorded = atomic_load_explicit(&j->recorded, memory_order_relaxed)};
    for (int i = 0; i < STRIPES; i++) {
        stripe_t *st = &j->stripes[i];
        pthread_mutex_lock(&st->mu);
        for (size_t k = 0; k < st->n; k++) out->kept += st->ring[k].gen != 0;
        out->bytes += st->n * sizeof *st->ring;
        pthread_mutex_unlock(&st->mu);
    }
}

const char *kiq_journey_stage_name(const kiq_journey_stage_t *s)
{
    switch (s->point) {
    case KIQ_POINT_HW_ADVANCED: return "committed";
    case KIQ_POINT_ANSWERED: return "acknowledged";
    case KIQ_POINT_APPENDED: return s->flags & KIQ_EVENT_FOLLOWER ? "replicated" : "appended";
    default: return kiq_point_names[s->point];
    }
}

void kiq_journey_stage_fields(const kiq_journey_stage_t *s, const kiq_journey_fields_t *f)
{
    f->string(f->ctx, "stage", kiq_journey_stage_name(s));
    f->string(f->ctx, "point", kiq_point_names[s->point]);
    f->number(f->ctx, "t_ns", (double)s->t_ns);
    f->number(f->ctx, "broker", s->broker);
    if (s->thread >= 0) f->number(f->ctx, "thread", s->thread);
    if (s->peer >= 0) f->number(f->ctx, "peer", s->peer);
    if (s->point == KIQ_POINT_VALIDATED || s->point == KIQ_POINT_ANSWERED) f->number(f->ctx, "acks", s->extra);
    if (s->version >= 0) f->number(f->ctx, "version", s->version);
    if (s->point == KIQ_POINT_ANSWERED || s->error) f->number(f->ctx, "error", s->error);
    const struct {
        const char *name;
        int64_t v;
    } wide[] = {
        {"first_offset", s->first_offset}, {"before", s->before}, {"after", s->after},
        {"position", s->position},         {"bytes", s->bytes},   {"records", s->records},
    };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        if (wide[i].v >= 0) f->number(f->ctx, wide[i].name, (double)wide[i].v);
    if (s->flags & KIQ_EVENT_SENDFILE) f->boolean(f->ctx, "sendfile", true);
    bool client = s->point == KIQ_POINT_RECEIVED || s->point == KIQ_POINT_RECORDS_FETCHED;
    if (s->who[0]) f->string(f->ctx, "client_id", s->who);
    if (s->where[0]) f->string(f->ctx, client ? "address" : "file", s->where);
}
