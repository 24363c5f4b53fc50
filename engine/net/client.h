/* A blocking Kafka client connection for broker-to-broker traffic: the
 * controller's sender threads, broker registration and heartbeats, replica
 * fetchers. One request at a time, encoded and decoded with the generated
 * codec (proto/messages.h).
 *
 * A connection is owned by ONE thread, which calls everything here except
 * kiq_client_shutdown. After any failed request the connection is closed;
 * the owner frees it and connects again. */
#ifndef KIQ_NET_CLIENT_H
#define KIQ_NET_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"

/* Largest response frame accepted (Kafka's socket.request.max.bytes). */
#define KIQ_CLIENT_MAX_FRAME (100 * 1024 * 1024)

typedef struct kiq_client_conn kiq_client_conn_t;
struct kiq_peer_security;

/* Connects to host:port (name or address), sets TCP_NODELAY and asks the
 * broker for its API versions (ApiVersions v3, falling back to what an
 * older broker offers). timeout_ms bounds connecting and the negotiation
 * together; < 0 waits forever. client_id may be NULL. With security (NULL:
 * plaintext) the connection is TLS when it says so (the handshake inside
 * the ApiVersions exchange) and signs in with SASL after ApiVersions. NULL
 * on failure, with the reason (naming host:port) in the error slot. */
kiq_client_conn_t *kiq_client_connect(const char *host, int port, int timeout_ms, const char *client_id,
                                      const struct kiq_peer_security *security);

/* The highest version of api_key both this codec and the broker speak, or
 * -1 when the ranges do not overlap (or either side lacks the API). */
int16_t kiq_client_version(const kiq_client_conn_t *c, int16_t api_key);

/* Sends one request and waits for its response. version -1 picks
 * kiq_client_version(). request is the api's kiq_<api>_request_t; response
 * points to room for its kiq_<api>_response_t, decoded into arena: strings,
 * bytes and records in it point into the response frame, which is also
 * allocated in arena, so the response lives exactly as long as the arena.
 * A Produce with acks=0 returns at once with a default response, as the
 * broker sends none. timeout_ms bounds sending and receiving together
 * (< 0: forever). 0, or -1 with the reason (host:port and API) in the error
 * slot; the connection is then closed. */
int kiq_client_request(kiq_client_conn_t *c, int16_t api_key, int16_t version, const void *request,
                       kiq_arena_t *arena, void *response, int timeout_ms);

/* False once the connection failed, was shut down or closed. */
bool kiq_client_alive(const kiq_client_conn_t *c);

/* "host:port" of the peer, for messages. */
const char *kiq_client_peer(const kiq_client_conn_t *c);

/* Any thread: makes the owner's blocked (or next) request fail promptly
 * with "shut down", e.g. so a stopping broker stops its fetchers without
 * waiting for their timeouts. c must stay allocated during the call: the
 * caller keeps the owner from freeing it meanwhile (e.g. by joining the
 * owner only afterwards). Idempotent. */
void kiq_client_shutdown(kiq_client_conn_t *c);

/* Closes the socket and frees c (NULL is fine). */
void kiq_client_close(kiq_client_conn_t *c);

#endif
