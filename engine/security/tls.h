/* TLS for the SSL and SASL_SSL listeners, on OpenSSL 3. A kiq_tls_t is the
 * server side of one listener (certificate, key, trust store, client-auth
 * rule), built on the thread building the broker and read-only after; each
 * processor thread makes its connections' kiq_tls_conn_t from it and owns
 * them. The socket stays non-blocking: reads and writes say when the other
 * direction must be ready first (a handshake step or a key update). */
#ifndef KIQ_SECURITY_TLS_H
#define KIQ_SECURITY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"

typedef struct kiq_tls kiq_tls_t;
typedef struct kiq_tls_conn kiq_tls_conn_t;

/* The listener's context from Kafka's ssl.* configs (ssl.keystore.type PEM
 * or PKCS12, ssl.truststore.*, ssl.client.auth); NULL with the reason. */
kiq_tls_t *kiq_tls_new(const kiq_config_t *c);
void kiq_tls_free(kiq_tls_t *t);

/* The client side of broker-to-broker connections, from the same ssl.*
 * configs: the trust store (the system's when none) checks the peer,
 * whose certificate must name the address dialled when
 * ssl.endpoint.identification.algorithm is https; the key store, when
 * set, is presented to a peer asking for a certificate. NULL with the
 * reason. Read-only once built, shared by the threads that connect. */
kiq_tls_t *kiq_tls_client_new(const kiq_config_t *c);
/* A client session over the connected socket fd to host (a name or an
 * address); NULL with the reason. The handshake runs inside the first
 * write. Owned by the thread that connected. */
kiq_tls_conn_t *kiq_tls_conn_connect(kiq_tls_t *t, int fd, const char *host);

/* A server-side session over the accepted socket fd; NULL when out of
 * memory. The handshake runs inside the first reads. */
kiq_tls_conn_t *kiq_tls_conn_new(kiq_tls_t *t, int fd);
void kiq_tls_conn_free(kiq_tls_conn_t *tc);

/* Like read(2)/send(2): bytes moved, 0 at the peer's close (read), or -1
 * with errno EAGAIN (and *other true when the socket must first be
 * writable for a read, readable for a write) or another errno for a
 * failed session (its reason in the error slot). */
ssize_t kiq_tls_read(kiq_tls_conn_t *tc, void *buf, size_t len, bool *other);
ssize_t kiq_tls_write(kiq_tls_conn_t *tc, const void *buf, size_t len, bool *other);
/* Decrypted bytes held inside the session, which the socket's readiness
 * does not show. */
size_t kiq_tls_pending(kiq_tls_conn_t *tc);
/* Once the handshake is done: Kafka's default principal, User: and the
 * client certificate's subject as RFC 2253 writes it (User:ANONYMOUS
 * without one); NULL before. */
const char *kiq_tls_principal(kiq_tls_conn_t *tc);

#endif
