/* A transactional id's state and the coordinator's rules; see txn_metadata.h. */
#include "txn/txn_metadata.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

const char *const kiq_txn_state_names[KIQ__TXN_STATES] = {
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
    "PrepareEpochFence",
};

int kiq_txn_init(kiq_txn_t *t, const char *id, int64_t now_ms)
{
    *t = (kiq_txn_t){
        .producer_id = -1,
        .previous_producer_id = -1,
        .producer_epoch = -1,
        .last_epoch = -1,
        .state = KIQ_TXN_EMPTY,
        .start_ms = -1,
        .updated_ms = now_ms,
        .next_producer_id = -1,
    };
    if (!(t->id = strdup(id))) return kiq_error_set("out of memory");
    return 0;
}

static void clear_partitions(kiq_txn_t *t)
{
    for (int i = 0; i < t->npartitions; i++) free(t->partitions[i].topic);
    t->npartitions = 0;
}

void kiq_txn_free(kiq_txn_t *t)
{
    if (!t) return;
    clear_partitions(t);
    free(t->partitions);
    free(t->id);
    *t = (kiq_txn_t){0};
}

int kiq_txn_copy(kiq_txn_t *dst, const kiq_txn_t *src)
{
    *dst = *src;
    dst->partitions = NULL;
    dst->npartitions = dst->cap = 0;
    if (!(dst->id = strdup(src->id))) return kiq_error_set("out of memory");
    for (int i = 0; i < src->npartitions; i++)
        if (kiq_txn_add_partition(dst, src->partitions[i].topic, src->partitions[i].partition) != 0) {
            kiq_txn_free(dst);
            return -1;
        }
    return 0;
}

bool kiq_txn_has_partition(const kiq_txn_t *t, const char *topic, int32_t partition)
{
    for (int i = 0; i < t->npartitions; i++)
        if (t->partitions[i].partition == partition && strcmp(t->partitions[i].topic, topic) == 0) return true;
    return false;
}

int kiq_txn_add_partition(kiq_txn_t *t, const char *topic, int32_t partition)
{
    if (kiq_txn_has_partition(t, topic, partition)) return 0;
    if (t->npartitions == t->cap) {
        int cap = t->cap ? t->cap * 2 : 4;
        kiq_txn_partition_t *more = realloc(t->partitions, (size_t)cap * sizeof *more);
        if (!more) return kiq_error_set("out of memory");
        t->partitions = more;
        t->cap = cap;
    }
    char *name = strdup(topic);
    if (!name) return kiq_error_set("out of memory");
    t->partitions[t->npartitions++] = (kiq_txn_partition_t){name, partition};
    return 0;
}

bool kiq_txn_preparing(kiq_txn_state_t s) { return s == KIQ_TXN_PREPARE_COMMIT || s == KIQ_TXN_PREPARE_ABORT; }

int16_t kiq_txn_check_init(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, int32_t timeout_ms,
                           int32_t max_timeout_ms, kiq_txn_init_action_t *action)
{
    *action = KIQ_TXN_INIT_BUMP;
    if (timeout_ms <= 0 || timeout_ms > max_timeout_ms) return KIQ_ERR_INVALID_TRANSACTION_TIMEOUT;
    /* a producer that had an id must still be the current one (KIP-360):
     * its own id and epoch, or the id before a rotation */
    if (producer_id != -1 && t->producer_id != -1) {
        if (producer_id == t->producer_id && t->last_epoch >= 0 && producer_epoch == t->last_epoch &&
            t->state == KIQ_TXN_EMPTY) {
            *action = KIQ_TXN_INIT_CURRENT;
            return KIQ_ERR_NONE;
        }
        bool current = producer_id == t->producer_id && producer_epoch == t->producer_epoch;
        bool rotated = producer_id == t->previous_producer_id && t->producer_epoch == 0;
        if (!current && !rotated) return KIQ_ERR_PRODUCER_FENCED;
    }
    if (kiq_txn_preparing(t->state) || t->state == KIQ_TXN_PREPARE_EPOCH_FENCE) return KIQ_ERR_CONCURRENT_TRANSACTIONS;
    if (t->state == KIQ_TXN_ONGOING) {
        /* a new incarnation of the producer: the old one's transaction is
         * aborted under a bumped epoch; the client asks again */
        *action = KIQ_TXN_INIT_FENCE_ABORT;
        return KIQ_ERR_CONCURRENT_TRANSACTIONS;
    }
    return KIQ_ERR_NONE;
}

bool kiq_txn_needs_new_id(const kiq_txn_t *t) { return t->producer_id < 0 || t->producer_epoch >= KIQ_TXN_LAST_EPOCH; }

void kiq_txn_bump(kiq_txn_t *t, int64_t new_producer_id, int32_t timeout_ms, int64_t now_ms, bool by_producer)
{
    if (kiq_txn_needs_new_id(t)) {
        t->previous_producer_id = t->producer_id;
        t->producer_id = new_producer_id;
        t->producer_epoch = 0;
        t->last_epoch = -1;
    } else {
        t->last_epoch = by_producer ? t->producer_epoch : -1;
        t->producer_epoch++;
    }
    t->fenced = false;
    t->timeout_ms = timeout_ms;
    clear_partitions(t);
    t->state = KIQ_TXN_EMPTY;
    t->start_ms = -1;
    t->updated_ms = now_ms;
}

/* The checks every request of a producer in a transaction passes first. */
static int16_t check_producer(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch)
{
    /* the new producer id a v2 end at the last epoch answered, before its
     * markers are written: the next transaction waits for them */
    if (t && t->next_producer_id >= 0 && producer_id == t->next_producer_id && producer_epoch == 0)
        return KIQ_ERR_CONCURRENT_TRANSACTIONS;
    if (!t || t->producer_id != producer_id) return KIQ_ERR_INVALID_PRODUCER_ID_MAPPING;
    if (t->producer_epoch != producer_epoch) return KIQ_ERR_PRODUCER_FENCED;
    return KIQ_ERR_NONE;
}

int16_t kiq_txn_check_add(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, int npartitions,
                          const char *const *topics, const int32_t *partitions, bool *all_there)
{
    *all_there = false;
    int16_t err = check_producer(t, producer_id, producer_epoch);
    if (err) return err;
    if (t->state == KIQ_TXN_DEAD) return KIQ_ERR_INVALID_PRODUCER_ID_MAPPING; /* expired: gone */
    if (kiq_txn_preparing(t->state) || t->state == KIQ_TXN_PREPARE_EPOCH_FENCE) return KIQ_ERR_CONCURRENT_TRANSACTIONS;
    if (t->state == KIQ_TXN_ONGOING) {
        bool all = true;
        for (int i = 0; i < npartitions && all; i++) all = kiq_txn_has_partition(t, topics[i], partitions[i]);
        *all_there = all;
    }
    return KIQ_ERR_NONE;
}

void kiq_txn_begin_if_needed(kiq_txn_t *t, int64_t now_ms)
{
    if (t->state != KIQ_TXN_ONGOING) t->start_ms = now_ms;
    t->state = KIQ_TXN_ONGOING;
    t->updated_ms = now_ms;
}

/* v2: the request is a retry of the last end, which bumped the epoch
 * (from producer_epoch) or, at the last epoch, moved to a new producer id;
 * told by the epochs alone, as Kafka does, so it holds after a reload. */
static bool v2_retry(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch)
{
    if (t->fenced) return false;
    if (producer_id == t->producer_id) return producer_epoch >= 0 && producer_epoch + 1 == t->producer_epoch;
    return producer_id == t->previous_producer_id && t->producer_epoch == 0 && producer_epoch == KIQ_TXN_LAST_EPOCH;
}

int16_t kiq_txn_check_end(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, bool commit, bool v2,
                          kiq_txn_end_action_t *action)
{
    *action = KIQ_TXN_END_PREPARE;
    bool retry = v2 && t && v2_retry(t, producer_id, producer_epoch);
    if (!retry) {
        int16_t err = check_producer(t, producer_id, producer_epoch);
        if (err) return err;
    }
    bool same = commit == (t->state == KIQ_TXN_COMPLETE_COMMIT || t->state == KIQ_TXN_PREPARE_COMMIT);
    switch (t->state) {
    case KIQ_TXN_ONGOING: return retry ? KIQ_ERR_PRODUCER_FENCED : KIQ_ERR_NONE;
    case KIQ_TXN_COMPLETE_COMMIT:
    case KIQ_TXN_COMPLETE_ABORT:
        /* the same end again is a retry of one that succeeded; under v2 a
         * retry is at the epoch before, and an abort at the current epoch
         * is a new one with nothing in it */
        if (v2 && !retry) {
            if (commit) return KIQ_ERR_INVALID_TXN_STATE;
            return KIQ_ERR_NONE;
        }
        if (!same) return KIQ_ERR_INVALID_TXN_STATE;
        *action = KIQ_TXN_END_DONE;
        return KIQ_ERR_NONE;
    case KIQ_TXN_PREPARE_COMMIT:
    case KIQ_TXN_PREPARE_ABORT:
        /* v2: at the epoch the end answered, the next transaction's end,
         * which waits for this one's markers like anything else of it */
        if (v2 && !retry) return KIQ_ERR_CONCURRENT_TRANSACTIONS;
        return same ? KIQ_ERR_CONCURRENT_TRANSACTIONS : KIQ_ERR_INVALID_TXN_STATE;
    case KIQ_TXN_PREPARE_EPOCH_FENCE: return KIQ_ERR_CONCURRENT_TRANSACTIONS;
    case KIQ_TXN_EMPTY:
        /* v2: aborting nothing bumps the epoch (a producer's way to fence
         * its own stray requests); nothing ended at the epoch before */
        if (retry) return KIQ_ERR_PRODUCER_FENCED;
        return v2 && !commit ? KIQ_ERR_NONE : KIQ_ERR_INVALID_TXN_STATE;
    default: return retry ? KIQ_ERR_PRODUCER_FENCED : KIQ_ERR_INVALID_TXN_STATE; /* Dead: nothing to end */
    }
}

bool kiq_txn_end_needs_new_id(const kiq_txn_t *t) { return t->producer_epoch >= KIQ_TXN_LAST_EPOCH; }

void kiq_txn_prepare_end(kiq_txn_t *t, bool commit, bool v2, int64_t new_producer_id, int64_t now_ms)
{
    if (v2) {
        t->client_version = 2;
        if (kiq_txn_end_needs_new_id(t)) t->next_producer_id = new_producer_id;
        /* up to 32767: the markers fence the last epoch too */
        t->last_epoch = t->producer_epoch;
        if (t->producer_epoch < INT16_MAX) t->producer_epoch++;
    }
    t->fenced = false;
    if (t->state != KIQ_TXN_ONGOING) t->start_ms = now_ms; /* an abort of nothing */
    kiq_txn_set_state(t, commit ? KIQ_TXN_PREPARE_COMMIT : KIQ_TXN_PREPARE_ABORT, now_ms);
}

void kiq_txn_end_answer(const kiq_txn_t *t, int64_t *producer_id, int16_t *producer_epoch)
{
    *producer_id = t->next_producer_id >= 0 ? t->next_producer_id : t->producer_id;
    *producer_epoch = t->next_producer_id >= 0 ? 0 : t->producer_epoch;
}

void kiq_txn_set_state(kiq_txn_t *t, kiq_txn_state_t state, int64_t now_ms)
{
    t->state = state;
    t->updated_ms = now_ms;
}

void kiq_txn_fence(kiq_txn_t *t, int64_t now_ms)
{
    /* up to 32767: the old producer is fenced even at the last epoch, and
     * the next InitProducerId rotates to a new producer id. One bump, v2
     * too: the abort goes out at the fencing epoch, as Kafka's does. */
    if (t->producer_epoch < INT16_MAX) t->producer_epoch++;
    t->last_epoch = -1;
    t->fenced = true;
    t->state = KIQ_TXN_PREPARE_ABORT;
    t->updated_ms = now_ms;
}

void kiq_txn_complete(kiq_txn_t *t, int64_t now_ms)
{
    t->state = t->state == KIQ_TXN_PREPARE_COMMIT ? KIQ_TXN_COMPLETE_COMMIT : KIQ_TXN_COMPLETE_ABORT;
    if (t->next_producer_id >= 0) {
        t->previous_producer_id = t->producer_id;
        t->producer_id = t->next_producer_id;
        t->producer_epoch = 0;
        t->last_epoch = -1;
        t->next_producer_id = -1;
    }
    clear_partitions(t);
    t->start_ms = -1;
    t->updated_ms = now_ms;
}

bool kiq_txn_timed_out(const kiq_txn_t *t, int64_t now_ms)
{
    return t->state == KIQ_TXN_ONGOING && t->start_ms >= 0 && now_ms - t->start_ms > t->timeout_ms;
}
