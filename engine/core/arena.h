/* Bump allocator for everything a request decodes into and its response is
 * built from; freed in one go with the request. Owned by whichever thread
 * holds the request at the time (never shared). */
#ifndef KIQ_CORE_ARENA_H
#define KIQ_CORE_ARENA_H

#include <stddef.h>

typedef struct kiq_arena_chunk kiq_arena_chunk_t;

typedef struct kiq_arena {
    kiq_arena_chunk_t *head;
    size_t total;
} kiq_arena_t;

void kiq_arena_init(kiq_arena_t *a);
/* Zeroed memory, 16-byte aligned; aborts on out-of-memory like malloc users
 * that cannot recover (a request arena is small and bounded by the frame). */
void *kiq_arena_alloc(kiq_arena_t *a, size_t size);
void *kiq_arena_calloc(kiq_arena_t *a, size_t n, size_t size);
char *kiq_arena_strndup(kiq_arena_t *a, const char *s, size_t n);
void kiq_arena_reset(kiq_arena_t *a);

#endif
