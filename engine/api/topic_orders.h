/* A cluster request whose topics the controller creates, grows or deletes
 * (CreateTopics, CreatePartitions, DeleteTopics, and the topics Metadata
 * and FindCoordinator create): its orders go to the controller link, the
 * request is parked, and once they are decided it is answered, for a
 * client after this broker's metadata shows every change made (its next
 * Metadata sees it), bounded by the request's deadline. It then waits in
 * the purgatory, tried again at each UpdateMetadata applied here. No I/O
 * thread waits meanwhile. */
#ifndef KIQ_API_TOPIC_ORDERS_H
#define KIQ_API_TOPIC_ORDERS_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "controller/metadata_cache.h"
#include "server/controller_link.h"

typedef struct kiq_api_topic_orders kiq_api_topic_orders_t;

/* In the request's arena; the handler sets what it asks, the link the
 * orders' outcomes. */
struct kiq_api_topic_orders {
    kiq_broker_t *b;
    kiq_request_t *r;
    void *resp;
    int32_t n;                /* the request's topics */
    int32_t *order_of;        /* each one's order, -1 when settled by the handler */
    kiq_topic_order_t *orders;
    int norders;
    bool wait;                /* answer once the metadata shows the changes */
    int64_t deadline_ns;      /* monotonic: answered as it is then */
    /* the metadata here shows the change an order (decided without an
     * error) made */
    bool (*shown)(kiq_metadata_cache_t *mc, const kiq_topic_order_t *o);
    /* fills the response from the orders, just before it is sent */
    void (*fill)(kiq_api_topic_orders_t *t);
    void *ctx; /* the handler's */
};

/* Orders for a request of n topics (none settled yet); wait_ms bounds the
 * whole request. */
kiq_api_topic_orders_t *kiq_api_topic_orders_new(kiq_broker_t *b, kiq_request_t *r, void *resp, int32_t n,
                                                 int wait_ms);
/* Request topic i becomes the next order; returns it. */
kiq_topic_order_t *kiq_api_topic_orders_add(kiq_api_topic_orders_t *t, int32_t i);
/* The order of request topic i, NULL when it has none. */
const kiq_topic_order_t *kiq_api_topic_orders_of(const kiq_api_topic_orders_t *t, int32_t i);
/* A kiq_link_done_fn (ctx: the orders): answers now, or parks until the
 * metadata shows the changes. */
void kiq_api_topic_orders_decided(void *ctx);
/* A `shown` for a created topic: every partition has a leader in this
 * broker's metadata, which names one only once that leader took it, so a
 * client can produce to it at once. */
bool kiq_api_topic_led_here(kiq_metadata_cache_t *mc, const kiq_topic_order_t *o);

#endif
