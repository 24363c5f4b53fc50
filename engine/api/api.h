/* Request handlers, one file per API. A handler runs on an I/O thread with
 * the decoded request and a response message initialised to its defaults,
 * and says what happens next. */
#ifndef KIQ_API_API_H
#define KIQ_API_API_H

#include "net/request.h"
#include "proto/errors.h"
#include "server/broker.h"

enum kiq_handler_result {
    KIQ_HANDLER_CLOSE = -1,      /* drop the connection, no response */
    KIQ_HANDLER_RESPOND = 0,     /* encode the response now */
    KIQ_HANDLER_NO_RESPONSE = 1, /* acks=0 produce: the client expects nothing */
    KIQ_HANDLER_PARKED = 2,      /* the handler stamped t.handled, handed the request
                                  * to the purgatory and answers via kiq_api_respond */
};

typedef int (*kiq_api_handler_fn)(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                  void *response);

/* Which listener a request came in on (kiq_request_t.listener). */
enum { KIQ_LISTENER_DATA = 0, KIQ_LISTENER_CONTROL = 1 };

/* NULL for APIs this broker does not serve on that listener (it refuses
 * them like Kafka: by closing the connection). The control plane serves
 * the controller's APIs; the data plane the clients'. */
kiq_api_handler_fn kiq_api_handler(int16_t api_key, int listener);

/* Any thread: encodes the response with its header and hands the request
 * back to its processor. */
void kiq_api_respond(kiq_request_t *r, const void *response);
/* Any thread: finishes a request without a response. */
void kiq_api_finish(kiq_request_t *r, bool close_connection);

int kiq_api_versions_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_produce_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_list_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_delete_records_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_init_producer_id_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_create_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_delete_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_create_partitions_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_describe_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *req,
                                    void *resp);
int kiq_api_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_incremental_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *req,
                                             void *resp);

/* Consumer groups and committed offsets (group/group_coordinator.h). */
int kiq_api_find_coordinator_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_join_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_sync_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_leave_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_offset_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_offset_delete_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_list_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_describe_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_delete_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);

/* The controller's APIs, served on the control plane of the broker that
 * hosts it (others answer NOT_CONTROLLER). */
int kiq_api_broker_registration_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_broker_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_alter_partition_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
/* The controller's pushes to every broker's control plane. */
int kiq_api_update_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_leader_and_isr_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);
int kiq_api_stop_replica_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);

/* Config resource types of the *Configs APIs. */
enum { KIQ_API_RESOURCE_TOPIC = 2, KIQ_API_RESOURCE_BROKER = 4 };
/* AlterConfigs / IncrementalAlterConfigs on a broker resource: every
 * broker config is static, so any change is refused with INVALID_REQUEST
 * naming the configs, as Kafka refuses its read-only ones (an empty change
 * succeeds). Kafka error code, the reason in the error slot. */
int kiq_api_alter_broker_check(kiq_broker_t *b, kiq_str_t resource_name, const kiq_str_t *names,
                               int32_t n);
/* AlterConfigs / IncrementalAlterConfigs on any other resource: a topic's
 * configs changed by edit (see kiq_topics_update_configs) and applied to
 * its logs. Refused for another resource type, and in cluster mode (topic
 * configs are set at creation there). Kafka error code, the reason in the
 * error slot. */
int kiq_api_alter_topic_configs(kiq_broker_t *b, int8_t resource_type, kiq_str_t name,
                                int (*edit)(kiq_topic_configs_t *cfg, void *ctx), void *ctx, bool validate_only);

/* The partition `index` of topic (NULL: unknown) that a client's request
 * names, if this broker leads it: 0 with *part and its log (loaded once:
 * it may be unhosted meanwhile), else UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_LEADER_OR_FOLLOWER (not a replica here, or not its leader),
 * KAFKA_STORAGE_ERROR (its log directory is offline), or with a
 * current_leader_epoch >= 0 FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH. */
int16_t kiq_api_led_partition(kiq_topic_t *topic, int32_t index, int32_t current_leader_epoch, kiq_partition_t **part,
                              kiq_partition_log_t **log);

/* Arena copy of a C string as a protocol string. */
kiq_str_t kiq_api_str(kiq_request_t *r, const char *s);
/* Arena copy of the error slot's text (for error_message fields). */
kiq_str_t kiq_api_error_message(kiq_request_t *r);

#endif
