/* The acceptor: one thread and libev loop per listener, accepting sockets
 * and handing them to processors round-robin. */
#ifndef KIQ_NET_ACCEPTOR_H
#define KIQ_NET_ACCEPTOR_H

#include "net/processor.h"

typedef struct kiq_acceptor kiq_acceptor_t;

/* Binds and listens on host:port now (port 0 picks one), so a taken port
 * fails here, before any thread starts. */
kiq_acceptor_t *kiq_acceptor_new(const char *host, int port, kiq_processor_t **processors,
                                 int nprocessors);
int kiq_acceptor_port(const kiq_acceptor_t *a);
/* Any thread: connections accepted so far. */
uint64_t kiq_acceptor_accepted(kiq_acceptor_t *a);
int kiq_acceptor_start(kiq_acceptor_t *a);
/* Any thread: stop accepting and join the thread. */
void kiq_acceptor_stop(kiq_acceptor_t *a);
void kiq_acceptor_free(kiq_acceptor_t *a);

#endif
