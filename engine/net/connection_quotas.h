/* max.connections, max.connections.per.ip and its overrides (Kafka's
 * ConnectionQuotas): how many client connections are open, in all and per
 * address. The acceptor asks before handing a socket on; a processor gives
 * the slot back when it closes the connection. Any thread (one mutex). */
#ifndef KIQ_NET_CONNECTION_QUOTAS_H
#define KIQ_NET_CONNECTION_QUOTAS_H

#include <stdint.h>

typedef struct kiq_connection_quotas kiq_connection_quotas_t;

/* overrides: "host:count,host:count" (Kafka's syntax; hosts as addresses).
 * NULL with the reason when it does not parse, or out of memory. */
kiq_connection_quotas_t *kiq_connection_quotas_new(int32_t max_connections, int32_t max_per_ip,
                                                   const char *overrides);
void kiq_connection_quotas_free(kiq_connection_quotas_t *q);

enum kiq_connection_verdict {
    KIQ_CONNECTION_ADMITTED,
    KIQ_CONNECTION_OVER_IP,  /* close it: the address has max.connections.per.ip open */
    KIQ_CONNECTION_OVER_MAX, /* wait: max.connections are open */
};
/* A new connection from ip; admitted ones hold a slot until released. */
enum kiq_connection_verdict kiq_connection_quotas_admit(kiq_connection_quotas_t *q, const char *ip);
/* Whether max.connections are open (the acceptor waits while they are). */
int kiq_connection_quotas_full(kiq_connection_quotas_t *q);
void kiq_connection_quotas_release(kiq_connection_quotas_t *q, const char *ip);

typedef struct kiq_connection_quotas_stats {
    int32_t open;
    uint64_t refused_per_ip; /* closed at once for max.connections.per.ip */
} kiq_connection_quotas_stats_t;
void kiq_connection_quotas_stats(kiq_connection_quotas_t *q, kiq_connection_quotas_stats_t *out);

#endif
