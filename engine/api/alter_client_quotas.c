/* AlterClientQuotas: quota values set or removed per entity, decided and
 * written to the metadata log as ClientQuotaRecords by the active
 * controller (kiq_controller_alter_client_quotas; here, or forwarded there
 * by any broker of a cluster); a standalone broker decides by the same
 * rules and keeps them itself (server/broker_quotas.h). */
#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "server/broker_quotas.h"

#define ALTER_WAIT_MS 30000

/* Every entry answered code with msg. */
static int answer_all(kiq_request_t *r, const kiq_alter_client_quotas_request_t *req,
                      kiq_alter_client_quotas_response_t *out, int16_t code, const char *msg)
{
    int n = req->entries_n > 0 ? req->entries_n : 0;
    out->entries = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *out->entries);
    out->entries_n = n;
    for (int i = 0; i < n; i++) {
        kiq_alter_client_quotas_response_entries_t *o = &out->entries[i];
        kiq_alter_client_quotas_response_entries_init(o);
        o->entity_n = req->entries[i].entity_n > 0 ? req->entries[i].entity_n : 0;
        o->entity = kiq_arena_calloc(&r->arena, (size_t)o->entity_n + 1, sizeof *o->entity);
        for (int32_t j = 0; j < o->entity_n; j++) {
            kiq_alter_client_quotas_response_entries_entity_init(&o->entity[j]);
            o->entity[j].entity_type = req->entries[i].entity[j].entity_type;
            o->entity[j].entity_name = req->entries[i].entity[j].entity_name;
        }
        o->error_code = code;
        o->error_message = kiq_request_str(r, msg);
    }
    return KIQ_HANDLER_RESPOND;
}

int kiq_api_alter_client_quotas_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_client_quotas_request_t *req = request;
    kiq_alter_client_quotas_response_t *out = response;
    kiq_error_clear();
    /* as Kafka: ALTER_CONFIGS on the cluster, asked where the client sent
     * it (a forward comes on the control plane, which is not asked) */
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER_CONFIGS))
        return answer_all(r, req, out, KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.");
    if (b->cluster && !(r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)))
        return kiq_api_to_controller(b, r, KIQ_API_ALTER_CLIENT_QUOTAS, request, ALTER_WAIT_MS, out);
    if (!b->cluster) {
        kiq_broker_quotas_alter(b, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    /* a forward to a node that is no longer the active controller */
    return answer_all(r, req, out, KIQ_ERR_NOT_CONTROLLER, "this node is not the active controller");
}
