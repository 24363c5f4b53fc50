/* What the controller sends each broker: the whole current state as
 * UpdateMetadata, LeaderAndIsr and StopReplica, one round per change
 * (broker_channel.h), and what the broker took. */
#include "controller/controller_internal.h"

kiq_str_t kiq_ctl_astr(kiq_arena_t *a, const char *s)
{
    size_t n = strlen(s);
    return (kiq_str_t){kiq_arena_strndup(a, s, n), (int32_t)n};
}

/* Under mu: the leader the brokers are told of: none until it took the
 * record that made it leader. */
static int32_t announced_leader(kiq_controller_t *c, const kiq_partition_registration_t *pr)
{
    if (pr->leader < 0 || pr->leader_offset < 0) return pr->leader;
    const broker_slot_t *l = kiq_ctl_slot_of(c, pr->leader, false);
    return l && l->acked_offset >= pr->leader_offset ? pr->leader : KIQ_NO_LEADER;
}

/* Under mu: every partition's state for UpdateMetadata, and those with a
 * replica on broker for LeaderAndIsr. */
static void build_partition_states(kiq_controller_t *c, int32_t broker, kiq_arena_t *a,
                                   kiq_update_metadata_request_t *um, kiq_leader_and_isr_request_t *la)
{
    size_t ntopics = kiq_metadata_image_topic_count(c->image);
    um->topic_states = kiq_arena_calloc(a, ntopics ? ntopics : 1, sizeof *um->topic_states);
    la->topic_states = kiq_arena_calloc(a, ntopics ? ntopics : 1, sizeof *la->topic_states);
    for (size_t t = 0; t < ntopics; t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        kiq_update_metadata_request_topic_states_t *ut = &um->topic_states[um->topic_states_n++];
        kiq_update_metadata_request_topic_states_init(ut);
        ut->topic_name = kiq_ctl_astr(a, ti->name);
        ut->topic_id = ti->id;
        ut->partition_states = kiq_arena_calloc(a, (size_t)(ti->npartitions ? ti->npartitions : 1),
                                                sizeof *ut->partition_states);
        kiq_leader_and_isr_request_topic_states_t *lt = NULL;
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            kiq_update_metadata_request_topic_states_partition_states_t *up = &ut->partition_states[ut->partition_states_n++];
            kiq_update_metadata_request_topic_states_partition_states_init(up);
            up->partition_index = p;
            up->controller_epoch = c->epoch;
            up->leader = announced_leader(c, pr);
            up->leader_epoch = pr->leader_epoch;
            up->isr = kiq_ctl_copy_ids(a, pr->isr, pr->nisr);
            up->isr_n = pr->nisr;
            up->partition_epoch = pr->partition_epoch;
            up->replicas = kiq_ctl_copy_ids(a, pr->replicas, pr->nreplicas);
            up->replicas_n = pr->nreplicas;
            up->offline_replicas = kiq_arena_calloc(a, (size_t)pr->nreplicas + 1, sizeof *up->offline_replicas);
            for (int32_t i = 0; i < pr->nreplicas; i++) {
                const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, pr->replicas[i]);
                if (!rb || rb->fenced) up->offline_replicas[up->offline_replicas_n++] = pr->replicas[i];
            }
            if (!kiq_ctl_has_id(pr->replicas, pr->nreplicas, broker)) continue;
            if (!lt) {
                lt = &la->topic_states[la->topic_states_n++];
                kiq_leader_and_isr_request_topic_states_init(lt);
                lt->topic_name = ut->topic_name;
                lt->topic_id = ti->id;
                lt->partition_states = kiq_arena_calloc(a, (size_t)ti->npartitions, sizeof *lt->partition_states);
            }
            kiq_leader_and_isr_request_topic_states_partition_states_t *lp = &lt->partition_states[lt->partition_states_n++];
            kiq_leader_and_isr_request_topic_states_partition_states_init(lp);
            lp->partition_index = p;
            lp->controller_epoch = c->epoch;
            lp->leader = pr->leader;
            lp->leader_epoch = pr->leader_epoch;
            lp->isr = up->isr;
            lp->isr_n = pr->nisr;
            lp->partition_epoch = pr->partition_epoch;
            lp->replicas = up->replicas;
            lp->replicas_n = pr->nreplicas;
            lp->leader_recovery_state = pr->leader_recovery_state;
        }
    }
}

/* Under mu: the live brokers with their endpoints, and each one's data
 * endpoint for followers to find their leaders. */
static void build_live_brokers(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um,
                               kiq_leader_and_isr_request_t *la)
{
    size_t nb = kiq_metadata_image_broker_count(c->image);
    um->live_brokers = kiq_arena_calloc(a, nb ? nb : 1, sizeof *um->live_brokers);
    la->live_leaders = kiq_arena_calloc(a, nb ? nb : 1, sizeof *la->live_leaders);
    for (size_t i = 0; i < nb; i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker_at(c->image, i);
        if (rb->fenced) continue;
        kiq_update_metadata_request_live_brokers_t *lb = &um->live_brokers[um->live_brokers_n++];
        kiq_update_metadata_request_live_brokers_init(lb);
        lb->id = rb->id;
        lb->rack = rb->rack ? kiq_ctl_astr(a, rb->rack) : KIQ_STR_NULL;
        lb->endpoints = kiq_arena_calloc(a, (size_t)(rb->nendpoints ? rb->nendpoints : 1), sizeof *lb->endpoints);
        for (int32_t e = 0; e < rb->nendpoints; e++) {
            kiq_update_metadata_request_live_brokers_endpoints_t *ep = &lb->endpoints[lb->endpoints_n++];
            kiq_update_metadata_request_live_brokers_endpoints_init(ep);
            ep->port = rb->endpoints[e].port;
            ep->host = kiq_ctl_astr(a, rb->endpoints[e].host);
            ep->listener = kiq_ctl_astr(a, rb->endpoints[e].name);
            ep->security_protocol = rb->endpoints[e].security_protocol;
        }
        /* every live broker, leaders or not: a follower finds its leader here */
        const kiq_broker_endpoint_t *data = kiq_ctl_endpoint(c, rb, NULL);
        if (data) {
            kiq_leader_and_isr_request_live_leaders_t *ll = &la->live_leaders[la->live_leaders_n++];
            kiq_leader_and_isr_request_live_leaders_init(ll);
            ll->broker_id = rb->id;
            ll->host_name = kiq_ctl_astr(a, data->host);
            ll->port = data->port;
        }
    }
}

/* Under mu: the dynamic configs broker acts on: the cluster-wide ones,
 * its own, the topics'. */
static void build_configs(kiq_controller_t *c, int32_t broker, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    size_t ncfg = kiq_metadata_image_config_count(c->image);
    char self[16];
    snprintf(self, sizeof self, "%d", broker);
    um->kafkaiq_configs = kiq_arena_calloc(a, ncfg ? ncfg : 1, sizeof *um->kafkaiq_configs);
    for (size_t i = 0; i < ncfg; i++) {
        const kiq_config_entry_t *e = kiq_metadata_image_config_at(c->image, i);
        if (e->resource_type == KIQ_CONFIG_RESOURCE_BROKER && e->resource_name[0] && strcmp(e->resource_name, self) != 0)
            continue;
        kiq_update_metadata_request_kafkaiq_configs_t *o = &um->kafkaiq_configs[um->kafkaiq_configs_n++];
        kiq_update_metadata_request_kafkaiq_configs_init(o);
        o->resource_type = e->resource_type;
        o->resource_name = kiq_ctl_astr(a, e->resource_name);
        o->name = kiq_ctl_astr(a, e->name);
        o->value = kiq_ctl_astr(a, e->value);
    }
}

bool kiq_ctl_add_stop(kiq_controller_t *c, int32_t broker, const char *topic, int32_t p)
{
    broker_slot_t *s = kiq_ctl_slot_of(c, broker, true);
    if (!s) return false;
    if (s->nstops == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        stop_entry_t *ns = realloc(s->stops, (size_t)cap * sizeof *ns);
        if (!ns) return false;
        s->stops = ns;
        s->cap = cap;
    }
    char *name = strdup(topic);
    if (!name) return false;
    s->stops[s->nstops++] = (stop_entry_t){name, p};
    return true;
}

/* Under mu: the StopReplica deleting the partitions s still has to drop. */
static void build_stops(kiq_controller_t *c, broker_slot_t *s, int64_t broker_epoch, kiq_arena_t *a,
                        kiq_stop_replica_request_t *sr)
{
    sr->controller_id = c->node_id;
    sr->controller_epoch = c->epoch;
    sr->broker_epoch = broker_epoch;
    sr->topic_states = kiq_arena_calloc(a, (size_t)s->nstops, sizeof *sr->topic_states);
    for (int i = 0; i < s->nstops; i++) {
        kiq_stop_replica_request_topic_states_t *ts = &sr->topic_states[sr->topic_states_n++];
        kiq_stop_replica_request_topic_states_init(ts);
        ts->topic_name = kiq_ctl_astr(a, s->stops[i].topic);
        ts->partition_states = kiq_arena_calloc(a, 1, sizeof *ts->partition_states);
        ts->partition_states_n = 1;
        kiq_stop_replica_request_topic_states_partition_states_init(&ts->partition_states[0]);
        ts->partition_states[0].partition_index = s->stops[i].partition;
        ts->partition_states[0].leader_epoch = -2; /* deletion: whatever epoch */
        ts->partition_states[0].delete_partition = true;
    }
    s->stops_in_flight = s->nstops;
}

/* The sender's round for broker (broker_channel.h): the whole current
 * state, built under mu. */
static uint64_t build_round(void *ctx, int32_t broker, kiq_arena_t *a, kiq_channel_round_t *out)
{
    kiq_controller_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *target = kiq_metadata_image_broker(c->image, broker);
    int64_t broker_epoch = target ? target->epoch : -1;
    kiq_update_metadata_request_t *um = &out->update_metadata;
    um->controller_id = c->node_id;
    um->controller_epoch = c->epoch;
    um->broker_epoch = broker_epoch;
    kiq_leader_and_isr_request_t *la = &out->leader_and_isr;
    la->controller_id = c->node_id;
    la->controller_epoch = c->epoch;
    la->broker_epoch = broker_epoch;
    build_partition_states(c, broker, a, um, la);
    build_live_brokers(c, a, um, la);
    build_configs(c, broker, a, um);
    kiq_ctl_build_features(c, a, um);
    kiq_ctl_build_scram(c, a, um);
    kiq_ctl_build_acls(c, a, um);
    kiq_ctl_build_tokens(c, a, um);
    kiq_ctl_build_quotas(c, a, um);
    broker_slot_t *s = kiq_ctl_slot_of(c, broker, false);
    if (s) s->building_offset = kiq_metadata_image_offset(c->image);
    out->stop = s && s->nstops > 0;
    if (out->stop) build_stops(c, s, broker_epoch, a, &out->stop_replica);
    uint64_t version = c->version;
    pthread_mutex_unlock(&c->mu);
    return version;
}

/* Under mu: whether the broker leads a partition it took the leadership of
 * after `from` and up to `to`. */
static bool took_leadership(kiq_controller_t *c, int32_t broker, int64_t from, int64_t to)
{
    size_t ntopics = kiq_metadata_image_topic_count(c->image);
    for (size_t t = 0; t < ntopics; t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            if (pr->leader == broker && pr->leader_offset > from && pr->leader_offset <= to) return true;
        }
    }
    return false;
}

static void round_sent(void *ctx, int32_t broker, uint64_t version, bool stop_sent)
{
    kiq_controller_t *c = ctx;
    (void)version;
    pthread_mutex_lock(&c->mu);
    broker_slot_t *s = kiq_ctl_slot_of(c, broker, false);
    if (s && s->building_offset > s->acked_offset) {
        int64_t from = s->acked_offset;
        s->acked_offset = s->building_offset;
        /* its new leaderships can be named now: a round for everyone */
        if (took_leadership(c, broker, from, s->acked_offset)) kiq_ctl_tell_brokers(c);
    }
    if (stop_sent && s && s->stops_in_flight > 0) {
        for (int i = 0; i < s->stops_in_flight; i++) free(s->stops[i].topic);
        memmove(s->stops, s->stops + s->stops_in_flight, (size_t)(s->nstops - s->stops_in_flight) * sizeof *s->stops);
        s->nstops -= s->stops_in_flight;
        s->stops_in_flight = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

void kiq_ctl_connect_channel(kiq_controller_t *c, broker_slot_t *s, bool restarted)
{
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, s->id);
    const kiq_broker_endpoint_t *e = rb ? kiq_ctl_endpoint(c, rb, c->control_listener) : NULL;
    if (!e) {
        KIQ_WARN("controller: broker %d registered no %s listener; it cannot be told anything", s->id,
                 c->control_listener);
        return;
    }
    if (!s->channel) {
        kiq_channel_owner_t owner = {.ctx = c, .build = build_round, .sent = round_sent};
        s->channel = kiq_broker_channel_new(s->id, e->host, e->port, &owner, c->metrics, c->security);
        if (!s->channel) {
            KIQ_ERROR("controller: %s", kiq_error_get());
            return;
        }
    } else if (restarted) {
        kiq_broker_channel_reset(s->channel, e->host, e->port);
    }
    if (restarted) s->building_offset = s->acked_offset = -1;
    kiq_broker_channel_poke(s->channel, c->version ? c->version : 1);
}
