/* A hash map from byte-string keys to pointers. Not thread-safe: the owner's
 * lock guards it. Keys are copied; values are the caller's. */
#ifndef KIQ_CORE_STR_MAP_H
#define KIQ_CORE_STR_MAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kiq_str_map kiq_str_map_t;

kiq_str_map_t *kiq_str_map_new(void);
/* Frees the map and its keys, not the values. NULL is fine. */
void kiq_str_map_free(kiq_str_map_t *m);
void *kiq_str_map_get(const kiq_str_map_t *m, const void *key, size_t len);
/* Adds or replaces; 0, or -1 when out of memory (the map is unchanged). */
int kiq_str_map_put(kiq_str_map_t *m, const void *key, size_t len, void *value);
/* Removes the key and returns its value (NULL when absent). */
void *kiq_str_map_remove(kiq_str_map_t *m, const void *key, size_t len);
size_t kiq_str_map_count(const kiq_str_map_t *m);

/* Iteration in no particular order; the map must not change meanwhile. */
typedef struct kiq_str_map_iter {
    const kiq_str_map_t *m;
    size_t bucket;
    const void *node;
} kiq_str_map_iter_t;
void kiq_str_map_iter_init(kiq_str_map_iter_t *it, const kiq_str_map_t *m);
bool kiq_str_map_next(kiq_str_map_iter_t *it, const void **key, size_t *len, void **value);

#endif
