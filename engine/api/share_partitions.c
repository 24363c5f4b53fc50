/* Share sessions and share-partitions for ShareFetch and ShareAcknowledge;
 * see share_partitions.h. */
#include "api/share_partitions.h"

#include <stdlib.h>
#include <string.h>

#include "api/authorize.h"
#include "api/share_state_topic.h"
#include "controller/metadata_cache.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "replica/partition_replica.h"
#include "share/share_state.h"

void kiq_api_share_cfg(kiq_broker_t *b, kiq_str_t group, kiq_api_share_cfg_t *cfg)
{
    const kiq_group_configs_t *own = group.p ? kiq_share_group_configs(b->shares, group.p, group.len) : NULL;
    const char *lock = own ? own->v[KIQ_GROUP_CFG_LOCK_DURATION_MS] : NULL;
    const char *limit = own ? own->v[KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT] : NULL;
    const char *reset = own ? own->v[KIQ_GROUP_CFG_AUTO_OFFSET_RESET] : NULL;
    const char *iso = own ? own->v[KIQ_GROUP_CFG_ISOLATION_LEVEL] : NULL;
    /* a group's values were checked when set */
    cfg->lock_ms = lock ? atoi(lock) : (int32_t)kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_RECORD_LOCK_DURATION_MS);
    cfg->delivery_limit = limit ? atoi(limit) : (int)kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_DELIVERY_COUNT_LIMIT);
    cfg->max_locks = (int)kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS);
    cfg->earliest = strcmp(reset ? reset : kiq_config_str(b->config, KIQ_CFG_SHARE_AUTO_OFFSET_RESET), "earliest") == 0;
    cfg->read_committed = iso && strcmp(iso, "read_committed") == 0;
}

int16_t kiq_api_share_session(kiq_broker_t *b, kiq_str_t group, kiq_str_t member, int32_t epoch, bool fetch,
                              kiq_share_session_t **out)
{
    if (!group.p || group.len <= 0 || !member.p || member.len <= 0) return KIQ_ERR_INVALID_REQUEST;
    int64_t now_ms = kiq_clock_mono_ns() / 1000000;
    if (epoch == 0) {
        if (!fetch) return KIQ_ERR_INVALID_SHARE_SESSION_EPOCH;
        /* a new member's session past the cache's bound (a member's own
         * session it replaces) */
        if (!kiq_share_session_find(b->shares, group.p, group.len, member.p, member.len) &&
            (int64_t)kiq_str_map_count(b->shares->sessions) >= kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_MAX_SHARE_SESSIONS) &&
            /* one whose member has been silent longer than a member's session may go */
            !kiq_share_session_evict_idle(b->shares, now_ms - kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_SESSION_TIMEOUT_MS)))
            return KIQ_ERR_SHARE_SESSION_LIMIT_REACHED;
        int released;
        *out = kiq_share_session_open(b->shares, group.p, group.len, member.p, member.len, &released);
        if (*out) (*out)->used_ms = now_ms;
        return *out ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    kiq_share_session_t *s = kiq_share_session_find(b->shares, group.p, group.len, member.p, member.len);
    if (!s) return KIQ_ERR_SHARE_SESSION_NOT_FOUND;
    if (epoch != -1) {
        if (epoch != s->next_epoch) return KIQ_ERR_INVALID_SHARE_SESSION_EPOCH;
        s->next_epoch = kiq_share_next_epoch(epoch);
    }
    s->used_ms = now_ms;
    *out = s;
    return KIQ_ERR_NONE;
}

bool kiq_api_share_topic_allowed(kiq_broker_t *b, kiq_request_t *r, const kiq_uuid_t *topic_id)
{
    kiq_cached_topic_t t;
    if (!kiq_api_authorizing(b, r)) return true; /* no copy of the topic where nobody asks */
    if (!kiq_api_topic_view(b, r, (kiq_str_t){NULL, 0}, topic_id, &t)) return true;
    return kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, (kiq_str_t){t.name, (int32_t)t.len});
}

int16_t kiq_api_share_log(kiq_broker_t *b, const kiq_uuid_t *topic_id, int32_t partition, kiq_topic_t **topic)
{
    *topic = kiq_topics_get_by_id(b->topics, topic_id);
    if (!*topic) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_cached_topic_t known;
        bool elsewhere = b->cluster && kiq_metadata_cache_topic_by_id(b->metadata, topic_id, &a, &known);
        kiq_arena_reset(&a);
        return elsewhere ? KIQ_ERR_NOT_LEADER_OR_FOLLOWER : KIQ_ERR_UNKNOWN_TOPIC_ID;
    }
    int16_t err = KIQ_ERR_NONE;
    if (partition < 0 || partition >= (*topic)->npartitions) err = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    else if (!(*topic)->partitions[partition]->log) err = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    else if (kiq_partition_log_offline((*topic)->partitions[partition]->log)) err = KIQ_ERR_KAFKA_STORAGE_ERROR;
    else err = kiq_partition_replica_check_leader((*topic)->partitions[partition]->replica, -1);
    if (err) {
        kiq_topic_unref(*topic);
        *topic = NULL;
    }
    return err;
}

void kiq_api_share_leader(kiq_broker_t *b, kiq_request_t *r, const kiq_uuid_t *topic, int32_t partition,
                          int32_t *leader_id, int32_t *leader_epoch, kiq_api_leader_nodes_t *nodes)
{
    kiq_cached_topic_t known;
    if (!b->cluster || !kiq_metadata_cache_topic_by_id(b->metadata, topic, &r->arena, &known)) return;
    kiq_api_leader_hint(b, r, (kiq_str_t){known.name, (int32_t)known.len}, partition, leader_id, leader_epoch, nodes);
}

kiq_share_partition_t *kiq_api_share_partition(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg, kiq_str_t group,
                                               kiq_topic_t *topic, int32_t partition, int64_t now_ms)
{
    kiq_api_share_state_topic_ensure(b);
    kiq_share_partition_t *sp = kiq_share_partition_get(b->shares, group.p, group.len, &topic->id, partition,
                                                        cfg->delivery_limit, cfg->max_locks);
    if (!sp) return NULL;
    kiq_partition_log_t *log = topic->partitions[partition]->log;
    int64_t log_start = kiq_partition_log_start_offset(log);
    kiq_share_state_ctx_t sc;
    kiq_api_share_state_ctx(b, &sc);
    if (sp->start < 0 && (sp->deleted || !kiq_share_state_load(&sc, group, &topic->id, partition, sp))) {
        kiq_share_partition_start_at(sp, cfg->earliest ? log_start : kiq_partition_log_high_watermark(log));
        kiq_api_share_store(b, group, &topic->id, partition, sp);
    }
    if (sp->start < log_start)
        kiq_share_partition_start_at(sp, log_start);
    bool announce = kiq_observers_want(&b->observers, KIQ_POINT_SHARE_LOCK_EXPIRED);
    kiq_share_ranges_t expired = {0};
    kiq_share_partition_expire(sp, now_ms, announce ? &expired : NULL);
    for (int i = 0; i < expired.n; i++)
        kiq_api_share_event(b, NULL, KIQ_POINT_SHARE_LOCK_EXPIRED, group, topic->name, partition, expired.v[i].first,
                            expired.v[i].last, cfg->lock_ms, expired.v[i].deliveries, 0,
                            expired.v[i].deliveries >= cfg->delivery_limit ? KIQ_EVENT_ARCHIVED : 0);
    kiq_share_ranges_free(&expired);
    return sp;
}

void kiq_api_share_event(kiq_broker_t *b, kiq_request_t *r, enum kiq_point point, kiq_str_t group, const char *topic,
                         int32_t partition, int64_t first, int64_t last, int32_t extra, int64_t records, int16_t error,
                         int flags)
{
    if (!kiq_observers_want(&b->observers, point)) return;
    char gid[256];
    size_t n = group.len > 0 ? (size_t)group.len : 0;
    if (n >= sizeof gid) n = sizeof gid - 1;
    memcpy(gid, group.p ? group.p : "", n);
    gid[n] = 0;
    kiq_event_t e = kiq_event(point, b->node_id);
    e.request = r;
    e.topic = topic;
    e.partition = partition;
    e.first_offset = first;
    e.last_offset = last;
    e.extra = extra;
    e.records = records;
    e.error = error;
    e.flags = flags;
    e.file = gid;
    kiq_observers_emit(&b->observers, &e);
}

void kiq_api_share_acknowledged(kiq_broker_t *b, kiq_request_t *r, kiq_str_t group, const kiq_topic_t *topic,
                                int32_t partition, int64_t first, int64_t last, const int8_t *types, int32_t ntypes,
                                int16_t error, const kiq_share_partition_t *sp)
{
    if (!kiq_observers_want(&b->observers, KIQ_POINT_SHARE_ACKNOWLEDGED) || ntypes <= 0 || first > last) return;
    int64_t from = first;
    for (int64_t o = first; o <= last; o++) {
        int8_t type = ntypes == 1 ? types[0] : types[o - first < ntypes ? o - first : ntypes - 1];
        int8_t next = o == last ? -1 : ntypes == 1 ? types[0] : types[o + 1 - first < ntypes ? o + 1 - first : ntypes - 1];
        if (next == type) continue;
        /* a release that reached the limit: archived (below the start, done) */
        enum kiq_share_state st = sp ? kiq_share_partition_state(sp, from) : KIQ_SHARE_AVAILABLE;
        int flags = type == KIQ_SHARE_ACK_RELEASE && !error && st != KIQ_SHARE_AVAILABLE ? KIQ_EVENT_ARCHIVED : 0;
        kiq_api_share_event(b, r, KIQ_POINT_SHARE_ACKNOWLEDGED, group, topic->name, partition, from, o, type, -1, error,
                            flags);
        from = o + 1;
    }
}

kiq_share_partition_t *kiq_api_share_partition_stored(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg,
                                                      kiq_str_t group, const kiq_uuid_t *topic, int32_t partition)
{
    kiq_share_partition_t *sp = kiq_share_partition_find(b->shares, group.p, group.len, topic, partition);
    if (sp && sp->start >= 0) return sp;
    if (sp && sp->deleted) return NULL;
    sp = kiq_share_partition_get(b->shares, group.p, group.len, topic, partition, cfg->delivery_limit, cfg->max_locks);
    kiq_share_state_ctx_t sc;
    kiq_api_share_state_ctx(b, &sc);
    if (sp && kiq_share_state_load(&sc, group, topic, partition, sp)) return sp;
    kiq_share_partition_drop(b->shares, group.p, group.len, topic, partition);
    return NULL;
}

void kiq_api_share_forget(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg, kiq_str_t group, const kiq_uuid_t *topic,
                          int32_t partition)
{
    kiq_share_partition_t *sp = kiq_share_partition_get(b->shares, group.p, group.len, topic, partition,
                                                        cfg->delivery_limit, cfg->max_locks);
    if (!sp) return; /* out of memory: nothing of it held here */
    kiq_share_partition_free(sp);
    sp->start = -1;
    sp->deleted = true;
}

void kiq_api_share_store(kiq_broker_t *b, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                         kiq_share_partition_t *sp)
{
    kiq_share_state_ctx_t sc;
    kiq_api_share_state_ctx(b, &sc);
    if (kiq_share_state_store(&sc, group, topic, partition, sp) != 0)
        KIQ_WARN_LIMITED("share group " KIQ_STR_FMT ": state of a partition not stored: %s", KIQ_STR_ARG(group),
                         kiq_error_get());
}

int16_t kiq_api_share_ack_batch(kiq_share_partition_t *sp, int64_t first, int64_t last, const int8_t *types,
                                int32_t ntypes, uint64_t owner, int64_t deadline_ms)
{
    if (first > last || ntypes <= 0) return KIQ_ERR_INVALID_REQUEST;
    if (ntypes == 1) return kiq_share_partition_ack(sp, first, last, types[0], owner, deadline_ms);
    if ((int64_t)ntypes != last - first + 1) return KIQ_ERR_INVALID_REQUEST;
    /* each offset its own type: checked as a whole first, so a bad one
     * changes nothing (Kafka applies a batch all or nothing) */
    for (int32_t i = 0; i < ntypes; i++)
        if (kiq_share_partition_state(sp, first + i) != KIQ_SHARE_ACQUIRED || first + i < sp->start)
            return KIQ_ERR_INVALID_RECORD_STATE;
    int16_t err = KIQ_ERR_NONE;
    for (int32_t i = 0; i < ntypes && !err; i++) err = kiq_share_partition_ack(sp, first + i, first + i, types[i], owner, deadline_ms);
    return err;
}
