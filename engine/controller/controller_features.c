/* The controller's feature flags: metadata.version written once at a
 * cluster's first activation (Kafka writes it when the log is formatted),
 * UpdateFeatures decided by Kafka's rules (features.h), and the finalized
 * levels told to every broker with UpdateMetadata. */
#include "controller/controller_internal.h"
#include "controller/features.h"

/* Under mu: a FeatureLevelRecord for each bootstrap level a cluster's log
 * lacks, metadata.version first. 0, or -1 when the commit failed (the
 * timer tries again). */
int kiq_ctl_keep_features(kiq_controller_t *c)
{
    const kiq_features_t *now = kiq_metadata_image_features(c->image);
    if (now->level[KIQ_FEATURE_METADATA_VERSION] != 0) return 0;
    kiq_features_t boot;
    kiq_features_bootstrap(&boot);
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    for (int f = 0; f < KIQ_FEATURE__COUNT; f++) {
        if (boot.level[f] == 0) continue;
        kiq_feature_level_record_t *r = &kiq_ctl_add_record(&b, KIQ_MR_FEATURE_LEVEL)->m.feature_level;
        r->name = kiq_ctl_astr(&a, kiq_feature_defs[f].name);
        r->feature_level = boot.level[f];
    }
    kiq_ctl_add_bootstrap_scram(c, &b);
    int rc = kiq_ctl_commit(c, &b);
    kiq_arena_reset(&a);
    return rc;
}

void kiq_ctl_build_features(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    const kiq_features_t *f = kiq_metadata_image_features(c->image);
    um->kafkaiq_features = kiq_arena_calloc(a, KIQ_FEATURE__COUNT, sizeof *um->kafkaiq_features);
    for (int i = 0; i < KIQ_FEATURE__COUNT; i++) {
        if (f->level[i] == 0) continue;
        kiq_update_metadata_request_kafkaiq_features_t *o = &um->kafkaiq_features[um->kafkaiq_features_n++];
        kiq_update_metadata_request_kafkaiq_features_init(o);
        o->name = kiq_ctl_astr(a, kiq_feature_defs[i].name);
        o->level = f->level[i];
    }
    um->kafkaiq_features_epoch = f->epoch;
}

int kiq_controller_update_features(kiq_controller_t *c, const kiq_update_features_request_t *req)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    if (!c->active) {
        kiq_error_set("controller %d is not the active controller", c->node_id);
        rc = KIQ_ERR_NOT_CONTROLLER;
    }
    /* all or nothing: the first refused update refuses the request, each
     * later one checked against the levels the earlier ones would set */
    kiq_features_t next = *kiq_metadata_image_features(c->image);
    for (int32_t i = 0; rc == 0 && i < req->feature_updates_n; i++) {
        const kiq_update_features_request_feature_updates_t *u = &req->feature_updates[i];
        rc = kiq_features_check_update(&next, c->node_id, u->feature, u->max_version_level, u->upgrade_type);
        if (rc != 0) break;
        int f = kiq_feature_find(u->feature);
        if (f < 0) continue; /* level 0 of a feature nobody supports: nothing to finalize */
        next.level[f] = u->max_version_level;
        kiq_feature_level_record_t *r = &kiq_ctl_add_record(&b, KIQ_MR_FEATURE_LEVEL)->m.feature_level;
        r->name = kiq_ctl_astr(&a, kiq_feature_defs[f].name);
        r->feature_level = u->max_version_level;
    }
    if (rc == 0 && !req->validate_only && kiq_ctl_commit(c, &b) != 0) {
        rc = c->commit_error;
        kiq_error_set("the feature levels were not written: %s", kiq_error_name(rc));
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}
