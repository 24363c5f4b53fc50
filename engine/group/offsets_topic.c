/* __consumer_offsets records; see offsets_topic.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/say.h"
#include "group/offsets_topic.h"
#include "log/log_scan.h"
#include "proto/reader.h"

enum {
    KEY_OFFSET_COMMIT = 1, /* keys 0 and 1 are both offset commits */
    KEY_GROUP_METADATA = 2,
    VALUE_OFFSET_EXPIRING = 1, /* the only version with an expire timestamp */
    VALUE_OFFSET = 3,
    VALUE_GROUP = 3,
};

void kiq_offsets_records_init(kiq_offsets_records_t *rs, int64_t now_ms)
{
    kiq_keyed_records_init(&rs->k, now_ms);
    rs->last_offset = -1;
}

void kiq_offsets_records_free(kiq_offsets_records_t *rs) { kiq_keyed_records_free(&rs->k); }

static kiq_str_t str_or_null(const char *s) { return s ? KIQ_STR(s) : KIQ_STR_NULL; }

/* key and value are writers holding the version and the message; value
 * NULL writes a tombstone. */
static int add(kiq_offsets_records_t *rs, kiq_wr_t *key, kiq_wr_t *value)
{
    return kiq_keyed_records_add(&rs->k, key, value);
}

static void commit_key(kiq_wr_t *w, const char *group, const char *topic, int32_t partition)
{
    kiq_offset_commit_key_t k;
    kiq_offset_commit_key_init(&k);
    k.group = KIQ_STR(group);
    k.topic = KIQ_STR(topic);
    k.partition = partition;
    kiq_wr_init(w);
    kiq_wr_i16(w, KEY_OFFSET_COMMIT);
    kiq_offset_commit_key_encode(w, KEY_OFFSET_COMMIT, &k);
}

int kiq_offsets_records_add_commit(kiq_offsets_records_t *rs, const char *group, const kiq_group_offset_t *o)
{
    kiq_wr_t key, value;
    commit_key(&key, group, o->topic, o->partition);
    kiq_offset_commit_value_t v;
    kiq_offset_commit_value_init(&v);
    v.offset = o->offset;
    v.leader_epoch = o->leader_epoch;
    v.metadata = o->metadata.p ? o->metadata : KIQ_STR("");
    v.commit_timestamp = o->commit_ts_ms;
    v.expire_timestamp = o->expire_ts_ms;
    int16_t version = o->expire_ts_ms >= 0 ? VALUE_OFFSET_EXPIRING : VALUE_OFFSET;
    kiq_wr_init(&value);
    kiq_wr_i16(&value, version);
    kiq_offset_commit_value_encode(&value, version, &v);
    return add(rs, &key, &value);
}

int kiq_offsets_records_add_commit_tombstone(kiq_offsets_records_t *rs, const char *group, const char *topic,
                                             int32_t partition)
{
    kiq_wr_t key;
    commit_key(&key, group, topic, partition);
    return add(rs, &key, NULL);
}

static void group_key(kiq_wr_t *w, const char *group)
{
    kiq_group_metadata_key_t k;
    kiq_group_metadata_key_init(&k);
    k.group = KIQ_STR(group);
    kiq_wr_init(w);
    kiq_wr_i16(w, KEY_GROUP_METADATA);
    kiq_group_metadata_key_encode(w, KEY_GROUP_METADATA, &k);
}

int kiq_offsets_records_add_group(kiq_offsets_records_t *rs, const kiq_group_t *g)
{
    kiq_wr_t key, value;
    group_key(&key, g->id);
    kiq_group_metadata_value_t v;
    kiq_group_metadata_value_init(&v);
    v.protocol_type = KIQ_STR(g->protocol_type ? g->protocol_type : "");
    v.generation = g->generation;
    v.protocol = str_or_null(g->protocol);
    v.leader = str_or_null(g->leader);
    v.current_state_timestamp = g->state_ts_ms;
    kiq_group_metadata_value_members_t *mv = calloc((size_t)(g->nmembers > 0 ? g->nmembers : 1), sizeof *mv);
    if (!mv) {
        kiq_wr_free(&key);
        return kiq_error_set("out of memory");
    }
    int i = 0;
    for (const kiq_group_member_t *m = g->members; m; m = m->next, i++) {
        kiq_group_metadata_value_members_init(&mv[i]);
        mv[i].member_id = KIQ_STR(m->id);
        mv[i].group_instance_id = str_or_null(m->instance_id);
        mv[i].client_id = KIQ_STR(m->client_id);
        mv[i].client_host = KIQ_STR(m->client_host);
        mv[i].rebalance_timeout = m->rebalance_timeout_ms;
        mv[i].session_timeout = m->session_timeout_ms;
        const kiq_group_protocol_t *p = kiq_group_member_protocol(m, g->protocol);
        mv[i].subscription = p ? (kiq_bytes_t){p->metadata, p->metadata_len} : (kiq_bytes_t){(const uint8_t *)"", 0};
        mv[i].assignment = m->assignment ? (kiq_bytes_t){m->assignment, m->assignment_len}
                                         : (kiq_bytes_t){(const uint8_t *)"", 0};
    }
    v.members_n = i;
    v.members = mv;
    kiq_wr_init(&value);
    kiq_wr_i16(&value, VALUE_GROUP);
    kiq_group_metadata_value_encode(&value, VALUE_GROUP, &v);
    free(mv);
    return add(rs, &key, &value);
}

int kiq_offsets_records_add_group_tombstone(kiq_offsets_records_t *rs, const char *group)
{
    kiq_wr_t key;
    group_key(&key, group);
    return add(rs, &key, NULL);
}

int kiq_offsets_records_build(kiq_offsets_records_t *rs, kiq_wr_t *w) { return kiq_keyed_records_build(&rs->k, w); }

int kiq_offsets_records_append(kiq_offsets_records_t *rs, kiq_partition_log_t *log, int32_t leader_epoch)
{
    if (rs->k.count == 0) return 0;
    kiq_wr_t w;
    if (kiq_offsets_records_build(rs, &w) != 0) return -1;
    int rc = kiq_partition_log_append(log, w.buf, w.len, leader_epoch, NULL, &rs->last_offset);
    kiq_wr_free(&w);
    return rc;
}

/* ---- loading ---- */

typedef struct load_ctx {
    const kiq_offsets_loader_t *ld;
    int applied;
    int64_t offset; /* of the record being read, for messages */
} load_ctx_t;

/* Kafka's consumer-group records (key versions 3, 5-8): their generated
 * key and value codecs, and where each key keeps its group and member. */
#define CONSUMER_KEY(kv, name, T, member) {kv, name "Key", name "Value", offsetof(T, group_id), member}
static const struct consumer_record {
    int16_t key_version;
    const char *key, *value;
    size_t group_at;
    ptrdiff_t member_at; /* -1: a record of the whole group */
} CONSUMER_RECORDS[] = {
    CONSUMER_KEY(KIQ_OFFSETS_KEY_CGROUP, "ConsumerGroupMetadata", kiq_consumer_group_metadata_key_t, -1),
    CONSUMER_KEY(KIQ_OFFSETS_KEY_CMEMBER, "ConsumerGroupMemberMetadata", kiq_consumer_group_member_metadata_key_t,
                 offsetof(kiq_consumer_group_member_metadata_key_t, member_id)),
    CONSUMER_KEY(KIQ_OFFSETS_KEY_CTARGET_EPOCH, "ConsumerGroupTargetAssignmentMetadata",
                 kiq_consumer_group_target_assignment_metadata_key_t, -1),
    CONSUMER_KEY(KIQ_OFFSETS_KEY_CTARGET, "ConsumerGroupTargetAssignmentMember",
                 kiq_consumer_group_target_assignment_member_key_t,
                 offsetof(kiq_consumer_group_target_assignment_member_key_t, member_id)),
    CONSUMER_KEY(KIQ_OFFSETS_KEY_CCURRENT, "ConsumerGroupCurrentMemberAssignment",
                 kiq_consumer_group_current_member_assignment_key_t,
                 offsetof(kiq_consumer_group_current_member_assignment_key_t, member_id)),
};
#undef CONSUMER_KEY

/* A consumer group's record: key and value decoded and handed to the
 * loader (a tombstone: no value). */
static int load_consumer(load_ctx_t *c, int16_t kv, kiq_rd_t *rd, kiq_rd_t *vr, kiq_arena_t *a)
{
    const struct consumer_record *cr = NULL;
    for (size_t i = 0; i < sizeof CONSUMER_RECORDS / sizeof CONSUMER_RECORDS[0]; i++)
        if (CONSUMER_RECORDS[i].key_version == kv) cr = &CONSUMER_RECORDS[i];
    const kiq_data_codec_t *kc = cr ? kiq_data_codec(cr->key) : NULL, *vc = cr ? kiq_data_codec(cr->value) : NULL;
    if (!kc || !vc) return kiq_error_set("no codec for consumer-group key version %d", kv);
    void *k = kiq_arena_calloc(a, 1, kc->size), *v = NULL;
    kc->init(k);
    if (kc->decode(rd, kv, a, k) != 0) return -1;
    if (vr) {
        v = kiq_arena_calloc(a, 1, vc->size);
        vc->init(v);
        if (vc->decode(vr, 0, a, v) != 0) return -1;
    }
    kiq_str_t group = *(const kiq_str_t *)((const char *)k + cr->group_at);
    kiq_str_t member = cr->member_at >= 0 ? *(const kiq_str_t *)((const char *)k + cr->member_at) : KIQ_STR_NULL;
    if (c->ld->consumer) c->ld->consumer(c->ld->ctx, kv, group, member, v);
    return 0;
}

static int load_record(const kiq_record_t *rec, void *arg)
{
    load_ctx_t *c = arg;
    c->offset = rec->offset;
    if (!rec->key.p || rec->key.len < 2) {
        KIQ_WARN(KIQ_OFFSETS_TOPIC " record at offset %lld has no key; skipped", (long long)rec->offset);
        return 0;
    }
    int64_t txn_producer = kiq_batch_is_transactional(rec->batch) ? rec->batch->producer_id : -1;
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_rd_t rd;
    int16_t kv = (int16_t)kiq_be16(rec->key.p);
    kiq_rd_init(&rd, rec->key.p + 2, (size_t)rec->key.len - 2);
    bool has_value = rec->value.p != NULL;
    kiq_rd_t vr;
    int16_t vv = 0;
    if (has_value) {
        if (rec->value.len < 2) goto malformed;
        vv = (int16_t)kiq_be16(rec->value.p);
        kiq_rd_init(&vr, rec->value.p + 2, (size_t)rec->value.len - 2);
    }
    if (kv == 0 || kv == KEY_OFFSET_COMMIT) {
        kiq_offset_commit_key_t k;
        kiq_offset_commit_key_init(&k);
        if (kiq_offset_commit_key_decode(&rd, kv, &arena, &k) != 0) goto malformed;
        if (!has_value) {
            c->ld->offset(c->ld->ctx, k.group, k.topic, k.partition, NULL, txn_producer);
        } else {
            if (vv < 0 || vv > VALUE_OFFSET) goto unknown;
            kiq_offset_commit_value_t v;
            kiq_offset_commit_value_init(&v);
            if (kiq_offset_commit_value_decode(&vr, vv, &arena, &v) != 0) goto malformed;
            c->ld->offset(c->ld->ctx, k.group, k.topic, k.partition, &v, txn_producer);
        }
    } else if (kv == KEY_GROUP_METADATA) {
        kiq_group_metadata_key_t k;
        kiq_group_metadata_key_init(&k);
        if (kiq_group_metadata_key_decode(&rd, kv, &arena, &k) != 0) goto malformed;
        if (!has_value) {
            c->ld->group(c->ld->ctx, k.group, NULL);
        } else {
            if (vv < 0 || vv > VALUE_GROUP) goto unknown;
            kiq_group_metadata_value_t v;
            kiq_group_metadata_value_init(&v);
            if (kiq_group_metadata_value_decode(&vr, vv, &arena, &v) != 0) goto malformed;
            c->ld->group(c->ld->ctx, k.group, &v);
        }
    } else if (kv == KIQ_OFFSETS_KEY_CPARTITIONS) {
        /* the subscribed topics' metadata: computed again from the cluster's */
    } else if (kv >= KIQ_OFFSETS_KEY_CGROUP && kv <= KIQ_OFFSETS_KEY_CCURRENT) {
        if (has_value && vv != 0) goto unknown;
        if (load_consumer(c, kv, &rd, has_value ? &vr : NULL, &arena) != 0) goto malformed;
    } else {
        goto unknown;
    }
    c->applied++;
    kiq_arena_reset(&arena);
    return 0;
unknown:
    KIQ_WARN(KIQ_OFFSETS_TOPIC " record at offset %lld: key version %d / value version %d unknown; skipped",
             (long long)rec->offset, kv, vv);
    kiq_arena_reset(&arena);
    return 0;
malformed:
    KIQ_WARN(KIQ_OFFSETS_TOPIC " record at offset %lld is malformed; skipped", (long long)rec->offset);
    kiq_arena_reset(&arena);
    return 0;
}

static void load_marker(void *arg, int64_t producer_id, bool commit)
{
    load_ctx_t *c = arg;
    c->ld->marker(c->ld->ctx, producer_id, commit);
}

int kiq_offsets_topic_load(kiq_partition_log_t *log, const kiq_offsets_loader_t *ld)
{
    load_ctx_t c = {.ld = ld};
    if (kiq_partition_log_scan_markers(log, KIQ_OFFSETS_TOPIC, load_record, ld->marker ? load_marker : NULL, &c) != 0)
        return -1;
    return c.applied;
}
