/* A share group's coordinator asking the partition leaders; see
 * share_fanout.h. */
#include "api/share_fanout.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/peer_broker.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "txn/broker_peers.h"

#define ASK_TIMEOUT_MS 10000

typedef struct fanout fanout_t;

/* One broker asked; its answer decodes in its own arena, as the lines'
 * workers answer concurrently. */
typedef struct leg {
    kiq_peer_call_t call;
    kiq_arena_t arena;
    fanout_t *f;
} leg_t;

/* One parked request's asks. mu guards pending and the merges into the
 * response; the last callback answers and frees it. */
struct fanout {
    pthread_mutex_t mu;
    int pending;
    void *parked; /* kiq_api_park_for_link's */
    void *response;
    kiq_arena_t *arena; /* the parked request's: only merges touch it */
    kiq_share_fanout_merge_fn merge;
    int nlegs;
    leg_t legs[];
};

bool kiq_api_share_from_broker(kiq_broker_t *b, const kiq_request_t *r)
{
    int32_t id = kiq_api_peer_broker(b, r);
    return id >= 0 && id != b->node_id;
}

/* One leg done (or never sent): the last answers the client. */
static void leg_done(fanout_t *f, leg_t *leg, int rc)
{
    pthread_mutex_lock(&f->mu);
    if (leg && rc == 0) {
        f->merge(f->response, leg->call.response, f->arena);
    } else if (leg) {
        KIQ_WARN_LIMITED("share offsets: no answer from a partition leader: %s", leg->call.error);
    }
    bool last = --f->pending == 0;
    pthread_mutex_unlock(&f->mu);
    if (!last) return;
    f->merge(f->response, NULL, f->arena);
    kiq_api_answer_parked(f->parked); /* encodes now: the legs' arenas may go after */
    for (int i = 0; i < f->nlegs; i++) kiq_arena_reset(&f->legs[i].arena);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static void answered(kiq_peer_call_t *call, int rc)
{
    leg_t *leg = (leg_t *)call;
    leg_done(leg->f, leg, rc);
}

int kiq_api_share_fanout(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response,
                         size_t response_size, kiq_share_fanout_merge_fn merge)
{
    kiq_cached_broker_t *brokers = NULL;
    int n = b->cluster && b->share_peers ? kiq_metadata_cache_brokers(b->metadata, NULL, &r->arena, &brokers) : 0;
    fanout_t *f = n > 0 ? calloc(1, sizeof *f + (size_t)n * sizeof(leg_t)) : NULL;
    if (!f) {
        merge(response, NULL, &r->arena);
        return KIQ_HANDLER_RESPOND;
    }
    pthread_mutex_init(&f->mu, NULL);
    f->response = response;
    f->arena = &r->arena;
    f->merge = merge;
    int64_t deadline = kiq_clock_mono_ns() + (int64_t)ASK_TIMEOUT_MS * 1000000;
    kiq_peer_channel_t *lines[n];
    for (int i = 0; i < n; i++) {
        if (brokers[i].id == b->node_id) continue;
        kiq_peer_channel_t *line = kiq_broker_peers_line(b->share_peers, brokers[i].id);
        if (!line) {
            KIQ_WARN_LIMITED("share offsets: no line to broker %d: %s", brokers[i].id, kiq_error_get());
            continue;
        }
        leg_t *leg = &f->legs[f->nlegs];
        lines[f->nlegs++] = line;
        leg->f = f;
        kiq_arena_init(&leg->arena);
        leg->call = (kiq_peer_call_t){.api_key = r->header.api_key, .version = r->header.api_version,
                                      .request = request, .arena = &leg->arena, .done = answered,
                                      .deadline_ns = deadline};
        leg->call.response = kiq_arena_calloc(&leg->arena, 1, response_size);
    }
    f->pending = f->nlegs + 1; /* the submitting thread's own, so no callback answers before all are sent */
    f->parked = kiq_api_park_for_link(b, r, response);
    for (int i = 0; i < f->nlegs; i++) kiq_peer_channel_submit(lines[i], &f->legs[i].call);
    leg_done(f, NULL, 0);
    return KIQ_HANDLER_PARKED;
}
