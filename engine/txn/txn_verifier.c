/* The transaction verifier; see txn_verifier.h. */
#include "txn/txn_verifier.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/coordinator_key.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "proto/errors.h"
#include "proto/messages.h"
#include "txn/broker_peers.h"

/* How long an answer is kept for the requests that wait on it: longer than
 * a producer's in-flight requests take to come back for it. */
#define ANSWER_KEPT_NS (10LL * 1000000000)
#define REQUEST_TIMEOUT_MS 5000
/* The thread's look at the table when nothing wakes it. */
#define IDLE_WAIT_MS 1000

enum question_state { QUEUED, SENT, ANSWERED };

typedef struct question {
    char *txn_id; /* malloc'd, with the topic after it */
    size_t txn_id_len;
    const char *topic;
    int32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
    bool add; /* transactions v2: the partition is to be added, not verified */
    uint64_t guard;
    enum question_state state;
    int16_t err;
    int64_t answered_ns;
} question_t;

struct kiq_txn_verifier {
    kiq_topics_t *topics;
    kiq_metadata_cache_t *metadata;
    int32_t node_id;
    kiq_broker_peers_t *peers; /* the worker's */
    /* asks the questions queued, from start to stop; poked when one is */
    kiq_worker_t *worker;
    struct job *jobs; /* the worker's: a round's questions */
    int jobs_cap;
    pthread_mutex_t mu; /* guards everything below */
    bool stopping;
    question_t *qs; /* malloc'd */
    int n, cap;
};

kiq_txn_verifier_t *kiq_txn_verifier_new(kiq_topics_t *topics, kiq_metadata_cache_t *metadata,
                                         const struct kiq_peer_security *security, int32_t node_id,
                                         kiq_metrics_t *metrics)
{
    kiq_txn_verifier_t *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    if (!(v->peers = kiq_broker_peers_new(metadata, security, node_id, "txn-verifier", false, metrics))) {
        free(v);
        return NULL;
    }
    v->topics = topics;
    v->metadata = metadata;
    v->node_id = node_id;
    pthread_mutex_init(&v->mu, NULL);
    return v;
}

void kiq_txn_verifier_free(kiq_txn_verifier_t *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) free(v->qs[i].txn_id);
    free(v->qs);
    kiq_broker_peers_free(v->peers);
    free(v->jobs);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

/* Under v->mu: forgets answers nobody can still be waiting for. */
static void prune(kiq_txn_verifier_t *v, int64_t now)
{
    int k = 0;
    for (int i = 0; i < v->n; i++) {
        if (v->qs[i].state == ANSWERED && now - v->qs[i].answered_ns > ANSWER_KEPT_NS)
            free(v->qs[i].txn_id);
        else
            v->qs[k++] = v->qs[i];
    }
    v->n = k;
}

static bool same(const question_t *q, kiq_str_t id, int64_t producer_id, int16_t producer_epoch, const char *topic,
                 int32_t partition, bool add, uint64_t guard)
{
    return q->guard == guard && q->producer_id == producer_id && q->producer_epoch == producer_epoch && q->add == add &&
           q->partition == partition && strcmp(q->topic, topic) == 0 && q->txn_id_len == (size_t)id.len &&
           memcmp(q->txn_id, id.p, (size_t)id.len) == 0;
}

int kiq_txn_verifier_ask(kiq_txn_verifier_t *v, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                         const char *topic, int32_t partition, bool add, uint64_t guard, int16_t *err)
{
    if (!id.p || id.len <= 0) {
        *err = KIQ_ERR_INVALID_REQUEST;
        kiq_error_set("a transactional batch without a transactional id");
        return 1;
    }
    pthread_mutex_lock(&v->mu);
    int rc = 1;
    if (v->stopping) {
        *err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        kiq_error_set("the broker is stopping");
        goto out;
    }
    for (int i = 0; i < v->n; i++) {
        question_t *q = &v->qs[i];
        if (!same(q, id, producer_id, producer_epoch, topic, partition, add, guard)) continue;
        if (q->state == ANSWERED) {
            *err = q->err;
            if (q->err) kiq_error_set("its coordinator answered error %d", q->err);
        } else {
            rc = 0;
        }
        goto out;
    }
    prune(v, kiq_clock_mono_ns());
    if (v->n >= KIQ_TXN_VERIFIER_MAX_QUESTIONS) {
        *err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        kiq_error_set("%d transaction verifications are under way already", v->n);
        goto out;
    }
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 16;
        question_t *grown = realloc(v->qs, (size_t)cap * sizeof *grown);
        if (!grown) goto oom;
        v->qs = grown;
        v->cap = cap;
    }
    size_t tlen = strlen(topic);
    char *mem = malloc((size_t)id.len + 1 + tlen + 1);
    if (!mem) goto oom;
    memcpy(mem, id.p, (size_t)id.len);
    mem[id.len] = '\0';
    memcpy(mem + id.len + 1, topic, tlen + 1);
    v->qs[v->n++] = (question_t){mem, (size_t)id.len, mem + id.len + 1, partition, producer_id, producer_epoch, add,
                                 guard, QUEUED, 0, 0};
    if (v->worker) kiq_worker_poke(v->worker);
    rc = 0;
    goto out;
oom:
    *err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    kiq_error_set("out of memory");
out:
    pthread_mutex_unlock(&v->mu);
    return rc;
}

/* ---- the thread ---- */

/* What the thread asks about, copied out of the table (the strings stay:
 * a question being sent is not pruned). */
typedef struct job {
    question_t q;
    int32_t coordinator;
    int16_t err;
    bool answered;
} job_t;

/* The broker leading the __transaction_state partition of the job's id;
 * -1 with the job answered when there is none to ask. */
static int32_t coordinator_of(kiq_txn_verifier_t *v, job_t *j)
{
    int32_t n = kiq_metadata_cache_partition_count(v->metadata, KIQ_TXN_TOPIC, strlen(KIQ_TXN_TOPIC));
    kiq_cached_partition_t cp;
    if (n > 0 &&
        kiq_metadata_cache_partition(v->metadata, KIQ_TXN_TOPIC, strlen(KIQ_TXN_TOPIC),
                                     kiq_coordinator_partition(j->q.txn_id, j->q.txn_id_len, n), &cp) &&
        cp.leader >= 0 && cp.leader != v->node_id)
        return cp.leader;
    /* none yet, or this broker is about to load it: the producer retries */
    j->err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    j->answered = true;
    return -1;
}

/* One AddPartitionsToTxn v4 to broker `to` for the jobs at idx[0..k)
 * (verify_only unless the job adds); each gets its partition's answer. */
static void ask_coordinator(kiq_txn_verifier_t *v, int32_t to, job_t *jobs, const int *idx, int k)
{
    kiq_peer_channel_t *line = kiq_broker_peers_line(v->peers, to);
    int16_t ver = line ? kiq_peer_channel_version(line, KIQ_API_ADD_PARTITIONS_TO_TXN) : -1;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_add_partitions_to_txn_response_t resp;
    int16_t all_err = KIQ_ERR_NONE;
    if (ver < 4) {
        KIQ_WARN("transaction verification at broker %d: %s", to,
                 ver >= 0 ? "it does not serve AddPartitionsToTxn v4" : kiq_error_get());
        all_err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        kiq_add_partitions_to_txn_request_t req;
        kiq_add_partitions_to_txn_request_init(&req);
        req.transactions_n = k;
        req.transactions = kiq_arena_calloc(&a, (size_t)k, sizeof *req.transactions);
        for (int i = 0; i < k; i++) {
            const question_t *q = &jobs[idx[i]].q;
            kiq_add_partitions_to_txn_request_transactions_t *t = &req.transactions[i];
            kiq_add_partitions_to_txn_request_transactions_init(t);
            t->transactional_id = (kiq_str_t){q->txn_id, (int32_t)q->txn_id_len};
            t->producer_id = q->producer_id;
            t->producer_epoch = q->producer_epoch;
            t->verify_only = !q->add;
            t->topics_n = 1;
            t->topics = kiq_arena_calloc(&a, 1, sizeof *t->topics);
            kiq_add_partitions_to_txn_request_transactions_topics_init(t->topics);
            t->topics->name = KIQ_STR(q->topic);
            t->topics->partitions_n = 1;
            t->topics->partitions = (int32_t *)&q->partition;
        }
        if (kiq_peer_channel_request(line, KIQ_API_ADD_PARTITIONS_TO_TXN, 4, &req, &a, &resp, REQUEST_TIMEOUT_MS) !=
            0) {
            KIQ_WARN("transaction verification at broker %d: %s", to, kiq_error_get());
            all_err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        } else {
            all_err = resp.error_code;
        }
    }
    if (all_err == KIQ_ERR_NONE) {
        for (int32_t t = 0; t < resp.results_by_transaction_n; t++) {
            const kiq_add_partitions_to_txn_response_results_by_transaction_t *rt = &resp.results_by_transaction[t];
            for (int32_t x = 0; x < rt->topic_results_n; x++) {
                const kiq_add_partitions_to_txn_response_results_by_transaction_topic_results_t *tr =
                    &rt->topic_results[x];
                for (int32_t y = 0; y < tr->results_by_partition_n; y++)
                    for (int i = 0; i < k; i++) {
                        job_t *j = &jobs[idx[i]];
                        if (j->answered || j->q.partition != tr->results_by_partition[y].partition_index ||
                            !kiq_str_eq(tr->name, j->q.topic) || rt->transactional_id.len != (int32_t)j->q.txn_id_len ||
                            memcmp(rt->transactional_id.p, j->q.txn_id, j->q.txn_id_len) != 0)
                            continue;
                        j->err = tr->results_by_partition[y].partition_error_code;
                        j->answered = true;
                        break;
                    }
            }
        }
    }
    for (int i = 0; i < k; i++) {
        job_t *j = &jobs[idx[i]];
        if (j->answered) continue;
        /* left out of the answer, or nothing came back: asked again on retry */
        j->err = all_err ? all_err : KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        j->answered = true;
    }
    kiq_arena_reset(&a);
}

static void ask_all(kiq_txn_verifier_t *v, job_t *jobs, int n)
{
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) {
        for (int i = 0; i < n; i++) {
            jobs[i].err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
            jobs[i].answered = true;
        }
        return;
    }
    for (int i = 0; i < n; i++) jobs[i].coordinator = coordinator_of(v, &jobs[i]);
    /* one request per coordinator */
    for (int i = 0; i < n; i++) {
        int32_t to = jobs[i].coordinator;
        if (to < 0 || jobs[i].answered) continue;
        int k = 0;
        for (int j = i; j < n; j++)
            if (jobs[j].coordinator == to && !jobs[j].answered) {
                idx[k++] = j;
                jobs[j].coordinator = -1;
            }
        ask_coordinator(v, to, jobs, idx, k);
    }
    free(idx);
}

/* Under v->mu: stores the jobs' answers. */
static void store_answers(kiq_txn_verifier_t *v, const job_t *jobs, int n)
{
    int64_t now = kiq_clock_mono_ns();
    for (int i = 0; i < n; i++) {
        const question_t *jq = &jobs[i].q;
        kiq_str_t id = {jq->txn_id, (int32_t)jq->txn_id_len};
        for (int x = 0; x < v->n; x++) {
            question_t *q = &v->qs[x];
            if (q->state != SENT ||
                !same(q, id, jq->producer_id, jq->producer_epoch, jq->topic, jq->partition, jq->add, jq->guard))
                continue;
            q->state = ANSWERED;
            q->err = jobs[i].err;
            q->answered_ns = now;
            if (q->err)
                KIQ_DEBUG("transaction %s of producer %" PRId64 " epoch %d: %s-%d not verified (error %d)", q->txn_id,
                          q->producer_id, q->producer_epoch, q->topic, q->partition, q->err);
            break;
        }
    }
}

/* The worker's round: every queued question asked of its coordinator at
 * once; with none, old answers pruned and a second's wait. */
static int64_t verifier_round(void *arg)
{
    kiq_txn_verifier_t *v = arg;
    pthread_mutex_lock(&v->mu);
    int n = 0;
    for (int i = 0; !v->stopping && i < v->n; i++)
        if (v->qs[i].state == QUEUED) n++;
    if (v->stopping || n == 0) {
        if (!v->stopping) prune(v, kiq_clock_mono_ns());
        bool stopping = v->stopping;
        pthread_mutex_unlock(&v->mu);
        return stopping ? -1 : IDLE_WAIT_MS;
    }
    if (n > v->jobs_cap) {
        job_t *grown = realloc(v->jobs, (size_t)n * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&v->mu);
            return IDLE_WAIT_MS;
        }
        v->jobs = grown;
        v->jobs_cap = n;
    }
    job_t *jobs = v->jobs;
    int k = 0;
    for (int i = 0; i < v->n; i++)
        if (v->qs[i].state == QUEUED) {
            v->qs[i].state = SENT;
            jobs[k++] = (job_t){v->qs[i], -1, 0, false};
        }
    pthread_mutex_unlock(&v->mu);
    ask_all(v, jobs, k);
    pthread_mutex_lock(&v->mu);
    store_answers(v, jobs, k);
    pthread_mutex_unlock(&v->mu);
    for (int i = 0; i < k; i++) kiq_topics_notify_append(v->topics, jobs[i].q.topic, jobs[i].q.partition);
    return 0; /* at once again: more may have come meanwhile */
}

int kiq_txn_verifier_start(kiq_txn_verifier_t *v)
{
    kiq_worker_config_t wc = {.name = "txn-verify", .round = verifier_round, .ctx = v};
    kiq_worker_t *w = kiq_worker_start(&wc);
    if (!w) return -1;
    pthread_mutex_lock(&v->mu);
    v->worker = w;
    pthread_mutex_unlock(&v->mu);
    return 0;
}

void kiq_txn_verifier_stop(kiq_txn_verifier_t *v)
{
    pthread_mutex_lock(&v->mu);
    v->stopping = true;
    kiq_worker_t *w = v->worker;
    v->worker = NULL;
    pthread_mutex_unlock(&v->mu);
    kiq_broker_peers_shutdown(v->peers);
    kiq_worker_stop(w);
    /* nobody will ask these now: whoever waits on them hears so */
    pthread_mutex_lock(&v->mu);
    int64_t now = kiq_clock_mono_ns();
    for (int i = 0; i < v->n; i++)
        if (v->qs[i].state != ANSWERED) {
            v->qs[i].state = ANSWERED;
            v->qs[i].err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
            v->qs[i].answered_ns = now;
        }
    pthread_mutex_unlock(&v->mu);
}
