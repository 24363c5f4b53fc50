/* Lines to the other brokers; see broker_peers.h. */
#include "txn/broker_peers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct peer {
    int32_t id;
    char host[256];
    int port;
    kiq_peer_channel_t *line;
} peer_t;

struct kiq_broker_peers {
    kiq_metadata_cache_t *metadata;
    const struct kiq_peer_security *security;
    int32_t node_id;
    char purpose[24];
    kiq_metrics_t *metrics;
    bool queued;
    pthread_mutex_t mu; /* guards the list and stopping */
    bool stopping;
    peer_t *peers;
    int npeers;
};

kiq_broker_peers_t *kiq_broker_peers_new(kiq_metadata_cache_t *metadata, const struct kiq_peer_security *security,
                                         int32_t node_id, const char *purpose, bool queued, kiq_metrics_t *metrics)
{
    kiq_broker_peers_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->metadata = metadata;
    p->security = security;
    p->node_id = node_id;
    snprintf(p->purpose, sizeof p->purpose, "%s", purpose);
    p->metrics = metrics;
    p->queued = queued;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void kiq_broker_peers_free(kiq_broker_peers_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->npeers; i++) kiq_peer_channel_free(p->peers[i].line);
    free(p->peers);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void kiq_broker_peers_shutdown(kiq_broker_peers_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    for (int i = 0; i < p->npeers; i++) kiq_peer_channel_stop(p->peers[i].line);
    pthread_mutex_unlock(&p->mu);
}

/* A new line to broker id at host:port, in the list; NULL with the
 * reason. p->mu held. */
static kiq_peer_channel_t *add(kiq_broker_peers_t *p, int32_t id, const char *host, int port)
{
    char name[32], peer[16], client_id[32];
    snprintf(name, sizeof name, "%s-%d", p->purpose, id);
    snprintf(peer, sizeof peer, "%d", id);
    snprintf(client_id, sizeof client_id, "kafkaiq-broker-%d", p->node_id);
    kiq_peer_channel_config_t lc = {.name = name, .peer = peer, .host = host, .port = port, .client_id = client_id,
                                    .metrics = p->metrics, .security = p->security};
    if (p->queued) lc.backoff_min_ms = 100, lc.backoff_max_ms = 1000;
    kiq_peer_channel_t *line = p->queued ? kiq_peer_channel_new(&lc) : kiq_peer_channel_open(&lc);
    if (!line) return NULL;
    peer_t *grown = realloc(p->peers, (size_t)(p->npeers + 1) * sizeof *grown);
    if (grown) {
        p->peers = grown;
        peer_t *slot = &p->peers[p->npeers++];
        slot->id = id;
        snprintf(slot->host, sizeof slot->host, "%s", host);
        slot->port = port;
        slot->line = line;
    }
    if (!grown) {
        kiq_peer_channel_free(line);
        return kiq_error_set("out of memory"), NULL;
    }
    return line;
}

static kiq_peer_channel_t *lookup(kiq_broker_peers_t *p, int32_t id, const char *host, int port);

kiq_peer_channel_t *kiq_broker_peers_line(kiq_broker_peers_t *p, int32_t id)
{
    char host[256];
    int port;
    if (!p->metadata || !kiq_metadata_cache_broker(p->metadata, id, NULL, host, sizeof host, &port))
        return kiq_error_set("broker %d is not known live", id), NULL;
    pthread_mutex_lock(&p->mu);
    kiq_peer_channel_t *line = NULL;
    if (p->stopping) {
        kiq_error_set("shutting down");
    } else {
        line = lookup(p, id, host, port);
    }
    pthread_mutex_unlock(&p->mu);
    return line;
}

/* The line to id, now at host:port, found or added. p->mu held. */
static kiq_peer_channel_t *lookup(kiq_broker_peers_t *p, int32_t id, const char *host, int port)
{
    for (int i = 0; i < p->npeers; i++) {
        peer_t *slot = &p->peers[i];
        if (slot->id != id) continue;
        if (slot->port != port || strcmp(slot->host, host) != 0) {
            snprintf(slot->host, sizeof slot->host, "%s", host);
            slot->port = port;
            kiq_peer_channel_retarget(slot->line, host, port);
        }
        return slot->line;
    }
    return add(p, id, host, port);
}
