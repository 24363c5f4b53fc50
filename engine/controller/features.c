/* Feature flags; see features.h. */
#include "controller/features.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

/* Kafka's feature names; the ranges are what KafkaIQ honours (features.h). */
const kiq_feature_def_t kiq_feature_defs[KIQ_FEATURE__COUNT] = {
    [KIQ_FEATURE_METADATA_VERSION] = {"metadata.version", KIQ_METADATA_VERSION_MIN, KIQ_METADATA_VERSION_LATEST,
                                      KIQ_METADATA_VERSION_LATEST},
    [KIQ_FEATURE_KRAFT_VERSION] = {"kraft.version", 0, 0, 0},
    [KIQ_FEATURE_GROUP_VERSION] = {"group.version", 0, 1, 1},
    [KIQ_FEATURE_TRANSACTION_VERSION] = {"transaction.version", 0, 2, 2},
    [KIQ_FEATURE_ELR_VERSION] = {"eligible.leader.replicas.version", 0, 0, 0},
    [KIQ_FEATURE_SHARE_VERSION] = {"share.version", 0, 2, 2},
};

int kiq_feature_find(kiq_str_t name)
{
    for (int i = 0; i < KIQ_FEATURE__COUNT; i++)
        if (kiq_str_eq(name, kiq_feature_defs[i].name)) return i;
    return -1;
}

void kiq_features_init(kiq_features_t *f)
{
    memset(f->level, 0, sizeof f->level);
    f->epoch = -1;
}

void kiq_features_bootstrap(kiq_features_t *f)
{
    for (int i = 0; i < KIQ_FEATURE__COUNT; i++) f->level[i] = kiq_feature_defs[i].bootstrap;
    f->epoch = -1;
}

/* Kafka's wording: "Invalid update version L for feature F. <why>". */
static int invalid(kiq_str_t name, int16_t level, const char *why)
{
    kiq_error_set("Invalid update version %d for feature " KIQ_STR_FMT ". %s", level, KIQ_STR_ARG(name), why);
    return KIQ_ERR_INVALID_UPDATE_VERSION;
}

int kiq_features_check_update(const kiq_features_t *cur, int32_t node_id, kiq_str_t name, int16_t level,
                              int8_t upgrade_type)
{
    if (upgrade_type < KIQ_FEATURE_UPGRADE || upgrade_type > KIQ_FEATURE_UNSAFE_DOWNGRADE)
        return invalid(name, level, "The controller does not support the given upgrade type.");
    if (level < 0) return invalid(name, level, "A feature version cannot be less than 0.");
    int f = kiq_feature_find(name);
    /* an unknown feature is supported at level 0 only, and has nothing to
     * remove: Kafka 4 refuses it at any level */
    if (f < 0 && level == 0) {
        char why[160];
        snprintf(why, sizeof why, "Feature " KIQ_STR_FMT " not found.", KIQ_STR_ARG(name));
        return invalid(name, level, why);
    }
    int16_t min = f < 0 ? 0 : kiq_feature_defs[f].min, max = f < 0 ? 0 : kiq_feature_defs[f].max;
    if (level < min || level > max) {
        char why[160];
        if (max == 0)
            snprintf(why, sizeof why, "Local controller %d does not support this feature.", node_id);
        else
            snprintf(why, sizeof why, "Local controller %d only supports versions SupportedVersionRange[min_version:%d, "
                     "max_version:%d]", node_id, min, max);
        return invalid(name, level, why);
    }
    int16_t now = f < 0 ? 0 : cur->level[f];
    if (level < now && upgrade_type == KIQ_FEATURE_UPGRADE)
        return invalid(name, level, "Can't downgrade the version of this feature without setting the upgrade type to "
                                    "either safe or unsafe downgrade.");
    if (f == KIQ_FEATURE_METADATA_VERSION && level < now) {
        kiq_error_set("Invalid metadata.version %d. %s", level,
                      upgrade_type == KIQ_FEATURE_UNSAFE_DOWNGRADE
                          ? "Unsafe metadata downgrade is not supported in this version."
                          : "Refusing to perform the requested downgrade because it might delete metadata information.");
        return KIQ_ERR_INVALID_UPDATE_VERSION;
    }
    return 0;
}
