/* Share-partitions and share sessions; see share_manager.h. */
#include "share/share_manager.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

kiq_share_manager_t *kiq_share_manager_new(void)
{
    kiq_share_manager_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->parts = kiq_str_map_new();
    m->sessions = kiq_str_map_new();
    m->configs = kiq_str_map_new();
    if (!m->parts || !m->sessions || !m->configs) {
        kiq_share_manager_free(m);
        return NULL;
    }
    return m;
}

static void session_free(kiq_share_session_t *s)
{
    if (!s) return;
    free(s->tps);
    free(s);
}

void kiq_share_manager_free(kiq_share_manager_t *m)
{
    if (!m) return;
    kiq_str_map_iter_t it;
    void *v;
    if (m->parts) {
        kiq_str_map_iter_init(&it, m->parts);
        while (kiq_str_map_next(&it, NULL, NULL, &v)) {
            kiq_share_partition_free(v);
            free(v);
        }
        kiq_str_map_free(m->parts);
    }
    if (m->sessions) {
        kiq_str_map_iter_init(&it, m->sessions);
        while (kiq_str_map_next(&it, NULL, NULL, &v)) session_free(v);
        kiq_str_map_free(m->sessions);
    }
    if (m->configs) {
        kiq_str_map_iter_init(&it, m->configs);
        while (kiq_str_map_next(&it, NULL, NULL, &v)) {
            kiq_group_configs_clear(v);
            free(v);
        }
        kiq_str_map_free(m->configs);
    }
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void kiq_share_lock(kiq_share_manager_t *m) { pthread_mutex_lock(&m->mu); }
void kiq_share_unlock(kiq_share_manager_t *m) { pthread_mutex_unlock(&m->mu); }

/* group '\0' rest: the maps' keys; returns the length. */
static size_t make_key(char *buf, size_t cap, const char *group, int32_t glen, const void *rest, size_t rlen)
{
    if ((size_t)glen + 1 + rlen > cap) return 0;
    memcpy(buf, group, (size_t)glen);
    buf[glen] = 0;
    memcpy(buf + glen + 1, rest, rlen);
    return (size_t)glen + 1 + rlen;
}

kiq_share_partition_t *kiq_share_partition_get(kiq_share_manager_t *m, const char *group, int32_t glen,
                                               const kiq_uuid_t *topic, int32_t partition, int delivery_limit,
                                               int max_in_flight)
{
    char key[512], rest[20];
    memcpy(rest, topic->b, 16);
    memcpy(rest + 16, &partition, 4);
    size_t len = make_key(key, sizeof key, group, glen, rest, sizeof rest);
    if (!len) return NULL;
    kiq_share_partition_t *sp = kiq_str_map_get(m->parts, key, len);
    if (sp) {
        /* the limits as configured now */
        sp->delivery_limit = delivery_limit;
        sp->max_in_flight = max_in_flight;
        return sp;
    }
    if (!(sp = malloc(sizeof *sp))) return NULL;
    kiq_share_partition_init(sp, delivery_limit, max_in_flight);
    if (kiq_str_map_put(m->parts, key, len, sp) != 0) {
        free(sp);
        return NULL;
    }
    return sp;
}

/* The key of a share-partition; its length (0: the group id is too long). */
static size_t part_key(char *key, size_t cap, const char *group, int32_t glen, const kiq_uuid_t *topic,
                       int32_t partition)
{
    char rest[20];
    memcpy(rest, topic->b, 16);
    memcpy(rest + 16, &partition, 4);
    return make_key(key, cap, group, glen, rest, sizeof rest);
}

kiq_share_tp_t *kiq_share_partitions_of(kiq_share_manager_t *m, const char *group, int32_t glen, int *n)
{
    *n = 0;
    size_t cap = kiq_str_map_count(m->parts);
    kiq_share_tp_t *out = cap ? calloc(cap, sizeof *out) : NULL;
    if (!out) return NULL;
    kiq_str_map_iter_t it;
    const void *k;
    size_t len;
    kiq_str_map_iter_init(&it, m->parts);
    while (kiq_str_map_next(&it, &k, &len, NULL)) {
        const char *key = k;
        if (len != (size_t)glen + 21 || memcmp(key, group, (size_t)glen) != 0 || key[glen]) continue;
        memcpy(out[*n].topic.b, key + glen + 1, 16);
        memcpy(&out[*n].partition, key + glen + 17, 4);
        (*n)++;
    }
    if (*n == 0) {
        free(out);
        return NULL;
    }
    return out;
}

kiq_share_partition_t *kiq_share_partition_find(kiq_share_manager_t *m, const char *group, int32_t glen,
                                                const kiq_uuid_t *topic, int32_t partition)
{
    char key[512];
    size_t len = part_key(key, sizeof key, group, glen, topic, partition);
    return len ? kiq_str_map_get(m->parts, key, len) : NULL;
}

void kiq_share_partition_drop(kiq_share_manager_t *m, const char *group, int32_t glen, const kiq_uuid_t *topic,
                              int32_t partition)
{
    char key[512];
    size_t len = part_key(key, sizeof key, group, glen, topic, partition);
    kiq_share_partition_t *sp = len ? kiq_str_map_remove(m->parts, key, len) : NULL;
    if (!sp) return;
    kiq_share_partition_free(sp);
    free(sp);
}

const kiq_group_configs_t *kiq_share_group_configs(kiq_share_manager_t *m, const char *group, int32_t glen)
{
    return kiq_str_map_get(m->configs, group, (size_t)glen);
}

void kiq_share_group_configs_reset(kiq_share_manager_t *m)
{
    for (;;) {
        kiq_str_map_iter_t it;
        const void *k;
        size_t len;
        void *v;
        kiq_str_map_iter_init(&it, m->configs);
        if (!kiq_str_map_next(&it, &k, &len, &v)) return;
        /* the map's own key goes with the entry: removed by a copy */
        char *key = malloc(len ? len : 1);
        if (!key) return;
        memcpy(key, k, len);
        kiq_str_map_remove(m->configs, key, len);
        free(key);
        kiq_group_configs_clear(v);
        free(v);
    }
}

int kiq_share_group_configs_put(kiq_share_manager_t *m, const char *group, int32_t glen, kiq_group_configs_t *c)
{
    bool any = false;
    for (int i = 0; i < KIQ_GROUP_CFG__COUNT; i++) any |= c->v[i] != NULL;
    kiq_group_configs_t *old = kiq_str_map_remove(m->configs, group, (size_t)glen);
    if (old) {
        kiq_group_configs_clear(old);
        free(old);
    }
    if (!any) return 0;
    kiq_group_configs_t *keep = malloc(sizeof *keep);
    if (!keep || kiq_str_map_put(m->configs, group, (size_t)glen, keep) != 0) {
        free(keep);
        kiq_group_configs_clear(c);
        return -1;
    }
    *keep = *c;
    return 0;
}

kiq_share_session_t *kiq_share_session_find(kiq_share_manager_t *m, const char *group, int32_t glen,
                                            const char *member, int32_t mlen)
{
    char key[512];
    size_t len = make_key(key, sizeof key, group, glen, member, (size_t)mlen);
    return len ? kiq_str_map_get(m->sessions, key, len) : NULL;
}

/* Gives back what the session's owner holds of its partitions. */
static int release_all(kiq_share_manager_t *m, const char *group, int32_t glen, const kiq_share_session_t *s)
{
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        char key[512], rest[20];
        memcpy(rest, s->tps[i].topic.b, 16);
        memcpy(rest + 16, &s->tps[i].partition, 4);
        size_t len = make_key(key, sizeof key, group, glen, rest, sizeof rest);
        kiq_share_partition_t *sp = len ? kiq_str_map_get(m->parts, key, len) : NULL;
        if (sp) k += kiq_share_partition_release_owner(sp, s->owner);
    }
    return k;
}

kiq_share_session_t *kiq_share_session_open(kiq_share_manager_t *m, const char *group, int32_t glen,
                                            const char *member, int32_t mlen, int *released)
{
    *released = 0;
    char key[512];
    size_t len = make_key(key, sizeof key, group, glen, member, (size_t)mlen);
    if (!len) return NULL;
    kiq_share_session_t *old = kiq_str_map_remove(m->sessions, key, len);
    if (old) *released = release_all(m, group, glen, old);
    session_free(old);
    kiq_share_session_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->owner = kiq_share_owner(member, mlen);
    s->next_epoch = 1;
    if (kiq_str_map_put(m->sessions, key, len, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

bool kiq_share_session_evict_idle(kiq_share_manager_t *m, int64_t idle_ms)
{
    kiq_str_map_iter_t it;
    const void *k, *oldest_key = NULL;
    size_t len, oldest_len = 0;
    void *v;
    kiq_share_session_t *oldest = NULL;
    kiq_str_map_iter_init(&it, m->sessions);
    while (kiq_str_map_next(&it, &k, &len, &v)) {
        kiq_share_session_t *s = v;
        if (s->used_ms < idle_ms && (!oldest || s->used_ms < oldest->used_ms)) {
            oldest = s;
            oldest_key = k;
            oldest_len = len;
        }
    }
    if (!oldest) return false;
    /* the key is group '\0' member */
    const char *key = oldest_key;
    size_t glen = strnlen(key, oldest_len);
    kiq_share_session_close(m, key, (int32_t)glen, key + glen + 1, (int32_t)(oldest_len - glen - 1));
    return true;
}

int kiq_share_session_close(kiq_share_manager_t *m, const char *group, int32_t glen, const char *member,
                            int32_t mlen)
{
    char key[512];
    size_t len = make_key(key, sizeof key, group, glen, member, (size_t)mlen);
    kiq_share_session_t *s = len ? kiq_str_map_remove(m->sessions, key, len) : NULL;
    if (!s) return 0;
    int k = release_all(m, group, glen, s);
    session_free(s);
    return k;
}

int kiq_share_session_add(kiq_share_session_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    for (int i = 0; i < s->n; i++)
        if (s->tps[i].partition == partition && memcmp(s->tps[i].topic.b, topic->b, 16) == 0) return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        kiq_share_tp_t *v = realloc(s->tps, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->tps = v;
        s->cap = cap;
    }
    s->tps[s->n++] = (kiq_share_tp_t){*topic, partition};
    return 0;
}

void kiq_share_session_remove(kiq_share_session_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    for (int i = 0; i < s->n; i++)
        if (s->tps[i].partition == partition && memcmp(s->tps[i].topic.b, topic->b, 16) == 0) {
            memmove(&s->tps[i], &s->tps[i + 1], (size_t)(s->n - i - 1) * sizeof *s->tps);
            s->n--;
            return;
        }
}

int32_t kiq_share_next_epoch(int32_t e) { return e == INT32_MAX ? 1 : e + 1; }
