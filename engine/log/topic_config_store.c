#include "log/topic_config_store.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"

#define STORE_DIR ".topic-configs"
#define SUFFIX ".properties"

typedef struct file_store {
    kiq_topic_config_store_t base; /* first: the interface pointer is this */
    char *dir;                     /* <log.dir>/.topic-configs, fixed */
} file_store_t;

static int path_of(const file_store_t *fs, const char *topic, const char *ext, char *buf, size_t n)
{
    if ((size_t)snprintf(buf, n, "%s/%s%s%s", fs->dir, topic, SUFFIX, ext) >= n)
        return kiq_error_set("path too long for the configs of topic %s", topic);
    return 0;
}

static int files_load(kiq_topic_config_store_t *s, const char *topic, kiq_topic_configs_t *out)
{
    file_store_t *fs = (file_store_t *)s;
    char path[PATH_MAX];
    if (path_of(fs, topic, "", path, sizeof path) != 0) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : kiq_error_errno("cannot read %s", path);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        if (line[0] == '#' || line[0] == '\0') continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            KIQ_WARN("%s: ignoring the line without '=': %s", path, line);
            continue;
        }
        if (kiq_topic_configs_set(out, line, (int)(eq - line), eq + 1, (int)strlen(eq + 1)) != 0)
            KIQ_WARN("%s: ignoring %s", path, kiq_error_get());
    }
    bool failed = ferror(f);
    fclose(f);
    return failed ? kiq_error_set("cannot read %s", path) : 0;
}

static int files_remove(kiq_topic_config_store_t *s, const char *topic)
{
    file_store_t *fs = (file_store_t *)s;
    char path[PATH_MAX];
    if (path_of(fs, topic, "", path, sizeof path) != 0) return -1;
    if (unlink(path) != 0) return errno == ENOENT ? 0 : kiq_error_errno("cannot remove %s", path);
    return kiq_fsync_dir(fs->dir);
}

/* tmp file, fsync, rename over, fsync the directory: a crash leaves the
 * old set or the new one, never a mix. */
static int files_save(kiq_topic_config_store_t *s, const char *topic, const kiq_topic_configs_t *cfg)
{
    file_store_t *fs = (file_store_t *)s;
    bool any = false;
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) any |= cfg->value[i] != NULL;
    if (!any) return files_remove(s, topic);
    char path[PATH_MAX], tmp[PATH_MAX];
    if (path_of(fs, topic, "", path, sizeof path) != 0 || path_of(fs, topic, ".tmp", tmp, sizeof tmp) != 0)
        return -1;
    if (kiq_mkdir_p(fs->dir) != 0) return -1;
    FILE *f = fopen(tmp, "w");
    if (!f) return kiq_error_errno("cannot write %s", tmp);
    fprintf(f, "# dynamic configs of topic %s\n", topic);
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++)
        if (cfg->value[i]) fprintf(f, "%s=%s\n", kiq_topic_config_defs[i].name, cfg->value[i]);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        kiq_error_errno("cannot write %s", tmp);
        fclose(f);
        unlink(tmp);
        return -1;
    }
    fclose(f);
    if (rename(tmp, path) != 0) {
        kiq_error_errno("cannot rename %s", tmp);
        unlink(tmp);
        return -1;
    }
    return kiq_fsync_dir(fs->dir);
}

static void files_prune(kiq_topic_config_store_t *s, bool (*exists)(const char *topic, void *ctx), void *ctx)
{
    file_store_t *fs = (file_store_t *)s;
    DIR *d = opendir(fs->dir);
    if (!d) return;
    struct dirent *de;
    size_t sl = strlen(SUFFIX);
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", fs->dir, de->d_name);
        if (n > 4 && strcmp(de->d_name + n - 4, ".tmp") == 0) {
            unlink(path); /* a save that did not finish */
            continue;
        }
        if (n <= sl || strcmp(de->d_name + n - sl, SUFFIX) != 0) continue;
        char topic[256];
        if (n - sl >= sizeof topic) continue;
        memcpy(topic, de->d_name, n - sl);
        topic[n - sl] = '\0';
        if (exists(topic, ctx)) continue;
        KIQ_INFO("removing the configs of topic %s, which no longer exists", topic);
        unlink(path);
    }
    closedir(d);
}

static void files_free(kiq_topic_config_store_t *s)
{
    file_store_t *fs = (file_store_t *)s;
    free(fs->dir);
    free(fs);
}

static const kiq_topic_config_store_ops_t files_ops = {
    .load = files_load,
    .save = files_save,
    .remove = files_remove,
    .prune = files_prune,
    .free = files_free,
};

kiq_topic_config_store_t *kiq_topic_config_store_files_new(const char *log_dir)
{
    file_store_t *fs = calloc(1, sizeof *fs);
    if (!fs) return NULL;
    fs->base.ops = &files_ops;
    size_t n = strlen(log_dir) + sizeof STORE_DIR + 2;
    fs->dir = malloc(n);
    if (!fs->dir) {
        free(fs);
        return NULL;
    }
    snprintf(fs->dir, n, "%s/%s", log_dir, STORE_DIR);
    return &fs->base;
}
