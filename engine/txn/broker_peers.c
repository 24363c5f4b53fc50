/* Connections to the other brokers; see broker_peers.h. */
#include "txn/broker_peers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

#define CONNECT_TIMEOUT_MS 5000

typedef struct peer {
    int32_t id;
    kiq_client_conn_t *conn;
} peer_t;

struct kiq_broker_peers {
    kiq_metadata_cache_t *metadata;
    int32_t node_id;
    atomic_bool stopping;
    pthread_mutex_t mu; /* guards the connections against kiq_broker_peers_shutdown */
    peer_t *peers;
    int npeers;
};

kiq_broker_peers_t *kiq_broker_peers_new(kiq_metadata_cache_t *metadata, int32_t node_id)
{
    kiq_broker_peers_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->metadata = metadata;
    p->node_id = node_id;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void kiq_broker_peers_free(kiq_broker_peers_t *p)
{
    if (!p) return;
    for (int i = 0; i < p->npeers; i++) kiq_client_close(p->peers[i].conn);
    free(p->peers);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void kiq_broker_peers_shutdown(kiq_broker_peers_t *p)
{
    atomic_store(&p->stopping, true);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->npeers; i++)
        if (p->peers[i].conn) kiq_client_shutdown(p->peers[i].conn);
    pthread_mutex_unlock(&p->mu);
}

kiq_client_conn_t *kiq_broker_peers_conn(kiq_broker_peers_t *p, int32_t id)
{
    peer_t *slot = NULL;
    for (int i = 0; i < p->npeers && !slot; i++)
        if (p->peers[i].id == id) slot = &p->peers[i];
    if (slot && slot->conn && kiq_client_alive(slot->conn)) return slot->conn;
    if (slot) {
        pthread_mutex_lock(&p->mu);
        kiq_client_close(slot->conn);
        slot->conn = NULL;
        pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stopping)) {
        kiq_error_set("shutting down");
        return NULL;
    }
    char host[256], client_id[32];
    int port;
    if (!p->metadata || !kiq_metadata_cache_broker(p->metadata, id, NULL, host, sizeof host, &port)) {
        kiq_error_set("broker %d is not known live", id);
        return NULL;
    }
    snprintf(client_id, sizeof client_id, "kafkaiq-broker-%d", p->node_id);
    kiq_client_conn_t *c = kiq_client_connect(host, port, CONNECT_TIMEOUT_MS, client_id);
    if (!c) return NULL;
    pthread_mutex_lock(&p->mu);
    if (!slot) {
        peer_t *grown = realloc(p->peers, (size_t)(p->npeers + 1) * sizeof *grown);
        if (grown) {
            p->peers = grown;
            slot = &p->peers[p->npeers++];
            slot->id = id;
        }
    }
    if (slot) slot->conn = c;
    pthread_mutex_unlock(&p->mu);
    if (!slot) {
        kiq_client_close(c);
        kiq_error_set("out of memory");
        return NULL;
    }
    if (atomic_load(&p->stopping)) kiq_client_shutdown(c);
    return c;
}
