/* The share-partition state machine; see share_partition.h. */
#include "share/share_partition.h"

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"

uint64_t kiq_share_owner(const char *id, int32_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a; 0 is never an owner */
    for (int32_t i = 0; i < len; i++) h = (h ^ (uint8_t)id[i]) * 1099511628211ULL;
    return h ? h : 1;
}

void kiq_share_partition_init(kiq_share_partition_t *sp, int delivery_limit, int max_in_flight)
{
    memset(sp, 0, sizeof *sp);
    sp->start = -1;
    sp->delivery_limit = delivery_limit;
    sp->max_in_flight = max_in_flight;
}

void kiq_share_partition_free(kiq_share_partition_t *sp)
{
    free(sp->v);
    sp->v = NULL;
    sp->n = sp->cap = 0;
}

int64_t kiq_share_partition_end(const kiq_share_partition_t *sp) { return sp->start + sp->n; }

/* Drops k records from the front. */
static void drop_front(kiq_share_partition_t *sp, int k)
{
    if (k > sp->n) k = sp->n;
    memmove(sp->v, sp->v + k, (size_t)(sp->n - k) * sizeof *sp->v);
    sp->n -= k;
    sp->start += k;
}

/* The start moves past records that are done with. */
static void advance(kiq_share_partition_t *sp)
{
    int k = 0;
    while (k < sp->n && (sp->v[k].state == KIQ_SHARE_ACKNOWLEDGED || sp->v[k].state == KIQ_SHARE_ARCHIVED)) k++;
    if (k) drop_front(sp, k);
}

void kiq_share_partition_reset(kiq_share_partition_t *sp, int64_t offset)
{
    sp->deleted = false;
    sp->start = offset;
    sp->n = 0;
}

void kiq_share_partition_start_at(kiq_share_partition_t *sp, int64_t offset)
{
    sp->deleted = false;
    if (sp->start < 0 || offset >= sp->start + sp->n) {
        sp->start = offset;
        sp->n = 0;
        return;
    }
    if (offset > sp->start) drop_front(sp, (int)(offset - sp->start));
}

enum kiq_share_state kiq_share_partition_state(const kiq_share_partition_t *sp, int64_t offset)
{
    if (offset < sp->start) return KIQ_SHARE_ACKNOWLEDGED;
    if (offset >= sp->start + sp->n) return KIQ_SHARE_AVAILABLE;
    return (enum kiq_share_state)sp->v[offset - sp->start].state;
}

/* A record given back: available again, or archived at the limit. */
static void give_back(kiq_share_partition_t *sp, kiq_share_record_t *r)
{
    r->state = r->deliveries >= sp->delivery_limit ? KIQ_SHARE_ARCHIVED : KIQ_SHARE_AVAILABLE;
    r->owner = 0;
}

static int add_range(kiq_share_ranges_t *out, int64_t offset, int16_t deliveries)
{
    kiq_share_range_t *last = out->n ? &out->v[out->n - 1] : NULL;
    if (last && last->last + 1 == offset && last->deliveries == deliveries) {
        last->last = offset;
        return 0;
    }
    if (out->n == out->cap) {
        int cap = out->cap ? out->cap * 2 : 8;
        kiq_share_range_t *v = realloc(out->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        out->v = v;
        out->cap = cap;
    }
    out->v[out->n++] = (kiq_share_range_t){offset, offset, deliveries};
    return 0;
}

int kiq_share_partition_expire(kiq_share_partition_t *sp, int64_t now_ms, kiq_share_ranges_t *out)
{
    int k = 0;
    for (int i = 0; i < sp->n; i++)
        if (sp->v[i].state == KIQ_SHARE_ACQUIRED && now_ms >= sp->v[i].lock_deadline_ms) {
            give_back(sp, &sp->v[i]);
            /* out of memory: the journey misses a stage, the state is right */
            if (out) (void)add_range(out, sp->start + i, sp->v[i].deliveries);
            k++;
        }
    if (k) advance(sp);
    return k;
}

int64_t kiq_share_partition_next(const kiq_share_partition_t *sp)
{
    for (int i = 0; i < sp->n; i++)
        if (sp->v[i].state == KIQ_SHARE_AVAILABLE) return sp->start + i;
    return sp->start + sp->n;
}

/* Room for the records up to offset (exclusive of nothing: offset itself). */
static int grow_to(kiq_share_partition_t *sp, int64_t offset, uint8_t state)
{
    int64_t want = offset - sp->start + 1;
    if (want <= sp->n) return 0;
    if (want > sp->cap) {
        int cap = sp->cap ? sp->cap : 64;
        while (cap < want) cap *= 2;
        kiq_share_record_t *v = realloc(sp->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        sp->v = v;
        sp->cap = cap;
    }
    for (int64_t i = sp->n; i < want; i++) sp->v[i] = (kiq_share_record_t){.state = state};
    sp->n = (int)want;
    return 0;
}

int kiq_share_partition_acquire(kiq_share_partition_t *sp, int64_t first, int64_t last, int max, uint64_t owner,
                                int64_t deadline_ms, kiq_share_ranges_t *out)
{
    if (first < sp->start) first = sp->start;
    int64_t end = sp->start + sp->n;
    /* offsets the log does not have between the end and first */
    if (first > end && sp->n + (first - end) <= sp->max_in_flight) {
        if (grow_to(sp, first - 1, KIQ_SHARE_ARCHIVED) != 0) return -1;
    }
    int got = 0;
    for (int64_t o = first; o <= last && got < max; o++) {
        if (o >= sp->start + sp->n) {
            if (o != sp->start + sp->n || sp->n >= sp->max_in_flight) break;
            if (grow_to(sp, o, KIQ_SHARE_AVAILABLE) != 0) return -1;
        }
        kiq_share_record_t *r = &sp->v[o - sp->start];
        if (r->state != KIQ_SHARE_AVAILABLE) continue;
        r->state = KIQ_SHARE_ACQUIRED;
        r->deliveries++;
        r->owner = owner;
        r->lock_deadline_ms = deadline_ms;
        if (add_range(out, o, r->deliveries) != 0) return -1;
        got++;
    }
    advance(sp);
    return got;
}

int kiq_share_partition_archive(kiq_share_partition_t *sp, int64_t first, int64_t last)
{
    if (first < sp->start) first = sp->start;
    for (int64_t o = first; o <= last; o++) {
        if (o >= sp->start + sp->n) {
            if (o != sp->start + sp->n || sp->n >= sp->max_in_flight) break;
            if (grow_to(sp, o, KIQ_SHARE_ARCHIVED) != 0) return -1;
            continue;
        }
        kiq_share_record_t *r = &sp->v[o - sp->start];
        if (r->state == KIQ_SHARE_AVAILABLE) r->state = KIQ_SHARE_ARCHIVED;
    }
    advance(sp);
    return 0;
}

int16_t kiq_share_partition_ack(kiq_share_partition_t *sp, int64_t first, int64_t last, int type, uint64_t owner,
                                int64_t deadline_ms)
{
    if (type < KIQ_SHARE_ACK_GAP || type > KIQ_SHARE_ACK_RENEW || first > last) return KIQ_ERR_INVALID_REQUEST;
    /* records before the start offset are done with: acknowledging them
     * again changes nothing and is no error, as Kafka answers */
    if (last < sp->start) return 0;
    if (first < sp->start) first = sp->start;
    if (last >= sp->start + sp->n) return KIQ_ERR_INVALID_RECORD_STATE;
    for (int64_t o = first; o <= last; o++) {
        const kiq_share_record_t *r = &sp->v[o - sp->start];
        if (r->state != KIQ_SHARE_ACQUIRED || r->owner != owner) return KIQ_ERR_INVALID_RECORD_STATE;
    }
    for (int64_t o = first; o <= last; o++) {
        kiq_share_record_t *r = &sp->v[o - sp->start];
        switch (type) {
        case KIQ_SHARE_ACK_RENEW: r->lock_deadline_ms = deadline_ms; continue;
        case KIQ_SHARE_ACK_ACCEPT: r->state = KIQ_SHARE_ACKNOWLEDGED; break;
        case KIQ_SHARE_ACK_RELEASE: give_back(sp, r); break;
        default: r->state = KIQ_SHARE_ARCHIVED; break; /* reject, gap */
        }
        r->owner = 0;
    }
    advance(sp);
    return 0;
}

int kiq_share_partition_release_owner(kiq_share_partition_t *sp, uint64_t owner)
{
    int k = 0;
    for (int i = 0; i < sp->n; i++)
        if (sp->v[i].state == KIQ_SHARE_ACQUIRED && sp->v[i].owner == owner) {
            /* handed out already: the delivery counts */
            give_back(sp, &sp->v[i]);
            k++;
        }
    if (k) advance(sp);
    return k;
}

int kiq_share_partition_restore(kiq_share_partition_t *sp, int64_t first, int64_t last, enum kiq_share_state state,
                                int16_t deliveries)
{
    /* a run reaching absurdly far is a damaged record, not state to hold */
    if (state == KIQ_SHARE_ACQUIRED || first < sp->start + sp->n || last < first || last - sp->start >= (1 << 24))
        return -1;
    if (grow_to(sp, last, KIQ_SHARE_AVAILABLE) != 0) return -1;
    for (int64_t o = first; o <= last; o++)
        sp->v[o - sp->start] = (kiq_share_record_t){.state = (uint8_t)state, .deliveries = deliveries};
    return 0;
}

int kiq_share_partition_count(const kiq_share_partition_t *sp, enum kiq_share_state state)
{
    int k = 0;
    for (int i = 0; i < sp->n; i++) k += sp->v[i].state == (uint8_t)state;
    return k;
}

void kiq_share_ranges_free(kiq_share_ranges_t *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}
