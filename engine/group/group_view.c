/* The consumer groups of the new protocol (KIP-848) as a view
 * (core/view.h), for /api/state and the live page: each group's epoch
 * and the epoch its targets were computed for, and each member's epoch,
 * state, and current assignment beside its target, so a rebalance shows
 * as it reconciles (revocations first). */
#include "core/arena.h"
#include "group/consumer_group.h"
#include "group/coordinator_internal.h"

/* Kafka's names of the member states (MemberState). */
static const char *member_state(const kiq_cg_member_t *m)
{
    if (m->epoch == -2) return "away"; /* a static member between sessions */
    switch (m->state) {
    case KIQ_CG_UNREVOKED_PARTITIONS: return "unrevoked_partitions";
    case KIQ_CG_UNRELEASED_PARTITIONS: return "unreleased_partitions";
    default: return "stable";
    }
}

/* A set of partitions as [{topic, partitions: [...]}], by topic. */
static void partitions(kiq_group_coordinator_t *gc, kiq_arena_t *a, const kiq_view_t *v, const char *name,
                       const kiq_cg_set_t *set)
{
    v->open(v->ctx, name, true);
    for (int i = 0; i < set->n;) {
        const kiq_uuid_t *topic = &set->v[i].topic;
        const char *tname = kiq_gc_topic_name(gc, topic, a);
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "topic", tname ? tname : "");
        v->open(v->ctx, "partitions", true);
        for (; i < set->n && memcmp(set->v[i].topic.b, topic->b, 16) == 0; i++)
            v->number(v->ctx, NULL, set->v[i].partition);
        v->close(v->ctx);
        v->close(v->ctx);
    }
    v->close(v->ctx);
}

static void member(kiq_group_coordinator_t *gc, kiq_arena_t *a, const kiq_view_t *v, const kiq_cg_member_t *m)
{
    v->open(v->ctx, NULL, false);
    v->string(v->ctx, "member_id", m->id);
    v->string(v->ctx, "client_id", m->client_id ? m->client_id : "");
    if (m->instance_id) v->string(v->ctx, "instance_id", m->instance_id);
    v->number(v->ctx, "member_epoch", m->epoch);
    v->number(v->ctx, "previous_epoch", m->previous_epoch);
    v->string(v->ctx, "state", member_state(m));
    v->open(v->ctx, "subscribed_topics", true);
    for (int i = 0; i < m->ntopics; i++) v->string(v->ctx, NULL, m->topics[i]);
    v->close(v->ctx);
    if (m->regex) v->string(v->ctx, "subscribed_regex", m->regex);
    partitions(gc, a, v, "assigned", &m->assigned);
    partitions(gc, a, v, "revoking", &m->revoking);
    partitions(gc, a, v, "target", &m->target);
    v->close(v->ctx);
}

void kiq_group_coordinator_view(kiq_group_coordinator_t *gc, const kiq_view_t *v)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    v->open(v->ctx, "consumer_groups", true);
    pthread_mutex_lock(&gc->mu);
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        const kiq_group_t *g = val;
        if (!g->consumer || g->state == KIQ_GROUP_DEAD) continue;
        const kiq_cgroup_t *cg = g->consumer;
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "group_id", g->id);
        v->string(v->ctx, "state", kiq_cgroup_state_name(cg));
        v->number(v->ctx, "group_epoch", cg->epoch);
        v->number(v->ctx, "assignment_epoch", cg->assignment_epoch);
        v->open(v->ctx, "members", true);
        for (const kiq_cg_member_t *m = cg->members; m; m = m->next) member(gc, &a, v, m);
        v->close(v->ctx);
        v->close(v->ctx);
    }
    pthread_mutex_unlock(&gc->mu);
    v->close(v->ctx);
    kiq_arena_reset(&a);
}
