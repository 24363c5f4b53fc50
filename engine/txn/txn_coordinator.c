/* The transaction coordinator; see txn_coordinator.h. */
#include "txn/txn_coordinator.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/coordinator_key.h"
#include "core/error.h"
#include "core/worker.h"
#include "core/say.h"
#include "core/str_map.h"
#include "proto/errors.h"
#include "replica/leader.h"
#include "replica/partition_replica.h"
#include "txn/txn_log.h"
#include "txn/txn_verifier.h"

/* How long one round of markers may take before it is tried again. */
#define MARKERS_TIMEOUT_MS 30000
/* The pause before markers that failed are tried again. */
#define MARKERS_RETRY_MS 100

struct kiq_txn_coordinator {
    kiq_txn_context_t b;
    pthread_mutex_t mu; /* guards everything below */
    kiq_str_map_t *ids; /* transactional id -> kiq_txn_t (malloc'd) */
    bool *led;          /* cluster mode: partitions of __transaction_state led here */
    int32_t nled;
    bool stopped;
    /* ids whose Prepare* state waits for its markers, oldest first (malloc'd) */
    char **ending;
    int nending, capending;
    kiq_txn_markers_t *markers; /* the marker worker's */
    /* writes the markers of ending transactions, aborts timed-out ones and
     * expires idle ids; from start to stop, poked when work is queued */
    kiq_worker_t *worker;
    int64_t next_check_ms, next_expiry_ms; /* the worker's */
    /* cluster mode: asks other coordinators about produces led here */
    kiq_txn_verifier_t *verifier;
};

kiq_txn_coordinator_t *kiq_txn_coordinator_new(const kiq_txn_context_t *ctx)
{
    kiq_txn_coordinator_t *tc = calloc(1, sizeof *tc);
    if (!tc || !(tc->ids = kiq_str_map_new())) {
        free(tc);
        return NULL;
    }
    tc->b = *ctx;
    if (!(tc->markers = kiq_txn_markers_new(&ctx->markers)) ||
        (ctx->cluster &&
         !(tc->verifier = kiq_txn_verifier_new(ctx->markers.topics, ctx->markers.metadata, ctx->markers.security,
                                                     ctx->markers.node_id,
                                                     ctx->markers.metrics)))) {
        kiq_txn_markers_free(tc->markers);
        kiq_str_map_free(tc->ids);
        free(tc);
        return NULL;
    }
    pthread_mutex_init(&tc->mu, NULL);
    return tc;
}

static int32_t state_partitions(const kiq_txn_coordinator_t *tc)
{
    kiq_topic_t *t = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    int32_t n = t ? t->npartitions : (int32_t)kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_STATE_LOG_NUM_PARTITIONS);
    kiq_topic_unref(t);
    return n;
}

int32_t kiq_txn_coordinator_partition_of(const kiq_txn_coordinator_t *tc, kiq_str_t id)
{
    return kiq_coordinator_partition(id.p ? id.p : "", id.p ? (size_t)id.len : 0, state_partitions(tc));
}

/* Under tc->mu. */
static bool leads(const kiq_txn_coordinator_t *tc, int32_t partition)
{
    if (tc->stopped) return false;
    if (tc->b.cluster) return partition >= 0 && partition < tc->nled && tc->led[partition];
    kiq_topic_t *t = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    bool there = t && partition >= 0 && partition < t->npartitions;
    kiq_topic_unref(t);
    return there;
}

static void free_txn(kiq_txn_t *t)
{
    kiq_txn_free(t);
    free(t);
}

/* Under tc->mu: replaces id's metadata by t (taken), or removes it (t NULL). */
static int put(kiq_txn_coordinator_t *tc, const char *id, size_t len, kiq_txn_t *t)
{
    kiq_txn_t *old = t ? kiq_str_map_get(tc->ids, id, len) : kiq_str_map_remove(tc->ids, id, len);
    if (t && kiq_str_map_put(tc->ids, id, len, t) != 0) return kiq_error_set("out of memory");
    if (old && old != t) free_txn(old);
    return 0;
}

/* Under tc->mu: id's markers are to be written (once: a repeat is a
 * no-op); the worker is not told (its own retry). */
static void queue_ending_quietly(kiq_txn_coordinator_t *tc, const char *id)
{
    for (int i = 0; i < tc->nending; i++)
        if (strcmp(tc->ending[i], id) == 0) return;
    if (tc->nending == tc->capending) {
        int cap = tc->capending ? tc->capending * 2 : 16;
        char **grown = realloc(tc->ending, (size_t)cap * sizeof *grown);
        if (!grown) {
            KIQ_ERROR("transactional id %s: its markers wait for memory", id);
            return;
        }
        tc->ending = grown;
        tc->capending = cap;
    }
    char *copy = strdup(id);
    if (!copy) return;
    tc->ending[tc->nending++] = copy;
}

/* Under tc->mu: id's markers are to be written, soon. */
static void queue_ending(kiq_txn_coordinator_t *tc, const char *id)
{
    queue_ending_quietly(tc, id);
    if (tc->worker) kiq_worker_poke(tc->worker);
}

/* ---- loading ---- */

typedef struct load_ctx {
    kiq_txn_coordinator_t *tc;
    int loaded;
} load_ctx_t;

static void load_one(void *arg, kiq_str_t id, const kiq_transaction_log_value_t *v)
{
    load_ctx_t *c = arg;
    if (!v) {
        put(c->tc, id.p, (size_t)id.len, NULL);
        return;
    }
    kiq_txn_t *t = malloc(sizeof *t);
    if (!t || kiq_txn_from_value(t, id, v) != 0 || put(c->tc, id.p, (size_t)id.len, t) != 0) {
        KIQ_ERROR_LIMITED("transactional id " KIQ_STR_FMT ": cannot keep its state: %s", KIQ_STR_ARG(id), kiq_error_get());
        if (t) free_txn(t);
        return;
    }
    c->loaded++;
}

/* Under tc->mu: the ids of one partition, from its log. */
static void load_partition(kiq_txn_coordinator_t *tc, kiq_topic_t *topic, int32_t partition)
{
    kiq_partition_log_t *log = partition < topic->npartitions ? topic->partitions[partition]->log : NULL;
    if (!log) return;
    load_ctx_t c = {tc, 0};
    kiq_txn_loader_t ld = {&c, load_one};
    if (kiq_txn_log_load(log, &ld) < 0)
        KIQ_ERROR("cannot load " KIQ_TXN_TOPIC "-%d: %s", partition, kiq_error_get());
    else if (c.loaded)
        KIQ_INFO("loaded %d transactional id record(s) from " KIQ_TXN_TOPIC "-%d", c.loaded, partition);
    /* a transaction the last coordinator prepared but did not complete:
     * its markers are written (again) here */
    int32_t n = state_partitions(tc);
    kiq_str_map_iter_t it;
    kiq_str_map_iter_init(&it, tc->ids);
    const void *key;
    size_t len;
    void *value;
    while (kiq_str_map_next(&it, &key, &len, &value)) {
        const kiq_txn_t *t = value;
        if (kiq_txn_preparing(t->state) && kiq_coordinator_partition(key, len, n) == partition) {
            KIQ_INFO("transactional id %s: completing its %s left by the previous coordinator", t->id,
                     kiq_txn_state_names[t->state]);
            queue_ending(tc, t->id);
        }
    }
}

/* Under tc->mu: forgets the ids of one partition. */
static void drop_partition(kiq_txn_coordinator_t *tc, int32_t partition)
{
    int32_t n = state_partitions(tc);
    for (;;) {
        kiq_str_map_iter_t it;
        kiq_str_map_iter_init(&it, tc->ids);
        const void *key;
        size_t len;
        void *value;
        bool found = false;
        while (kiq_str_map_next(&it, &key, &len, &value))
            if (kiq_coordinator_partition(key, len, n) == partition) {
                found = true;
                break;
            }
        if (!found) return;
        free_txn(kiq_str_map_remove(tc->ids, key, len));
    }
}

static int64_t markers_round(void *arg);

int kiq_txn_coordinator_start(kiq_txn_coordinator_t *tc)
{
    kiq_topic_t *t = tc->b.cluster ? NULL : kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    pthread_mutex_lock(&tc->mu);
    for (int32_t p = 0; t && p < t->npartitions; p++) load_partition(tc, t, p);
    pthread_mutex_unlock(&tc->mu);
    kiq_topic_unref(t);
    int64_t now = kiq_clock_mono_ms();
    tc->next_check_ms =
        now + kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS);
    tc->next_expiry_ms =
        now + kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS);
    kiq_worker_config_t wc = {.name = "txn-markers", .round = markers_round, .ctx = tc};
    kiq_worker_t *w = kiq_worker_start(&wc);
    if (!w) return -1;
    pthread_mutex_lock(&tc->mu);
    tc->worker = w;
    pthread_mutex_unlock(&tc->mu);
    return tc->verifier ? kiq_txn_verifier_start(tc->verifier) : 0;
}

void kiq_txn_coordinator_stop(kiq_txn_coordinator_t *tc)
{
    if (!tc) return;
    pthread_mutex_lock(&tc->mu);
    tc->stopped = true;
    kiq_worker_t *w = tc->worker;
    tc->worker = NULL;
    pthread_mutex_unlock(&tc->mu);
    kiq_txn_markers_shutdown(tc->markers);
    kiq_worker_stop(w);
    if (tc->verifier) kiq_txn_verifier_stop(tc->verifier);
}

void kiq_txn_coordinator_free(kiq_txn_coordinator_t *tc)
{
    if (!tc) return;
    kiq_str_map_iter_t it;
    kiq_str_map_iter_init(&it, tc->ids);
    const void *key;
    size_t len;
    void *value;
    while (kiq_str_map_next(&it, &key, &len, &value)) free_txn(value);
    kiq_str_map_free(tc->ids);
    free(tc->led);
    for (int i = 0; i < tc->nending; i++) free(tc->ending[i]);
    free(tc->ending);
    kiq_txn_markers_free(tc->markers);
    kiq_txn_verifier_free(tc->verifier);
    pthread_mutex_destroy(&tc->mu);
    free(tc);
}

int kiq_txn_coordinator_ensure_topic(kiq_txn_coordinator_t *tc)
{
    kiq_topic_t *t = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    if (t) {
        kiq_topic_unref(t);
        return KIQ_ERR_NONE;
    }
    if (tc->b.cluster) {
        kiq_error_set(KIQ_TXN_TOPIC " is not hosted here");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    /* alone, one replica: its min.insync.replicas cannot be more */
    char seg[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_STATE_LOG_SEGMENT_BYTES));
    kiq_topic_configs_t cfg = {0};
    int rc;
    if (kiq_topic_configs_set(&cfg, "cleanup.policy", 14, "compact", 7) != 0 ||
        kiq_topic_configs_set(&cfg, "segment.bytes", 13, seg, (int)strlen(seg)) != 0 ||
        kiq_topic_configs_set(&cfg, "min.insync.replicas", 19, "1", 1) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    } else {
        rc = kiq_topics_create_with_configs(
            tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC),
            (int32_t)kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_STATE_LOG_NUM_PARTITIONS), 1, &cfg, false);
        if (rc == KIQ_ERR_TOPIC_ALREADY_EXISTS) rc = KIQ_ERR_NONE; /* another thread was first */
        if (rc == KIQ_ERR_NONE) KIQ_INFO("created " KIQ_TXN_TOPIC);
        else KIQ_ERROR_LIMITED("cannot create " KIQ_TXN_TOPIC ": %s", kiq_error_get());
    }
    kiq_topic_configs_clear(&cfg);
    return rc;
}

void kiq_txn_coordinator_partition_led(kiq_txn_coordinator_t *tc, int32_t partition, bool led)
{
    if (!tc || partition < 0) return;
    pthread_mutex_lock(&tc->mu);
    bool now = partition < tc->nled && tc->led[partition];
    if (led && !now) {
        if (partition >= tc->nled) {
            bool *grown = realloc(tc->led, (size_t)(partition + 1) * sizeof *grown);
            if (!grown) {
                pthread_mutex_unlock(&tc->mu);
                KIQ_ERROR("cannot coordinate " KIQ_TXN_TOPIC "-%d: out of memory", partition);
                return;
            }
            memset(grown + tc->nled, 0, (size_t)(partition + 1 - tc->nled) * sizeof *grown);
            tc->led = grown;
            tc->nled = partition + 1;
        }
        /* whatever an earlier term left here is stale: the log has it all */
        drop_partition(tc, partition);
        tc->led[partition] = true;
        kiq_topic_t *t = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
        if (t) load_partition(tc, t, partition);
        kiq_topic_unref(t);
    } else if (!led && now) {
        tc->led[partition] = false;
        drop_partition(tc, partition);
        KIQ_INFO("no longer coordinating the transactional ids of " KIQ_TXN_TOPIC "-%d", partition);
    }
    pthread_mutex_unlock(&tc->mu);
}

/* Under tc->mu: the records of rs appended to partition `partition` of
 * __transaction_state (led here); *need (may be NULL) gets the high
 * watermark that covers them. 0, or a Kafka error code (Kafka's mapping of
 * a failed append) with the reason in the error slot. */
static int16_t append_records(kiq_txn_coordinator_t *tc, kiq_keyed_records_t *rs, int32_t partition, int64_t *need)
{
    kiq_topic_t *topic = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    if (!topic) return kiq_error_set(KIQ_TXN_TOPIC " does not exist"), KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    int16_t err = kiq_replica_led_partition(topic, partition, -1, &p, &log);
    if (err) {
        kiq_topic_unref(topic);
        kiq_error_set(KIQ_TXN_TOPIC "-%d is not led here (error %d)", partition, err);
        return err == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION ? KIQ_ERR_COORDINATOR_NOT_AVAILABLE : KIQ_ERR_NOT_COORDINATOR;
    }
    kiq_wr_t w;
    int16_t rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (kiq_keyed_records_build(rs, &w) == 0) {
        kiq_log_append_result_t res;
        if (kiq_replica_append_as_leader(p, log, w.buf, w.len, NULL, 0, &res) == 0) {
            if (need) *need = res.last_offset + 1;
            rc = KIQ_ERR_NONE;
            /* followers waiting to fetch it, and (alone in the ISR) whoever
             * waits for it to be committed */
            kiq_topics_notify_append(tc->b.topics, KIQ_TXN_TOPIC, partition);
        } else {
            rc = KIQ_ERR_NOT_COORDINATOR; /* Kafka's answer to a failed append here */
        }
        kiq_wr_free(&w);
    }
    kiq_topic_unref(topic);
    return rc;
}

/* Under tc->mu: t's new state appended to its partition; as append_records. */
static int16_t write_state(kiq_txn_coordinator_t *tc, const kiq_txn_t *t, int32_t partition, int64_t *need)
{
    kiq_keyed_records_t rs;
    kiq_keyed_records_init(&rs, kiq_clock_wall_ms());
    int16_t rc = kiq_txn_records_add(&rs, t) == 0 ? append_records(tc, &rs, partition, need)
                                                   : KIQ_ERR_UNKNOWN_SERVER_ERROR;
    kiq_keyed_records_free(&rs);
    return rc;
}

void kiq_txn_init_producer_id(kiq_txn_coordinator_t *tc, int16_t version, const kiq_init_producer_id_request_t *req,
                              kiq_init_producer_id_response_t *out, int32_t *partition, int64_t *need)
{
    out->producer_id = -1;
    out->producer_epoch = -1;
    *need = -1;
    *partition = -1;
    kiq_str_t id = req->transactional_id;
    /* the id is a C string inside (records, logs): no NUL in it */
    if (id.len == 0 || memchr(id.p, '\0', (size_t)id.len)) {
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    /* alone, a producer that skipped FindCoordinator still gets its state stored */
    if (!tc->b.cluster && kiq_txn_coordinator_ensure_topic(tc) != KIQ_ERR_NONE) {
        out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    *partition = kiq_txn_coordinator_partition_of(tc, id);
    char *name = NULL;
    pthread_mutex_lock(&tc->mu);
    int16_t err = KIQ_ERR_NONE;
    kiq_txn_t *cur = NULL, *next = malloc(sizeof *next);
    kiq_txn_init_action_t action;
    if (!next) {
        err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (!leads(tc, *partition)) {
        err = KIQ_ERR_NOT_COORDINATOR;
        free(next);
        goto out;
    }
    cur = kiq_str_map_get(tc->ids, id.p, (size_t)id.len);
    name = strndup(id.p, (size_t)id.len);
    int rc = !name ? -1 : cur ? kiq_txn_copy(next, cur) : kiq_txn_init(next, name, kiq_clock_wall_ms());
    if (rc != 0) {
        free(next);
        err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    err = kiq_txn_check_init(next, req->producer_id, req->producer_epoch, req->transaction_timeout_ms,
                             (int32_t)kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_MAX_TIMEOUT_MS), &action);
    if (!err && action == KIQ_TXN_INIT_CURRENT) {
        /* its answer to the bump was lost: the same answer again, nothing written */
        out->producer_id = next->producer_id;
        out->producer_epoch = next->producer_epoch;
        free_txn(next);
        goto out;
    }
    int64_t new_id = -1;
    if (!err && kiq_txn_needs_new_id(next) && tc->b.next_producer_id(tc->b.ctx, &new_id) != 0) {
        KIQ_ERROR("InitProducerId for %s: cannot allocate a producer id: %s", name, kiq_error_get());
        err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (!err) {
        kiq_txn_bump(next, new_id, req->transaction_timeout_ms, kiq_clock_wall_ms(), req->producer_id >= 0);
        err = write_state(tc, next, *partition, need);
        if (err) KIQ_WARN_LIMITED("InitProducerId for %s: %s", name, kiq_error_get());
    } else if (action == KIQ_TXN_INIT_FENCE_ABORT) {
        /* the new incarnation fences the old one (a later epoch) and its
         * transaction is aborted; the client asks again and gets Empty */
        kiq_txn_fence(next, kiq_clock_wall_ms());
        int16_t werr = write_state(tc, next, *partition, need);
        if (werr) {
            KIQ_WARN("InitProducerId for %s: cannot abort its transaction: %s", name, kiq_error_get());
            err = werr;
        } else if (put(tc, id.p, (size_t)id.len, next) == 0) {
            KIQ_INFO("transactional id %s: a new producer fenced the older one (epoch now %d); its transaction "
                     "is being aborted", name, next->producer_epoch);
            queue_ending(tc, name);
            next = NULL; /* current now */
        }
    }
    if (!err && put(tc, id.p, (size_t)id.len, next) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (err) {
        if (next) free_txn(next);
    } else {
        out->producer_id = next->producer_id;
        out->producer_epoch = next->producer_epoch;
        KIQ_DEBUG("InitProducerId for %s: producer %" PRId64 " epoch %d", name, next->producer_id,
                  next->producer_epoch);
    }
out:
    pthread_mutex_unlock(&tc->mu);
    free(name);
    if (err == KIQ_ERR_PRODUCER_FENCED && version < 4) err = KIQ_ERR_INVALID_PRODUCER_EPOCH;
    out->error_code = err;
}

/* Under tc->mu: the current metadata of id when this broker coordinates
 * it, or an error (NOT_COORDINATOR; NONE with *t NULL for an unknown id). */
static int16_t find(kiq_txn_coordinator_t *tc, kiq_str_t id, int32_t partition, kiq_txn_t **t)
{
    *t = NULL;
    if (!leads(tc, partition)) return KIQ_ERR_NOT_COORDINATOR;
    *t = id.p ? kiq_str_map_get(tc->ids, id.p, (size_t)id.len) : NULL;
    return KIQ_ERR_NONE;
}

/* Under tc->mu: adds the n partitions to id's transaction (t current),
 * writes the new state and makes it current; the error code. A
 * transaction begun here is of client_version. */
static int16_t add_to_txn(kiq_txn_coordinator_t *tc, kiq_txn_t *t, kiq_str_t id, int32_t partition, int n,
                          const char *const *topics, const int32_t *parts, int16_t client_version, int64_t *need)
{
    kiq_txn_t *next = malloc(sizeof *next);
    if (!next || kiq_txn_copy(next, t) != 0) {
        free(next);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    int16_t err = KIQ_ERR_NONE;
    for (int i = 0; i < n && !err; i++)
        if (kiq_txn_add_partition(next, topics[i], parts[i]) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (!err) {
        if (next->state != KIQ_TXN_ONGOING) next->client_version = client_version;
        kiq_txn_begin_if_needed(next, kiq_clock_wall_ms());
        err = write_state(tc, next, partition, need);
        if (err) KIQ_WARN_LIMITED("transactional id %s: cannot store its partitions: %s", t->id, kiq_error_get());
    }
    if (!err && put(tc, id.p, (size_t)id.len, next) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (err) free_txn(next);
    return err;
}

/* The check of the partitions asked, then the add: the error code.
 * client_version: the transaction version of the request's producer (2:
 * a broker adding for a produce v12 or a TxnOffsetCommit v5). */
static int16_t add_partitions(kiq_txn_coordinator_t *tc, int16_t version, int16_t client_version, kiq_str_t id,
                              int64_t producer_id, int16_t producer_epoch, int n, const char *const *topics,
                              const int32_t *parts, int32_t *partition, int64_t *need)
{
    *need = -1;
    *partition = kiq_txn_coordinator_partition_of(tc, id);
    if (!id.p || id.len == 0) return KIQ_ERR_INVALID_REQUEST;
    pthread_mutex_lock(&tc->mu);
    kiq_txn_t *t;
    bool all_there = false;
    int16_t err = find(tc, id, *partition, &t);
    if (!err) err = kiq_txn_check_add(t, producer_id, producer_epoch, n, topics, parts, &all_there);
    if (!err && !all_there) err = add_to_txn(tc, t, id, *partition, n, topics, parts, client_version, need);
    pthread_mutex_unlock(&tc->mu);
    if (err == KIQ_ERR_PRODUCER_FENCED && version < 2) err = KIQ_ERR_INVALID_PRODUCER_EPOCH;
    return err;
}

void kiq_txn_add_partitions(kiq_txn_coordinator_t *tc, int16_t version, const kiq_add_partitions_to_txn_request_t *req,
                            kiq_add_partitions_to_txn_response_t *out, kiq_arena_t *a, int32_t *partition,
                            int64_t *need)
{
    int32_t ntopics = req->v3_and_below_topics_n > 0 ? req->v3_and_below_topics_n : 0;
    int n = 0;
    for (int32_t i = 0; i < ntopics; i++)
        n += req->v3_and_below_topics[i].partitions_n > 0 ? req->v3_and_below_topics[i].partitions_n : 0;
    const char **topics = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *topics);
    int32_t *parts = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *parts);
    out->results_by_topic_v3_and_below_n = ntopics;
    out->results_by_topic_v3_and_below = kiq_arena_calloc(a, (size_t)(ntopics ? ntopics : 1),
                                                          sizeof *out->results_by_topic_v3_and_below);
    /* every partition must exist, or none is added */
    bool unknown = false;
    int k = 0;
    for (int32_t i = 0; i < ntopics; i++) {
        const kiq_add_partitions_to_txn_request_v3_and_below_topics_t *t = &req->v3_and_below_topics[i];
        kiq_add_partitions_to_txn_response_results_by_topic_v3_and_below_t *rt = &out->results_by_topic_v3_and_below[i];
        kiq_add_partitions_to_txn_response_results_by_topic_v3_and_below_init(rt);
        rt->name = t->name;
        int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
        rt->results_by_partition_n = np;
        rt->results_by_partition = kiq_arena_calloc(a, (size_t)(np ? np : 1), sizeof *rt->results_by_partition);
        const char *name = kiq_arena_strndup(a, t->name.p ? t->name.p : "", t->name.p ? (size_t)t->name.len : 0);
        int32_t count = t->name.p ? tc->b.partitions_of(tc->b.ctx, t->name.p, (size_t)t->name.len) : -1;
        for (int32_t j = 0; j < np; j++) {
            rt->results_by_partition[j].partition_index = t->partitions[j];
            bool exists = t->partitions[j] >= 0 && t->partitions[j] < count;
            rt->results_by_partition[j].partition_error_code = exists ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            unknown |= !exists;
            topics[k] = name;
            parts[k++] = t->partitions[j];
        }
    }
    int16_t err = KIQ_ERR_NONE;
    if (!unknown)
        err = add_partitions(tc, version, 0, req->v3_and_below_transactional_id, req->v3_and_below_producer_id,
                             req->v3_and_below_producer_epoch, n, topics, parts, partition, need);
    else
        *need = -1, *partition = -1;
    for (int32_t i = 0; i < ntopics; i++)
        for (int32_t j = 0; j < out->results_by_topic_v3_and_below[i].results_by_partition_n; j++) {
            int16_t *e = &out->results_by_topic_v3_and_below[i].results_by_partition[j].partition_error_code;
            *e = unknown ? (*e ? *e : KIQ_ERR_OPERATION_NOT_ATTEMPTED) : err;
        }
}

int16_t kiq_txn_verify(kiq_txn_coordinator_t *tc, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                       const char *topic, int32_t partition)
{
    if (!id.p || id.len == 0) return KIQ_ERR_INVALID_REQUEST;
    pthread_mutex_lock(&tc->mu);
    kiq_txn_t *t;
    int16_t err = find(tc, id, kiq_txn_coordinator_partition_of(tc, id), &t);
    if (!err && (!t || t->producer_id != producer_id)) err = KIQ_ERR_INVALID_PRODUCER_ID_MAPPING;
    else if (!err && t->producer_epoch != producer_epoch) err = KIQ_ERR_PRODUCER_FENCED;
    else if (!err && (t->state != KIQ_TXN_ONGOING || !kiq_txn_has_partition(t, topic, partition)))
        err = KIQ_ERR_INVALID_TXN_STATE;
    pthread_mutex_unlock(&tc->mu);
    return err;
}

/* Whether everything in partition `partition` of __transaction_state is
 * replicated (its high watermark at its end). */
static bool state_replicated(kiq_txn_coordinator_t *tc, int32_t partition)
{
    kiq_topic_t *t = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    kiq_partition_log_t *log = t && partition >= 0 && partition < t->npartitions ? t->partitions[partition]->log : NULL;
    bool done = !log || kiq_partition_log_high_watermark(log) >= kiq_partition_log_end_offset(log);
    kiq_topic_unref(t);
    return done;
}

int kiq_txn_check_partition(kiq_txn_coordinator_t *tc, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                            const char *topic, int32_t partition, bool add, uint64_t guard, int16_t *err)
{
    if (add) {
        int32_t state_partition;
        int64_t need;
        *err = add_partitions(tc, 5, 2, id, producer_id, producer_epoch, 1, &topic, &partition, &state_partition,
                              &need);
        /* as AddPartitionsToTxn is answered: once the state that has the
         * partition is replicated, so a new coordinator knows to end the
         * transaction there; the caller is woken as the state partition's
         * high watermark moves */
        if (!*err && tc->b.cluster && !state_replicated(tc, state_partition)) return 0;
    } else {
        *err = kiq_txn_verify(tc, id, producer_id, producer_epoch, topic, partition);
    }
    if (*err != KIQ_ERR_NOT_COORDINATOR || !tc->verifier) return 1;
    *err = KIQ_ERR_NONE;
    return kiq_txn_verifier_ask(tc->verifier, id, producer_id, producer_epoch, topic, partition, add, guard, err);
}

void kiq_txn_add_partitions_v4(kiq_txn_coordinator_t *tc, const kiq_add_partitions_to_txn_request_transactions_t *tr,
                               kiq_add_partitions_to_txn_response_results_by_transaction_t *out, kiq_arena_t *a,
                               int32_t *partition, int64_t *need)
{
    *partition = -1;
    *need = -1;
    out->transactional_id = tr->transactional_id;
    int32_t ntopics = tr->topics_n > 0 ? tr->topics_n : 0;
    int n = 0;
    for (int32_t i = 0; i < ntopics; i++) n += tr->topics[i].partitions_n > 0 ? tr->topics[i].partitions_n : 0;
    const char **topics = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *topics);
    int32_t *parts = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *parts);
    int16_t **errs = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *errs);
    out->topic_results_n = ntopics;
    out->topic_results = kiq_arena_calloc(a, (size_t)(ntopics ? ntopics : 1), sizeof *out->topic_results);
    int k = 0;
    for (int32_t i = 0; i < ntopics; i++) {
        const kiq_add_partitions_to_txn_request_transactions_topics_t *t = &tr->topics[i];
        kiq_add_partitions_to_txn_response_results_by_transaction_topic_results_t *rt = &out->topic_results[i];
        kiq_add_partitions_to_txn_response_results_by_transaction_topic_results_init(rt);
        rt->name = t->name;
        int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
        rt->results_by_partition_n = np;
        rt->results_by_partition = kiq_arena_calloc(a, (size_t)(np ? np : 1), sizeof *rt->results_by_partition);
        const char *name = kiq_arena_strndup(a, t->name.p ? t->name.p : "", t->name.p ? (size_t)t->name.len : 0);
        for (int32_t j = 0; j < np; j++, k++) {
            rt->results_by_partition[j].partition_index = t->partitions[j];
            topics[k] = name;
            parts[k] = t->partitions[j];
            errs[k] = &rt->results_by_partition[j].partition_error_code;
        }
    }
    if (tr->verify_only) {
        for (int i = 0; i < n; i++)
            *errs[i] = kiq_txn_verify(tc, tr->transactional_id, tr->producer_id, tr->producer_epoch, topics[i], parts[i]);
        return;
    }
    /* only a leader adding for a produce v12 (transactions v2) sends this */
    int16_t err = add_partitions(tc, 5, 2, tr->transactional_id, tr->producer_id, tr->producer_epoch, n, topics, parts,
                                 partition, need);
    for (int i = 0; i < n; i++) *errs[i] = err;
}

int16_t kiq_txn_add_offsets(kiq_txn_coordinator_t *tc, int16_t version, const kiq_add_offsets_to_txn_request_t *req,
                            int32_t *partition, int64_t *need)
{
    *need = -1;
    *partition = -1;
    if (!req->group_id.p || req->group_id.len == 0) return KIQ_ERR_INVALID_REQUEST;
    int32_t n = tc->b.partitions_of(tc->b.ctx, KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC));
    if (n <= 0) n = (int32_t)kiq_config_int(tc->b.config, KIQ_CFG_OFFSETS_TOPIC_NUM_PARTITIONS);
    const char *topic = KIQ_OFFSETS_TOPIC;
    int32_t group_partition = kiq_coordinator_partition(req->group_id.p, (size_t)req->group_id.len, n);
    return add_partitions(tc, version, 0, req->transactional_id, req->producer_id, req->producer_epoch, 1, &topic,
                          &group_partition, partition, need);
}

void kiq_txn_coordinator_foreach(kiq_txn_coordinator_t *tc, void (*cb)(const kiq_txn_t *t, void *ctx), void *ctx)
{
    pthread_mutex_lock(&tc->mu);
    kiq_str_map_iter_t it;
    kiq_str_map_iter_init(&it, tc->ids);
    const void *key;
    size_t len;
    void *value;
    while (!tc->stopped && kiq_str_map_next(&it, &key, &len, &value)) {
        const kiq_txn_t *t = value;
        if (t->state != KIQ_TXN_DEAD) cb(t, ctx);
    }
    pthread_mutex_unlock(&tc->mu);
}

int16_t kiq_txn_coordinator_describe(kiq_txn_coordinator_t *tc, kiq_str_t id, kiq_txn_t *out)
{
    int32_t partition = kiq_txn_coordinator_partition_of(tc, id);
    pthread_mutex_lock(&tc->mu);
    kiq_txn_t *t;
    int16_t err = find(tc, id, partition, &t);
    if (!err && (!t || t->state == KIQ_TXN_DEAD)) err = KIQ_ERR_TRANSACTIONAL_ID_NOT_FOUND;
    if (!err && kiq_txn_copy(out, t) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    pthread_mutex_unlock(&tc->mu);
    return err;
}

const kiq_txn_markers_context_t *kiq_txn_coordinator_markers(const kiq_txn_coordinator_t *tc)
{
    return &tc->b.markers;
}

int16_t kiq_txn_end(kiq_txn_coordinator_t *tc, int16_t version, const kiq_end_txn_request_t *req, int32_t *partition,
                    int64_t *need, kiq_end_txn_response_t *out)
{
    *need = -1;
    kiq_str_t id = req->transactional_id;
    *partition = kiq_txn_coordinator_partition_of(tc, id);
    if (!id.p || id.len == 0) return KIQ_ERR_INVALID_REQUEST;
    bool v2 = version >= 5;
    pthread_mutex_lock(&tc->mu);
    kiq_txn_t *t;
    kiq_txn_end_action_t action;
    int16_t err = find(tc, id, *partition, &t);
    if (!err) err = kiq_txn_check_end(t, req->producer_id, req->producer_epoch, req->committed, v2, &action);
    if (!err && action == KIQ_TXN_END_PREPARE) {
        kiq_txn_t *next = malloc(sizeof *next);
        int64_t new_id = -1;
        if (!next || kiq_txn_copy(next, t) != 0) {
            free(next);
            err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        } else if (v2 && kiq_txn_end_needs_new_id(next) && tc->b.next_producer_id(tc->b.ctx, &new_id) != 0) {
            KIQ_ERROR("EndTxn for %s: cannot allocate a producer id: %s", t->id, kiq_error_get());
            free_txn(next);
            err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        } else {
            kiq_txn_prepare_end(next, req->committed, v2, new_id, kiq_clock_wall_ms());
            err = write_state(tc, next, *partition, need);
            if (err) KIQ_WARN_LIMITED("EndTxn for %s: %s", t->id, kiq_error_get());
            if (!err && put(tc, id.p, (size_t)id.len, next) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            if (err) free_txn(next);
            else queue_ending(tc, next->id);
            if (!err) t = next;
        }
    }
    if (!err && v2) kiq_txn_end_answer(t, &out->producer_id, &out->producer_epoch);
    pthread_mutex_unlock(&tc->mu);
    if (err == KIQ_ERR_PRODUCER_FENCED && version < 2) err = KIQ_ERR_INVALID_PRODUCER_EPOCH;
    return err;
}

/* ---- the marker thread ---- */

/* Under tc->mu: the leader epoch of the __transaction_state partition,
 * the coordinator epoch its markers carry; -1 when it is not led here. */
static int32_t coordinator_epoch(kiq_txn_coordinator_t *tc, int32_t partition)
{
    kiq_topic_t *topic = kiq_topics_get(tc->b.topics, KIQ_STR(KIQ_TXN_TOPIC));
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    int32_t epoch = kiq_replica_led_partition(topic, partition, -1, &p, &log) == KIQ_ERR_NONE
                        ? kiq_partition_replica_leader_epoch(p->replica)
                        : -1;
    kiq_topic_unref(topic);
    return epoch;
}

/* Under tc->mu: Ongoing transactions past their timeout are aborted as
 * Kafka does: the epoch is bumped (the producer is fenced) and the
 * transaction prepared to abort; the markers follow. */
static void abort_timed_out(kiq_txn_coordinator_t *tc)
{
    int64_t now = kiq_clock_wall_ms();
    int32_t n = state_partitions(tc);
    kiq_str_map_iter_t it;
    kiq_str_map_iter_init(&it, tc->ids);
    const void *key;
    size_t len;
    void *value;
    while (kiq_str_map_next(&it, &key, &len, &value)) {
        kiq_txn_t *t = value;
        int32_t partition = kiq_coordinator_partition(key, len, n);
        if (!kiq_txn_timed_out(t, now) || !leads(tc, partition)) continue;
        kiq_txn_t next;
        if (kiq_txn_copy(&next, t) != 0) continue;
        kiq_txn_fence(&next, now);
        int64_t need;
        if (write_state(tc, &next, partition, &need) != 0) {
            KIQ_WARN("transactional id %s: cannot abort its timed-out transaction: %s", t->id, kiq_error_get());
            kiq_txn_free(&next);
            continue;
        }
        KIQ_INFO("transactional id %s: its transaction ran past its timeout of %d ms; aborting it (epoch now %d)",
                 t->id, t->timeout_ms, next.producer_epoch);
        /* the map's value is replaced in place: the iteration goes on */
        kiq_txn_free(t);
        *t = next;
        queue_ending(tc, t->id);
    }
}

/* Under tc->mu: transactional ids with no transaction for
 * transactional.id.expiration.ms are forgotten as Kafka does: a tombstone
 * in their partition, then gone from memory (a producer using one again
 * starts over at a new producer id). */
static void expire_ids(kiq_txn_coordinator_t *tc)
{
    int64_t now = kiq_clock_wall_ms();
    int64_t expiration = kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTIONAL_ID_EXPIRATION_MS);
    int32_t n = state_partitions(tc);
    for (;;) {
        kiq_str_map_iter_t it;
        kiq_str_map_iter_init(&it, tc->ids);
        const void *key;
        size_t len;
        void *value;
        kiq_txn_t *victim = NULL;
        int32_t partition = -1;
        while (!victim && kiq_str_map_next(&it, &key, &len, &value)) {
            kiq_txn_t *t = value;
            bool idle = t->state == KIQ_TXN_EMPTY || t->state == KIQ_TXN_COMPLETE_COMMIT ||
                        t->state == KIQ_TXN_COMPLETE_ABORT || t->state == KIQ_TXN_DEAD;
            partition = kiq_coordinator_partition(key, len, n);
            if (idle && now - t->updated_ms > expiration && leads(tc, partition)) victim = t;
        }
        if (!victim) return;
        kiq_keyed_records_t rs;
        kiq_keyed_records_init(&rs, now);
        int16_t err = kiq_txn_records_add_tombstone(&rs, victim->id) == 0 ? append_records(tc, &rs, partition, NULL)
                                                                           : KIQ_ERR_UNKNOWN_SERVER_ERROR;
        kiq_keyed_records_free(&rs);
        if (err) {
            KIQ_WARN("transactional id %s: cannot expire it: %s", victim->id, kiq_error_get());
            return; /* the next round tries again */
        }
        KIQ_INFO("transactional id %s: expired after %" PRId64 " ms without a transaction", victim->id,
                 now - victim->updated_ms);
        put(tc, victim->id, strlen(victim->id), NULL);
    }
}

/* Under tc->mu, released while the markers are written: one ending
 * transaction's markers, then its Complete* state. False when it must be
 * tried again. */
static bool complete_one(kiq_txn_coordinator_t *tc, const char *id)
{
    size_t len = strlen(id);
    int32_t partition = kiq_coordinator_partition(id, len, state_partitions(tc));
    kiq_txn_t *t = kiq_str_map_get(tc->ids, id, len);
    if (!t || !kiq_txn_preparing(t->state) || !leads(tc, partition)) return true; /* done, or not ours any more */
    kiq_txn_t snap;
    if (kiq_txn_copy(&snap, t) != 0) return false;
    kiq_txn_marker_t m = {
        .producer_id = snap.producer_id,
        .producer_epoch = snap.producer_epoch,
        .coordinator_epoch = coordinator_epoch(tc, partition),
        .commit = snap.state == KIQ_TXN_PREPARE_COMMIT,
    };
    bool *done = calloc((size_t)(snap.npartitions ? snap.npartitions : 1), sizeof *done);
    int left = done ? snap.npartitions : -1;
    pthread_mutex_unlock(&tc->mu);
    if (done) left = kiq_txn_markers_deliver(tc->markers, &m, snap.partitions, snap.npartitions, done, MARKERS_TIMEOUT_MS);
    pthread_mutex_lock(&tc->mu);
    free(done);
    bool finished = false;
    t = kiq_str_map_get(tc->ids, id, len);
    if (left != 0) {
        KIQ_DEBUG("transactional id %s: %d of %d markers still to write", id, left, snap.npartitions);
    } else if (!t || t->producer_id != snap.producer_id || t->producer_epoch != snap.producer_epoch ||
               t->state != snap.state || !leads(tc, partition)) {
        finished = true; /* changed meanwhile: whoever changed it goes on */
    } else {
        kiq_txn_t *next = malloc(sizeof *next);
        int64_t need;
        if (next && kiq_txn_copy(next, t) == 0) {
            kiq_txn_complete(next, kiq_clock_wall_ms());
            if (write_state(tc, next, partition, &need) == 0 && put(tc, id, len, next) == 0) {
                KIQ_DEBUG("transactional id %s: %s", id, kiq_txn_state_names[next->state]);
                finished = true;
            } else {
                KIQ_WARN("transactional id %s: cannot complete its transaction: %s", id, kiq_error_get());
                free_txn(next);
            }
        } else {
            free(next);
        }
    }
    kiq_txn_free(&snap);
    return finished;
}

/* The worker's round: timed-out transactions aborted and idle ids expired
 * when due, then the ending transactions' markers, oldest first; one that
 * cannot be finished yet goes to the back and the round ends with a pause
 * before the next. */
static int64_t markers_round(void *arg)
{
    kiq_txn_coordinator_t *tc = arg;
    int64_t interval =
        kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS);
    int64_t expire_interval =
        kiq_config_int(tc->b.config, KIQ_CFG_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS);
    int64_t wait = -1;
    pthread_mutex_lock(&tc->mu);
    while (!tc->stopped) {
        int64_t now = kiq_clock_mono_ms();
        if (now >= tc->next_check_ms) {
            abort_timed_out(tc);
            tc->next_check_ms = now + interval;
        }
        if (now >= tc->next_expiry_ms) {
            expire_ids(tc);
            tc->next_expiry_ms = now + expire_interval;
        }
        if (tc->nending == 0) {
            wait = (tc->next_check_ms < tc->next_expiry_ms ? tc->next_check_ms : tc->next_expiry_ms) - now;
            break;
        }
        char *id = tc->ending[0];
        memmove(tc->ending, tc->ending + 1, (size_t)(tc->nending - 1) * sizeof *tc->ending);
        tc->nending--;
        bool done = complete_one(tc, id);
        if (!done) queue_ending_quietly(tc, id);
        free(id);
        if (!done) {
            wait = MARKERS_RETRY_MS;
            break;
        }
    }
    bool stopped = tc->stopped;
    pthread_mutex_unlock(&tc->mu);
    return stopped ? -1 : wait;
}
