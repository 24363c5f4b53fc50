/* KRaft's rules with no I/O (raft.h): the roles, elections, the log and
 * the RPCs; who votes is raft_voters.c's. Names follow KIP-595's states. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"
#include "raft/raft_internal.h"

const char *kiq_raft_role_name(kiq_raft_role_t role)
{
    static const char *const names[] = { "unattached", "follower", "prospective", "candidate", "leader", "resigned" };
    return (unsigned)role < sizeof names / sizeof *names ? names[role] : "unknown";
}

/* ---- randomness, the log's epochs */

static uint64_t rnd(kiq_raft_t *r)
{
    r->rng ^= r->rng >> 12;
    r->rng ^= r->rng << 25;
    r->rng ^= r->rng >> 27;
    return r->rng * 2685821657736338717ULL;
}

/* Uniform in [lo, hi]. */
static int64_t between(kiq_raft_t *r, int64_t lo, int64_t hi)
{
    return hi <= lo ? lo : lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

/* The epoch of the entry just before `end`. */
static int32_t epoch_before(const kiq_raft_t *r, int64_t end)
{
    for (int i = r->n_starts - 1; i >= 0; i--)
        if (r->starts[i].end_offset < end)
            return r->starts[i].epoch;
    return r->snapshot.epoch >= 0 ? r->snapshot.epoch : 0;
}

/* The largest epoch at most `epoch` in this log and where its entries end
 * (Kafka's endOffsetForEpoch); epoch 0 at the log start when none is. */
static kiq_raft_epoch_end_t end_for_epoch(const kiq_raft_t *r, int32_t epoch)
{
    for (int i = r->n_starts - 1; i >= 0; i--)
        if (r->starts[i].epoch <= epoch)
            return (kiq_raft_epoch_end_t){ r->starts[i].epoch,
                                           i + 1 < r->n_starts ? r->starts[i + 1].end_offset : r->log_end };
    if (r->snapshot.epoch >= 0 && r->snapshot.epoch <= epoch)
        return r->snapshot;
    return (kiq_raft_epoch_end_t){ 0, r->log_start };
}

/* The starts array holds {epoch, first offset} in end_offset. */
static int note_epoch(kiq_raft_t *r, int32_t epoch, int64_t offset)
{
    if (r->n_starts && r->starts[r->n_starts - 1].epoch == epoch)
        return 0;
    if (r->n_starts && r->starts[r->n_starts - 1].epoch > epoch)
        return kiq_error_set("raft: epoch %d after epoch %d", epoch, r->starts[r->n_starts - 1].epoch);
    if (r->n_starts == r->cap_starts) {
        int cap = r->cap_starts ? r->cap_starts * 2 : 16;
        kiq_raft_epoch_end_t *s = realloc(r->starts, (size_t)cap * sizeof *s);
        if (!s)
            abort();
        r->starts = s;
        r->cap_starts = cap;
    }
    r->starts[r->n_starts++] = (kiq_raft_epoch_end_t){ epoch, offset };
    return 0;
}

int kiq_raft_append(kiq_raft_t *r, const kiq_raft_entry_t *e, int n)
{
    for (int i = 0; i < n; i++)
        if (e[i].count <= 0 || (i && e[i].epoch < e[i - 1].epoch) ||
            (r->n_starts && e[i].epoch < r->starts[r->n_starts - 1].epoch))
            return kiq_error_set("raft: entries out of epoch order");
    for (int i = 0; i < n; i++)
        if (e[i].voters && (e[i].voters->n < 0 || e[i].voters->n > KIQ_RAFT_MAX_VOTERS))
            return kiq_error_set("raft: a voter set of %d", e[i].voters->n);
    if (r->io->append(r->ctx, r->log_end, e, n) != 0)
        return -1;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        note_epoch(r, e[i].epoch, r->log_end);
        if (e[i].voters) {
            kiq_raft_push_set(r, r->log_end, e[i].voters); /* in force uncommitted, as KIP-853 has it */
            changed = true;
        }
        r->log_end += e[i].count;
    }
    if (changed)
        kiq_raft_apply_set(r);
    return 0;
}

static void truncate_to(kiq_raft_t *r, int64_t end)
{
    if (end >= r->log_end)
        return;
    if (end < r->hw)
        end = r->hw; /* committed entries never diverge; a leader claiming so is wrong */
    if (r->io->truncate(r->ctx, end) != 0)
        return;
    r->log_end = end;
    while (r->n_starts && r->starts[r->n_starts - 1].end_offset >= end)
        r->n_starts--;
    int sets = r->n_sets;
    while (r->n_sets && r->sets[r->n_sets - 1].offset >= end)
        r->n_sets--; /* the set written before the cut is back in force */
    if (sets != r->n_sets)
        kiq_raft_apply_set(r);
}

/* ---- sending */

static void send(kiq_raft_t *r, kiq_raft_msg_t *m)
{
    m->from = r->node_id;
    m->epoch = m->type == KIQ_RAFT_VOTE && m->vote.pre_vote ? r->epoch + 1 : r->epoch;
    if (m->type != KIQ_RAFT_VOTE)
        m->leader_id = r->leader_id;
    r->io->send(r->ctx, m);
}

static void send_fetch(kiq_raft_t *r, int32_t to)
{
    if (r->snapshot_pending)
        return;
    kiq_raft_msg_t m = { .type = KIQ_RAFT_FETCH, .to = to };
    m.fetch.offset = r->log_end;
    m.fetch.last_epoch = epoch_before(r, r->log_end);
    memcpy(m.fetch.dir, r->dir, sizeof m.fetch.dir);
    r->fetch_in_flight = true;
    r->fetch_sent_at = r->now;
    send(r, &m);
}

static void send_votes(kiq_raft_t *r, bool pre_vote)
{
    for (int i = 0; i < r->n_voters; i++) {
        voter_t *v = &r->voters[i];
        v->answered = v->granted = v->id == r->node_id;
        if (v->id == r->node_id)
            continue;
        kiq_raft_msg_t m = { .type = KIQ_RAFT_VOTE, .to = v->id, .leader_id = -1 };
        m.vote.last = (kiq_raft_epoch_end_t){ epoch_before(r, r->log_end), r->log_end };
        m.vote.pre_vote = pre_vote;
        send(r, &m);
    }
}

/* ---- the states */

static void persist(kiq_raft_t *r)
{
    kiq_raft_quorum_state_t s = { r->epoch, r->voted_for, r->leader_id };
    r->io->persist(r->ctx, &s);
}

static void became(kiq_raft_t *r, kiq_raft_role_t role)
{
    r->role = role;
    r->backing_off = false;
    r->fetch_in_flight = false;
    r->snapshot_pending = false; /* a follower again learns from its next fetch what to load */
    if (r->io->became)
        r->io->became(r->ctx, role, r->epoch, r->leader_id);
}

static int64_t election_deadline(kiq_raft_t *r)
{
    return r->now + between(r, r->election_timeout, 2 * r->election_timeout);
}

static void become_unattached(kiq_raft_t *r, int32_t epoch)
{
    if (epoch > r->epoch)
        r->voted_for = r->lost_leader = -1;
    r->epoch = epoch;
    r->leader_id = -1;
    persist(r);
    r->deadline = election_deadline(r);
    became(r, KIQ_RAFT_UNATTACHED);
}

static void become_follower(kiq_raft_t *r, int32_t epoch, int32_t leader)
{
    if (epoch > r->epoch)
        r->voted_for = r->lost_leader = -1;
    r->epoch = epoch;
    r->leader_id = leader;
    r->failed_elections = 0;
    persist(r);
    r->deadline = r->now + r->fetch_timeout;
    became(r, KIQ_RAFT_FOLLOWER);
    send_fetch(r, leader);
}

static void become_leader(kiq_raft_t *r);

static void become_candidate(kiq_raft_t *r)
{
    r->epoch++;
    r->voted_for = r->node_id;
    r->lost_leader = -1;
    r->leader_id = -1;
    persist(r);
    r->deadline = election_deadline(r);
    became(r, KIQ_RAFT_CANDIDATE);
    send_votes(r, false);
    if (kiq_raft_majority(r) == 1)
        become_leader(r);
}

static void become_prospective(kiq_raft_t *r)
{
    if (r->leader_id >= 0 && r->leader_id != r->node_id)
        r->lost_leader = r->leader_id;
    r->leader_id = -1;
    r->elections++;
    r->deadline = election_deadline(r);
    became(r, KIQ_RAFT_PROSPECTIVE);
    send_votes(r, true);
    /* is the lost leader there after all? Its answer makes this a follower */
    if (r->lost_leader >= 0)
        send_fetch(r, r->lost_leader);
    if (kiq_raft_majority(r) == 1)
        become_candidate(r);
}

static void send_begin_epochs(kiq_raft_t *r)
{
    for (int i = 0; i < r->n_voters; i++) {
        voter_t *v = &r->voters[i];
        if (v->id == r->node_id || v->begin_acked || v->last_fetch_ms >= 0 ||
            (v->begin_sent >= 0 && r->now - v->begin_sent < r->request_timeout))
            continue;
        v->begin_sent = r->now;
        kiq_raft_msg_t m = { .type = KIQ_RAFT_BEGIN_EPOCH, .to = v->id };
        send(r, &m);
    }
}

static void become_leader(kiq_raft_t *r)
{
    r->leader_id = r->node_id;
    r->failed_elections = 0;
    persist(r);
    r->epoch_start = r->log_end;
    r->leader_since = r->now;
    r->n_observers = 0;
    for (int i = 0; i < r->n_voters; i++) {
        voter_t *v = &r->voters[i];
        v->log_end = v->last_fetch_ms = v->last_caught_up_ms = v->begin_sent = -1;
        v->begin_acked = false;
    }
    r->deadline = r->now + r->fetch_timeout * 3 / 2;
    became(r, KIQ_RAFT_LEADER);
    send_begin_epochs(r);
    kiq_raft_update_hw(r);
}

void kiq_raft_become_resigned(kiq_raft_t *r)
{
    /* the successors that have the most of the log first */
    voter_t *order[KIQ_RAFT_MAX_VOTERS];
    int n = 0;
    for (int i = 0; i < r->n_voters; i++)
        if (r->voters[i].id != r->node_id)
            order[n++] = &r->voters[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && order[j]->log_end > order[j - 1]->log_end; j--) {
            voter_t *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    r->deadline = election_deadline(r);
    became(r, KIQ_RAFT_RESIGNED);
    for (int i = 0; i < n; i++) {
        kiq_raft_msg_t m = { .type = KIQ_RAFT_END_EPOCH, .to = order[i]->id };
        for (int k = 0; k < n; k++)
            m.end_epoch.successors[k] = order[k]->id;
        m.end_epoch.n_successors = n;
        send(r, &m);
    }
}

/* A lost or undecided election: wait a random, growing while before the
 * next (election.backoff.max.ms bounds it). */
static void back_off(kiq_raft_t *r)
{
    int shift = r->failed_elections < 10 ? r->failed_elections : 10;
    int64_t cap = 50LL << shift;
    if (cap > r->backoff_max)
        cap = r->backoff_max;
    r->failed_elections++;
    r->backing_off = true;
    r->deadline = r->now + between(r, cap / 2, cap);
}

/* ---- the public calls */

kiq_raft_t *kiq_raft_new(const kiq_raft_config_t *cfg)
{
    if (cfg->n_voters < 0 || cfg->n_voters > KIQ_RAFT_MAX_VOTERS) {
        kiq_error_set("raft: %d voters (at most %d)", cfg->n_voters, KIQ_RAFT_MAX_VOTERS);
        return NULL;
    }
    kiq_raft_t *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->node_id = cfg->node_id;
    memcpy(r->dir, cfg->dir, sizeof r->dir);
    r->static_set.n = cfg->n_voters;
    for (int i = 0; i < cfg->n_voters; i++)
        r->static_set.voters[i] = (kiq_raft_replica_key_t){ .id = cfg->voters[i] };
    for (int i = 0; i < cfg->n_voter_sets; i++)
        if (cfg->voter_sets[i].set.n < 0 || cfg->voter_sets[i].set.n > KIQ_RAFT_MAX_VOTERS) {
            kiq_error_set("raft: a voter set of %d", cfg->voter_sets[i].set.n);
            kiq_raft_free(r);
            return NULL;
        } else {
            kiq_raft_push_set(r, cfg->voter_sets[i].offset, &cfg->voter_sets[i].set);
        }
    r->n_bootstrap = cfg->n_bootstrap;
    kiq_raft_apply_set(r);
    r->election_timeout = cfg->election_timeout_ms > 0 ? cfg->election_timeout_ms : 1000;
    r->fetch_timeout = cfg->fetch_timeout_ms > 0 ? cfg->fetch_timeout_ms : 2000;
    r->backoff_max = cfg->election_backoff_max_ms > 0 ? cfg->election_backoff_max_ms : 1000;
    r->request_timeout = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 2000;
    r->io = cfg->io;
    r->ctx = cfg->ctx;
    r->rng = cfg->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)cfg->node_id + 1;
    r->now = cfg->now_ms;
    r->snapshot = cfg->snapshot;
    r->log_start = cfg->snapshot.epoch >= 0 ? cfg->snapshot.end_offset : 0;
    r->log_end = cfg->log_end;
    r->hw = r->log_start;
    r->epoch_start = -1;
    r->lost_leader = -1;
    for (int i = 0; i < cfg->n_epoch_starts; i++)
        if (note_epoch(r, cfg->epoch_starts[i].epoch, cfg->epoch_starts[i].end_offset) != 0) {
            kiq_raft_free(r);
            return NULL;
        }
    r->epoch = cfg->state.epoch;
    r->voted_for = cfg->state.voted_for;
    /* a restarted leader does not lead on: it learns the leader again */
    r->leader_id = cfg->state.leader_id == r->node_id ? -1 : cfg->state.leader_id;
    r->role = KIQ_RAFT_UNATTACHED;
    r->deadline = election_deadline(r);
    /* a lone voter leads at once; a new quorum's first voter runs first
     * instead of every voter waiting out an election timeout */
    if (r->n_voters && (r->n_voters == 1 || (r->epoch == 0 && r->voters[0].id == r->node_id)) && kiq_raft_is_voter(r))
        r->deadline = r->now;
    if (r->leader_id >= 0) {
        r->role = KIQ_RAFT_FOLLOWER;
        r->deadline = r->now + r->fetch_timeout;
    }
    return r;
}

void kiq_raft_free(kiq_raft_t *r)
{
    if (!r)
        return;
    free(r->starts);
    free(r->sets);
    free(r);
}

/* An observer asks the voters in turn, else its bootstrap servers, for
 * the leader: any of them answers a Fetch naming it. */
static void probe(kiq_raft_t *r)
{
    int32_t peers[KIQ_RAFT_MAX_VOTERS + 8];
    int n = 0;
    for (int i = 0; i < r->n_voters; i++)
        if (r->voters[i].id != r->node_id)
            peers[n++] = r->voters[i].id;
    if (!n)
        for (int i = 0; i < r->n_bootstrap && n < (int)(sizeof peers / sizeof *peers); i++)
            peers[n++] = KIQ_RAFT_BOOTSTRAP_ID(i);
    if (n)
        send_fetch(r, peers[r->probe++ % n]);
}

void kiq_raft_tick(kiq_raft_t *r, int64_t now_ms)
{
    r->now = now_ms;
    switch (r->role) {
    case KIQ_RAFT_UNATTACHED:
        if (kiq_raft_is_voter(r)) {
            if (now_ms >= r->deadline)
                become_prospective(r);
        } else if (!r->fetch_in_flight || now_ms - r->fetch_sent_at >= r->request_timeout) {
            probe(r); /* who leads? */
        }
        break;
    case KIQ_RAFT_FOLLOWER:
        if (now_ms >= r->deadline) {
            if (kiq_raft_is_voter(r))
                become_prospective(r);
            else
                become_unattached(r, r->epoch);
        } else if (!r->fetch_in_flight || now_ms - r->fetch_sent_at >= r->request_timeout) {
            send_fetch(r, r->leader_id);
        }
        break;
    case KIQ_RAFT_PROSPECTIVE:
    case KIQ_RAFT_CANDIDATE:
        if (now_ms < r->deadline)
            break;
        if (r->backing_off)
            become_prospective(r);
        else
            back_off(r);
        break;
    case KIQ_RAFT_LEADER: {
        send_begin_epochs(r);
        if (now_ms < r->deadline)
            break;
        /* check quorum: a leader a majority stopped fetching from steps down */
        int recent = 0;
        for (int i = 0; i < r->n_voters; i++) {
            const voter_t *v = &r->voters[i];
            recent += v->id == r->node_id || (v->last_fetch_ms >= 0 && now_ms - v->last_fetch_ms < r->fetch_timeout * 3 / 2);
        }
        if (recent < kiq_raft_majority(r))
            kiq_raft_become_resigned(r);
        else
            r->deadline = now_ms + r->fetch_timeout / 2;
        break;
    }
    case KIQ_RAFT_RESIGNED:
        if (now_ms >= r->deadline) {
            if (kiq_raft_is_voter(r))
                become_prospective(r);
            else
                become_unattached(r, r->epoch); /* removed: an observer from now on */
        }
        break;
    }
}

static void on_vote(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    kiq_raft_msg_t re = { .type = KIQ_RAFT_VOTE_REPLY, .to = m->from };
    re.vote_reply.pre_vote = m->vote.pre_vote;
    int32_t last_epoch = epoch_before(r, r->log_end);
    bool up_to_date = m->vote.last.epoch > last_epoch ||
                      (m->vote.last.epoch == last_epoch && m->vote.last.end_offset >= r->log_end);
    bool from_voter = kiq_raft_voter_of(r, m->from) != NULL && kiq_raft_is_voter(r);
    if (m->vote.pre_vote) {
        /* KIP-996: granted without any change here, unless this node still
         * hears from a leader (then the candidate is the one cut off) */
        bool leader_alive = r->role == KIQ_RAFT_LEADER ||
                            (r->role == KIQ_RAFT_FOLLOWER && r->now < r->deadline);
        re.vote_reply.granted = from_voter && m->epoch > r->epoch && up_to_date && !leader_alive;
    } else if (m->epoch == r->epoch && from_voter && up_to_date && r->leader_id < 0 &&
               r->role != KIQ_RAFT_LEADER && (r->voted_for < 0 || r->voted_for == m->from)) {
        r->voted_for = m->from;
        persist(r);
        r->deadline = election_deadline(r);
        re.vote_reply.granted = true;
    }
    send(r, &re);
}

static void on_vote_reply(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    bool pre = m->vote_reply.pre_vote;
    voter_t *v = kiq_raft_voter_of(r, m->from);
    if (!v || v->answered || (pre ? r->role != KIQ_RAFT_PROSPECTIVE || m->epoch > r->epoch
                                  : r->role != KIQ_RAFT_CANDIDATE || m->epoch != r->epoch))
        return;
    v->answered = true;
    v->granted = m->vote_reply.granted;
    int granted = 0, refused = 0;
    for (int i = 0; i < r->n_voters; i++) {
        granted += r->voters[i].answered && r->voters[i].granted;
        refused += r->voters[i].answered && !r->voters[i].granted;
    }
    if (granted >= kiq_raft_majority(r)) {
        if (pre)
            become_candidate(r);
        else
            become_leader(r);
    } else if (refused > r->n_voters - kiq_raft_majority(r) && !r->backing_off) {
        back_off(r);
    }
}

static void on_begin_epoch(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    kiq_raft_msg_t re = { .type = KIQ_RAFT_BEGIN_EPOCH_REPLY, .to = m->from };
    if (m->epoch < r->epoch)
        re.error = KIQ_ERR_FENCED_LEADER_EPOCH;
    send(r, &re);
}

static void on_end_epoch(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    if (m->epoch == r->epoch && r->role == KIQ_RAFT_FOLLOWER && r->leader_id == m->from) {
        int pos = -1;
        for (int i = 0; i < m->end_epoch.n_successors && i < KIQ_RAFT_MAX_VOTERS; i++)
            if (m->end_epoch.successors[i] == r->node_id)
                pos = i;
        become_unattached(r, r->epoch);
        /* the best-placed successor runs first; the others wait their turn */
        if (pos >= 0)
            r->deadline = r->now + pos * (r->election_timeout / 4) + between(r, 0, 50);
    }
    kiq_raft_msg_t re = { .type = KIQ_RAFT_END_EPOCH_REPLY, .to = m->from };
    if (m->epoch < r->epoch)
        re.error = KIQ_ERR_FENCED_LEADER_EPOCH;
    send(r, &re);
}

static void on_fetch(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    kiq_raft_msg_t re = { .type = KIQ_RAFT_FETCH_REPLY, .to = m->from };
    re.fetch_reply.diverging = re.fetch_reply.snapshot = (kiq_raft_epoch_end_t){ -1, -1 };
    re.fetch_reply.offset = m->fetch.offset;
    if (m->epoch < r->epoch) {
        re.error = KIQ_ERR_FENCED_LEADER_EPOCH;
    } else if (r->role != KIQ_RAFT_LEADER) {
        re.error = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    } else if (m->fetch.offset < r->log_start) {
        re.fetch_reply.snapshot = r->snapshot;
    } else {
        kiq_raft_epoch_end_t e = end_for_epoch(r, m->fetch.last_epoch);
        if (m->fetch.offset > r->log_start &&
            (e.epoch != m->fetch.last_epoch || m->fetch.offset > e.end_offset)) {
            re.fetch_reply.diverging = e;
        } else if (m->fetch.offset <= r->log_end) {
            voter_t *v = kiq_raft_voter_of(r, m->from);
            if (!v)
                v = kiq_raft_track_observer(r, m->from, m->fetch.dir);
            if (v) {
                v->log_end = m->fetch.offset;
                v->last_fetch_ms = r->now;
                if (m->fetch.offset >= r->log_end)
                    v->last_caught_up_ms = r->now;
                kiq_raft_update_hw(r);
            }
            if (m->fetch.offset < r->log_end &&
                r->io->read(r->ctx, m->fetch.offset, &re.fetch_reply.entries, &re.fetch_reply.n_entries) != 0)
                re.fetch_reply.n_entries = 0;
        } else {
            re.fetch_reply.diverging = (kiq_raft_epoch_end_t){ epoch_before(r, r->log_end), r->log_end };
        }
    }
    re.fetch_reply.high_watermark = r->hw;
    send(r, &re);
}

static void on_fetch_reply(kiq_raft_t *r, const kiq_raft_msg_t *m)
{
    if (r->role != KIQ_RAFT_FOLLOWER || m->from != r->leader_id || m->epoch != r->epoch)
        return;
    r->fetch_in_flight = false;
    if (m->error != KIQ_ERR_NONE)
        return; /* its epoch and leader were read already; the fetch timeout does the rest */
    r->deadline = r->now + r->fetch_timeout;
    const kiq_raft_epoch_end_t *snap = &m->fetch_reply.snapshot;
    if (snap->epoch >= 0) {
        r->snapshot_pending = true;
        if (r->io->fetch_snapshot)
            r->io->fetch_snapshot(r->ctx, r->leader_id, *snap);
        return;
    }
    if (m->fetch_reply.diverging.epoch >= 0) {
        /* to where both logs last agree: the leader's end of that epoch or
         * this log's own, whichever is first */
        kiq_raft_epoch_end_t div = m->fetch_reply.diverging, here = end_for_epoch(r, div.epoch);
        truncate_to(r, here.end_offset < div.end_offset ? here.end_offset : div.end_offset);
    } else if (m->fetch_reply.n_entries > 0 && m->fetch_reply.offset == r->log_end) {
        if (kiq_raft_append(r, m->fetch_reply.entries, m->fetch_reply.n_entries) != 0)
            return;
    }
    int64_t hw = m->fetch_reply.high_watermark < r->log_end ? m->fetch_reply.high_watermark : r->log_end;
    if (hw > r->hw) {
        r->hw = hw;
        r->io->committed(r->ctx, hw);
    }
    send_fetch(r, r->leader_id);
}

/* Does this message name the leader of its epoch? */
static int32_t leader_named(const kiq_raft_msg_t *m)
{
    switch (m->type) {
    case KIQ_RAFT_BEGIN_EPOCH:
        return m->from;
    case KIQ_RAFT_FETCH_REPLY:
    case KIQ_RAFT_VOTE_REPLY: /* a refused voter names its live leader (KIP-996) */
    case KIQ_RAFT_BEGIN_EPOCH_REPLY:
    case KIQ_RAFT_END_EPOCH_REPLY:
        return m->leader_id;
    default:
        return -1;
    }
}

void kiq_raft_receive(kiq_raft_t *r, int64_t now_ms, const kiq_raft_msg_t *m)
{
    r->now = now_ms;
    bool pre_vote_ask = m->type == KIQ_RAFT_VOTE && m->vote.pre_vote;
    int32_t leader = leader_named(m);
    /* a voter still following the leader this node timed out on is no news
     * (else two timed-out followers would send each other back to it) */
    if (m->type == KIQ_RAFT_VOTE_REPLY && m->epoch == r->epoch && leader == r->lost_leader)
        leader = -1;
    if (!pre_vote_ask) {
        if (m->epoch > r->epoch) {
            if (leader >= 0 && leader != r->node_id)
                become_follower(r, m->epoch, leader);
            else
                become_unattached(r, m->epoch);
        } else if (m->epoch == r->epoch && leader >= 0 && leader != r->node_id &&
                   (r->role != KIQ_RAFT_FOLLOWER || r->leader_id != leader) && r->role != KIQ_RAFT_LEADER) {
            become_follower(r, m->epoch, leader);
            if (m->type == KIQ_RAFT_FETCH_REPLY)
                return; /* a reply to a fetch sent before: the fresh one goes on */
        }
    }
    switch (m->type) {
    case KIQ_RAFT_VOTE:
        on_vote(r, m);
        break;
    case KIQ_RAFT_VOTE_REPLY:
        on_vote_reply(r, m);
        break;
    case KIQ_RAFT_BEGIN_EPOCH:
        on_begin_epoch(r, m);
        break;
    case KIQ_RAFT_BEGIN_EPOCH_REPLY: {
        voter_t *v = kiq_raft_voter_of(r, m->from);
        if (v && r->role == KIQ_RAFT_LEADER && m->epoch == r->epoch && m->error == KIQ_ERR_NONE)
            v->begin_acked = true;
        break;
    }
    case KIQ_RAFT_END_EPOCH:
        on_end_epoch(r, m);
        break;
    case KIQ_RAFT_END_EPOCH_REPLY:
        break;
    case KIQ_RAFT_FETCH:
        on_fetch(r, m);
        break;
    case KIQ_RAFT_FETCH_REPLY:
        on_fetch_reply(r, m);
        break;
    }
}

int kiq_raft_propose(kiq_raft_t *r, int32_t count, const void *data, size_t len, int64_t *offset)
{
    if (r->role != KIQ_RAFT_LEADER) {
        kiq_error_set("raft: node %d is not the leader (%s, epoch %d)", r->node_id, kiq_raft_role_name(r->role), r->epoch);
        return KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    kiq_raft_entry_t e = { r->epoch, count, data, len, NULL };
    int64_t at = r->log_end;
    if (kiq_raft_append(r, &e, 1) != 0)
        return -1;
    if (offset)
        *offset = at;
    kiq_raft_update_hw(r);
    return 0;
}

void kiq_raft_resign(kiq_raft_t *r, int64_t now_ms)
{
    r->now = now_ms;
    if (r->role == KIQ_RAFT_LEADER)
        kiq_raft_become_resigned(r);
}

int kiq_raft_snapshot_loaded(kiq_raft_t *r, kiq_raft_epoch_end_t id, const kiq_raft_voter_set_t *voters)
{
    if (id.epoch < 0 || id.end_offset < r->log_start)
        return kiq_error_set("raft: snapshot ending at %lld is before the log start %lld", (long long)id.end_offset,
                             (long long)r->log_start);
    if (!r->snapshot_pending && id.end_offset > r->hw)
        return kiq_error_set("raft: a snapshot of uncommitted entries (to %lld, high watermark %lld)",
                             (long long)id.end_offset, (long long)r->hw);
    r->snapshot = id;
    r->log_start = id.end_offset;
    if (r->log_end < id.end_offset || r->snapshot_pending) {
        r->log_end = id.end_offset; /* the fetched snapshot replaces the whole log */
        r->n_starts = 0;
        if (voters && voters->n > KIQ_RAFT_MAX_VOTERS)
            return kiq_error_set("raft: a snapshot's voter set of %d", voters->n);
        r->n_sets = 0; /* and its voter set, the sets the log held */
        if (voters)
            kiq_raft_push_set(r, id.end_offset - 1, voters);
        kiq_raft_apply_set(r);
    }
    /* epochs wholly before the snapshot go; the one it cuts starts at it */
    int keep = 0;
    for (int i = 0; i < r->n_starts; i++) {
        int64_t end = i + 1 < r->n_starts ? r->starts[i + 1].end_offset : r->log_end;
        if (end > id.end_offset) {
            r->starts[keep] = r->starts[i];
            if (r->starts[keep].end_offset < id.end_offset)
                r->starts[keep].end_offset = id.end_offset;
            keep++;
        }
    }
    r->n_starts = keep;
    if (r->hw < id.end_offset) {
        r->hw = id.end_offset;
        r->io->committed(r->ctx, r->hw);
    }
    if (r->snapshot_pending) {
        r->snapshot_pending = false;
        if (r->role == KIQ_RAFT_FOLLOWER)
            send_fetch(r, r->leader_id);
    }
    return 0;
}

void kiq_raft_snapshot_progress(kiq_raft_t *r, int64_t now_ms)
{
    r->now = now_ms;
    if (r->role == KIQ_RAFT_FOLLOWER && r->snapshot_pending)
        r->deadline = now_ms + r->fetch_timeout;
}

void kiq_raft_snapshot_failed(kiq_raft_t *r, int64_t now_ms)
{
    r->now = now_ms;
    if (!r->snapshot_pending)
        return;
    r->snapshot_pending = false;
    if (r->role == KIQ_RAFT_FOLLOWER)
        send_fetch(r, r->leader_id);
}

void kiq_raft_view(const kiq_raft_t *r, kiq_raft_view_t *out)
{
    memset(out, 0, sizeof *out);
    out->role = r->role;
    out->node_id = r->node_id;
    out->epoch = r->epoch;
    out->leader_id = r->leader_id;
    out->voted_for = r->voted_for;
    out->high_watermark = r->hw;
    out->log_start = r->log_start;
    out->snapshot = r->snapshot;
    out->log_end = r->log_end;
    out->last_epoch = epoch_before(r, r->log_end);
    out->elections = r->elections;
    out->n_voters = r->n_voters;
    for (int i = 0; i < r->n_voters; i++) {
        const voter_t *v = &r->voters[i];
        out->votes_granted += (r->role == KIQ_RAFT_CANDIDATE || r->role == KIQ_RAFT_PROSPECTIVE) && v->answered && v->granted;
        bool self = v->id == r->node_id;
        out->voters[i] = (kiq_raft_voter_view_t){ v->id, { 0 }, self ? r->log_end : v->log_end,
                                                  self ? r->now : v->last_fetch_ms,
                                                  self ? r->now : v->last_caught_up_ms };
        /* the set's own: zero in a static quorum, as Kafka's voters show */
        memcpy(out->voters[i].dir, v->dir, sizeof v->dir);
    }
    out->n_observers = r->role == KIQ_RAFT_LEADER ? r->n_observers : 0;
    for (int i = 0; i < out->n_observers; i++) {
        const voter_t *o = &r->observers[i];
        out->observers[i] = (kiq_raft_voter_view_t){ o->id, { 0 }, o->log_end, o->last_fetch_ms, o->last_caught_up_ms };
        memcpy(out->observers[i].dir, o->dir, sizeof o->dir);
    }
    out->kraft_version = r->n_sets ? 1 : 0;
    out->voters_offset = r->n_sets ? r->sets[r->n_sets - 1].offset : -1;
}
