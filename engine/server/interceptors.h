/* Interceptors (DESIGN §6): code installed on a broker that sees requests,
 * produced batches and fetched data on the threads that handle them, and
 * may delay, drop, reject or rewrite. The engine calls them through this
 * table only; engine/lua implements it with Lua functions (lua/hooks.h)
 * and installs it on the brokers it makes (kiq_broker_set_interceptors).
 *
 * With nothing installed for a point, the engine pays one branch and one
 * relaxed atomic load (kiq_interceptors_active). The calls run on the
 * thread holding the request: I/O threads, and the purgatory's for what it
 * finishes. */
#ifndef KIQ_SERVER_INTERCEPTORS_H
#define KIQ_SERVER_INTERCEPTORS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/view.h"
#include "net/request.h"
#include "proto/types.h"
#include "security/acl.h"
#include "server/fault_rule.h"

enum kiq_hook_point {
    KIQ_HOOK_REQUEST, /* every decoded request, before its handler */
    KIQ_HOOK_PRODUCE, /* each partition's batches, validated, before the append */
    KIQ_HOOK_FETCH,   /* each partition's answer, read, before it goes out */
    KIQ_HOOK_AUTHORIZE, /* each authorization a handler asks (api/authorize.h), before the ACLs */
    KIQ_HOOK__POINTS
};

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

/* What an implementation provides. */
typedef struct kiq_interceptor_ops {
    /* Request hooks for a decoded request (r->header, request = the decoded
     * message). The first hook that returns an action decides; hooks that
     * return nil let the next one look. For KIQ_HOOK_ANSWER, `response` (the
     * initialised response message) has been filled with the error code for
     * every topic and partition the request names and the top-level error
     * code where the response has one. */
    void (*on_request)(void *ctx, kiq_request_t *r, const void *request, void *response, kiq_hook_action_t *act);
    void (*on_produce)(void *ctx, kiq_request_t *r, kiq_hook_produce_t *p);
    void (*on_fetch)(void *ctx, kiq_request_t *r, kiq_hook_fetch_t *f);
    /* An authorization for r's principal: KIQ_ACL_ALLOWED or KIQ_ACL_DENIED
     * with *reason (the calling thread's until its next call), or -1 when
     * no hook has a say (the ACLs decide). */
    int (*on_authorize)(void *ctx, const kiq_request_t *r, const kiq_acl_request_t *q, const char **reason);
    /* Any thread: calls that raised or ran over their budget so far. */
    uint64_t (*failures)(void *ctx);
    /* With the broker, once no thread can call in. */
    void (*free)(void *ctx);
    /* Fault rules (server/fault_rule.h), picked at the request point
     * before the hooks, in id order; any thread. add: the rule's id (> 0)
     * or -1 (kiq_error_set); remove: 0, or -1 when there is no such rule;
     * view: an array of the rules, each its id, fields, matched (requests
     * it picked) and fired. */
    int (*fault_add)(void *ctx, const kiq_fault_rule_t *rule);
    int (*fault_remove)(void *ctx, int id);
    void (*faults_view)(void *ctx, const kiq_view_t *v);
} kiq_interceptor_ops_t;

/* A broker's interceptors: set before it starts (ops NULL: none), fixed
 * after. active counts, per point, what the implementation has installed
 * (its own atomics, read without a lock). */
typedef struct kiq_interceptors {
    const kiq_interceptor_ops_t *ops;
    void *ctx;
    const atomic_int *active; /* KIQ_HOOK__POINTS counters */
} kiq_interceptors_t;

/* Whether an interceptor is installed for the point; the engine checks
 * before calling the ops. */
static inline bool kiq_interceptors_active(const kiq_interceptors_t *i, enum kiq_hook_point p)
{
    return i->ops && atomic_load_explicit(&i->active[p], memory_order_relaxed) > 0;
}

#endif
