#include "journey/journey.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/say.h"
#include "journey/journal.h"
#include "journey/otlp.h"
#include "net/request.h"
#include "record/batch.h"

#define STRIPES 16
#define PENDING_SLOTS 64   /* requests whose batches are on their way, per stripe */
#define PENDING_BATCHES 4  /* partitions of one produce request whose validation a journey keeps */
#define RECENT 64          /* newest journeys of a stripe a partition's event looks at */
#define EARLY_STAGES 3     /* received, enqueued, dequeued */
#define SLOT_LOCKS 64      /* mutexes the ring's slots share */

/* A batch's journey in the ring; gen tells a slot's journeys apart.
 * Guarded by its slot lock (slot_lock). */
typedef struct slot {
    uint64_t gen; /* 0: empty */
    kiq_journey_t j;
} slot_t;

/* A journey as its stripe indexes it: what finding it by offset compares,
 * copied when it began (a journey's partition and offsets never change). */
typedef struct ref {
    uint64_t gen; /* the slot's journey this is, if the slot still holds it */
    uint64_t key; /* its topic's hash and partition, ref_key() */
    int64_t first_offset, last_offset;
    uint32_t slot;
} ref_t;

/* The index of the journeys of the partitions that hash to the stripe,
 * newest last; as long as the ring, for one partition may have them all. */
typedef struct stripe {
    pthread_mutex_t mu; /* guards the refs; taken before a slot's */
    ref_t *refs;
    size_t next;
} stripe_t;

/* A produce request between its receipt and its answer: its first
 * stages, the partitions validated and the journeys made of them. */
typedef struct pending {
    uint64_t seq; /* when it came: the oldest is reused when full */
    kiq_journey_stage_t early[EARLY_STAGES];
    int nearly;
    struct {
        const char *topic; /* compared, never read: the event's name pointer */
        int32_t partition;
        kiq_journey_stage_t validated;
        char trace[KIQ_JOURNEY_TRACE];
        uint64_t traces[KIQ_JOURNEY_TRACES];
        bool otel_linked;
        uint8_t otel_trace[16], otel_parent[8];
        size_t slot;
        uint64_t gen; /* 0 until its journey exists */
    } batches[PENDING_BATCHES];
    int nbatches;
} pending_t;

typedef struct pending_stripe {
    pthread_mutex_t mu; /* guards the slots and their requests */
    /* slot i's request (NULL: free), apart from the slots so that finding
     * one reads a few cache lines, not a line per slot */
    const void *requests[PENDING_SLOTS];
    pending_t slots[PENDING_SLOTS];
    uint64_t seq;
} pending_stripe_t;

struct kiq_journeys {
    int32_t broker;
    slot_t *ring; /* the journeys: one ring whoever the partition */
    size_t n;
    /* slot i's lock is slot_locks[i % SLOT_LOCKS]: one thread holds one at
     * a time, after its stripe's or pending stripe's; the slots' own pages
     * stay untouched until a journey is there */
    pthread_mutex_t slot_locks[SLOT_LOCKS];
    atomic_uint_fast64_t claimed; /* slots taken so far: the next is claimed % n */
    stripe_t stripes[STRIPES];
    pending_stripe_t pending[STRIPES];
    atomic_uint_fast64_t recorded;
    kiq_journal_t *journal; /* where a reused slot's journey goes; NULL: none. Set before the events start */
    kiq_otlp_t *otlp;       /* where an answered batch's journey goes; NULL: none. The same */
};

/* ---- helpers ---- */

static uint32_t hash_topic(const char *topic)
{
    uint32_t h = 2166136261u;
    for (const char *p = topic; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}

static stripe_t *stripe_of(kiq_journeys_t *j, uint32_t topic_hash, int32_t partition)
{
    return &j->stripes[((topic_hash ^ (uint32_t)partition) * 16777619u) % STRIPES];
}

/* A partition as its refs name it: one comparison while a stripe is scanned. */
static uint64_t ref_key(uint32_t topic_hash, int32_t partition)
{
    return (uint64_t)topic_hash << 32 | (uint32_t)partition;
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
static bool is_share(enum kiq_point p)
{
    return p == KIQ_POINT_SHARE_ACQUIRED || p == KIQ_POINT_SHARE_ACKNOWLEDGED || p == KIQ_POINT_SHARE_LOCK_EXPIRED;
}

static int count_shares(const kiq_journey_t *jr)
{
    int n = 0;
    for (int i = 0; i < jr->nstages; i++) n += is_share(jr->stages[i].point);
    return n;
}

/* The wall clock's lead over the monotonic one as this thread last read
 * both, and the t_ns it read them at (INT64_MIN: never). Read again every
 * WALL_REREAD_NS, not at each stage: it moves by microseconds a second at
 * most (a slewing NTP), and two clock reads per stage added up. */
#define WALL_REREAD_NS 10000000
static _Thread_local int64_t wall_lead, wall_read_at = INT64_MIN;

/* Monotonic t_ns on the wall clock, as both clocks stand (the engine's
 * clocks move ahead together when a test advances them: the lead stays). */
static int64_t wall_of(int64_t t_ns)
{
    if (wall_read_at == INT64_MIN || t_ns - wall_read_at >= WALL_REREAD_NS) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        wall_lead = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - kiq_clock_system_mono_ns();
        wall_read_at = t_ns;
    }
    return t_ns + wall_lead;
}

/* The stage event e makes, written into s where it is kept (no copy of
 * a stage made aside; all its bytes set, the journal writes them all). */
static void stage_of(const kiq_event_t *e, kiq_journey_stage_t *s)
{
    memset(s, 0, sizeof *s);
    s->point = e->point;
    s->t_ns = e->t_ns;
    s->wall_ns = wall_of(e->t_ns);
    s->broker = e->broker;
    s->thread = e->thread;
    s->peer = e->peer;
    s->version = -1;
    s->error = e->error;
    s->flags = e->flags;
    s->first_offset = e->first_offset;
    s->before = e->before;
    s->after = e->after;
    s->position = e->position;
    s->bytes = e->bytes;
    s->records = e->records;
    s->extra = e->extra;
    s->last_offset = e->last_offset;
    if (e->file && is_share(e->point)) {
        copy_text(s->where, sizeof s->where, e->file, strlen(e->file));
    } else if (e->file) {
        const char *base = strrchr(e->file, '/');
        base = base ? base + 1 : e->file;
        copy_text(s->where, sizeof s->where, base, strlen(base));
    }
    if (e->request) {
        const kiq_request_t *r = e->request;
        if (is_share(e->point)) {
            copy_text(s->who, sizeof s->who, r->header.client_id.p,
                      r->header.client_id.p ? (size_t)r->header.client_id.len : 0);
        } else if (e->point == KIQ_POINT_RECEIVED || e->point == KIQ_POINT_RECORDS_FETCHED) {
            copy_text(s->who, sizeof s->who, r->header.client_id.p,
                      r->header.client_id.p ? (size_t)r->header.client_id.len : 0);
            copy_text(s->where, sizeof s->where, r->peer, strlen(r->peer));
            s->version = r->header.api_version;
        }
    }
}

static void add_stage(kiq_journey_t *jr, const kiq_journey_stage_t *s)
{
    if (jr->nstages < KIQ_JOURNEY_STAGES) jr->stages[jr->nstages++] = *s;
}

/* Adds the stage e makes, stamped in place. */
static void add_event(kiq_journey_t *jr, const kiq_event_t *e)
{
    if (jr->nstages < KIQ_JOURNEY_STAGES) stage_of(e, &jr->stages[jr->nstages++]);
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
    uint64_t h = kiq_hash(s, len);
    return h ? h : 1;
}

/* The trace ids the records carry (the first KIQ_JOURNEY_TRACES), and the
 * W3C trace context of the first record. */
typedef struct traces {
    char *first; /* KIQ_JOURNEY_TRACE bytes */
    uint64_t *hashes;
    int n;
    long records; /* looked at so far */
    bool *linked;
    uint8_t *otel_trace, *otel_parent;
} traces_t;

static int note_trace(const kiq_record_t *rec, void *ctx)
{
    traces_t *t = ctx;
    bool first_record = t->records++ == 0, noted = false;
    kiq_record_header_iter_t it;
    kiq_record_header_t h;
    kiq_record_headers_init(&it, rec);
    while (kiq_record_headers_next(&it, &h) == 1 && (first_record || !noted)) {
        if (!h.value.p) continue;
        if (first_record && kiq_str_eq(h.key, KIQ_JOURNEY_TRACEPARENT_HEADER))
            *t->linked = kiq_otlp_traceparent((const char *)h.value.p, (size_t)h.value.len, t->otel_trace,
                                              t->otel_parent);
        if (noted || t->n == KIQ_JOURNEY_TRACES || !kiq_str_eq(h.key, KIQ_JOURNEY_TRACE_HEADER)) continue;
        if (t->n == 0) copy_text(t->first, KIQ_JOURNEY_TRACE, (const char *)h.value.p, (size_t)h.value.len);
        t->hashes[t->n++] = trace_hash((const char *)h.value.p, (size_t)h.value.len);
        noted = true;
    }
    return t->n == KIQ_JOURNEY_TRACES;
}

static void traces_of(const uint8_t *p, size_t len, traces_t *t)
{
    kiq_batch_iter_t it;
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    kiq_batch_iter_init(&it, p, len, false);
    while (t->n < KIQ_JOURNEY_TRACES && kiq_batch_iter_next(&it, &batch, &blen, &h) == 1)
        kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, note_trace, t);
}

/* ---- the pending requests (under their stripe's lock) ---- */

static pending_t *pending_find(pending_stripe_t *ps, const void *request)
{
    for (int i = 0; i < PENDING_SLOTS; i++)
        if (ps->requests[i] == request) return &ps->slots[i];
    return NULL;
}

static pending_t *pending_take(pending_stripe_t *ps, const void *request)
{
    int take = -1;
    for (int i = 0; i < PENDING_SLOTS && take < 0; i++)
        if (!ps->requests[i]) take = i;
    if (take < 0) {
        /* none free: the oldest, one never answered (acks=0), goes */
        take = 0;
        for (int i = 1; i < PENDING_SLOTS; i++)
            if (ps->slots[i].seq < ps->slots[take].seq) take = i;
    }
    pending_t *p = &ps->slots[take];
    p->nearly = p->nbatches = 0;
    ps->requests[take] = request;
    p->seq = ++ps->seq;
    return p;
}

static void pending_done(pending_stripe_t *ps, const pending_t *p) { ps->requests[p - ps->slots] = NULL; }

/* ---- the ring and its index ---- */

static void slot_lock(kiq_journeys_t *j, const slot_t *s)
{
    pthread_mutex_lock(&j->slot_locks[(size_t)(s - j->ring) % SLOT_LOCKS]);
}

static void slot_unlock(kiq_journeys_t *j, const slot_t *s)
{
    pthread_mutex_unlock(&j->slot_locks[(size_t)(s - j->ring) % SLOT_LOCKS]);
}

/* Under st->mu: the i-th newest of the stripe's refs. */
static ref_t *ref_at(kiq_journeys_t *j, stripe_t *st, size_t i)
{
    return &st->refs[(st->next + j->n - 1 - i) % j->n];
}

/* Under st->mu: the slot of ref r locked, if it still holds r's journey
 * (of that topic); NULL otherwise. */
static slot_t *lock_ref(kiq_journeys_t *j, const ref_t *r, const char *topic)
{
    if (!r->gen) return NULL;
    slot_t *s = &j->ring[r->slot];
    slot_lock(j, s);
    if (s->gen == r->gen && strcmp(s->j.topic, topic) == 0) return s;
    slot_unlock(j, s);
    return NULL;
}

/* Under st->mu: the newest journey of the partition holding offset,
 * locked; NULL when none is kept. */
static slot_t *find_slot(kiq_journeys_t *j, stripe_t *st, uint32_t th, const char *topic, int32_t partition,
                         int64_t offset)
{
    for (size_t k = 0; k < j->n; k++) {
        const ref_t *r = ref_at(j, st, k);
        if (!r->gen) break;
        if (r->key != ref_key(th, partition) || offset < r->first_offset || offset > r->last_offset)
            continue;
        slot_t *s = lock_ref(j, r, topic);
        if (s) return s;
    }
    return NULL;
}

/* Under st->mu: the oldest slot of the ring taken for a new journey of the
 * event's batch, indexed by its stripe, and returned locked. */
static slot_t *new_slot(kiq_journeys_t *j, stripe_t *st, uint32_t th, const kiq_event_t *e, size_t *index,
                        uint64_t *gen)
{
    uint64_t c = atomic_fetch_add_explicit(&j->claimed, 1, memory_order_relaxed);
    *index = (size_t)(c % j->n);
    *gen = c + 1;
    slot_t *s = &j->ring[*index];
    slot_lock(j, s);
    /* the journey the slot held lives on in the journal (a copy queued for
     * its writer; this thread never waits for the disk) */
    if (s->gen && j->journal) kiq_journal_offer(j->journal, &s->j);
    s->gen = *gen;
    /* the stages are written as they come: only the head is cleared */
    s->j.nstages = 0;
    s->j.trace[0] = '\0';
    s->j.otel_linked = false;
    memset(s->j.traces, 0, sizeof s->j.traces);
    copy_text(s->j.topic, sizeof s->j.topic, e->topic, strlen(e->topic));
    s->j.partition = e->partition;
    s->j.first_offset = e->first_offset;
    s->j.last_offset = e->last_offset;
    s->j.txn_producer = e->producer_id;
    st->refs[st->next] = (ref_t){*gen, ref_key(th, e->partition), e->first_offset, e->last_offset, (uint32_t)*index};
    st->next = (st->next + 1) % j->n;
    return s;
}

/* The slot of the journey the appended batch of e begins, locked. */
static slot_t *begin_journey(kiq_journeys_t *j, const kiq_event_t *e, size_t *index, uint64_t *gen)
{
    uint32_t th = hash_topic(e->topic);
    stripe_t *st = stripe_of(j, th, e->partition);
    pthread_mutex_lock(&st->mu);
    slot_t *s = new_slot(j, st, th, e, index, gen);
    pthread_mutex_unlock(&st->mu);
    atomic_fetch_add_explicit(&j->recorded, 1, memory_order_relaxed);
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
        if (p->batches[i].partition == e->partition && !p->batches[i].gen && p->batches[i].topic == e->topic) b = i;
    size_t index;
    uint64_t gen;
    slot_t *s = begin_journey(j, e, &index, &gen);
    for (int i = 0; p && i < p->nearly; i++) add_stage(&s->j, &p->early[i]);
    if (b >= 0) {
        add_stage(&s->j, &p->batches[b].validated);
        memcpy(s->j.trace, p->batches[b].trace, sizeof s->j.trace);
        memcpy(s->j.traces, p->batches[b].traces, sizeof s->j.traces);
        s->j.otel_linked = p->batches[b].otel_linked;
        memcpy(s->j.otel_trace, p->batches[b].otel_trace, sizeof s->j.otel_trace);
        memcpy(s->j.otel_parent, p->batches[b].otel_parent, sizeof s->j.otel_parent);
        p->batches[b].slot = index;
        p->batches[b].gen = gen;
    }
    add_event(&s->j, e);
    slot_unlock(j, s);
    pthread_mutex_unlock(&ps->mu);
}

/* A follower's append: its own part of the leader's journey. */
static void appended_as_follower(kiq_journeys_t *j, const kiq_event_t *e)
{
    size_t index;
    uint64_t gen;
    slot_t *s = begin_journey(j, e, &index, &gen);
    add_event(&s->j, e);
    slot_unlock(j, s);
}

/* Whether the journey began with a leader's append (a follower's part
 * begins with its own). */
static bool led_here(const kiq_journey_t *jr)
{
    for (int i = 0; i < jr->nstages; i++)
        if (jr->stages[i].point == KIQ_POINT_APPENDED) return !(jr->stages[i].flags & KIQ_EVENT_FOLLOWER);
    return false;
}

/* Whether the event concerns the batch of journey jr, and so is one of its
 * stages (each follower's fetch and LEO once, the commit and the fsync
 * once, each follower's leaving and coming back into the ISR once,
 * consumer fetches up to KIQ_JOURNEY_CONSUMERS). */
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
    case KIQ_POINT_FLUSHED:
        return e->before <= jr->last_offset && e->after > jr->last_offset && count_stages(jr, e->point, -1) == 0;
    case KIQ_POINT_ISR_SHRUNK:
    case KIQ_POINT_ISR_EXPANDED:
        /* a batch waiting for the high watermark when the follower left,
         * or written since: its commit waited for it, or did without */
        return led_here(jr) && jr->last_offset >= e->before && jr->first_offset < e->after &&
               count_stages(jr, e->point, e->peer) == 0;
    case KIQ_POINT_RECORDS_FETCHED:
        return e->first_offset <= jr->last_offset && e->last_offset > jr->first_offset &&
               count_stages(jr, KIQ_POINT_RECORDS_FETCHED, -1) < KIQ_JOURNEY_CONSUMERS;
    case KIQ_POINT_ANSWERED:
        return e->first_offset == jr->first_offset && count_stages(jr, KIQ_POINT_ANSWERED, -1) == 0;
    case KIQ_POINT_SHARE_ACQUIRED:
    case KIQ_POINT_SHARE_ACKNOWLEDGED:
    case KIQ_POINT_SHARE_LOCK_EXPIRED:
        /* records of the batch handed to a share group member and what came of them */
        return e->first_offset <= jr->last_offset && e->last_offset >= jr->first_offset &&
               count_shares(jr) < KIQ_JOURNEY_SHARES;
    case KIQ_POINT_TXN_MARKER:
        /* the marker that ended the transaction the batch was part of */
        return jr->txn_producer >= 0 && jr->txn_producer == e->producer_id && e->before >= 0 &&
               jr->first_offset >= e->before && jr->last_offset < e->after &&
               count_stages(jr, KIQ_POINT_TXN_MARKER, -1) == 0;
    default: return false;
    }
}

/* The lowest last offset of a batch the event can concern, for those
 * that may reach far back: a consumer's fetch, a commit, an fsync or an
 * ISR change covers every batch from there on; -1 for the others. */
static int64_t reaches_back_to(const kiq_event_t *e)
{
    switch (e->point) {
    case KIQ_POINT_RECORDS_FETCHED:
    case KIQ_POINT_SHARE_ACQUIRED:
    case KIQ_POINT_SHARE_ACKNOWLEDGED:
    case KIQ_POINT_SHARE_LOCK_EXPIRED: return e->first_offset;
    case KIQ_POINT_HW_ADVANCED:
    case KIQ_POINT_FLUSHED:
    case KIQ_POINT_ISR_SHRUNK:
    case KIQ_POINT_ISR_EXPANDED: return e->before;
    default: return -1;
    }
}

/* The offsets a journey's batch must have for the event to concern it
 * (what concerns() asks of them), first_offset and last_offset each in
 * [lo, hi]: the journeys out of it are passed over without taking their
 * slot's lock. */
typedef struct window {
    int64_t first_lo, first_hi, last_lo, last_hi;
} window_t;

static window_t window_of(const kiq_event_t *e)
{
    window_t w = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX};
    switch (e->point) {
    case KIQ_POINT_FOLLOWER_FETCHED:
        w.last_lo = e->first_offset;
        w.first_hi = e->first_offset > INT64_MAX - 1000000 ? INT64_MAX : e->first_offset + 1000000;
        break;
    case KIQ_POINT_FOLLOWER_LEO:
    case KIQ_POINT_HW_ADVANCED:
    case KIQ_POINT_FLUSHED:
        w.last_lo = e->before;
        w.last_hi = e->after - 1;
        break;
    case KIQ_POINT_ISR_SHRUNK:
    case KIQ_POINT_ISR_EXPANDED:
        w.last_lo = e->before;
        w.first_hi = e->after - 1;
        break;
    case KIQ_POINT_RECORDS_FETCHED:
        w.last_lo = e->first_offset;
        w.first_hi = e->last_offset - 1;
        break;
    case KIQ_POINT_ANSWERED: w.first_lo = w.first_hi = e->first_offset; break;
    case KIQ_POINT_SHARE_ACQUIRED:
    case KIQ_POINT_SHARE_ACKNOWLEDGED:
    case KIQ_POINT_SHARE_LOCK_EXPIRED:
        w.last_lo = e->first_offset;
        w.first_hi = e->last_offset;
        break;
    case KIQ_POINT_TXN_MARKER:
        if (e->before < 0) return (window_t){INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
        w.first_lo = e->before;
        w.last_hi = e->after - 1;
        break;
    default: return (window_t){INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
    }
    return w;
}

/* A partition's event: a stage of each kept journey it concerns. */
static void partition_event(kiq_journeys_t *j, const kiq_event_t *e)
{
    uint32_t th = hash_topic(e->topic);
    stripe_t *st = stripe_of(j, th, e->partition);
    window_t w = window_of(e);
    kiq_journey_stage_t stage;
    bool made = false;
    /* follower fetches and answers concern the newest batches; the events
     * that cover a range look down to its first batch (a partition's
     * journeys are kept in offset order), and a marker ends a transaction
     * that may have begun long before */
    int64_t low = reaches_back_to(e);
    size_t look = low >= 0 || e->point == KIQ_POINT_TXN_MARKER || j->n < RECENT ? j->n : RECENT;
    uint64_t key = ref_key(th, e->partition);
    pthread_mutex_lock(&st->mu);
    /* newest first: from the one before next down to the first, then from
     * the last down (two runs, no wrap to test at each step) */
    const ref_t *runs[2][2] = {{st->refs + st->next, st->refs}, {st->refs + j->n, st->refs + st->next}};
    for (int run = 0; run < 2 && look > 0; run++) {
        const ref_t *r = runs[run][0], *end = runs[run][1];
        if ((size_t)(r - end) > look) end = r - look;
        look -= (size_t)(r - end);
        while (r > end) {
            r--;
            if (!r->gen) goto done;
            if (r->key != key) continue;
            /* out of the window (which starts at low or above): one below low ends the look */
            if (r->first_offset < w.first_lo || r->first_offset > w.first_hi || r->last_offset < w.last_lo ||
                r->last_offset > w.last_hi) {
                if (r->last_offset < low) goto done;
                continue;
            }
            slot_t *s = lock_ref(j, r, e->topic);
            if (!s) continue;
            if (concerns(&s->j, e)) {
                if (!made) stage_of(e, &stage);
                made = true;
                add_stage(&s->j, &stage);
            }
            slot_unlock(j, s);
        }
    }
done:
    pthread_mutex_unlock(&st->mu);
}

/* A request's event once its batches' journeys exist: a stage of each
 * (a response that never was, acks=0's, is none). */
static void request_event(kiq_journeys_t *j, const kiq_event_t *e, bool last)
{
    pending_stripe_t *ps = pending_of(j, e->request);
    kiq_journey_stage_t stage;
    stage_of(e, &stage);
    pthread_mutex_lock(&ps->mu);
    pending_t *p = pending_find(ps, e->request);
    bool staged = p && !(e->flags & KIQ_EVENT_NO_RESPONSE);
    if (staged && p->nbatches == 0 && p->nearly < EARLY_STAGES) {
        p->early[p->nearly++] = stage;
    } else if (staged || (p && last && j->otlp)) {
        for (int i = 0; i < p->nbatches; i++) {
            if (!p->batches[i].gen) continue;
            slot_t *s = &j->ring[p->batches[i].slot];
            slot_lock(j, s);
            if (s->gen == p->batches[i].gen) {
                if (staged) add_stage(&s->j, &stage);
                /* answered: its trace goes out (a copy queued for the exporter's thread) */
                if (last && j->otlp) kiq_otlp_offer(j->otlp, &s->j);
            }
            slot_unlock(j, s);
        }
    }
    if (p && last) pending_done(ps, p);
    pthread_mutex_unlock(&ps->mu);
}

/* Whether the event is about a produce request (the only ones whose
 * stages a journey keeps). */
static bool of_produce(const kiq_event_t *e)
{
    const kiq_request_t *r = e->request;
    return r && r->header.api_key == 0;
}

static void on_event(void *ctx, const kiq_event_t *e)
{
    kiq_journeys_t *j = ctx;
    switch (e->point) {
    case KIQ_POINT_RECEIVED: {
        if (!of_produce(e)) return;
        const kiq_request_t *r = e->request;
        pending_stripe_t *ps = pending_of(j, r);
        pthread_mutex_lock(&ps->mu);
        pending_t *p = pending_take(ps, r);
        stage_of(e, &p->early[p->nearly++]);
        pthread_mutex_unlock(&ps->mu);
        return;
    }
    case KIQ_POINT_ENQUEUED:
    case KIQ_POINT_DEQUEUED:
    case KIQ_POINT_HANDLED:
    case KIQ_POINT_RESPONSE_QUEUED:
        if (of_produce(e)) request_event(j, e, false);
        return;
    case KIQ_POINT_SENT:
        if (of_produce(e)) request_event(j, e, true);
        return;
    case KIQ_POINT_VALIDATED: {
        pending_stripe_t *ps = pending_of(j, e->request);
        pthread_mutex_lock(&ps->mu);
        pending_t *p = pending_find(ps, e->request);
        if (p && p->nbatches < PENDING_BATCHES) {
            int i = p->nbatches++;
            p->batches[i].topic = e->topic;
            p->batches[i].partition = e->partition;
            stage_of(e, &p->batches[i].validated);
            p->batches[i].gen = 0;
            memset(p->batches[i].traces, 0, sizeof p->batches[i].traces);
            p->batches[i].trace[0] = '\0';
            p->batches[i].otel_linked = false;
            traces_t t = {p->batches[i].trace, p->batches[i].traces, 0, 0, &p->batches[i].otel_linked,
                          p->batches[i].otel_trace, p->batches[i].otel_parent};
            /* validation counted the records with headers: none, no walk */
            if (e->payload && (e->flags & KIQ_EVENT_HEADERS)) traces_of(e->payload, e->payload_len, &t);
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
    case KIQ_POINT_ISR_SHRUNK:
    case KIQ_POINT_ISR_EXPANDED:
    case KIQ_POINT_FOLLOWER_FETCHED:
    case KIQ_POINT_FOLLOWER_LEO:
    case KIQ_POINT_HW_ADVANCED:
    case KIQ_POINT_RECORDS_FETCHED:
    case KIQ_POINT_ANSWERED:
    case KIQ_POINT_TXN_MARKER:
    case KIQ_POINT_SHARE_ACQUIRED:
    case KIQ_POINT_SHARE_ACKNOWLEDGED:
    case KIQ_POINT_SHARE_LOCK_EXPIRED:
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
    j->n = max_batches > 0 ? (size_t)max_batches : 1;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&j->stripes[i].mu, NULL);
        pthread_mutex_init(&j->pending[i].mu, NULL);
    }
    for (int i = 0; i < SLOT_LOCKS; i++) pthread_mutex_init(&j->slot_locks[i], NULL);
    atomic_init(&j->recorded, 0);
    atomic_init(&j->claimed, 0);
    /* calloc'd: a slot's pages are the process's once a journey is there */
    bool ok = (j->ring = calloc(j->n, sizeof *j->ring)) != NULL;
    for (int i = 0; ok && i < STRIPES; i++) ok = (j->stripes[i].refs = calloc(j->n, sizeof(ref_t))) != NULL;
    if (!ok) {
        kiq_journeys_free(j);
        return NULL;
    }
    return j;
}

void kiq_journeys_keep(kiq_journeys_t *j, kiq_journal_t *journal) { j->journal = journal; }

void kiq_journeys_export(kiq_journeys_t *j, kiq_otlp_t *otlp) { j->otlp = otlp; }

/* The ring's journeys into the journal, oldest first, so a restarted
 * broker finds them there. */
static void save_ring(kiq_journeys_t *j)
{
    uint64_t claimed = atomic_load_explicit(&j->claimed, memory_order_relaxed);
    uint64_t from = claimed > j->n ? claimed - j->n : 0;
    for (uint64_t c = from; c < claimed; c++) {
        slot_t *s = &j->ring[c % j->n];
        if (s->gen == c + 1 && kiq_journal_write_now(j->journal, &s->j) != 0) {
            KIQ_WARN("journeys not all saved: %s", kiq_error_get());
            return;
        }
    }
}

void kiq_journeys_let_go(kiq_journeys_t *j, bool save)
{
    kiq_otlp_close(j->otlp);
    j->otlp = NULL;
    if (j->journal && save && j->ring) save_ring(j);
    kiq_journal_close(j->journal);
    j->journal = NULL;
}

void kiq_journeys_free(kiq_journeys_t *j)
{
    if (!j) return;
    kiq_journeys_let_go(j, true);
    for (int i = 0; i < STRIPES; i++) {
        free(j->stripes[i].refs);
        pthread_mutex_destroy(&j->stripes[i].mu);
        pthread_mutex_destroy(&j->pending[i].mu);
    }
    for (int i = 0; i < SLOT_LOCKS; i++) pthread_mutex_destroy(&j->slot_locks[i]);
    free(j->ring);
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
    uint32_t th = hash_topic(topic);
    stripe_t *st = stripe_of(j, th, partition);
    pthread_mutex_lock(&st->mu);
    slot_t *s = find_slot(j, st, th, topic, partition, offset);
    pthread_mutex_unlock(&st->mu);
    if (!s) return j->journal && kiq_journal_find(j->journal, topic, partition, offset, out);
    *out = s->j;
    slot_unlock(j, s);
    return true;
}

bool kiq_journeys_latest(kiq_journeys_t *j, const char *topic, kiq_journey_t *out)
{
    uint64_t claimed = atomic_load_explicit(&j->claimed, memory_order_relaxed);
    for (uint64_t k = 0; k < j->n && k < claimed; k++) {
        uint64_t c = claimed - 1 - k;
        slot_t *s = &j->ring[c % j->n];
        slot_lock(j, s);
        bool hit = s->gen == c + 1 && led_here(&s->j) &&
                   (topic ? strcmp(s->j.topic, topic) == 0 : strncmp(s->j.topic, "__", 2) != 0);
        if (hit) *out = s->j;
        slot_unlock(j, s);
        if (hit) return true;
    }
    return false;
}

bool kiq_journeys_find_trace(kiq_journeys_t *j, const char *trace, kiq_journey_t *out)
{
    bool found = false;
    uint64_t newest = 0, want = trace_hash(trace, strlen(trace));
    for (size_t k = 0; k < j->n; k++) {
        slot_t *s = &j->ring[k];
        slot_lock(j, s);
        bool carried = false;
        for (int t = 0; s->gen && t < KIQ_JOURNEY_TRACES && s->j.traces[t] && !carried; t++)
            carried = s->j.traces[t] == want;
        if (carried && (!found || s->gen > newest)) {
            *out = s->j;
            newest = s->gen;
            found = true;
        }
        slot_unlock(j, s);
    }
    if (!found && j->journal) found = kiq_journal_find_trace(j->journal, want, out);
    return found;
}

void kiq_journeys_stats(kiq_journeys_t *j, kiq_journeys_stats_t *out)
{
    uint64_t claimed = atomic_load_explicit(&j->claimed, memory_order_relaxed);
    *out = (kiq_journeys_stats_t){
        .recorded = atomic_load_explicit(&j->recorded, memory_order_relaxed),
        .kept = claimed < j->n ? claimed : j->n,
        .bytes = j->n * (sizeof *j->ring + STRIPES * sizeof(ref_t)),
        .journal = j->journal != NULL,
    };
    if (j->journal) {
        kiq_journal_stats_t js;
        kiq_journal_stats(j->journal, &js);
        out->journal_written = js.written;
        out->journal_dropped = js.dropped;
        out->journal_bytes = js.bytes;
    }
    if (j->otlp) {
        kiq_otlp_stats_t os;
        kiq_otlp_stats(j->otlp, &os);
        out->otlp = true;
        out->otlp_exported = os.exported;
        out->otlp_dropped = os.dropped;
        out->otlp_failed = os.failed;
    }
}

static char process_id[48];
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void process_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(process_id, sizeof process_id, "%ld-%lld", (long)getpid(),
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

const char *kiq_journey_process(void)
{
    pthread_once(&process_once, process_init);
    return process_id;
}

const char *kiq_journey_stage_name(const kiq_journey_stage_t *s)
{
    switch (s->point) {
    case KIQ_POINT_HW_ADVANCED: return "committed";
    case KIQ_POINT_ANSWERED: return s->extra == 0 ? "no_response" : "acknowledged";
    case KIQ_POINT_TXN_MARKER: return s->extra ? "txn_committed" : "txn_aborted";
    case KIQ_POINT_APPENDED: return s->flags & KIQ_EVENT_FOLLOWER ? "replicated" : "appended";
    default: return kiq_point_names[s->point];
    }
}

/* An ISR change's reason: what the leader knew of the follower. */
static void isr_text(const kiq_journey_stage_t *s, char *out, size_t n)
{
    /* isr_stage_fields names the same fields for JSON and Lua */
    int32_t peer = s->peer, isr = (int32_t)s->records, since = s->extra;
    long long leo = s->first_offset, leader = s->after;
    if (s->point == KIQ_POINT_ISR_EXPANDED) {
        snprintf(out, n,
                 "ISR expand: follower %d is back in the ISR (now %d replicas): its LEO %lld reached the high "
                 "watermark (the leader's LEO %lld); the high watermark waits for it again",
                 peer, isr, leo, leader);
        return;
    }
    char where[128];
    if (leo < 0)
        snprintf(where, sizeof where, "it has fetched nothing from this leader");
    else
        snprintf(where, sizeof where, "its LEO %lld is %lld records behind the leader's %lld", leo, leader - leo, leader);
    if (s->flags & KIQ_EVENT_LAGGED)
        snprintf(out, n,
                 "ISR shrink: follower %d left the ISR (now %d replicas): %s and it had not caught up for %d ms, "
                 "longer than replica.lag.time.max.ms allows; the high watermark no longer waits for it",
                 peer, isr, where, since);
    else
        snprintf(out, n,
                 "ISR shrink: the controller took follower %d out of the ISR (now %d replicas; its broker was fenced "
                 "or shut down): %s, caught up %d ms before; the high watermark no longer waits for it",
                 peer, isr, where, since);
}

static const char *acks_name(int32_t acks) { return acks == -1 ? "all" : acks == 0 ? "0" : "1"; }

/* How a fetch's records went out: sendfile() on a plain socket, read and
 * encrypted on a TLS one (no kernel TLS here), or copied (an interceptor
 * or kafkaiq.fetch.sendfile=false). */
static const char *send_path(int flags)
{
    return flags & KIQ_EVENT_SENDFILE ? "sendfile" : flags & KIQ_EVENT_TLS_COPY ? "copy (TLS)" : "copied";
}

/* When this broker's request of stage i reached point before it (the
 * last such stage), 0 when none: a line's wait is measured from it. */
static int64_t earlier(const kiq_journey_t *jr, int i, enum kiq_point point)
{
    for (int k = i - 1; k >= 0; k--)
        if (jr->stages[k].point == point && jr->stages[k].broker == jr->stages[i].broker) return jr->stages[k].t_ns;
    return 0;
}

void kiq_journey_stage_text(const kiq_journey_t *jr, int i, char *out, size_t n)
{
    const kiq_journey_stage_t *s = &jr->stages[i];
    long long first = s->first_offset, before = s->before, after = s->after, bytes = s->bytes;
    switch (s->point) {
    case KIQ_POINT_RECEIVED:
        snprintf(out, n, "broker %d, network thread %d: Produce v%d received, %lld bytes, from client \"%s\" at %s",
                 s->broker, s->thread, s->version, bytes, s->who, s->where);
        return;
    case KIQ_POINT_ENQUEUED: {
        int k = snprintf(out, n, "request queue: joined behind %lld requests (depth %lld/%lld)", before, before + 1,
                         after);
        if (k < 0 || (size_t)k >= n) return;
        int64_t received = earlier(jr, i, KIQ_POINT_RECEIVED);
        if (s->flags & KIQ_EVENT_MUTED)
            snprintf(out + k, n - (size_t)k, " after %.3f ms muted: the queue was full",
                     received ? (double)(s->t_ns - received) / 1e6 : 0.0);
        else if (s->extra > 0)
            snprintf(out + k, n - (size_t)k, "; %d connections muted, waiting for room", s->extra);
        return;
    }
    case KIQ_POINT_DEQUEUED: {
        int64_t at = earlier(jr, i, KIQ_POINT_ENQUEUED);
        snprintf(out, n, "I/O thread %d: took it after %.3f ms in the queue", s->thread,
                 at ? (double)(s->t_ns - at) / 1e6 : 0.0);
        return;
    }
    case KIQ_POINT_HANDLED: snprintf(out, n, "handler done (an acks=all answer waits in the purgatory)"); return;
    case KIQ_POINT_VALIDATED:
        snprintf(out, n, "validated: %lld records, %lld bytes, CRC ok (acks=%s)", (long long)s->records, bytes,
                 acks_name(s->extra));
        return;
    case KIQ_POINT_APPENDED:
        if (s->flags & KIQ_EVENT_FOLLOWER)
            snprintf(out, n, "broker %d (follower of %d): appended it to its %s at byte %lld", s->broker, s->peer,
                     s->where, (long long)s->position);
        else
            snprintf(out, n, "offsets %lld..%lld assigned (LEO %lld -> %lld); appended to %s at byte %lld (%lld bytes)",
                     first, after - 1, before, after, s->where, (long long)s->position, bytes);
        return;
    case KIQ_POINT_FLUSHED:
        snprintf(out, n, "broker %d fsynced the log up to offset %lld %s: the fsync took %.3f ms", s->broker, after,
                 s->flags & KIQ_EVENT_FLUSHER ? "(the log flusher, flush.ms)" : "after the append (flush.messages)",
                 s->extra / 1000.0);
        return;
    case KIQ_POINT_FOLLOWER_FETCHED:
        snprintf(out, n, "follower %d fetched it (fetch offset %lld, %s)", s->peer, first,
                 send_path(s->flags));
        return;
    case KIQ_POINT_FOLLOWER_LEO: snprintf(out, n, "follower %d has it: its LEO %lld -> %lld", s->peer, before, after); return;
    case KIQ_POINT_HW_ADVANCED:
        snprintf(out, n, "high watermark %lld -> %lld: committed, visible to consumers (ISR of %lld)", before, after,
                 (long long)s->records);
        return;
    case KIQ_POINT_RESPONSE_QUEUED:
        snprintf(out, n, "response queued for the network thread (%lld bytes)", bytes);
        return;
    case KIQ_POINT_SENT: snprintf(out, n, "response sent"); return;
    case KIQ_POINT_RECORDS_FETCHED:
        snprintf(out, n, "consumer \"%s\" at %s fetched it (fetch offset %lld, %s)", s->who, s->where, first,
                 send_path(s->flags));
        return;
    case KIQ_POINT_ANSWERED:
        if (s->extra != 0)
            snprintf(out, n, "acknowledged: acks=%s, error %d", acks_name(s->extra), s->error);
        else if (s->error)
            snprintf(out, n, "no response goes out (acks=0); error %d: the broker closes the connection so the "
                             "producer notices", s->error);
        else
            snprintf(out, n, "no response goes out (acks=0): the producer counted it sent when it left");
        return;
    case KIQ_POINT_TXN_MARKER:
        if (s->extra)
            snprintf(out, n, "transaction committed: COMMIT marker at offset %lld, read_committed consumers now see it",
                     after);
        else
            snprintf(out, n, "transaction aborted: ABORT marker at offset %lld, read_committed consumers skip it",
                     after);
        return;
    case KIQ_POINT_ISR_SHRUNK:
    case KIQ_POINT_ISR_EXPANDED: isr_text(s, out, n); return;
    case KIQ_POINT_SHARE_ACQUIRED:
        snprintf(out, n, "share group \"%s\": consumer \"%s\" acquired offsets %lld..%lld (delivery %lld), locked "
                 "for %d ms", s->where, s->who, first, (long long)s->last_offset, (long long)s->records, s->extra);
        return;
    case KIQ_POINT_SHARE_ACKNOWLEDGED: {
        static const char *const how[] = {"acknowledged a gap at", "accepted", "released", "rejected",
                                          "renewed the lock on"};
        const char *what = s->extra >= 0 && s->extra <= 4 ? how[s->extra] : "acknowledged";
        if (s->error)
            snprintf(out, n, "share group \"%s\": consumer \"%s\" %s offsets %lld..%lld: refused, error %d "
                     "(not acquired by it, or its lock expired)", s->where, s->who, what, first,
                     (long long)s->last_offset, s->error);
        else
            snprintf(out, n, "share group \"%s\": consumer \"%s\" %s offsets %lld..%lld%s", s->where, s->who, what,
                     first, (long long)s->last_offset,
                     s->flags & KIQ_EVENT_ARCHIVED ? ": archived, at the delivery limit"
                     : s->extra == 1           ? ": done"
                     : s->extra == 2           ? ": available to be delivered again"
                     : s->extra == 4           ? ": locked again for the lock's duration"
                                               : ": archived, never delivered again");
        return;
    }
    case KIQ_POINT_SHARE_LOCK_EXPIRED:
        snprintf(out, n, "share group \"%s\": the lock on offsets %lld..%lld (delivery %lld) expired after %d ms "
                 "unacknowledged: %s", s->where, first, (long long)s->last_offset, (long long)s->records, s->extra,
                 s->flags & KIQ_EVENT_ARCHIVED ? "archived, at the delivery limit" : "available to be delivered again");
        return;
    default: snprintf(out, n, "%s", kiq_journey_stage_name(s)); return;
    }
}

/* The index of the last stage before i at point (of this broker; a
 * follower's only when peer >= 0 and it is that one's), -1 when none. */
static int before_at(const kiq_journey_t *jr, int i, enum kiq_point point, int32_t peer)
{
    for (int k = i - 1; k >= 0; k--) {
        const kiq_journey_stage_t *s = &jr->stages[k];
        if (s->point == point && s->broker == jr->stages[i].broker && (peer < 0 || s->peer == peer)) return k;
    }
    return -1;
}

static double ms_between(int64_t from, int64_t to) { return (double)(to - from) / 1e6; }

/* The follower the high watermark waited for last before stage i (its
 * FOLLOWER_LEO stage's index), -1 when none. */
static int waited_for(const kiq_journey_t *jr, int i) { return before_at(jr, i, KIQ_POINT_FOLLOWER_LEO, -1); }

/* The commit stage's why: which follower's fetch let the high watermark
 * pass the batch, and when it came. */
static bool commit_why(const kiq_journey_t *jr, int i, char *out, size_t n)
{
    const kiq_journey_stage_t *s = &jr->stages[i];
    int a = before_at(jr, i, KIQ_POINT_APPENDED, -1), f = waited_for(jr, i);
    if (a < 0) return false;
    const kiq_journey_stage_t *ap = &jr->stages[a];
    if (f < 0) {
        if (s->records != 1) return false;
        snprintf(out, n, "no follower to wait for: the ISR is this broker alone");
        return true;
    }
    /* a follower's fetch that returns the batch says nothing of its log;
     * its next one, from past the batch, moves its LEO here */
    const kiq_journey_stage_t *fs = &jr->stages[f];
    int fetched = before_at(jr, i, KIQ_POINT_FOLLOWER_FETCHED, fs->peer);
    int k = snprintf(out, n, "waited %.3f ms for follower %d, whose next fetch arrived at +%.3f ms after the append "
                     "(fetch offset %lld: its LEO %lld -> %lld)",
                     ms_between(ap->t_ns, s->t_ns), fs->peer, ms_between(ap->t_ns, fs->t_ns), (long long)fs->after,
                     (long long)fs->before, (long long)fs->after);
    if (fetched >= 0 && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, "; it had taken the batch at +%.3f ms",
                 ms_between(ap->t_ns, jr->stages[fetched].t_ns));
    return true;
}

bool kiq_journey_stage_why(const kiq_journey_t *jr, int i, char *out, size_t n)
{
    const kiq_journey_stage_t *s = &jr->stages[i];
    out[0] = '\0';
    switch (s->point) {
    case KIQ_POINT_ENQUEUED: {
        if (!(s->flags & KIQ_EVENT_MUTED)) return false;
        int r = before_at(jr, i, KIQ_POINT_RECEIVED, -1);
        snprintf(out, n, "muted: request queue full (depth %lld/%lld); its connection read nothing for %.3f ms",
                 (long long)s->before, (long long)s->after, r >= 0 ? ms_between(jr->stages[r].t_ns, s->t_ns) : 0.0);
        return true;
    }
    case KIQ_POINT_DEQUEUED: {
        int e = before_at(jr, i, KIQ_POINT_ENQUEUED, -1);
        if (e < 0) return false;
        const kiq_journey_stage_t *q = &jr->stages[e];
        if (q->after > 0)
            snprintf(out, n, "queued behind %lld requests (depth %lld/%lld)", (long long)q->before,
                     (long long)q->before + 1, (long long)q->after);
        else
            snprintf(out, n, "queued behind %lld requests (depth %lld, the control plane's queue)",
                     (long long)q->before, (long long)q->before + 1);
        return true;
    }
    case KIQ_POINT_FLUSHED:
        if (s->flags & KIQ_EVENT_FLUSHER)
            snprintf(out, n, "fsync because flush.ms passed since the oldest unflushed write (the log flusher)");
        else if (s->records > 0)
            snprintf(out, n, "fsync because flush.messages=%lld", (long long)s->records);
        else
            return false;
        return true;
    case KIQ_POINT_HW_ADVANCED: return commit_why(jr, i, out, n);
    case KIQ_POINT_ANSWERED: {
        if (s->extra != -1) return false;
        int c = before_at(jr, i, KIQ_POINT_HW_ADVANCED, -1), a = before_at(jr, i, KIQ_POINT_APPENDED, -1);
        if (c < 0 || a < 0) return false;
        int f = waited_for(jr, c);
        int k = snprintf(out, n, "acks=all: held in the purgatory until the high watermark passed it, %.3f ms after "
                         "the append", ms_between(jr->stages[a].t_ns, jr->stages[c].t_ns));
        if (f >= 0 && k > 0 && (size_t)k < n)
            snprintf(out + k, n - (size_t)k, " (waiting for follower %d)", jr->stages[f].peer);
        return true;
    }
    case KIQ_POINT_RECORDS_FETCHED:
        if (!(s->flags & KIQ_EVENT_HELD)) return false;
        snprintf(out, n, "held %.3f ms for fetch.min.bytes=%lld/fetch.max.wait.ms=%d until records came",
                 s->after >= 0 ? (double)s->after / 1e3 : 0.0, (long long)s->before, s->extra);
        return true;
    default: return false;
    }
}

/* An ISR change's fields by their meaning (the event's are shared). */
static void isr_stage_fields(const kiq_journey_stage_t *s, const kiq_journey_fields_t *f)
{
    f->number(f->ctx, "peer", s->peer);
    if (s->first_offset >= 0) {
        f->number(f->ctx, "follower_leo", (double)s->first_offset);
        f->number(f->ctx, "lag", (double)(s->after - s->first_offset));
    }
    f->number(f->ctx, "leader_leo", (double)s->after);
    f->number(f->ctx, "isr_size", (double)s->records);
    f->number(f->ctx, "since_caught_up_ms", s->extra);
    f->number(f->ctx, "from_offset", (double)s->before);
    if (s->point == KIQ_POINT_ISR_SHRUNK) f->boolean(f->ctx, "lagged", s->flags & KIQ_EVENT_LAGGED);
}

void kiq_journey_stage_fields(const kiq_journey_t *jr, int i, const kiq_journey_fields_t *f)
{
    const kiq_journey_stage_t *s = &jr->stages[i];
    f->string(f->ctx, "stage", kiq_journey_stage_name(s));
    f->string(f->ctx, "point", kiq_point_names[s->point]);
    f->number(f->ctx, "t_ns", (double)s->t_ns);
    f->number(f->ctx, "wall_us", (double)(s->wall_ns / 1000));
    f->number(f->ctx, "broker", s->broker);
    char text[KIQ_JOURNEY_TEXT];
    kiq_journey_stage_text(jr, i, text, sizeof text);
    f->string(f->ctx, "text", text);
    if (kiq_journey_stage_why(jr, i, text, sizeof text)) f->string(f->ctx, "why", text);
    if (s->point == KIQ_POINT_ISR_SHRUNK || s->point == KIQ_POINT_ISR_EXPANDED) {
        isr_stage_fields(s, f);
        return;
    }
    if (s->thread >= 0) f->number(f->ctx, "thread", s->thread);
    if (s->peer >= 0) f->number(f->ctx, "peer", s->peer);
    if (s->point == KIQ_POINT_VALIDATED || s->point == KIQ_POINT_ANSWERED) f->number(f->ctx, "acks", s->extra);
    if (s->point == KIQ_POINT_ENQUEUED) {
        f->number(f->ctx, "muted", s->extra);
        if (s->flags & KIQ_EVENT_MUTED) f->boolean(f->ctx, "waited_muted", true);
    }
    if (s->point == KIQ_POINT_FLUSHED) {
        f->number(f->ctx, "fsync_us", s->extra);
        if (s->flags & KIQ_EVENT_FLUSHER) f->boolean(f->ctx, "flusher", true);
    }
    if (s->version >= 0) f->number(f->ctx, "version", s->version);
    if (s->point == KIQ_POINT_ANSWERED || s->error) f->number(f->ctx, "error", s->error);
    const struct {
        const char *name;
        int64_t v;
    } wide[] = {
        {"first_offset", s->first_offset}, {"before", s->before}, {"after", s->after},
        {"position", s->position},         {"bytes", s->bytes},   {"records", s->records},
    };
    /* a flush's records field holds the flush.messages that asked for it */
    size_t nwide = sizeof wide / sizeof wide[0] - (s->point == KIQ_POINT_FLUSHED);
    for (size_t i = 0; i < nwide; i++)
        if (wide[i].v >= 0) f->number(f->ctx, wide[i].name, (double)wide[i].v);
    if (s->point == KIQ_POINT_FLUSHED && s->records > 0) f->number(f->ctx, "flush_messages", (double)s->records);
    if (s->flags & KIQ_EVENT_HELD) {
        f->number(f->ctx, "min_bytes", (double)s->before);
        f->number(f->ctx, "max_wait_ms", s->extra);
        if (s->after >= 0) f->number(f->ctx, "held_us", (double)s->after);
    }
    if (s->flags & KIQ_EVENT_SENDFILE) f->boolean(f->ctx, "sendfile", true);
    if (s->flags & KIQ_EVENT_TLS_COPY) f->boolean(f->ctx, "tls_copy", true);
    if (is_share(s->point)) {
        f->string(f->ctx, "group", s->where);
        if (s->who[0]) f->string(f->ctx, "client_id", s->who);
        f->number(f->ctx, "last_offset", (double)s->last_offset);
        if (s->point == KIQ_POINT_SHARE_ACKNOWLEDGED) f->number(f->ctx, "ack_type", s->extra);
        else f->number(f->ctx, "lock_ms", s->extra);
        if (s->flags & KIQ_EVENT_ARCHIVED) f->boolean(f->ctx, "archived", true);
        return;
    }
    bool client = s->point == KIQ_POINT_RECEIVED || s->point == KIQ_POINT_RECORDS_FETCHED;
    if (s->who[0]) f->string(f->ctx, "client_id", s->who);
    if (s->where[0]) f->string(f->ctx, client ? "address" : "file", s->where);
}

/* ---- the verdict ---- */

/* "[a, b, c]" of ids into out. */
static void ids_text(const int32_t *ids, int n, char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k < len; i++) k += (size_t)snprintf(out + k, len - k, "%s%d", i ? ", " : "", ids[i]);
}

bool kiq_journey_verdict(const kiq_journey_t *jr, const kiq_journey_partition_t *p, kiq_journey_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    if (!led_here(jr)) return false;
    out->high_watermark = p->high_watermark;
    out->nisr = p->nisr < KIQ_JOURNEY_PEERS ? p->nisr : KIQ_JOURNEY_PEERS;
    memcpy(out->isr, p->isr, (size_t)out->nisr * sizeof *out->isr);
    char isr[KIQ_JOURNEY_PEERS * 12];
    ids_text(out->isr, out->nisr, isr, sizeof isr);
    bool committed = count_stages(jr, KIQ_POINT_HW_ADVANCED, -1) > 0 || (p->leads && p->high_watermark > jr->last_offset);
    if (committed) {
        out->state = "committed";
        snprintf(out->text, sizeof out->text, "committed: below the high watermark, visible to every consumer");
        return true;
    }
    if (!p->leads) {
        char now[32] = "no broker";
        if (p->leader >= 0) snprintf(now, sizeof now, "broker %d", p->leader);
        out->state = "leader_moved";
        snprintf(out->text, sizeof out->text,
                 "not committed while broker %d led the partition; %s leads it now, and the new leader's log "
                 "decides whether the batch stays",
                 p->self, now);
        return true;
    }
    /* the ISR's followers the leader has not seen past the batch */
    for (int i = 0; i < out->nisr; i++)
        if (out->isr[i] != p->self && count_stages(jr, KIQ_POINT_FOLLOWER_LEO, out->isr[i]) == 0)
            out->waiting[out->nwaiting++] = out->isr[i];
    char waiting[KIQ_JOURNEY_PEERS * 12 + 64] = "";
    if (out->nwaiting) {
        char ids[KIQ_JOURNEY_PEERS * 12];
        ids_text(out->waiting, out->nwaiting, ids, sizeof ids);
        snprintf(waiting, sizeof waiting, "; waiting for follower%s %s in the ISR to have it",
                 out->nwaiting > 1 ? "s" : "", ids);
    }
    out->state = "stuck";
    snprintf(out->text, sizeof out->text,
             "stuck before the high watermark: appended at offsets %lld..%lld, but the HW is %lld with ISR [%s]%s: "
             "consumers cannot see it yet",
             (long long)jr->first_offset, (long long)jr->last_offset, (long long)p->high_watermark, isr, waiting);
    return true;
}
