/* DeleteGroups: empty groups and their offsets go; a share group's state
 * here (its share-partitions, in memory and in __share_group_state) goes
 * with it, as Kafka deletes a share group's state. */
#include <stdlib.h>

#include "api/authorize.h"
#include "api/share_partitions.h"
#include "api/share_state_topic.h"
#include "core/error.h"
#include "core/say.h"
#include "group/group_coordinator.h"
#include "share/share_state.h"

/* The group's share-partitions led here forgotten. */
static void drop_share_state(kiq_broker_t *b, kiq_str_t group)
{
    kiq_share_state_ctx_t sc;
    kiq_api_share_state_ctx(b, &sc);
    kiq_share_lock(b->shares);
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, group, &cfg);
    int n;
    kiq_share_tp_t *tps = kiq_share_partitions_of(b->shares, group.p, group.len, &n);
    for (int i = 0; i < n; i++) {
        kiq_api_share_forget(b, &cfg, group, &tps[i].topic, tps[i].partition);
        if (kiq_share_state_delete(&sc, group, &tps[i].topic, tps[i].partition) != 0)
            KIQ_WARN_LIMITED("share group " KIQ_STR_FMT ": state of a partition not deleted: %s", KIQ_STR_ARG(group),
                             kiq_error_get());
    }
    free(tps);
    kiq_share_unlock(b->shares);
}

int kiq_api_delete_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    /* as Kafka: DELETE on each group; the refused ones are answered first
     * and never reach the coordinator */
    const kiq_delete_groups_request_t *in = req;
    int32_t n = in->groups_names_n > 0 ? in->groups_names_n : 0;
    kiq_delete_groups_request_t allowed = *in;
    allowed.groups_names = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *allowed.groups_names);
    allowed.groups_names_n = 0;
    kiq_delete_groups_response_results_t *refused = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *refused);
    int32_t nrefused = 0;
    for (int32_t i = 0; i < n; i++) {
        if (kiq_api_allowed(b, r, KIQ_OP_DELETE, KIQ_RES_GROUP, in->groups_names[i])) {
            allowed.groups_names[allowed.groups_names_n++] = in->groups_names[i];
            continue;
        }
        kiq_delete_groups_response_results_init(&refused[nrefused]);
        refused[nrefused].group_id = in->groups_names[i];
        refused[nrefused++].error_code = KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
    }
    kiq_group_delete(b->groups, r, &allowed, resp);
    kiq_delete_groups_response_t *out = resp;
    if (nrefused) {
        kiq_delete_groups_response_results_t *all =
            kiq_arena_calloc(&r->arena, (size_t)(nrefused + out->results_n) + 1, sizeof *all);
        for (int32_t i = 0; i < nrefused; i++) all[i] = refused[i];
        for (int32_t i = 0; i < out->results_n; i++) all[nrefused + i] = out->results[i];
        out->results = all;
        out->results_n += nrefused;
    }
    for (int32_t i = 0; i < out->results_n; i++)
        if (out->results[i].error_code == KIQ_ERR_NONE && out->results[i].group_id.p)
            drop_share_state(b, out->results[i].group_id);
    return KIQ_HANDLER_RESPOND;
}
