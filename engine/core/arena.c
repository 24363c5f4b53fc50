#include "core/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kiq_arena_chunk {
    kiq_arena_chunk_t *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { ARENA_CHUNK = 16384 };

void kiq_arena_init(kiq_arena_t *a)
{
    a->head = NULL;
    a->total = 0;
}

void *kiq_arena_alloc_raw(kiq_arena_t *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    kiq_arena_chunk_t *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) {
            fprintf(stderr, "kafkaiq: out of memory allocating %zu bytes\n", size);
            abort();
        }
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->total += size;
    return p;
}

void *kiq_arena_alloc(kiq_arena_t *a, size_t size)
{
    void *p = kiq_arena_alloc_raw(a, size);
    memset(p, 0, (size + 15) & ~(size_t)15);
    return p;
}

void *kiq_arena_calloc(kiq_arena_t *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) abort();
    return kiq_arena_alloc(a, n * size);
}

char *kiq_arena_strndup(kiq_arena_t *a, const char *s, size_t n)
{
    char *p = kiq_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    return p;
}

void kiq_arena_reset(kiq_arena_t *a)
{
    kiq_arena_chunk_t *c = a->head;
    while (c) {
        kiq_arena_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void kiq_arena_clear(kiq_arena_t *a)
{
    kiq_arena_chunk_t *keep = NULL, *c = a->head;
    while (c) {
        kiq_arena_chunk_t *next = c->next;
        if (!keep && c->cap == ARENA_CHUNK)
            keep = c;
        else
            free(c);
        c = next;
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
    a->total = 0;
}
