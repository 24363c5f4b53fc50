/* A partition's state for the read side; see partition_state.h. */
#include "replica/partition_state.h"

#include <stdio.h>
#include <stdlib.h>

#include "log/partition_log.h"
#include "replica/partition_replica.h"

static void ids(const kiq_view_t *v, const char *name, const int32_t *id, int n)
{
    v->open(v->ctx, name, true);
    for (int i = 0; i < n; i++) v->number(v->ctx, NULL, id[i]);
    v->close(v->ctx);
}

static void replication(const kiq_replica_view_t *rv, const kiq_view_t *v)
{
    static const char *const roles[] = {"none", "leader", "follower"};
    v->string(v->ctx, "role", roles[rv->role]);
    v->number(v->ctx, "leader", rv->leader);
    v->number(v->ctx, "partition_epoch", rv->partition_epoch);
    ids(v, "replicas", rv->replicas, rv->nreplicas);
    ids(v, "isr", rv->isr, rv->nisr);
    if (rv->role != KIQ_REPLICA_LEADER) return;
    /* each follower's log end offset as its fetches showed it */
    v->open(v->ctx, "followers", false);
    for (int i = 0; i < rv->nfollowers; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", rv->followers[i].broker_id);
        v->open(v->ctx, id, false);
        v->number(v->ctx, "leo", (double)rv->followers[i].leo);
        v->close(v->ctx);
    }
    v->close(v->ctx);
}

/* What the scrubber found, and the data loss recorded until an operator
 * acknowledges it. */
static void health(kiq_partition_log_t *log, const kiq_view_t *v)
{
    v->boolean(v->ctx, "offline", kiq_partition_log_offline(log));
    char why[256];
    int64_t damaged = kiq_partition_log_damaged(log, why, sizeof why);
    if (damaged >= 0) {
        v->open(v->ctx, "damaged", false);
        v->number(v->ctx, "segment", (double)damaged);
        v->string(v->ctx, "why", why);
        v->close(v->ctx);
    }
    kiq_data_loss_t loss;
    if (kiq_partition_log_data_loss(log, &loss)) {
        v->open(v->ctx, "data_loss", false);
        v->number(v->ctx, "from", (double)loss.from);
        v->number(v->ctx, "to", (double)loss.to);
        v->number(v->ctx, "at_ms", (double)loss.at_ms);
        v->number(v->ctx, "findings", loss.findings);
        v->string(v->ctx, "why", loss.why);
        v->close(v->ctx);
    }
}

static void segments(kiq_partition_log_t *log, int newest, const kiq_view_t *v)
{
    int n = kiq_partition_log_segments(log, NULL, 0);
    kiq_log_segment_info_t *seg = n > 0 ? malloc((size_t)n * sizeof *seg) : NULL;
    int got = seg ? kiq_partition_log_segments(log, seg, n) : 0;
    if (got > n) got = n; /* one rolled meanwhile */
    v->number(v->ctx, "segment_count", got);
    v->open(v->ctx, "segments", true);
    for (int i = newest >= 0 && got > newest ? got - newest : 0; i < got; i++) {
        v->open(v->ctx, NULL, false);
        v->number(v->ctx, "base_offset", (double)seg[i].base_offset);
        v->number(v->ctx, "next_offset", (double)seg[i].next_offset);
        v->number(v->ctx, "size", (double)seg[i].size);
        v->number(v->ctx, "max_timestamp", (double)seg[i].max_timestamp);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    free(seg);
}

void kiq_partition_state_view(kiq_partition_t *p, int newest_segments, const kiq_view_t *v)
{
    kiq_partition_log_t *log = atomic_load(&p->log);
    v->number(v->ctx, "partition", p->index);
    v->boolean(v->ctx, "hosted", log != NULL);
    kiq_replica_view_t *rv = p->replica ? malloc(sizeof *rv) : NULL; /* large: off the stack */
    if (rv) kiq_partition_replica_view(p->replica, rv);
    v->number(v->ctx, "leader_epoch", rv ? rv->leader_epoch : p->leader_epoch);
    /* a cluster broker not replicating it: no log, no offsets */
    if (log && rv) {
        v->number(v->ctx, "log_start_offset", (double)kiq_partition_log_start_offset(log));
        v->number(v->ctx, "log_end_offset", (double)kiq_partition_log_end_offset(log));
        v->number(v->ctx, "high_watermark", (double)kiq_partition_log_high_watermark(log));
        /* where read_committed consumers stop, and the aborted transactions
         * the .txnindex files hold */
        v->number(v->ctx, "last_stable_offset", (double)kiq_partition_log_last_stable_offset(log));
        v->number(v->ctx, "aborted_transactions", (double)kiq_partition_log_aborted_count(log));
        v->number(v->ctx, "size", (double)kiq_partition_log_size(log));
        health(log, v);
        replication(rv, v);
        segments(log, newest_segments, v);
    }
    free(rv);
}
