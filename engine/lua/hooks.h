/* Broker-side interceptors (DESIGN §6): Lua functions installed on a broker
 * that see requests, produced batches and fetched data on the threads that
 * handle them, and may delay, drop, reject or rewrite.
 *
 * Who runs what:
 * - The registry (kiq_hooks_t) belongs to the broker for its whole life, so
 *   hooks survive a restart. Any thread may add, remove or list hooks: the
 *   registry's mutex guards the list; `generation` counts its changes and
 *   `active` counts hooks per point.
 * - Hooks run on the threads that run request handlers: the I/O threads, and
 *   the purgatory thread when it finishes a delayed request or a waiting
 *   Fetch. Each of those threads has its own lua_State (thread-specific data:
 *   created on first use, closed when the thread exits), loads the hook
 *   chunks again when the generation moved (hooks it has already loaded
 *   keep their upvalues), and calls hooks with lua_pcall, a traceback
 *   handler and a budget: kafkaiq.hook.max.instructions Lua instructions
 *   (count hook, JIT off so it fires) and one second of wall-clock time
 *   (checked with the count, for time spent in C functions). A Lua state is
 *   never touched by another thread; what hooks share lives here, in C.
 * - A hook that raises, runs over its budget or returns something it may not
 *   is logged (and counted on its registry entry) and the request goes on
 *   as if the hook were not there.
 * - With no hook installed for a point, the engine pays one atomic load
 *   (kiq_hooks_active) and does no Lua work at all.
 *
 * Hooks are trusted code: they run with the standard libraries (minus the
 * ways to lift their own budget) inside the broker's process. */
#ifndef KIQ_LUA_HOOKS_H
#define KIQ_LUA_HOOKS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/request.h"

enum kiq_hook_point {
    KIQ_HOOK_REQUEST, /* every decoded request, before its handler */
    KIQ_HOOK_PRODUCE, /* each partition's batches, validated, before the append */
    KIQ_HOOK_FETCH,   /* each partition's answer, read, before it goes out */
    KIQ_HOOK__POINTS
};

/* "request", "produce", "fetch". */
extern const char *const kiq_hook_point_names[KIQ_HOOK__POINTS];
/* The point for a name, or -1. */
int kiq_hook_point_parse(const char *name);

/* What to install. Strings are copied. */
typedef struct kiq_hook_spec {
    enum kiq_hook_point point;
    int api_key;           /* request hooks only: -1 = any API */
    const char *client_id; /* NULL = any client */
    const char *topic;     /* NULL = any topic (request hooks: any the request names) */
    const char *source;    /* a Lua chunk that returns the hook function */
    size_t source_len;
} kiq_hook_spec_t;

typedef struct kiq_hook_def kiq_hook_def_t;

/* The registry. Mutable parts: `list`, `next_id` and the failure fields of
 * each entry under `lock`; `active` and `generation` are atomics written
 * under `lock` and read without it. */
typedef struct kiq_hooks {
    atomic_int active[KIQ_HOOK__POINTS];
    atomic_uint generation;
    uint64_t serial;          /* unique per registry: a thread notices a different one */
    int64_t max_instructions; /* budget of one call (kafkaiq.hook.max.instructions) */
    pthread_mutex_t lock;
    kiq_hook_def_t *list; /* in id order */
    int next_id;
} kiq_hooks_t;

/* An entry as kiq_hooks_list copies it out; owned by the caller. */
typedef struct kiq_hook_info {
    int id;
    enum kiq_hook_point point;
    int api_key;
    char *client_id; /* NULL = any */
    char *topic;     /* NULL = any */
    uint64_t failures; /* calls (or loads) that raised or ran over budget */
    char *last_error;  /* NULL when none */
} kiq_hook_info_t;

kiq_hooks_t *kiq_hooks_new(int64_t max_instructions);
/* After every thread that ran hooks has stopped. */
void kiq_hooks_free(kiq_hooks_t *h);

/* Any thread. Checks the chunk first in a scratch Lua state: it must compile,
 * run within the budget and return a function. Returns the new hook's id
 * (> 0), or -1 with kiq_error_set (the Lua error message when the chunk is
 * refused). Request handlers pick the hook up with their next request. */
int kiq_hooks_add(kiq_hooks_t *h, const kiq_hook_spec_t *spec);
/* Any thread. 0, or -1 when there is no such hook. */
int kiq_hooks_remove(kiq_hooks_t *h, int id);
/* Any thread. The installed hooks in id order: their count, or -1 (out of
 * memory). Free the copy with kiq_hooks_list_free. */
int kiq_hooks_list(kiq_hooks_t *h, kiq_hook_info_t **out);
void kiq_hooks_list_free(kiq_hook_info_t *list, int n);

/* Any thread: whether some hook is installed for the point. The engine
 * checks this before calling a kiq_hooks_on_* function. */
static inline bool kiq_hooks_active(kiq_hooks_t *h, enum kiq_hook_point p)
{
    return atomic_load_explicit(&h->active[p], memory_order_relaxed) > 0;
}

/* ---- called by the request handlers, on the thread holding the request ---- */

enum kiq_hook_verdict {
    KIQ_HOOK_PROCEED,    /* run the handler */
    KIQ_HOOK_DROP,       /* close the connection; no handler, no response */
    KIQ_HOOK_DROP_AFTER, /* run the handler, then close without responding */
    KIQ_HOOK_ANSWER,     /* respond with the error response already built */
};

typedef struct kiq_hook_action {
    enum kiq_hook_verdict verdict;
    int16_t error_code; /* KIQ_HOOK_ANSWER: the code put in the response */
    int32_t delay_ms;   /* > 0: do the verdict this much later */
} kiq_hook_action_t;

/* Request hooks for a decoded request (r->header, request = the decoded
 * message). The first hook that returns an action decides; hooks that
 * return nil let the next one look. For KIQ_HOOK_ANSWER, `response` (the
 * initialised response message) has been filled with the error code for
 * every topic and partition the request names and the top-level error
 * code where the response has one. */
void kiq_hooks_on_request(kiq_hooks_t *h, kiq_request_t *r, const void *request, void *response,
                          kiq_hook_action_t *act);

/* One partition's produced data, already validated. Hooks run in id order
 * and each sees the records as the previous one left them. A rewrite is
 * one batch with the codec, producer id/epoch/base sequence and
 * transactional flag of the first batch received (changing an idempotent
 * producer's record count breaks its sequence numbers: the hook's call). */
typedef struct kiq_hook_produce {
    const char *topic;
    int32_t partition;
    const uint8_t *records; /* the partition's batches */
    size_t len;
    /* results */
    int16_t error_code;        /* non-zero: refuse the data with this code */
    kiq_str_t error_message;   /* with error_code, when the hook gave one (arena) */
    uint8_t *rewritten;        /* non-NULL: one batch to append instead (arena) */
    size_t rewritten_len;
} kiq_hook_produce_t;

void kiq_hooks_on_produce(kiq_hooks_t *h, kiq_request_t *r, kiq_hook_produce_t *p);

/* One partition's fetch answer, before it is sent; only partitions being
 * answered without an error are shown to hooks. The first hook returning an
 * error decides. */
typedef struct kiq_hook_fetch {
    kiq_str_t topic;
    int32_t partition;
    int64_t fetch_offset;
    int64_t high_watermark;
    int64_t log_start_offset;
    kiq_bytes_t records;
    /* result */
    int16_t error_code; /* non-zero: answer the partition with this code, no records */
} kiq_hook_fetch_t;

void kiq_hooks_on_fetch(kiq_hooks_t *h, kiq_request_t *r, kiq_hook_fetch_t *f);

#endif
