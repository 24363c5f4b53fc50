/* The requests the controller decides: broker registration and
 * heartbeats, topics created, grown and deleted, ISR changes, elections,
 * producer ids, replicas in lost directories. */
#include "controller/controller_internal.h"

void kiq_controller_register_broker(kiq_controller_t *c, const kiq_broker_registration_request_t *req,
                                    kiq_broker_registration_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *old = kiq_metadata_image_broker(c->image, req->broker_id);
    bool same = old && memcmp(&old->incarnation_id, &req->incarnation_id, sizeof old->incarnation_id) == 0;
    broker_slot_t *held = old && !same && !old->fenced ? kiq_ctl_slot_of(c, req->broker_id, false) : NULL;
    if (held && held->heard && kiq_clock_mono_ns() - held->last_heartbeat_ns <= c->session_timeout_ns &&
        !kiq_ctl_shares_dir(old, req)) {
        /* Its registered incarnation heartbeats and holds other
         * directories: a second process with this id, not a restart
         * (Kafka refuses it the same way while the session lasts). */
        KIQ_WARN_LIMITED("controller: a second registration of broker %d refused: the registered one heartbeats "
                         "and holds other log directories", req->broker_id);
        resp->error_code = KIQ_ERR_DUPLICATE_BROKER_REGISTRATION;
        goto out;
    }
    if (same) {
        resp->broker_epoch = old->epoch;
    } else {
        kiq_ctl_forget_impaired(c, req->broker_id); /* a new incarnation says again what it cannot trust */
        if (old) kiq_ctl_leave_partitions(c, &b, req->broker_id); /* a restart: its log may be behind its followers' */
        kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_REGISTER_BROKER);
        kiq_register_broker_record_t *rr = &r->m.register_broker;
        rr->broker_id = req->broker_id;
        rr->incarnation_id = req->incarnation_id;
        rr->broker_epoch = kiq_metadata_image_offset(c->image) + (int64_t)b.n;
        rr->end_points_n = req->listeners_n;
        rr->end_points = kiq_arena_calloc(&a, (size_t)(req->listeners_n > 0 ? req->listeners_n : 1), sizeof *rr->end_points);
        for (int32_t i = 0; i < req->listeners_n; i++) {
            kiq_register_broker_record_end_points_init(&rr->end_points[i]);
            rr->end_points[i].name = req->listeners[i].name;
            rr->end_points[i].host = req->listeners[i].host;
            rr->end_points[i].port = req->listeners[i].port;
            rr->end_points[i].security_protocol = req->listeners[i].security_protocol;
        }
        rr->rack = req->rack;
        rr->log_dirs = req->log_dirs;
        rr->log_dirs_n = req->log_dirs_n;
        rr->fenced = false;
        int64_t epoch = rr->broker_epoch;
        if (kiq_ctl_commit(c, &b) != 0) {
            resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            goto out;
        }
        kiq_ctl_elect_offline(c, &b);
        kiq_ctl_commit(c, &b);
        resp->broker_epoch = epoch;
        KIQ_INFO("controller: broker %d registered (epoch %lld)%s", req->broker_id, (long long)epoch,
                 old ? ", restarted" : "");
    }
    broker_slot_t *s = kiq_ctl_slot_of(c, req->broker_id, true);
    if (!s) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    s->last_heartbeat_ns = kiq_clock_mono_ns();
    s->heard = true;
    kiq_ctl_connect_channel(c, s, true); /* a registering broker (re)started: it holds no state yet */
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

void kiq_controller_heartbeat(kiq_controller_t *c, const kiq_broker_heartbeat_request_t *req,
                              kiq_broker_heartbeat_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    broker_slot_t *s = kiq_ctl_slot_of(c, req->broker_id, false);
    if (!rb || rb->epoch != req->broker_epoch || !s) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
    } else {
        s->last_heartbeat_ns = kiq_clock_mono_ns();
        s->heard = true;
        if (!s->channel) kiq_ctl_connect_channel(c, s, false); /* first word since the controller started */
        if (req->want_shut_down) {
            /* controlled shutdown: its leaderships move now, not a session
             * timeout after it is gone */
            if (!rb->fenced) {
                kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_FENCE_BROKER);
                r->m.fence_broker.id = rb->id;
                r->m.fence_broker.epoch = rb->epoch;
                if (kiq_ctl_commit(c, &b) == 0) {
                    kiq_ctl_leave_partitions(c, &b, rb->id);
                    kiq_ctl_commit(c, &b);
                    KIQ_INFO("controller: broker %d shut down in a controlled way", rb->id);
                }
            }
            resp->is_fenced = true;
            resp->should_shut_down = true;
        } else if (rb->fenced && !req->want_fence) {
            kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_UNFENCE_BROKER);
            r->m.unfence_broker.id = rb->id;
            r->m.unfence_broker.epoch = rb->epoch;
            if (kiq_ctl_commit(c, &b) == 0) {
                KIQ_INFO("controller: broker %d is back", req->broker_id);
                kiq_ctl_elect_offline(c, &b);
                kiq_ctl_commit(c, &b);
            }
        }
        /* what the image now says (the schema's default is fenced) */
        const kiq_broker_registration_t *now = kiq_metadata_image_broker(c->image, req->broker_id);
        resp->is_fenced = req->want_shut_down || req->want_fence || !now || now->fenced;
        resp->is_caught_up = true;
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

int kiq_controller_unregister_broker(kiq_controller_t *c, int32_t id)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, id);
    if (!rb) {
        kiq_error_set("broker %d is not registered", id);
        rc = KIQ_ERR_BROKER_ID_NOT_REGISTERED;
    } else {
        int64_t epoch = rb->epoch;
        if (!rb->fenced) { /* its leaderships move first, as when it is fenced */
            kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_FENCE_BROKER);
            r->m.fence_broker.id = id;
            r->m.fence_broker.epoch = epoch;
            if (kiq_ctl_commit(c, &b) == 0) {
                kiq_ctl_leave_partitions(c, &b, id);
                rc = kiq_ctl_commit(c, &b);
            } else {
                rc = -1;
            }
        }
        if (rc == 0) {
            kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_UNREGISTER_BROKER);
            r->m.unregister_broker.broker_id = id;
            r->m.unregister_broker.broker_epoch = epoch;
            rc = kiq_ctl_commit(c, &b);
        }
        if (rc == 0)
            KIQ_INFO("controller: broker %d unregistered", id);
        else
            rc = c->commit_error; /* NOT_CONTROLLER after a lost election: the client asks the new one */
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

void kiq_controller_allocate_producer_ids(kiq_controller_t *c, const kiq_allocate_producer_ids_request_t *req,
                                          kiq_allocate_producer_ids_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    resp->producer_id_start = -1;
    resp->producer_id_len = 0;
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || rb->epoch != req->broker_epoch) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
    } else {
        int64_t start = kiq_metadata_image_next_producer_id(c->image);
        kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_PRODUCER_IDS);
        r->m.producer_ids.broker_id = req->broker_id;
        r->m.producer_ids.broker_epoch = req->broker_epoch;
        r->m.producer_ids.next_producer_id = start + KIQ_PRODUCER_ID_BLOCK;
        if (kiq_ctl_commit(c, &b) == 0) {
            resp->error_code = KIQ_ERR_NONE;
            resp->producer_id_start = start;
            resp->producer_id_len = KIQ_PRODUCER_ID_BLOCK;
            KIQ_DEBUG("controller: producer ids %lld..%lld to broker %d", (long long)start,
                      (long long)(start + KIQ_PRODUCER_ID_BLOCK - 1), req->broker_id);
        } else {
            resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

static int16_t check_alter(kiq_controller_t *c, const kiq_alter_partition_request_t *req, const kiq_uuid_t *topic_id,
                           const kiq_partition_registration_t *pr, const kiq_alter_partition_request_topics_partitions_t *in)
{
    if (req->broker_id != pr->leader) return KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    if (in->leader_epoch != pr->leader_epoch) return KIQ_ERR_FENCED_LEADER_EPOCH;
    if (in->partition_epoch != pr->partition_epoch) return KIQ_ERR_INVALID_UPDATE_VERSION;
    if (in->new_isr_n <= 0 || !kiq_ctl_has_id(in->new_isr, in->new_isr_n, pr->leader)) return KIQ_ERR_INVALID_REQUEST;
    for (int32_t i = 0; i < in->new_isr_n; i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, in->new_isr[i]);
        if (!kiq_ctl_has_id(pr->replicas, pr->nreplicas, in->new_isr[i]) || !rb || rb->fenced)
            return KIQ_ERR_INELIGIBLE_REPLICA;
        if (!kiq_ctl_has_id(pr->isr, pr->nisr, in->new_isr[i]) && kiq_ctl_is_impaired(c, topic_id, in->partition_index, in->new_isr[i]))
            return KIQ_ERR_INELIGIBLE_REPLICA;
    }
    return KIQ_ERR_NONE;
}

void kiq_controller_alter_partition(kiq_controller_t *c, kiq_arena_t *arena, int16_t version,
                                    const kiq_alter_partition_request_t *req, kiq_alter_partition_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || (req->broker_epoch >= 0 && rb->epoch != req->broker_epoch)) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
        goto out;
    }
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    const kiq_topic_image_t **tis = kiq_arena_calloc(&a, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *tis);
    for (int32_t t = 0; t < resp->topics_n; t++) {
        const kiq_alter_partition_request_topics_t *tin = &req->topics[t];
        kiq_alter_partition_response_topics_t *tout = &resp->topics[t];
        kiq_alter_partition_response_topics_init(tout);
        tout->topic_name = tin->topic_name;
        tout->topic_id = tin->topic_id;
        tis[t] = version >= 2 ? kiq_metadata_image_topic_by_id(c->image, &tin->topic_id)
                 : tin->topic_name.p ? kiq_metadata_image_topic(c->image, tin->topic_name.p, (size_t)tin->topic_name.len)
                                     : NULL;
        tout->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        tout->partitions = kiq_arena_calloc(arena, (size_t)(tout->partitions_n ? tout->partitions_n : 1),
                                            sizeof *tout->partitions);
        for (int32_t p = 0; p < tout->partitions_n; p++) {
            const kiq_alter_partition_request_topics_partitions_t *in = &tin->partitions[p];
            kiq_alter_partition_response_topics_partitions_t *po = &tout->partitions[p];
            kiq_alter_partition_response_topics_partitions_init(po);
            po->partition_index = in->partition_index;
            const kiq_partition_registration_t *pr =
                tis[t] && in->partition_index >= 0 && in->partition_index < tis[t]->npartitions
                    ? &tis[t]->partitions[in->partition_index]
                    : NULL;
            po->error_code = pr ? check_alter(c, req, &tis[t]->id, pr, in) : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            if (po->error_code) continue;
            kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_PARTITION_CHANGE);
            r->m.partition_change.topic_id = tis[t]->id;
            r->m.partition_change.partition_id = in->partition_index;
            r->m.partition_change.isr = kiq_ctl_copy_ids(&a, in->new_isr, in->new_isr_n);
            r->m.partition_change.isr_n = in->new_isr_n;
        }
    }
    if (kiq_ctl_commit(c, &b) != 0) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    /* answer with the state as it is now */
    for (int32_t t = 0; t < resp->topics_n; t++) {
        const kiq_topic_image_t *ti = tis[t] ? kiq_metadata_image_topic_by_id(c->image, &tis[t]->id) : NULL;
        for (int32_t p = 0; ti && p < resp->topics[t].partitions_n; p++) {
            kiq_alter_partition_response_topics_partitions_t *po = &resp->topics[t].partitions[p];
            if (po->partition_index < 0 || po->partition_index >= ti->npartitions) continue;
            const kiq_partition_registration_t *pr = &ti->partitions[po->partition_index];
            po->leader_id = pr->leader;
            po->leader_epoch = pr->leader_epoch;
            po->isr = kiq_ctl_copy_ids(arena, pr->isr, pr->nisr);
            po->isr_n = pr->nisr;
            po->partition_epoch = pr->partition_epoch;
            po->leader_recovery_state = pr->leader_recovery_state;
            if (!po->error_code)
                KIQ_INFO("controller: %s-%d: ISR now has %d of %d replicas (partition epoch %d)", ti->name,
                         po->partition_index, pr->nisr, pr->nreplicas, pr->partition_epoch);
        }
    }
    /* after the answer, which is about the ISR asked for: a reassignment
     * whose new replicas are all in sync now completes */
    kiq_ctl_complete_reassignments(c);
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

void kiq_controller_assign_replicas_to_dirs(kiq_controller_t *c, kiq_arena_t *arena,
                                            const kiq_assign_replicas_to_dirs_request_t *req,
                                            kiq_assign_replicas_to_dirs_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || rb->epoch != req->broker_epoch) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
        goto out;
    }
    int32_t live[256];
    size_t nlive = kiq_ctl_live_brokers(c, req->broker_id, live, 256);
    resp->directories_n = req->directories_n > 0 ? req->directories_n : 0;
    resp->directories = kiq_arena_calloc(arena, (size_t)resp->directories_n + 1, sizeof *resp->directories);
    for (int32_t d = 0; d < resp->directories_n; d++) {
        const kiq_assign_replicas_to_dirs_request_directories_t *din = &req->directories[d];
        kiq_assign_replicas_to_dirs_response_directories_t *dout = &resp->directories[d];
        kiq_assign_replicas_to_dirs_response_directories_init(dout);
        dout->id = din->id;
        bool lost = memcmp(din->id.b, KIQ_DIR_LOST.b, 16) == 0;
        dout->topics_n = din->topics_n > 0 ? din->topics_n : 0;
        dout->topics = kiq_arena_calloc(arena, (size_t)dout->topics_n + 1, sizeof *dout->topics);
        for (int32_t t = 0; t < dout->topics_n; t++) {
            const kiq_assign_replicas_to_dirs_request_directories_topics_t *tin = &din->topics[t];
            kiq_assign_replicas_to_dirs_response_directories_topics_t *tout = &dout->topics[t];
            kiq_assign_replicas_to_dirs_response_directories_topics_init(tout);
            tout->topic_id = tin->topic_id;
            const kiq_topic_image_t *ti = kiq_metadata_image_topic_by_id(c->image, &tin->topic_id);
            tout->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
            tout->partitions = kiq_arena_calloc(arena, (size_t)tout->partitions_n + 1, sizeof *tout->partitions);
            for (int32_t i = 0; i < tout->partitions_n; i++) {
                int32_t p = tin->partitions[i].partition_index;
                kiq_assign_replicas_to_dirs_response_directories_topics_partitions_t *po = &tout->partitions[i];
                kiq_assign_replicas_to_dirs_response_directories_topics_partitions_init(po);
                po->partition_index = p;
                if (!ti) {
                    po->error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
                    continue;
                }
                if (p < 0 || p >= ti->npartitions || !kiq_ctl_has_id(ti->partitions[p].replicas, ti->partitions[p].nreplicas,
                                                             req->broker_id)) {
                    po->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
                    continue;
                }
                bool was = kiq_ctl_is_impaired(c, &ti->id, p, req->broker_id);
                if (!kiq_ctl_set_impaired(c, &ti->id, p, req->broker_id, lost)) {
                    po->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                    continue;
                }
                if (lost != was)
                    KIQ_INFO("controller: %s-%d: broker %d's replica %s", ti->name, p, req->broker_id,
                             lost ? "is impaired (LOST directory)" : "is back in a directory");
                if (lost) kiq_ctl_move_off(c, &b, ti, p, req->broker_id, live, nlive, true);
            }
        }
    }
    if (kiq_ctl_commit(c, &b) != 0) resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

int kiq_controller_create_topic(kiq_controller_t *c, kiq_str_t name, int32_t partitions, int16_t replication_factor,
                                const kiq_topic_configs_t *configs, bool validate_only)
{
    const char *why;
    if (!kiq_topic_name_valid(name, &why)) return kiq_error_set("%s", why), KIQ_ERR_INVALID_TOPIC_EXCEPTION;
    if (partitions == -1) partitions = c->default_partitions;
    if (replication_factor == -1) replication_factor = c->default_replication_factor;
    if (partitions <= 0) return kiq_error_set("partitions must be positive"), KIQ_ERR_INVALID_PARTITIONS;
    if (replication_factor <= 0 || replication_factor > KIQ_MAX_REPLICAS)
        return kiq_error_set("replication factor must be 1-%d", KIQ_MAX_REPLICAS),
               KIQ_ERR_INVALID_REPLICATION_FACTOR;
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    if (kiq_metadata_image_topic(c->image, name.p, (size_t)name.len)) {
        rc = KIQ_ERR_TOPIC_ALREADY_EXISTS;
        kiq_error_set("Topic '%.*s' already exists.", (int)name.len, name.p);
        goto out;
    }
    int32_t *assign = kiq_arena_calloc(&a, (size_t)partitions * (size_t)replication_factor, sizeof *assign);
    rc = kiq_metadata_image_assign_replicas(c->image, 0, partitions, replication_factor, -1, assign);
    if (rc != 0) {
        if (rc < 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (validate_only) goto out;
    kiq_uuid_t id;
    kiq_uuid_random(&id);
    kiq_metadata_record_t *tr = kiq_ctl_add_record(&b, KIQ_MR_TOPIC);
    tr->m.topic.name = (kiq_str_t){kiq_arena_strndup(&a, name.p, (size_t)name.len), name.len};
    tr->m.topic.topic_id = id;
    for (int32_t p = 0; p < partitions; p++) {
        kiq_metadata_record_t *pr = kiq_ctl_add_record(&b, KIQ_MR_PARTITION);
        kiq_partition_record_t *r = &pr->m.partition;
        r->partition_id = p;
        r->topic_id = id;
        r->replicas = &assign[p * replication_factor];
        r->replicas_n = replication_factor;
        r->isr = r->replicas;
        r->isr_n = replication_factor;
        r->leader = r->replicas[0];
        r->leader_epoch = 0;
        r->partition_epoch = 0;
    }
    for (int i = 0; configs && i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        if (!configs->value[i]) continue;
        kiq_metadata_record_t *cr = kiq_ctl_add_record(&b, KIQ_MR_CONFIG);
        cr->m.config.resource_type = KIQ_CONFIG_RESOURCE_TOPIC;
        cr->m.config.resource_name = tr->m.topic.name;
        cr->m.config.name = KIQ_STR(kiq_topic_config_defs[i].name);
        cr->m.config.value = (kiq_str_t){configs->value[i], (int32_t)strlen(configs->value[i])};
    }
    if (kiq_ctl_commit(c, &b) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    KIQ_INFO("controller: created topic %.*s with %d partitions, replication factor %d", (int)name.len, name.p,
             partitions, replication_factor);
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_check_growth(const char *topic, int32_t current, int32_t rf, int32_t count,
                                const kiq_create_partitions_request_topics_assignments_t *as, int32_t nassignments,
                                int (*broker_state)(void *ctx, int32_t id), void *ctx, int32_t *out)
{
    if (count < current)
        return kiq_error_set("The topic %s currently has %d partition(s); %d would not be an increase.", topic, current,
                             count),
               KIQ_ERR_INVALID_PARTITIONS;
    if (count == current) return kiq_error_set("Topic already has %d partition(s).", count), KIQ_ERR_INVALID_PARTITIONS;
    if (nassignments < 0) return KIQ_ERR_NONE;
    int32_t additional = count - current;
    if (nassignments != additional)
        return kiq_error_set("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
                             additional, nassignments),
               KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    for (int32_t i = 0; i < nassignments; i++) {
        const kiq_create_partitions_request_topics_assignments_t *a = &as[i];
        if (a->broker_ids_n <= 0)
            return kiq_error_set("The manual partition assignment includes an empty replica list."),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        bool live = false;
        for (int32_t j = 0; j < a->broker_ids_n; j++) {
            int32_t id = a->broker_ids[j];
            if (kiq_ctl_has_id(a->broker_ids, j, id))
                return kiq_error_set("The manual partition assignment includes the broker %d more than once.", id),
                       KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            int st = broker_state(ctx, id);
            if (st < 0)
                return kiq_error_set("The manual partition assignment includes broker %d, but no such broker is "
                                     "registered.",
                                     id),
                       KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            live = live || st > 0;
        }
        if (a->broker_ids_n != rf)
            return kiq_error_set("The manual partition assignment includes a partition with %d replica(s), but this "
                                 "is not consistent with previous partitions, which have %d replica(s).",
                                 a->broker_ids_n, rf),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        if (!live)
            return kiq_error_set("All brokers specified in the manual partition assignment for partition %d are "
                                 "fenced or in controlled shutdown.",
                                 current + i),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        if (out) memcpy(&out[i * rf], a->broker_ids, (size_t)rf * sizeof *out);
    }
    return KIQ_ERR_NONE;
}

/* The image's say on a broker, for kiq_controller_check_growth. */
static int image_broker_state(void *ctx, int32_t id)
{
    const kiq_broker_registration_t *br = kiq_metadata_image_broker(ctx, id);
    return !br ? -1 : br->fenced ? 0 : 1;
}

/* Under mu: Kafka's placement of a topic's new partitions: its replication
 * factor, starting from the first live broker whose id is at least that of
 * partition 0's first replica, as if the partitions had been there from
 * the start (AdminZkClient.createPartitions). */
static int place_new_partitions(kiq_controller_t *c, const kiq_topic_image_t *ti, int32_t additional, int32_t rf,
                                int32_t *out)
{
    size_t n = kiq_metadata_image_live_brokers(c->image, NULL, 0);
    int32_t *live = malloc((n ? n : 1) * sizeof *live);
    if (!live) return kiq_error_set("out of memory");
    kiq_metadata_image_live_brokers(c->image, live, n);
    int32_t first = ti->partitions[0].nreplicas > 0 ? ti->partitions[0].replicas[0] : 0, start = 0;
    while ((size_t)start < n && live[start] < first) start++;
    if ((size_t)start == n) start = 0;
    free(live);
    return kiq_metadata_image_assign_replicas(c->image, ti->npartitions, additional, rf, start, out);
}

int kiq_controller_create_partitions(kiq_controller_t *c, kiq_str_t name, int32_t count,
                                     const kiq_create_partitions_request_topics_assignments_t *assignments,
                                     int32_t nassignments, bool validate_only)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = name.p ? kiq_metadata_image_topic(c->image, name.p, (size_t)name.len) : NULL;
    if (!ti) {
        kiq_error_set("The topic '" KIQ_STR_FMT "' does not exist.", KIQ_STR_ARG(name));
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        goto out;
    }
    int32_t rf = ti->partitions[0].nreplicas > 0 ? ti->partitions[0].nreplicas : 1;
    int32_t additional = count > ti->npartitions ? count - ti->npartitions : 0;
    int32_t *assign = kiq_arena_calloc(&a, (size_t)(additional ? additional : 1) * (size_t)rf, sizeof *assign);
    rc = kiq_controller_check_growth(ti->name, ti->npartitions, rf, count, assignments, nassignments,
                                     image_broker_state, c->image, assign);
    if (rc == 0 && nassignments < 0) rc = place_new_partitions(c, ti, additional, rf, assign);
    if (rc != 0) {
        if (rc < 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (validate_only) goto out;
    for (int32_t i = 0; i < additional; i++) {
        kiq_metadata_record_t *pr = kiq_ctl_add_record(&b, KIQ_MR_PARTITION);
        kiq_partition_record_t *r = &pr->m.partition;
        r->partition_id = ti->npartitions + i;
        r->topic_id = ti->id;
        r->replicas = &assign[i * rf];
        r->replicas_n = rf;
        /* the ISR and the leader: the replicas that are live, in order */
        int32_t *isr = kiq_arena_calloc(&a, (size_t)rf, sizeof *isr);
        int32_t nisr = 0;
        for (int32_t j = 0; j < rf; j++) {
            const kiq_broker_registration_t *br = kiq_metadata_image_broker(c->image, r->replicas[j]);
            if (br && !br->fenced) isr[nisr++] = r->replicas[j];
        }
        r->isr = isr;
        r->isr_n = nisr;
        r->leader = nisr > 0 ? isr[0] : KIQ_NO_LEADER;
        r->leader_epoch = 0;
        r->partition_epoch = 0;
    }
    char tname[256];
    snprintf(tname, sizeof tname, "%s", ti->name);
    int32_t before = ti->npartitions;
    if (kiq_ctl_commit(c, &b) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    KIQ_INFO("controller: topic %s grew from %d to %d partitions", tname, before, count);
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_delete_topic(kiq_controller_t *c, kiq_str_t name)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = name.p ? kiq_metadata_image_topic(c->image, name.p, (size_t)name.len) : NULL;
    if (!ti) {
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        kiq_error_set("This server does not host this topic-partition.");
        goto out;
    }
    /* who must drop which partitions, noted before the topic is gone */
    for (int32_t p = 0; p < ti->npartitions; p++) {
        const kiq_partition_registration_t *pr = &ti->partitions[p];
        for (int32_t i = 0; i < pr->nreplicas; i++) kiq_ctl_add_stop(c, pr->replicas[i], ti->name, p);
    }
    kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_REMOVE_TOPIC);
    r->m.remove_topic.topic_id = ti->id;
    KIQ_INFO("controller: deleting topic %s", ti->name);
    if (kiq_ctl_commit(c, &b) != 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_topic_configs(kiq_controller_t *c, const char *topic, size_t len, kiq_topic_configs_t *out)
{
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = kiq_metadata_image_topic(c->image, topic, len);
    if (!ti) {
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        kiq_error_set("Topic '%.*s' does not exist", (int)len, topic);
        goto out;
    }
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        const char *v =
            kiq_metadata_image_config(c->image, KIQ_CONFIG_RESOURCE_TOPIC, ti->name, kiq_topic_config_defs[i].name);
        if (!v) continue;
        if (!(out->value[i] = strdup(v))) {
            kiq_topic_configs_clear(out);
            rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            kiq_error_set("out of memory");
            goto out;
        }
    }
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}
