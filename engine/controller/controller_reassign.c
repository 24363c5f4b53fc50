/* Partition reassignments (KIP-455): AlterPartitionReassignments starts or
 * cancels them, ListPartitionReassignments lists those in progress, and the
 * controller completes one once every target replica is in the ISR. A
 * partition being reassigned holds its target first in its replicas, then
 * the replicas leaving (removing_replicas); adding_replicas are the
 * target's new ones, as Kafka's controller records them. A replica that
 * leaves the set is deleted by its broker once the metadata it receives
 * no longer assigns it there (kiq_replica_manager_drop_strays), so the
 * controller remembers nothing about it, and a broker down meanwhile
 * deletes it when back. */
#include "controller/controller_internal.h"

static bool reassigning(const kiq_partition_registration_t *pr) { return pr->nadding > 0 || pr->nremoving > 0; }

/* The ids of a not in b, in a's order, into out (room for na). */
static int32_t minus(const int32_t *a, int32_t na, const int32_t *b, int32_t nb, int32_t *out)
{
    int32_t n = 0;
    for (int32_t i = 0; i < na; i++)
        if (!kiq_ctl_has_id(b, nb, a[i])) out[n++] = a[i];
    return n;
}

/* The ids of a also in b, in a's order, into out (room for na). */
static int32_t both(const int32_t *a, int32_t na, const int32_t *b, int32_t nb, int32_t *out)
{
    int32_t n = 0;
    for (int32_t i = 0; i < na; i++)
        if (kiq_ctl_has_id(b, nb, a[i])) out[n++] = a[i];
    return n;
}

/* Whether every id of a is in b. */
static bool all_in(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    for (int32_t i = 0; i < na; i++)
        if (!kiq_ctl_has_id(b, nb, a[i])) return false;
    return true;
}

/* Under mu: a PartitionChange giving topic-p the replicas rep (adding and
 * removing as given, empty when none): the ISR keeps its members still
 * in rep, and a leader leaving it hands over to the first replica of rep,
 * not being removed, that may lead. 0, or INVALID_REPLICA_ASSIGNMENT with the reason when no replica
 * would be left to lead (nothing is written then). */
static int16_t change_replicas(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p,
                               const int32_t *rep, int32_t nrep, const int32_t *adding, int32_t nadding,
                               const int32_t *removing, int32_t nremoving)
{
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    int32_t *isr = kiq_arena_calloc(b->a, (size_t)pr->nisr + 1, sizeof *isr);
    int32_t nisr = both(pr->isr, pr->nisr, rep, nrep, isr);
    int32_t leader = pr->leader;
    if (leader >= 0 && !kiq_ctl_has_id(isr, nisr, leader)) {
        leader = KIQ_NO_LEADER;
        for (int32_t i = 0; i < nrep && leader == KIQ_NO_LEADER; i++)
            if (!kiq_ctl_has_id(removing, nremoving, rep[i]) && kiq_ctl_has_id(isr, nisr, rep[i]) &&
                kiq_ctl_may_lead(c, ti, p, rep[i]))
                leader = rep[i];
    }
    if (nisr == 0 || (pr->leader >= 0 && leader == KIQ_NO_LEADER)) {
        kiq_error_set("no replica of %s-%d in the new replica set is live and in sync to lead it", ti->name, (int)p);
        return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    }
    kiq_partition_change_record_t *ch = kiq_ctl_partition_change(b, ti, p);
    ch->replicas = kiq_ctl_copy_ids(b->a, rep, nrep);
    ch->replicas_n = nrep;
    ch->isr = isr;
    ch->isr_n = nisr;
    ch->adding_replicas = kiq_ctl_copy_ids(b->a, adding, nadding);
    ch->adding_replicas_n = nadding;
    ch->removing_replicas = kiq_ctl_copy_ids(b->a, removing, nremoving);
    ch->removing_replicas_n = nremoving;
    if (leader != pr->leader) ch->leader = leader;
    return KIQ_ERR_NONE;
}

int kiq_ctl_complete_reassignments(kiq_controller_t *c)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    for (size_t t = 0; t < kiq_metadata_image_topic_count(c->image); t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            if (!reassigning(pr)) continue;
            int32_t *target = kiq_arena_calloc(&a, (size_t)pr->nreplicas + 1, sizeof *target);
            int32_t ntarget = minus(pr->replicas, pr->nreplicas, pr->removing_replicas, pr->nremoving, target);
            if (!all_in(target, ntarget, pr->isr, pr->nisr)) continue; /* not all in sync yet */
            if (change_replicas(c, &b, ti, p, target, ntarget, NULL, 0, NULL, 0) == KIQ_ERR_NONE)
                KIQ_INFO("controller: %s-%d: reassignment complete: %d replicas, all in sync", ti->name, (int)p,
                         (int)ntarget);
        }
    }
    int rc = b.n > 0 ? kiq_ctl_commit(c, &b) : 0;
    kiq_arena_reset(&a);
    return rc;
}

/* Under mu: Kafka's checks of a target replica list: not empty, no broker
 * twice, every broker registered, and the same size as the original set
 * unless the replication factor may change. */
static int16_t check_target(kiq_controller_t *c, const int32_t *want, int32_t nwant, int32_t norig, bool allow_rf)
{
    if (nwant <= 0)
        return kiq_error_set("The manual partition assignment includes an empty replica list."),
               KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    if (nwant > KIQ_MAX_REPLICAS)
        return kiq_error_set("The manual partition assignment has %d replicas; at most %d are allowed.", (int)nwant,
                             KIQ_MAX_REPLICAS),
               KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    for (int32_t i = 0; i < nwant; i++) {
        if (kiq_ctl_has_id(want, i, want[i]))
            return kiq_error_set("The manual partition assignment includes the broker %d more than once.",
                                 (int)want[i]),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        if (!kiq_metadata_image_broker(c->image, want[i]))
            return kiq_error_set("The manual partition assignment includes broker %d, but no such broker is "
                                 "registered.",
                                 (int)want[i]),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    }
    if (!allow_rf && nwant != norig)
        return kiq_error_set("The replication factor is changed from %d to %d but changing replication factor is not "
                             "allowed for this reassignment.",
                             (int)norig, (int)nwant),
               KIQ_ERR_INVALID_REPLICATION_FACTOR;
    return KIQ_ERR_NONE;
}

/* Under mu: one partition's new target (want; nwant < 0 cancels), as
 * records into b. From the original replicas (those before any
 * reassignment in progress): the target first, then the originals it
 * drops, which are removing; the target's others are adding. Nothing to
 * add or remove (a cancel, a reordering) completes at once. */
static int16_t alter_one(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p, const int32_t *want,
                         int32_t nwant, bool allow_rf)
{
    if (!ti || p < 0 || p >= ti->npartitions)
        return kiq_error_set("The partition does not exist."), KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    int32_t *orig = kiq_arena_calloc(b->a, (size_t)pr->nreplicas + 1, sizeof *orig);
    int32_t norig = minus(pr->replicas, pr->nreplicas, pr->adding_replicas, pr->nadding, orig);
    if (nwant < 0) {
        if (!reassigning(pr))
            return kiq_error_set("No ongoing reassignment for %s-%d.", ti->name, (int)p),
                   KIQ_ERR_NO_REASSIGNMENT_IN_PROGRESS;
        want = orig;
        nwant = norig;
        KIQ_INFO("controller: %s-%d: reassignment cancelled: back to %d replicas", ti->name, (int)p, (int)norig);
    } else {
        int16_t err = check_target(c, want, nwant, norig, allow_rf);
        if (err) return err;
    }
    int32_t *rep = kiq_arena_calloc(b->a, (size_t)(nwant + norig) + 1, sizeof *rep);
    memcpy(rep, want, (size_t)nwant * sizeof *rep);
    int32_t nremoving = minus(orig, norig, want, nwant, rep + nwant);
    int32_t *adding = kiq_arena_calloc(b->a, (size_t)nwant + 1, sizeof *adding);
    int32_t nadding = minus(want, nwant, orig, norig, adding);
    int16_t err = change_replicas(c, b, ti, p, rep, nwant + nremoving, adding, nadding, rep + nwant, nremoving);
    if (err == KIQ_ERR_NONE && (nadding || nremoving))
        KIQ_INFO("controller: %s-%d: reassigning to %d replicas (%d adding, %d removing)", ti->name, (int)p,
                 (int)nwant, (int)nadding, (int)nremoving);
    return err;
}

/* The message of err for a partition's answer, in arena (null when none). */
static kiq_str_t why(kiq_arena_t *arena, int16_t err)
{
    const char *e = kiq_error_get();
    if (!err || !*e) return KIQ_STR_NULL;
    return (kiq_str_t){kiq_arena_strndup(arena, e, strlen(e)), (int32_t)strlen(e)};
}

void kiq_controller_alter_reassignments(kiq_controller_t *c, kiq_arena_t *arena,
                                        const kiq_alter_partition_reassignments_request_t *req,
                                        kiq_alter_partition_reassignments_response_t *resp)
{
    int32_t nt = req->topics_n > 0 ? req->topics_n : 0;
    resp->responses_n = nt;
    resp->responses = kiq_arena_calloc(arena, (size_t)nt + 1, sizeof *resp->responses);
    pthread_mutex_lock(&c->mu);
    for (int32_t t = 0; t < nt; t++) {
        const kiq_alter_partition_reassignments_request_topics_t *tin = &req->topics[t];
        kiq_alter_partition_reassignments_response_responses_t *tout = &resp->responses[t];
        kiq_alter_partition_reassignments_response_responses_init(tout);
        tout->name = tin->name;
        tout->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        tout->partitions = kiq_arena_calloc(arena, (size_t)tout->partitions_n + 1, sizeof *tout->partitions);
        for (int32_t i = 0; i < tout->partitions_n; i++) {
            const kiq_alter_partition_reassignments_request_topics_partitions_t *in = &tin->partitions[i];
            kiq_alter_partition_reassignments_response_responses_partitions_t *po = &tout->partitions[i];
            kiq_alter_partition_reassignments_response_responses_partitions_init(po);
            po->partition_index = in->partition_index;
            /* one commit per partition: the next one is decided on what it did */
            kiq_arena_t a;
            kiq_arena_init(&a);
            batch_t b = {.a = &a};
            kiq_error_clear();
            const kiq_topic_image_t *ti =
                tin->name.p ? kiq_metadata_image_topic(c->image, tin->name.p, (size_t)tin->name.len) : NULL;
            po->error_code = alter_one(c, &b, ti, in->partition_index, in->replicas, in->replicas_n,
                                       req->allow_replication_factor_change);
            if (!po->error_code && kiq_ctl_commit(c, &b) != 0) po->error_code = c->commit_error;
            po->error_message = why(arena, po->error_code);
            kiq_arena_reset(&a);
        }
    }
    kiq_ctl_complete_reassignments(c); /* those with nothing left to add */
    pthread_mutex_unlock(&c->mu);
}

void kiq_controller_list_reassignments(kiq_controller_t *c, kiq_arena_t *arena,
                                       const kiq_list_partition_reassignments_request_t *req,
                                       kiq_list_partition_reassignments_response_t *resp)
{
    pthread_mutex_lock(&c->mu);
    bool all = req->topics_n < 0;
    int32_t nt = all ? (int32_t)kiq_metadata_image_topic_count(c->image) : req->topics_n;
    resp->topics = kiq_arena_calloc(arena, (size_t)nt + 1, sizeof *resp->topics);
    for (int32_t t = 0; t < nt; t++) {
        const kiq_list_partition_reassignments_request_topics_t *want = all ? NULL : &req->topics[t];
        const kiq_topic_image_t *ti =
            all            ? kiq_metadata_image_topic_at(c->image, (size_t)t)
            : want->name.p ? kiq_metadata_image_topic(c->image, want->name.p, (size_t)want->name.len)
                           : NULL;
        if (!ti) continue; /* an unknown topic has nothing in progress */
        int32_t np = all ? ti->npartitions : want->partition_indexes_n;
        kiq_list_partition_reassignments_response_topics_t *tout = &resp->topics[resp->topics_n];
        kiq_list_partition_reassignments_response_topics_init(tout);
        tout->name = kiq_ctl_astr(arena, ti->name);
        tout->partitions = kiq_arena_calloc(arena, (size_t)(np > 0 ? np : 0) + 1, sizeof *tout->partitions);
        for (int32_t i = 0; i < np; i++) {
            int32_t p = all ? i : want->partition_indexes[i];
            if (p < 0 || p >= ti->npartitions || !reassigning(&ti->partitions[p])) continue;
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            kiq_list_partition_reassignments_response_topics_partitions_t *po = &tout->partitions[tout->partitions_n++];
            kiq_list_partition_reassignments_response_topics_partitions_init(po);
            po->partition_index = p;
            po->replicas = kiq_ctl_copy_ids(arena, pr->replicas, pr->nreplicas);
            po->replicas_n = pr->nreplicas;
            po->adding_replicas = kiq_ctl_copy_ids(arena, pr->adding_replicas, pr->nadding);
            po->adding_replicas_n = pr->nadding;
            po->removing_replicas = kiq_ctl_copy_ids(arena, pr->removing_replicas, pr->nremoving);
            po->removing_replicas_n = pr->nremoving;
        }
        if (tout->partitions_n > 0) resp->topics_n++;
    }
    pthread_mutex_unlock(&c->mu);
}
