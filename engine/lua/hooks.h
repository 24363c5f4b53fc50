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

#include "include/kafkaiq.h"
#include "net/request.h"
#include "server/interceptors.h"

/* "request", "produce", "fetch", "authorize". */
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
    /* instead of a source: a fault rule (request point; api, client and
     * topic from it), run in C */
    const kiq_fault_rule_t *fault;
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
    bool is_fault;           /* a fault rule: the three below */
    kiq_fault_rule_t fault;
    uint64_t matched, fired; /* requests it picked; firings */
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

/* The engine's interceptor table for a registry (its ctx; active its
 * counts): kiq_broker_set_interceptors(b, &kiq_hooks_ops, h, h->active),
 * and the broker frees the registry with itself. */
extern const kiq_interceptor_ops_t kiq_hooks_ops;
/* A new registry (kafkaiq.hook.max.instructions from the broker's config)
 * installed as the broker's interceptors: its Lua hooks and fault rules.
 * Before the broker starts; 0, or -1 (out of memory). */
int kiq_hooks_attach(kiq_broker_t *b);



#endif
