/* UpdateMetadata (control plane): the controller's full view of the
 * cluster replaces this broker's metadata cache, which wakes whoever waits
 * for a change (a CreateTopics parked until its topic is here), and the
 * dynamic configs and (on a broker hosting no controller) the client
 * quotas it carries become this broker's; topics here that it does
 * not list are stray and deleted. The same state may come many times;
 * replacing is idempotent. */
#include "api/api.h"
#include "core/error.h"
#include "core/say.h"
#include "server/broker_configs.h"
#include "server/broker_quotas.h"
#include "controller/metadata_cache.h"
#include "replica/replica_manager.h"

int kiq_api_update_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    (void)r;
    const kiq_update_metadata_request_t *req = request;
    kiq_update_metadata_response_t *out = response;
    int rc = kiq_metadata_cache_update(b->metadata, req);
    if (rc == KIQ_ERR_STALE_CONTROLLER_EPOCH) {
        KIQ_WARN_LIMITED("[KafkaIQ broker %d] UpdateMetadata refused: %s", b->node_id, kiq_error_get());
        out->error_code = KIQ_ERR_STALE_CONTROLLER_EPOCH;
        return KIQ_HANDLER_RESPOND;
    }
    if (rc != 0) {
        KIQ_ERROR("[KafkaIQ broker %d] cannot apply UpdateMetadata: %s", b->node_id, kiq_error_get());
        out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_broker_controller_seen(b, req->controller_id);
    kiq_broker_configs_apply_pushed(b, req);
    if (!b->controller) kiq_broker_quotas_pushed(b, req);
    if (b->replicas) kiq_replica_manager_drop_strays(b->replicas);
    kiq_broker_startup_from_controller(&b->startup, KIQ_STARTUP_METADATA, req->live_brokers_n);
    kiq_broker_metadata_applied(b);
    kiq_purgatory_notify(b->purgatory, kiq_purgatory_metadata_key());
    out->error_code = KIQ_ERR_NONE;
    return KIQ_HANDLER_RESPOND;
}
