/* A broker's controls for tests and labs: interceptors, pauses, cuts
 * between voters, fault rules and disk faults. Any thread; each reaches
 * what it changes through that part's own lock. */
#include "server/broker.h"

#include "controller/controller.h"
#include "controller/quorum.h"
#include "core/error.h"
#include "replica/replica_manager.h"
#include "server/broker_dirs.h"
#include "server/broker_lifecycle.h"

void kiq_broker_set_interceptors(kiq_broker_t *b, const kiq_interceptor_ops_t *ops, void *ctx,
                                 const atomic_int *active)
{
    b->interceptors = (kiq_interceptors_t){ops, ctx, active};
}

void kiq_broker_pause_heartbeats(kiq_broker_t *b, bool paused)
{
    if (b->lifecycle) kiq_broker_lifecycle_pause(b->lifecycle, paused);
}

void kiq_broker_pause_fetching(kiq_broker_t *b, int32_t leader, bool paused)
{
    if (b->replicas) kiq_replica_manager_pause_fetching(b->replicas, leader, paused);
}

void kiq_broker_pause_quorum(kiq_broker_t *b, bool paused)
{
    if (b->quorum) kiq_quorum_pause(b->quorum, paused);
}

void kiq_broker_cut_quorum(kiq_broker_t *b, int32_t voter, bool cut)
{
    if (b->quorum) kiq_quorum_cut(b->quorum, voter, cut);
}

int kiq_broker_snapshot_metadata(kiq_broker_t *b, kiq_raft_epoch_end_t *id)
{
    if (!b->controller) return kiq_error_set("broker %d hosts no controller quorum voter", b->node_id);
    return kiq_controller_snapshot(b->controller, id);
}

/* The fault rules live with the interceptors (their implementation keeps
 * them: server/interceptors.h). */
static int no_faults(kiq_broker_t *b)
{
    return kiq_error_set("broker %d takes no fault rules (it has no interceptors)", b->node_id);
}

int kiq_broker_fault_add(kiq_broker_t *b, const kiq_fault_rule_t *rule)
{
    const kiq_interceptor_ops_t *ops = b->interceptors.ops;
    return ops && ops->fault_add ? ops->fault_add(b->interceptors.ctx, rule) : no_faults(b);
}

int kiq_broker_fault_remove(kiq_broker_t *b, int id)
{
    const kiq_interceptor_ops_t *ops = b->interceptors.ops;
    return ops && ops->fault_remove ? ops->fault_remove(b->interceptors.ctx, id) : no_faults(b);
}

int kiq_broker_faults_view(kiq_broker_t *b, const kiq_view_t *v)
{
    const kiq_interceptor_ops_t *ops = b->interceptors.ops;
    if (!ops || !ops->faults_view) return no_faults(b);
    ops->faults_view(b->interceptors.ctx, v);
    return 0;
}

int kiq_broker_inject_disk_fault(kiq_broker_t *b, const char *dir, int err, int64_t after_bytes, bool fsyncs)
{
    kiq_broker_log_dir_t *d = dir ? kiq_broker_find_log_dir(b, dir) : &b->log_dirs[0];
    if (!d) return kiq_error_set("disk fault: %s is not one of log.dirs", dir);
    return kiq_log_dir_inject_fault(d->health, err, after_bytes, fsyncs);
}

int kiq_broker_slow_disk(kiq_broker_t *b, const char *dir, int64_t delay_ms)
{
    kiq_broker_log_dir_t *d = dir ? kiq_broker_find_log_dir(b, dir) : &b->log_dirs[0];
    if (!d) return kiq_error_set("slow disk: %s is not one of log.dirs", dir);
    return kiq_log_dir_slow_fsyncs(d->health, delay_ms);
}

int kiq_broker_clear_disk_fault(kiq_broker_t *b, const char *dir)
{
    if (!dir) {
        for (int i = 0; i < b->nlog_dirs; i++) kiq_log_dir_clear_fault(b->log_dirs[i].health);
        return 0;
    }
    kiq_broker_log_dir_t *d = kiq_broker_find_log_dir(b, dir);
    if (!d) return kiq_error_set("disk fault: %s is not one of log.dirs", dir);
    kiq_log_dir_clear_fault(d->health);
    return 0;
}

