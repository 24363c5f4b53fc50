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
/* Like kiq_arena_alloc, not zeroed: for what is written before it is read
 * (an encoding buffer). */
void *kiq_arena_alloc_raw(kiq_arena_t *a, size_t size);
char *kiq_arena_strndup(kiq_arena_t *a, const char *s, size_t n);
void kiq_arena_reset(kiq_arena_t *a);
/* Empty again, like kiq_arena_reset, but keeps one chunk of the usual size
 * for the next use: an arena used over and over allocates nothing while
 * what it holds fits in that chunk. */
void kiq_arena_clear(kiq_arena_t *a);

#endif
