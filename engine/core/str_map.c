/* Separate chaining with a power-of-two bucket array doubled at load 1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/str_map.h"

typedef struct node {
    struct node *next;
    uint64_t hash;
    void *value;
    size_t len;
    unsigned char key[];
} node_t;

struct kiq_str_map {
    node_t **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
};

/* FNV-1a: short keys, no adversary that could not also just open groups */
static uint64_t hash_of(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

kiq_str_map_t *kiq_str_map_new(void)
{
    kiq_str_map_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nbuckets = 16;
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    return m;
}

void kiq_str_map_free(kiq_str_map_t *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (node_t *n = m->buckets[i], *next; n; n = next) {
            next = n->next;
            free(n);
        }
    }
    free(m->buckets);
    free(m);
}

static node_t **find(const kiq_str_map_t *m, const void *key, size_t len, uint64_t h)
{
    node_t **pp = &m->buckets[h & (m->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->hash == h && (*pp)->len == len && memcmp((*pp)->key, key, len) == 0) return pp;
    return pp;
}

void *kiq_str_map_get(const kiq_str_map_t *m, const void *key, size_t len)
{
    node_t *n = *find(m, key, len, hash_of(key, len));
    return n ? n->value : NULL;
}

static void grow(kiq_str_map_t *m)
{
    size_t nb = m->nbuckets * 2;
    node_t **b = calloc(nb, sizeof *b);
    if (!b) return; /* longer chains, still correct */
    for (size_t i = 0; i < m->nbuckets; i++) {
        for (node_t *n = m->buckets[i], *next; n; n = next) {
            next = n->next;
            n->next = b[n->hash & (nb - 1)];
            b[n->hash & (nb - 1)] = n;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
}

int kiq_str_map_put(kiq_str_map_t *m, const void *key, size_t len, void *value)
{
    uint64_t h = hash_of(key, len);
    node_t **pp = find(m, key, len, h);
    if (*pp) {
        (*pp)->value = value;
        return 0;
    }
    node_t *n = malloc(sizeof *n + len);
    if (!n) return -1;
    n->next = NULL;
    n->hash = h;
    n->value = value;
    n->len = len;
    memcpy(n->key, key, len);
    *pp = n;
    if (++m->count > m->nbuckets) grow(m);
    return 0;
}

void *kiq_str_map_remove(kiq_str_map_t *m, const void *key, size_t len)
{
    node_t **pp = find(m, key, len, hash_of(key, len));
    node_t *n = *pp;
    if (!n) return NULL;
    void *v = n->value;
    *pp = n->next;
    free(n);
    m->count--;
    return v;
}

size_t kiq_str_map_count(const kiq_str_map_t *m) { return m->count; }

void kiq_str_map_iter_init(kiq_str_map_iter_t *it, const kiq_str_map_t *m)
{
    it->m = m;
    it->bucket = 0;
    it->node = NULL;
}

bool kiq_str_map_next(kiq_str_map_iter_t *it, const void **key, size_t *len, void **value)
{
    const node_t *n = it->node ? ((const node_t *)it->node)->next : NULL;
    while (!n && it->bucket < it->m->nbuckets) n = it->m->buckets[it->bucket++];
    it->node = n;
    if (!n) return false;
    if (key) *key = n->key;
    if (len) *len = n->len;
    if (value) *value = n->value;
    return true;
}
