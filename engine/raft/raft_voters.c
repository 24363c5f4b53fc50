/* Who votes (raft.h): the voter set in force, from the config or the
 * log's newest VotersRecord; the leader's view of each voter and
 * observer; the majority and high watermark the set decides; KIP-853's
 * voter changes. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"
#include "raft/raft_internal.h"

voter_t *kiq_raft_voter_of(kiq_raft_t *r, int32_t id)
{
    for (int i = 0; i < r->n_voters; i++)
        if (r->voters[i].id == id)
            return &r->voters[i];
    return NULL;
}

bool kiq_raft_is_voter(kiq_raft_t *r)
{
    return kiq_raft_voter_of(r, r->node_id) != NULL;
}

static bool dir_known(const uint8_t *dir)
{
    for (int i = 0; i < 16; i++)
        if (dir[i])
            return true;
    return false;
}

static const kiq_raft_voter_set_t *set_in_force(const kiq_raft_t *r)
{
    return r->n_sets ? &r->sets[r->n_sets - 1].set : &r->static_set;
}

static voter_t *observer_of(kiq_raft_t *r, int32_t id)
{
    for (int i = 0; i < r->n_observers; i++)
        if (r->observers[i].id == id)
            return &r->observers[i];
    return NULL;
}

static voter_t fresh_voter(const kiq_raft_replica_key_t *k)
{
    voter_t v = { .id = k->id, .log_end = -1, .last_fetch_ms = -1, .last_caught_up_ms = -1, .begin_sent = -1 };
    memcpy(v.dir, k->dir, sizeof v.dir);
    return v;
}

/* The voters array follows the set in force; a voter keeps what the
 * leader knew of it, an observer made voter brings its own, and a voter
 * left out is watched on as an observer. */
void kiq_raft_apply_set(kiq_raft_t *r)
{
    const kiq_raft_voter_set_t *set = set_in_force(r);
    voter_t next[KIQ_RAFT_MAX_VOTERS];
    for (int i = 0; i < set->n; i++) {
        voter_t *old = kiq_raft_voter_of(r, set->voters[i].id);
        voter_t *obs = old ? NULL : observer_of(r, set->voters[i].id);
        next[i] = old ? *old : obs ? *obs : fresh_voter(&set->voters[i]);
        if (obs)
            *obs = r->observers[--r->n_observers];
    }
    for (int i = 0; i < r->n_voters; i++) {
        bool kept = false;
        for (int k = 0; k < set->n; k++)
            kept |= set->voters[k].id == r->voters[i].id;
        if (!kept && r->voters[i].id != r->node_id && r->n_observers < KIQ_RAFT_MAX_OBSERVERS)
            r->observers[r->n_observers++] = r->voters[i];
    }
    memcpy(r->voters, next, (size_t)set->n * sizeof *next);
    r->n_voters = set->n;
}

void kiq_raft_push_set(kiq_raft_t *r, int64_t offset, const kiq_raft_voter_set_t *set)
{
    if (r->n_sets == r->cap_sets) {
        int cap = r->cap_sets ? r->cap_sets * 2 : 8;
        kiq_raft_voters_at_t *s = realloc(r->sets, (size_t)cap * sizeof *s);
        if (!s)
            abort();
        r->sets = s;
        r->cap_sets = cap;
    }
    r->sets[r->n_sets++] = (kiq_raft_voters_at_t){ offset, *set };
}

int kiq_raft_majority(const kiq_raft_t *r)
{
    return r->n_voters / 2 + 1;
}

void kiq_raft_update_hw(kiq_raft_t *r)
{
    int64_t ends[KIQ_RAFT_MAX_VOTERS];
    int n = 0;
    for (int i = 0; i < r->n_voters; i++)
        ends[n++] = r->voters[i].id == r->node_id ? r->log_end : r->voters[i].log_end;
    /* descending: the majority-th largest end is on a majority */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ends[j] > ends[j - 1]; j--) {
            int64_t t = ends[j];
            ends[j] = ends[j - 1];
            ends[j - 1] = t;
        }
    int64_t hw = n ? ends[kiq_raft_majority(r) - 1] : 0;
    /* only an entry of this epoch commits, and with it all before it */
    if (hw > r->hw && hw > r->epoch_start) {
        r->hw = hw;
        r->io->committed(r->ctx, hw);
    }
    /* a leader the committed set leaves out hands over */
    if (r->role == KIQ_RAFT_LEADER && r->n_sets && r->sets[r->n_sets - 1].offset < r->hw && !kiq_raft_is_voter(r))
        kiq_raft_become_resigned(r);
}

/* The leader's entry for an observer that fetches (the one heard from
 * longest ago makes room). */
voter_t *kiq_raft_track_observer(kiq_raft_t *r, int32_t id, const uint8_t *dir)
{
    if (id < 0)
        return NULL;
    voter_t *o = observer_of(r, id);
    if (!o) {
        kiq_raft_replica_key_t k = { .id = id };
        memcpy(k.dir, dir, sizeof k.dir);
        if (r->n_observers < KIQ_RAFT_MAX_OBSERVERS) {
            o = &r->observers[r->n_observers++];
        } else {
            o = &r->observers[0];
            for (int i = 1; i < r->n_observers; i++)
                if (r->observers[i].last_fetch_ms < o->last_fetch_ms)
                    o = &r->observers[i];
        }
        *o = fresh_voter(&k);
    }
    memcpy(o->dir, dir, sizeof o->dir);
    return o;
}

/* What every voter change needs: a leader of kraft.version 1 that has
 * committed in its epoch, with the last change committed. */
static int change_allowed(kiq_raft_t *r)
{
    if (r->role != KIQ_RAFT_LEADER) {
        kiq_error_set("node %d is not the quorum's leader (%s, epoch %d, leader %d)", r->node_id,
                      kiq_raft_role_name(r->role), r->epoch, r->leader_id);
        return KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (!r->n_sets) {
        kiq_error_set("the quorum's voters are static (kraft.version 0): controller.quorum.voters fixes them");
        return KIQ_ERR_UNSUPPORTED_VERSION;
    }
    if (r->hw <= r->epoch_start) {
        kiq_error_set("the leader has not committed an entry of epoch %d yet", r->epoch);
        return KIQ_ERR_REQUEST_TIMED_OUT;
    }
    if (r->sets[r->n_sets - 1].offset >= r->hw) {
        kiq_error_set("the last voter change (offset %lld) is not committed yet (high watermark %lld)",
                      (long long)r->sets[r->n_sets - 1].offset, (long long)r->hw);
        return KIQ_ERR_REQUEST_TIMED_OUT;
    }
    return 0;
}

int kiq_raft_voters_check(kiq_raft_t *r, const kiq_raft_replica_key_t *key, bool add)
{
    int rc = change_allowed(r);
    if (rc != 0)
        return rc;
    voter_t *v = kiq_raft_voter_of(r, key->id);
    if (add) {
        if (v) {
            kiq_error_set("node %d is a voter already", key->id);
            return KIQ_ERR_DUPLICATE_VOTER;
        }
        if (r->n_voters == KIQ_RAFT_MAX_VOTERS) {
            kiq_error_set("the quorum has %d voters, the most it takes", r->n_voters);
            return KIQ_ERR_INVALID_REQUEST;
        }
        voter_t *o = observer_of(r, key->id);
        bool same_dir = o && (!dir_known(key->dir) || memcmp(o->dir, key->dir, sizeof o->dir) == 0);
        if (!same_dir || o->last_caught_up_ms < 0 || r->now - o->last_caught_up_ms >= r->fetch_timeout) {
            kiq_error_set("node %d is not an observer caught up with the leader's log", key->id);
            return KIQ_ERR_REQUEST_TIMED_OUT;
        }
        return 0;
    }
    if (!v || (dir_known(key->dir) && dir_known(v->dir) && memcmp(v->dir, key->dir, sizeof v->dir) != 0)) {
        kiq_error_set("node %d with that directory id is not a voter", key->id);
        return KIQ_ERR_VOTER_NOT_FOUND;
    }
    if (r->n_voters == 1) {
        kiq_error_set("node %d is the last voter", key->id);
        return KIQ_ERR_INVALID_REQUEST;
    }
    return 0;
}

int kiq_raft_voter_update_check(kiq_raft_t *r, const kiq_raft_replica_key_t *key)
{
    int rc = change_allowed(r);
    if (rc != 0)
        return rc;
    const voter_t *v = kiq_raft_voter_of(r, key->id);
    if (!v || memcmp(v->dir, key->dir, sizeof v->dir) != 0) {
        kiq_error_set("node %d with that directory id is not a voter", key->id);
        return KIQ_ERR_VOTER_NOT_FOUND;
    }
    return 0;
}

void kiq_raft_voters_changed(const kiq_raft_t *r, const kiq_raft_replica_key_t *key, bool add,
                             kiq_raft_voter_set_t *out)
{
    const kiq_raft_voter_set_t *set = set_in_force(r);
    out->n = 0;
    for (int i = 0; i < set->n; i++)
        if (add || set->voters[i].id != key->id)
            out->voters[out->n++] = set->voters[i];
    if (add && out->n < KIQ_RAFT_MAX_VOTERS) {
        kiq_raft_replica_key_t k = *key;
        const voter_t *o = observer_of((kiq_raft_t *)r, key->id);
        if (o && !dir_known(k.dir))
            memcpy(k.dir, o->dir, sizeof k.dir);
        out->voters[out->n++] = k;
    }
}

int kiq_raft_propose_voters(kiq_raft_t *r, const kiq_raft_voter_set_t *set, const void *data, size_t len,
                            int64_t *offset)
{
    if (r->role != KIQ_RAFT_LEADER) {
        kiq_error_set("node %d is not the quorum's leader", r->node_id);
        return KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (r->n_sets && r->sets[r->n_sets - 1].offset >= r->hw) {
        kiq_error_set("the last voter change is not committed yet");
        return KIQ_ERR_REQUEST_TIMED_OUT;
    }
    kiq_raft_entry_t e = { r->epoch, 1, data, len, set };
    int64_t at = r->log_end;
    if (kiq_raft_append(r, &e, 1) != 0)
        return -1;
    if (offset)
        *offset = at;
    kiq_raft_update_hw(r);
    return 0;
}

bool kiq_raft_voters_before(const kiq_raft_t *r, int64_t end, kiq_raft_voter_set_t *out)
{
    for (int i = r->n_sets - 1; i >= 0; i--)
        if (r->sets[i].offset < end) {
            *out = r->sets[i].set;
            return true;
        }
    return false;
}
