/* The acceptor: one thread and libev loop per listener, accepting sockets
 * and handing them to processors round-robin. */
#ifndef KIQ_NET_ACCEPTOR_H
#define KIQ_NET_ACCEPTOR_H

#include "net/connection_quotas.h"
#include "net/processor.h"

typedef struct kiq_acceptor kiq_acceptor_t;

/* Binds and listens on host:port now (port 0 picks one), so a taken port
 * fails here, before any thread starts. quotas (NULL: none; outlives the
 * acceptor) admit each connection: past max.connections the acceptor
 * waits, one over max.connections.per.ip is closed at once. At the open
 * files limit a pending connection is accepted on a reserve descriptor and
 * closed, with a (rate-limited) log line. */
kiq_acceptor_t *kiq_acceptor_new(const char *host, int port, kiq_processor_t **processors, int nprocessors,
                                 kiq_connection_quotas_t *quotas);
int kiq_acceptor_port(const kiq_acceptor_t *a);
/* Any thread: connections accepted so far; closed at the fd limit. */
uint64_t kiq_acceptor_accepted(kiq_acceptor_t *a);
uint64_t kiq_acceptor_refused_fd_limit(kiq_acceptor_t *a);
/* Before the start: the socket listens, so connections wait in the
 * backlog, but none is accepted until kiq_acceptor_open (a Kafka broker
 * opens its client listeners once it has caught up with the metadata). */
void kiq_acceptor_hold(kiq_acceptor_t *a);
int kiq_acceptor_start(kiq_acceptor_t *a);
/* Any thread, once started: accept from now on. True if this call
 * opened it; false if it was not held, or opened already. */
bool kiq_acceptor_open(kiq_acceptor_t *a);
/* Any thread: stop accepting and join the thread. */
void kiq_acceptor_stop(kiq_acceptor_t *a);
void kiq_acceptor_free(kiq_acceptor_t *a);

#endif
