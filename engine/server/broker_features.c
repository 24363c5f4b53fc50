/* A broker's feature levels; see broker_features.h. */
#include "server/broker_features.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/metadata_cache.h"
#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "proto/errors.h"
#include "server/broker.h"

#define STORE_DIR ".broker-configs"
#define STORE_FILE "features.properties"
/* the key of the epoch among the feature names */
#define EPOCH_KEY "epoch"

static int store_path(kiq_broker_t *b, char *dir, char *path)
{
    if ((size_t)snprintf(dir, PATH_MAX, "%s/" STORE_DIR, b->log_dirs[0].path) >= PATH_MAX ||
        (size_t)snprintf(path, PATH_MAX, "%s/" STORE_FILE, dir) >= PATH_MAX)
        return kiq_error_set("log directory path too long");
    return 0;
}

int kiq_broker_features_load(kiq_broker_t *b)
{
    kiq_features_bootstrap(&b->features);
    if (b->cluster) return 0;
    b->features.epoch = 0; /* the bootstrap levels' epoch, as a format's */
    char dir[PATH_MAX], path[PATH_MAX];
    if (store_path(b, dir, path) != 0) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : kiq_error_errno("cannot read %s", path);
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *eq = strchr(line, '='), *end;
        if (!eq || line[0] == '#') continue;
        *eq = '\0';
        long long v = strtoll(eq + 1, &end, 10);
        int id = kiq_feature_find(KIQ_STR(line));
        if (*end || end == eq + 1 || (id < 0 && strcmp(line, EPOCH_KEY) != 0) || (id >= 0 && (v < 0 || v > INT16_MAX)))
            rc = kiq_error_set("%s: bad line %s=%s", path, line, eq + 1);
        else if (id >= 0)
            b->features.level[id] = (int16_t)v;
        else
            b->features.epoch = v;
    }
    fclose(f);
    return rc;
}

void kiq_broker_features(kiq_broker_t *b, kiq_features_t *out)
{
    if (b->cluster) {
        kiq_metadata_cache_features(b->metadata, out);
        return;
    }
    pthread_mutex_lock(&b->features_mu);
    *out = b->features;
    pthread_mutex_unlock(&b->features_mu);
}

/* The levels written whole (by rename, synced). */
static int save(kiq_broker_t *b, const kiq_features_t *f)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    if (store_path(b, dir, path) != 0 || kiq_mkdir_p(dir) != 0) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "w");
    if (!out) return kiq_error_errno("cannot write %s", tmp);
    for (int i = 0; i < KIQ_FEATURE__COUNT; i++) fprintf(out, "%s=%d\n", kiq_feature_defs[i].name, f->level[i]);
    fprintf(out, EPOCH_KEY "=%lld\n", (long long)f->epoch);
    if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        fclose(out);
        return kiq_error_errno("cannot write %s", tmp);
    }
    fclose(out);
    if (rename(tmp, path) != 0) return kiq_error_errno("cannot rename %s", tmp);
    kiq_fsync_dir(dir);
    return 0;
}

int kiq_broker_features_update(kiq_broker_t *b, const kiq_update_features_request_t *req)
{
    pthread_mutex_lock(&b->features_mu);
    kiq_features_t next = b->features;
    int rc = 0;
    for (int32_t i = 0; rc == 0 && i < req->feature_updates_n; i++) {
        const kiq_update_features_request_feature_updates_t *u = &req->feature_updates[i];
        rc = kiq_features_check_update(&next, b->node_id, u->feature, u->max_version_level, u->upgrade_type);
        int f = kiq_feature_find(u->feature);
        if (rc == 0 && f >= 0) next.level[f] = u->max_version_level;
    }
    if (rc == 0 && !req->validate_only && req->feature_updates_n > 0) {
        next.epoch = b->features.epoch < 0 ? 1 : b->features.epoch + 1;
        if (save(b, &next) != 0) {
            KIQ_ERROR("broker %d: feature levels not saved: %s", b->node_id, kiq_error_get());
            rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        } else {
            b->features = next;
        }
    }
    pthread_mutex_unlock(&b->features_mu);
    return rc;
}
