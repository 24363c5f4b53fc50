/* A partition's replication state; see partition_replica.h. */
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "replica/partition_replica.h"

static bool contains(const int32_t *ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

static int copy_ids(int32_t *dst, const int32_t *src, int n)
{
    if (n > KIQ_MAX_REPLICAS) n = KIQ_MAX_REPLICAS;
    if (n > 0) memcpy(dst, src, (size_t)n * sizeof *dst);
    return n < 0 ? 0 : n;
}

void kiq_partition_replica_init(kiq_partition_replica_t *r, int32_t self, int32_t leader_epoch)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    kiq_partition_replica_lead_alone(r, self, leader_epoch);
}

void kiq_partition_replica_lead_alone(kiq_partition_replica_t *r, int32_t self, int32_t leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    r->self = self;
    memset(&r->v, 0, sizeof r->v);
    r->v.role = KIQ_REPLICA_LEADER;
    r->v.leader = self;
    r->v.leader_epoch = leader_epoch;
    r->v.replicas[0] = r->v.isr[0] = self;
    r->v.nreplicas = r->v.nisr = 1;
    r->v.epoch_start_offset = -1;
    pthread_mutex_unlock(&r->mu);
}

void kiq_partition_replica_destroy(kiq_partition_replica_t *r) { pthread_mutex_destroy(&r->mu); }

static struct kiq_partition_replica *state_create(void *ctx, const kiq_partition_t *p)
{
    const kiq_partition_replica_start_t *start = ctx;
    kiq_partition_replica_t *r = malloc(sizeof *r);
    if (!r) return NULL;
    kiq_partition_replica_init(r, start->self, p->leader_epoch);
    if (start->cluster) kiq_partition_replica_stop(r);
    r->observers = start->observers;
    r->topic = p->topic->name;
    r->partition = p->index;
    return r;
}

static void state_destroy(void *ctx, struct kiq_partition_replica *r)
{
    kiq_partition_replica_destroy(r);
    free(r);
}

kiq_partition_state_ops_t kiq_partition_replica_states(const kiq_partition_replica_start_t *start)
{
    return (kiq_partition_state_ops_t){state_create, state_destroy, (void *)start};
}

static void set_sets(kiq_replica_view_t *v, int32_t partition_epoch, const int32_t *replicas, int nreplicas,
                     const int32_t *isr, int nisr)
{
    v->partition_epoch = partition_epoch;
    v->nreplicas = copy_ids(v->replicas, replicas, nreplicas);
    v->nisr = copy_ids(v->isr, isr, nisr);
}

bool kiq_replica_view_stale(const kiq_replica_view_t *v, int32_t leader_epoch)
{
    return leader_epoch < v->leader_epoch && v->role != KIQ_REPLICA_NONE;
}

/* Under the mutex: the event announcing that follower f left the ISR
 * (point ISR_SHRUNK) or came back (ISR_EXPANDED), now of nisr members. */
static kiq_event_t isr_event(const kiq_partition_replica_t *r, enum kiq_point point, kiq_follower_state_t *f,
                             kiq_partition_log_t *log, int nisr, int64_t now_ms, int64_t lag_ms)
{
    kiq_event_t e = kiq_event(point, r->self);
    e.topic = r->topic;
    e.partition = r->partition;
    e.peer = f->broker_id;
    e.first_offset = f->leo;
    e.after = kiq_partition_log_end_offset(log);
    e.records = nisr;
    int64_t since = now_ms - f->last_caught_up_ms;
    e.extra = since < 0 ? 0 : since > INT32_MAX ? INT32_MAX : (int32_t)since;
    int64_t hw = kiq_partition_log_high_watermark(log);
    if (point == KIQ_POINT_ISR_SHRUNK) {
        e.before = f->left_isr_at = hw;
        if (since > lag_ms) e.flags = KIQ_EVENT_LAGGED;
    } else {
        e.before = f->left_isr_at >= 0 ? f->left_isr_at : hw;
        f->left_isr_at = -1;
    }
    return e;
}

/* Under the mutex, the ISR having just become v->isr (it was `was`): an
 * event into events for each follower that left it or came back (lagged
 * when it had not caught up for lag_ms). The count. */
static int isr_changes(kiq_partition_replica_t *r, kiq_partition_log_t *log, const int32_t *was, int nwas,
                       int64_t now_ms, int64_t lag_ms, kiq_event_t *events)
{
    kiq_replica_view_t *v = &r->v;
    int n = 0;
    for (int i = 0; i < v->nfollowers && log; i++) {
        kiq_follower_state_t *f = &v->followers[i];
        bool before = contains(was, nwas, f->broker_id), now = contains(v->isr, v->nisr, f->broker_id);
        if (before != now)
            events[n++] =
                isr_event(r, now ? KIQ_POINT_ISR_EXPANDED : KIQ_POINT_ISR_SHRUNK, f, log, v->nisr, now_ms, lag_ms);
    }
    return n;
}

static void emit_all(const kiq_partition_replica_t *r, const kiq_event_t *events, int n)
{
    for (int i = 0; i < n; i++)
        if (kiq_observers_want(r->observers, events[i].point)) kiq_observers_emit(r->observers, &events[i]);
}

int kiq_partition_replica_become_leader(kiq_partition_replica_t *r, int32_t leader_epoch, int32_t partition_epoch,
                                        const int32_t *replicas, int nreplicas, const int32_t *isr, int nisr,
                                        int64_t now_ms, kiq_partition_log_t *log, int64_t lag_ms)
{
    kiq_event_t events[2 * KIQ_MAX_REPLICAS];
    int nevents = 0;
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    if (kiq_replica_view_stale(v, leader_epoch)) {
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    bool same_term = v->role == KIQ_REPLICA_LEADER && leader_epoch == v->leader_epoch;
    /* a repeated LeaderAndIsr older than an ISR change the controller
     * already answered must not bring the old ISR back */
    if (same_term && partition_epoch < v->partition_epoch) {
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    int32_t was[KIQ_MAX_REPLICAS];
    int nwas = same_term ? copy_ids(was, v->isr, v->nisr) : 0;
    int64_t log_end = kiq_partition_log_end_offset(log);
    v->role = KIQ_REPLICA_LEADER;
    v->leader = r->self;
    v->leader_epoch = leader_epoch;
    set_sets(v, partition_epoch, replicas, nreplicas, isr, nisr);
    /* within the same term followers keep their progress; a replica new
     * to the set starts afresh */
    kiq_follower_state_t old[KIQ_MAX_REPLICAS];
    int nold = same_term ? v->nfollowers : 0;
    memcpy(old, v->followers, (size_t)nold * sizeof *old);
    v->nfollowers = 0;
    for (int i = 0; i < v->nreplicas; i++) {
        if (v->replicas[i] == r->self) continue;
        kiq_follower_state_t *f = &v->followers[v->nfollowers++];
        *f = (kiq_follower_state_t){.broker_id = v->replicas[i], .leo = -1, .last_caught_up_ms = now_ms,
                                    .last_fetch_ms = -1, .leader_leo_at_last_fetch = -1, .left_isr_at = -1};
        for (int j = 0; j < nold; j++)
            if (old[j].broker_id == f->broker_id) *f = old[j];
        /* a new term: what is written from its start on waits not for one
         * out of the ISR (within a term isr_changes keeps this) */
        if (!same_term) f->left_isr_at = contains(v->isr, v->nisr, f->broker_id) ? -1 : log_end;
    }
    /* within a term the controller's word may bring an ISR change before
     * the answer to the AlterPartition that asked for it */
    if (same_term) nevents = isr_changes(r, log, was, nwas, now_ms, lag_ms, events);
    if (!same_term) {
        v->isr_change_pending = false;
        v->epoch_start_offset = log_end;
    }
    pthread_mutex_unlock(&r->mu);
    emit_all(r, events, nevents);
    return 0;
}

int kiq_partition_replica_become_follower(kiq_partition_replica_t *r, int32_t leader, int32_t leader_epoch,
                                          int32_t partition_epoch, const int32_t *replicas, int nreplicas,
                                          const int32_t *isr, int nisr)
{
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    if (kiq_replica_view_stale(v, leader_epoch)) {
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    if (v->role == KIQ_REPLICA_FOLLOWER && leader_epoch == v->leader_epoch && partition_epoch < v->partition_epoch) {
        pthread_mutex_unlock(&r->mu);
        return 0; /* older news of this term */
    }
    v->role = KIQ_REPLICA_FOLLOWER;
    v->leader = leader;
    v->leader_epoch = leader_epoch;
    set_sets(v, partition_epoch, replicas, nreplicas, isr, nisr);
    v->nfollowers = 0;
    v->isr_change_pending = false;
    pthread_mutex_unlock(&r->mu);
    return 0;
}

void kiq_partition_replica_stop(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    r->v.role = KIQ_REPLICA_NONE;
    r->v.leader = -1;
    r->v.nfollowers = 0;
    pthread_mutex_unlock(&r->mu);
}

static int16_t epoch_check(const kiq_replica_view_t *v, int32_t current_leader_epoch)
{
    if (current_leader_epoch < 0 || current_leader_epoch == v->leader_epoch) return KIQ_ERR_NONE;
    return current_leader_epoch < v->leader_epoch ? KIQ_ERR_FENCED_LEADER_EPOCH : KIQ_ERR_UNKNOWN_LEADER_EPOCH;
}

int16_t kiq_partition_replica_check_leader(kiq_partition_replica_t *r, int32_t current_leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    int16_t err = r->v.role != KIQ_REPLICA_LEADER ? KIQ_ERR_NOT_LEADER_OR_FOLLOWER
                                                  : epoch_check(&r->v, current_leader_epoch);
    pthread_mutex_unlock(&r->mu);
    return err;
}

/* Whether a leader's high watermark is known: it has reached the offset
 * the leader's term started at (epoch_start < 0: not a leader, known). */
static bool hw_reaches(kiq_partition_log_t *log, int64_t epoch_start)
{
    return epoch_start < 0 || kiq_partition_log_high_watermark(log) >= epoch_start;
}

int16_t kiq_partition_replica_check_consumer_fetch(kiq_partition_replica_t *r, kiq_partition_log_t *log,
                                                   bool any_replica, int32_t current_leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    bool serves = r->v.role == KIQ_REPLICA_LEADER || (any_replica && r->v.role == KIQ_REPLICA_FOLLOWER);
    int16_t err = serves ? epoch_check(&r->v, current_leader_epoch) : KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    int64_t start = !err && r->v.role == KIQ_REPLICA_LEADER ? r->v.epoch_start_offset : -1;
    pthread_mutex_unlock(&r->mu);
    if (err) return err;
    return hw_reaches(log, start) ? KIQ_ERR_NONE : KIQ_ERR_OFFSET_NOT_AVAILABLE;
}

int16_t kiq_partition_replica_check_follower_fetch(kiq_partition_replica_t *r, int32_t replica,
                                                   int32_t current_leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    int16_t err = r->v.role != KIQ_REPLICA_LEADER ? KIQ_ERR_NOT_LEADER_OR_FOLLOWER
                  : !contains(r->v.replicas, r->v.nreplicas, replica) || replica == r->self
                      ? KIQ_ERR_NOT_LEADER_OR_FOLLOWER
                      : epoch_check(&r->v, current_leader_epoch);
    pthread_mutex_unlock(&r->mu);
    return err;
}

int kiq_partition_replica_isr_size(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    int n = r->v.nisr;
    pthread_mutex_unlock(&r->mu);
    return n;
}

bool kiq_partition_replica_hw_known(kiq_partition_replica_t *r, kiq_partition_log_t *log)
{
    pthread_mutex_lock(&r->mu);
    int64_t start = r->v.role == KIQ_REPLICA_LEADER ? r->v.epoch_start_offset : -1;
    pthread_mutex_unlock(&r->mu);
    return hw_reaches(log, start);
}

int32_t kiq_partition_replica_leader_epoch(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    int32_t e = r->v.leader_epoch;
    pthread_mutex_unlock(&r->mu);
    return e;
}

void kiq_partition_replica_leader(kiq_partition_replica_t *r, int32_t *leader, int32_t *leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    *leader = r->v.leader;
    *leader_epoch = r->v.leader_epoch;
    pthread_mutex_unlock(&r->mu);
}

kiq_replica_role_t kiq_partition_replica_role(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    kiq_replica_role_t role = r->v.role;
    pthread_mutex_unlock(&r->mu);
    return role;
}

bool kiq_partition_replica_follows(kiq_partition_replica_t *r, int32_t leader, int32_t *leader_epoch)
{
    pthread_mutex_lock(&r->mu);
    bool follows = r->v.role == KIQ_REPLICA_FOLLOWER && r->v.leader == leader;
    *leader_epoch = r->v.leader_epoch;
    pthread_mutex_unlock(&r->mu);
    return follows;
}

void kiq_partition_replica_view(kiq_partition_replica_t *r, kiq_replica_view_t *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->v;
    pthread_mutex_unlock(&r->mu);
}

static kiq_follower_state_t *follower(kiq_replica_view_t *v, int32_t id)
{
    for (int i = 0; i < v->nfollowers; i++)
        if (v->followers[i].broker_id == id) return &v->followers[i];
    return NULL;
}

/* Under the mutex. The lowest LEO over the ISR; a follower in the ISR that
 * has not fetched in this term yet holds the high watermark where it is. */
/* A move of the high watermark, for the observers: from -> to, isr in-sync replicas. */
typedef struct hw_move {
    int64_t from, to;
    int isr;
} hw_move_t;

static void emit_hw(const kiq_partition_replica_t *r, const hw_move_t *m)
{
    if (!kiq_observers_want(r->observers, KIQ_POINT_HW_ADVANCED)) return;
    kiq_event_t e = kiq_event(KIQ_POINT_HW_ADVANCED, r->self);
    e.topic = r->topic;
    e.partition = r->partition;
    e.before = m->from;
    e.after = m->to;
    e.records = m->isr;
    kiq_observers_emit(r->observers, &e);
}

static bool advance_locked(kiq_partition_replica_t *r, kiq_partition_log_t *log, hw_move_t *m)
{
    kiq_replica_view_t *v = &r->v;
    if (v->role != KIQ_REPLICA_LEADER) return false;
    int64_t hw = kiq_partition_log_end_offset(log);
    for (int i = 0; i < v->nisr; i++) {
        if (v->isr[i] == r->self) continue;
        kiq_follower_state_t *f = follower(v, v->isr[i]);
        if (!f || f->leo < 0) return false;
        if (f->leo < hw) hw = f->leo;
    }
    int64_t was = kiq_partition_log_high_watermark(log);
    if (hw <= was) return false;
    kiq_partition_log_set_high_watermark(log, hw);
    *m = (hw_move_t){was, hw, v->nisr};
    return true;
}

bool kiq_partition_replica_advance_hw(kiq_partition_replica_t *r, kiq_partition_log_t *log)
{
    hw_move_t m;
    pthread_mutex_lock(&r->mu);
    bool moved = advance_locked(r, log, &m);
    pthread_mutex_unlock(&r->mu);
    if (moved) emit_hw(r, &m);
    return moved;
}

void kiq_partition_replica_follower_fetched(kiq_partition_replica_t *r, kiq_partition_log_t *log, int32_t replica,
                                            int64_t fetch_offset, int64_t now_ms, bool *hw_moved, bool *expand)
{
    *hw_moved = *expand = false;
    hw_move_t m;
    int64_t leo_was = -1;
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    kiq_follower_state_t *f = v->role == KIQ_REPLICA_LEADER ? follower(v, replica) : NULL;
    if (f) {
        leo_was = f->leo;
        int64_t leo = kiq_partition_log_end_offset(log);
        /* Kafka: caught up if it asked for everything we have, or for
         * everything we had when it fetched before */
        if (fetch_offset >= leo) f->last_caught_up_ms = now_ms;
        else if (f->leader_leo_at_last_fetch >= 0 && fetch_offset >= f->leader_leo_at_last_fetch)
            f->last_caught_up_ms = f->last_fetch_ms;
        f->leo = fetch_offset;
        f->last_fetch_ms = now_ms;
        f->leader_leo_at_last_fetch = leo;
        *hw_moved = advance_locked(r, log, &m);
        *expand = !contains(v->isr, v->nisr, replica) && !v->isr_change_pending &&
                  fetch_offset >= kiq_partition_log_high_watermark(log);
    }
    pthread_mutex_unlock(&r->mu);
    if (f && leo_was != fetch_offset && kiq_observers_want(r->observers, KIQ_POINT_FOLLOWER_LEO)) {
        kiq_event_t e = kiq_event(KIQ_POINT_FOLLOWER_LEO, r->self);
        e.topic = r->topic;
        e.partition = r->partition;
        e.peer = replica;
        e.before = leo_was;
        e.after = fetch_offset;
        kiq_observers_emit(r->observers, &e);
    }
    if (*hw_moved) emit_hw(r, &m);
}

int kiq_partition_replica_shrink_candidate(kiq_partition_replica_t *r, int64_t now_ms, int64_t lag_ms,
                                           int32_t *new_isr)
{
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    int n = 0;
    bool dropped = false;
    if (v->role == KIQ_REPLICA_LEADER && !v->isr_change_pending) {
        for (int i = 0; i < v->nisr; i++) {
            kiq_follower_state_t *f = v->isr[i] == r->self ? NULL : follower(v, v->isr[i]);
            if (f && now_ms - f->last_caught_up_ms > lag_ms) {
                dropped = true;
                continue;
            }
            new_isr[n++] = v->isr[i];
        }
    }
    pthread_mutex_unlock(&r->mu);
    return dropped ? n : 0;
}

int kiq_partition_replica_expand_candidate(kiq_partition_replica_t *r, int32_t replica, int32_t *new_isr)
{
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    int n = 0;
    if (v->role == KIQ_REPLICA_LEADER && !contains(v->isr, v->nisr, replica) && v->nisr < KIQ_MAX_REPLICAS) {
        memcpy(new_isr, v->isr, (size_t)v->nisr * sizeof *new_isr);
        n = v->nisr;
        new_isr[n++] = replica;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}

bool kiq_partition_replica_begin_isr_change(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    bool ok = !r->v.isr_change_pending && r->v.role == KIQ_REPLICA_LEADER;
    if (ok) r->v.isr_change_pending = true;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

void kiq_partition_replica_end_isr_change(kiq_partition_replica_t *r)
{
    pthread_mutex_lock(&r->mu);
    r->v.isr_change_pending = false;
    pthread_mutex_unlock(&r->mu);
}

void kiq_partition_replica_set_isr(kiq_partition_replica_t *r, kiq_partition_log_t *log, int32_t leader_epoch,
                                   int32_t partition_epoch, const int32_t *isr, int nisr, int64_t now_ms,
                                   int64_t lag_ms)
{
    kiq_event_t events[2 * KIQ_MAX_REPLICAS];
    int n = 0;
    hw_move_t m;
    bool moved = false;
    pthread_mutex_lock(&r->mu);
    kiq_replica_view_t *v = &r->v;
    if (leader_epoch == v->leader_epoch && partition_epoch >= v->partition_epoch) {
        int32_t was[KIQ_MAX_REPLICAS];
        int nwas = copy_ids(was, v->isr, v->nisr);
        v->partition_epoch = partition_epoch;
        v->nisr = copy_ids(v->isr, isr, nisr);
        n = isr_changes(r, log, was, nwas, now_ms, lag_ms, events);
        /* a smaller ISR may let the high watermark move: with the ISR, so
         * nobody sees the new ISR beside the old high watermark */
        moved = log && advance_locked(r, log, &m);
    }
    pthread_mutex_unlock(&r->mu);
    emit_all(r, events, n);
    if (moved) emit_hw(r, &m);
}
