/* Request handlers, one file per API. A handler runs on an I/O thread with
 * the decoded request and a response message initialised to its defaults,
 * and says what happens next. */
#ifndef KIQ_API_API_H
#define KIQ_API_API_H

#include "config/dynamic_configs.h"
#include "config/topic_config.h"
#include "controller/config_changes.h"
#include "net/request.h"
#include "proto/acl_operations.h"
#include "security/acl.h"
#include "proto/errors.h"
#include "server/broker.h"
#include "controller/metadata_cache.h"

enum kiq_handler_result {
    KIQ_HANDLER_CLOSE = -1,      /* drop the connection, no response */
    KIQ_HANDLER_RESPOND = 0,     /* encode the response now */
    KIQ_HANDLER_NO_RESPONSE = 1, /* acks=0 produce: the client expects nothing */
    KIQ_HANDLER_PARKED = 2,      /* the handler stamped t.handled, handed the request
                                  * to the purgatory and answers via kiq_request_respond */
};

typedef int (*kiq_api_handler_fn)(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                  void *response);

/* One API of the surface (api/api_table.c): its handler, the listeners
 * that serve it (a bit per KIQ_LISTENER_*), and where its served and
 * advertised versions differ from its schema's (-1: the schema's). */
typedef struct kiq_api_row {
    int16_t key;
    int16_t min;            /* lowest version served and advertised */
    int16_t advertised_min; /* lowest advertised (below min: refused all the same) */
    uint8_t planes;
    kiq_api_handler_fn handler;
    /* the operation on the cluster the whole request needs (0: none, its
     * handler checks what it needs), and how a refusal is answered */
    int8_t cluster_op;
    /* the operation on the cluster the request needs when it arrives on
     * the control plane (0: none): the nodes' own traffic there */
    int8_t control_op;
    void (*deny)(void *resp, int16_t version, int16_t code);
    /* likewise on the request's group and transactional id (0: none) */
    int8_t group_op;
    kiq_str_t (*group_of)(const void *req);
    int8_t txn_op;
    kiq_str_t (*txn_of)(const void *req);
} kiq_api_row_t;

/* The row of an API that listener serves, NULL for one it does not (it
 * refuses it like Kafka: by closing the connection). The control plane
 * serves the controller's APIs; the data plane the clients'. */
const kiq_api_row_t *kiq_api_row(int16_t api_key, int listener);
/* What a broker serves: admission by this table (unknown APIs and
 * versions refused before queueing) and dispatch to its handlers. */
extern const kiq_broker_surface_t kiq_api_surface;

/* Every row (build/gen/api/surface.c, from engine/api/surface.lua). */
extern const kiq_api_row_t kiq_api_rows[];
extern const size_t kiq_api_nrows;
/* The row's served and advertised lowest versions, and whether it serves
 * version (its schema c's highest is the highest). */
int16_t kiq_api_row_min(const kiq_api_row_t *row, const kiq_api_codec_t *c);
int16_t kiq_api_row_advertised_min(const kiq_api_row_t *row, const kiq_api_codec_t *c);
bool kiq_api_row_serves(const kiq_api_row_t *row, const kiq_api_codec_t *c, int16_t version);

/* The thread holding r: its handler is done with it, or parks it now
 * (stamps t.handled, announces HANDLED). */
void kiq_api_handled(kiq_broker_t *b, kiq_request_t *r);
/* A handler handing r to the controller link: parks it (kiq_api_handled)
 * and returns the context for kiq_api_answer_parked, the link's done
 * callback, which sends response (filled by the link) as r's answer. */
void *kiq_api_park_for_link(kiq_broker_t *b, kiq_request_t *r, void *response);
void kiq_api_answer_parked(void *ctx);
/* A handler's whole request api sent to the active controller, here or
 * over the controller link (kiq_controller_link_whole), r parked until
 * out is filled and answered: returns KIQ_HANDLER_PARKED. */
int kiq_api_to_controller(kiq_broker_t *b, kiq_request_t *r, int16_t api, const void *req, int wait_ms, void *out);
/* The thread holding r (a parked request's purgatory thread too): does
 * what a handler's return code rc says with r and its response (nothing
 * for KIQ_HANDLER_PARKED). */
void kiq_api_finish(kiq_request_t *r, void *resp, int rc);
/* An I/O thread's request (api/dispatch.c): decode, let request
 * interceptors have their say, run the handler, answer. */
void kiq_api_handle(kiq_broker_t *b, kiq_request_t *r);

/* Consumer groups and committed offsets (group/group_coordinator.h). */

/* The controller's APIs, served on the control plane of the broker that
 * hosts it (others answer NOT_CONTROLLER). */
/* The controller's pushes to every broker's control plane. */

/* AlterConfigs / IncrementalAlterConfigs (api_key, req the request):
 * each order decided, by the controller in cluster mode (forwarded, the
 * request parked meanwhile), else here and applied unless validate_only;
 * a forwarded request at a broker not the controller is NOT_CONTROLLER.
 * Messages in r's arena. fill(orders, req, resp) then makes the response.
 * The handler's result. */
typedef void (*kiq_api_configs_fill_fn)(const kiq_config_order_t *orders, int n, const void *req, void *resp,
                                        kiq_arena_t *arena);
int kiq_api_change_configs(kiq_broker_t *b, kiq_request_t *r, int16_t api_key, const void *req,
                           kiq_config_order_t *orders, int n, bool validate_only, void *resp,
                           kiq_api_configs_fill_fn fill);
/* A broker resource's level on this broker: "" the cluster-wide default,
 * its id its own; another name is INVALID_REQUEST (reason in the error
 * slot). */
int kiq_api_config_level(kiq_broker_t *b, kiq_str_t resource_name, enum kiq_config_level *level);

/* The leaders named in one response's current_leader hints (KIP-951),
 * for its node_endpoints; in the request's arena. */
typedef struct kiq_api_leader_nodes {
    int n, cap;
    kiq_cached_broker_t *nodes;
} kiq_api_leader_nodes_t;
/* The current leader of topic's partition as this broker knows it (its
 * metadata in cluster mode, itself standalone) into *leader_id and
 * *leader_epoch, its endpoint added to nodes once; false when unknown. */
bool kiq_api_leader_hint(kiq_broker_t *b, kiq_request_t *r, kiq_str_t topic, int32_t partition,
                         int32_t *leader_id, int32_t *leader_epoch, kiq_api_leader_nodes_t *nodes);

/* A topic as this broker describes it to clients (api/topic_view.c), by
 * name or (name.p NULL) by id, copied into the request's arena; false for
 * an unknown topic. */
bool kiq_api_topic_view(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name, const kiq_uuid_t *id,
                        kiq_cached_topic_t *out);
/* Every topic so, sorted by name, into *out; their number. */
int kiq_api_topic_views(kiq_broker_t *b, kiq_request_t *r, kiq_cached_topic_t **out);
/* A copy of n broker ids in the request's arena (never NULL). */
int32_t *kiq_api_ids(kiq_request_t *r, const int32_t *ids, int n);
/* A Metadata or DescribeTopicPartitions partition entry p (the same
 * fields in two generated types) at index i from cached partition c. */
#define KIQ_API_FILL_PARTITION(p, r, c, i)                               \
    do {                                                                 \
        (p)->partition_index = (i);                                      \
        (p)->leader_id = (c)->leader;                                    \
        (p)->leader_epoch = (c)->leader_epoch;                           \
        (p)->replica_nodes_n = (c)->nreplicas;                           \
        (p)->replica_nodes = kiq_api_ids((r), (c)->replicas, (c)->nreplicas); \
        (p)->isr_nodes_n = (c)->nisr;                                    \
        (p)->isr_nodes = kiq_api_ids((r), (c)->isr, (c)->nisr);          \
        (p)->offline_replicas_n = (c)->noffline;                         \
        (p)->offline_replicas = kiq_api_ids((r), (c)->offline, (c)->noffline); \
        if ((c)->leader < 0) (p)->error_code = KIQ_ERR_LEADER_NOT_AVAILABLE; \
    } while (0)
/* The brokers a client is told of: the live ones from the metadata cache
 * in cluster mode (before the first update only this one, so a client
 * always has somewhere to go); standalone, itself. Into *out, in r's
 * arena; their number. */
int kiq_api_live_brokers(kiq_broker_t *b, kiq_request_t *r, kiq_cached_broker_t **out);



#endif
