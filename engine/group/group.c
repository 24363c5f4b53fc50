/* The group data model; see group.h. Guarded by the coordinator's lock. */
#include <stdlib.h>
#include <string.h>

#include "group/consumer_group.h"
#include "group/group.h"

const char *kiq_group_state_name(enum kiq_group_state s)
{
    switch (s) {
    case KIQ_GROUP_EMPTY: return "Empty";
    case KIQ_GROUP_PREPARING_REBALANCE: return "PreparingRebalance";
    case KIQ_GROUP_COMPLETING_REBALANCE: return "CompletingRebalance";
    case KIQ_GROUP_STABLE: return "Stable";
    case KIQ_GROUP_DEAD: return "Dead";
    }
    return "Unknown";
}

kiq_group_t *kiq_group_new(const char *id, size_t len, int32_t offsets_partition)
{
    kiq_group_t *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->id = strndup(id, len);
    g->offsets = kiq_str_map_new();
    if (!g->id || !g->offsets) {
        kiq_group_free(g);
        return NULL;
    }
    g->offsets_partition = offsets_partition;
    g->state = KIQ_GROUP_EMPTY;
    return g;
}

void kiq_group_member_free(kiq_group_member_t *m)
{
    if (!m) return;
    free(m->id);
    free(m->instance_id);
    free(m->client_id);
    free(m->client_host);
    for (int i = 0; i < m->nprotocols; i++) {
        free(m->protocols[i].name);
        free(m->protocols[i].metadata);
    }
    free(m->protocols);
    free(m->assignment);
    free(m);
}

void kiq_group_offset_free(kiq_group_offset_t *o)
{
    if (!o) return;
    free(o->topic);
    free((char *)o->metadata.p);
    free(o);
}

void kiq_group_free(kiq_group_t *g)
{
    if (!g) return;
    kiq_cgroup_free(g->consumer);
    kiq_cgroup_free(g->share);
    for (kiq_group_member_t *m = g->members, *next; m; m = next) {
        next = m->next;
        kiq_group_member_free(m);
    }
    for (kiq_group_pending_t *p = g->pending, *next; p; p = next) {
        next = p->next;
        free(p->id);
        free(p);
    }
    for (kiq_group_txn_offset_t *t = g->txn_offsets, *next; t; t = next) {
        next = t->next;
        kiq_group_offset_free(t->o);
        free(t);
    }
    if (g->offsets) {
        kiq_str_map_iter_t it;
        void *v;
        kiq_str_map_iter_init(&it, g->offsets);
        while (kiq_str_map_next(&it, NULL, NULL, &v)) kiq_group_offset_free(v);
        kiq_str_map_free(g->offsets);
    }
    free(g->id);
    free(g->protocol_type);
    free(g->protocol);
    free(g->leader);
    free(g);
}

static bool str_is(const char *s, kiq_str_t k)
{
    return s && k.p && strlen(s) == (size_t)k.len && memcmp(s, k.p, (size_t)k.len) == 0;
}

kiq_group_member_t *kiq_group_find_member(const kiq_group_t *g, kiq_str_t id)
{
    for (kiq_group_member_t *m = g->members; m; m = m->next)
        if (str_is(m->id, id)) return m;
    return NULL;
}

kiq_group_member_t *kiq_group_find_instance(const kiq_group_t *g, kiq_str_t instance_id)
{
    if (!instance_id.p) return NULL;
    for (kiq_group_member_t *m = g->members; m; m = m->next)
        if (str_is(m->instance_id, instance_id)) return m;
    return NULL;
}

void kiq_group_unlink_member(kiq_group_t *g, kiq_group_member_t *m)
{
    for (kiq_group_member_t **pp = &g->members; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            m->next = NULL;
            g->nmembers--;
            return;
        }
    }
}

int kiq_group_member_set_protocols(kiq_group_member_t *m, const kiq_group_protocol_t *p, int n)
{
    kiq_group_protocol_t *copy = calloc((size_t)(n > 0 ? n : 1), sizeof *copy);
    if (!copy) return -1;
    for (int i = 0; i < n; i++) {
        copy[i].name = strdup(p[i].name);
        copy[i].metadata_len = p[i].metadata_len;
        copy[i].metadata = malloc((size_t)(p[i].metadata_len > 0 ? p[i].metadata_len : 1));
        if (!copy[i].name || !copy[i].metadata) {
            for (int j = 0; j <= i; j++) {
                free(copy[j].name);
                free(copy[j].metadata);
            }
            free(copy);
            return -1;
        }
        if (p[i].metadata_len > 0) memcpy(copy[i].metadata, p[i].metadata, (size_t)p[i].metadata_len);
    }
    for (int i = 0; i < m->nprotocols; i++) {
        free(m->protocols[i].name);
        free(m->protocols[i].metadata);
    }
    free(m->protocols);
    m->protocols = copy;
    m->nprotocols = n;
    return 0;
}

const kiq_group_protocol_t *kiq_group_member_protocol(const kiq_group_member_t *m, const char *name)
{
    for (int i = 0; name && i < m->nprotocols; i++)
        if (strcmp(m->protocols[i].name, name) == 0) return &m->protocols[i];
    return NULL;
}

/* Supported by every member (other than skip). */
static bool all_support(const kiq_group_t *g, const char *name, const kiq_group_member_t *skip)
{
    for (kiq_group_member_t *m = g->members; m; m = m->next)
        if (m != skip && !kiq_group_member_protocol(m, name)) return false;
    return true;
}

bool kiq_group_supports(const kiq_group_t *g, const kiq_group_protocol_t *protos, int n)
{
    for (int i = 0; i < n; i++)
        if (all_support(g, protos[i].name, NULL)) return true;
    return false;
}

const char *kiq_group_select_protocol(const kiq_group_t *g)
{
    if (!g->members) return NULL;
    const kiq_group_member_t *first = g->members;
    const char *best = NULL;
    int best_votes = 0;
    for (int i = 0; i < first->nprotocols; i++) {
        const char *cand = first->protocols[i].name;
        if (!all_support(g, cand, NULL)) continue;
        int votes = 0;
        for (kiq_group_member_t *m = g->members; m; m = m->next) {
            /* the member's vote: its first protocol that everyone supports */
            for (int j = 0; j < m->nprotocols; j++) {
                if (!all_support(g, m->protocols[j].name, NULL)) continue;
                if (strcmp(m->protocols[j].name, cand) == 0) votes++;
                break;
            }
        }
        if (!best || votes > best_votes) {
            best = cand;
            best_votes = votes;
        }
    }
    return best;
}

/* "topic" NUL "partition as 4 bytes": a topic name cannot hold a NUL. */
static size_t offset_key(char *buf, size_t cap, const char *topic, size_t len, int32_t partition)
{
    if (len + 5 > cap) len = cap - 5;
    memcpy(buf, topic, len);
    buf[len] = 0;
    memcpy(buf + len + 1, &partition, 4);
    return len + 5;
}

#define OFFSET_KEY_MAX 512

kiq_group_offset_t *kiq_group_get_offset(const kiq_group_t *g, const char *topic, size_t len, int32_t partition)
{
    char k[OFFSET_KEY_MAX];
    return kiq_str_map_get(g->offsets, k, offset_key(k, sizeof k, topic, len, partition));
}

int kiq_group_put_offset(kiq_group_t *g, kiq_group_offset_t *o)
{
    char k[OFFSET_KEY_MAX];
    size_t kl = offset_key(k, sizeof k, o->topic, strlen(o->topic), o->partition);
    kiq_group_offset_t *old = kiq_str_map_get(g->offsets, k, kl);
    if (kiq_str_map_put(g->offsets, k, kl, o) != 0) return -1;
    if (old != o) kiq_group_offset_free(old);
    return 0;
}

void kiq_group_remove_offset(kiq_group_t *g, const char *topic, size_t len, int32_t partition)
{
    char k[OFFSET_KEY_MAX];
    kiq_group_offset_free(kiq_str_map_remove(g->offsets, k, offset_key(k, sizeof k, topic, len, partition)));
}


static bool same_partition(const kiq_group_offset_t *o, const char *topic, size_t len, int32_t partition)
{
    return o->partition == partition && strlen(o->topic) == len && memcmp(o->topic, topic, len) == 0;
}

int kiq_group_add_txn_offset(kiq_group_t *g, int64_t producer_id, kiq_group_offset_t *o)
{
    kiq_group_txn_offset_t **at = &g->txn_offsets;
    for (; *at; at = &(*at)->next) {
        if ((*at)->producer_id == producer_id && same_partition((*at)->o, o->topic, strlen(o->topic), o->partition)) {
            kiq_group_offset_free((*at)->o);
            (*at)->o = o;
            return 0;
        }
    }
    kiq_group_txn_offset_t *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->producer_id = producer_id;
    t->o = o;
    *at = t;
    return 0;
}

int kiq_group_end_txn(kiq_group_t *g, int64_t producer_id, bool commit)
{
    int n = 0;
    for (kiq_group_txn_offset_t **at = &g->txn_offsets; *at;) {
        kiq_group_txn_offset_t *t = *at;
        if (t->producer_id != producer_id) {
            at = &t->next;
            continue;
        }
        *at = t->next;
        if (!commit || kiq_group_put_offset(g, t->o) != 0) kiq_group_offset_free(t->o);
        free(t);
        n++;
    }
    return n;
}

bool kiq_group_txn_pending(const kiq_group_t *g, const char *topic, size_t len, int32_t partition)
{
    for (const kiq_group_txn_offset_t *t = g->txn_offsets; t; t = t->next)
        if (same_partition(t->o, topic, len, partition)) return true;
    return false;
}
