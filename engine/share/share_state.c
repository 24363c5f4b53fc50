/* Share-partitions in __share_group_state; see share_state.h. */
#include "share/share_state.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/coordinator_key.h"
#include "core/error.h"
#include "core/say.h"
#include "log/log_scan.h"
#include "proto/messages.h"
#include "proto/reader.h"
#include "proto/writer.h"
#include "record/keyed_records.h"
#include "replica/leader.h"

enum { RECORD_SNAPSHOT = 0 }; /* the key version: Kafka's record type */

/* Kafka's share coordinator partition of key "group:topicId:partition"
 * (its SharePartitionKey), as for a group id (core/coordinator_key.h). */
static int32_t state_partition(kiq_str_t group, const kiq_uuid_t *topic, int32_t partition, int32_t npartitions)
{
    char id[32], key[512];
    kiq_uuid_to_base64(topic, id);
    int n = snprintf(key, sizeof key, KIQ_STR_FMT ":%s:%d", KIQ_STR_ARG(group), id, partition);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof key ? (size_t)n : sizeof key - 1;
    return kiq_coordinator_partition(key, len, npartitions);
}

/* The topic, created when missing on a standalone broker (compacted, as
 * __consumer_offsets: only each key's last snapshot matters; segments of
 * share.coordinator.state.topic.segment.bytes, so compaction comes soon). */
static kiq_topic_t *state_topic(const kiq_share_state_ctx_t *c, bool create)
{
    kiq_topic_t *t = kiq_topics_get(c->topics, KIQ_STR(KIQ_SHARE_STATE_TOPIC));
    if (t || !create || c->cluster) return t;
    kiq_topic_configs_t cfg = {0};
    char seg[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(c->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES));
    int rc = kiq_topic_configs_set(&cfg, "cleanup.policy", 14, "compact", 7);
    if (rc == 0) rc = kiq_topic_configs_set(&cfg, "segment.bytes", 13, seg, (int)strlen(seg));
    if (rc == 0)
        rc = kiq_topics_create_with_configs(
            c->topics, KIQ_STR(KIQ_SHARE_STATE_TOPIC),
            (int32_t)kiq_config_int(c->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS),
            1 /* this broker alone */, &cfg, false);
    kiq_topic_configs_clear(&cfg);
    if (rc != 0 && rc != KIQ_ERR_TOPIC_ALREADY_EXISTS) {
        kiq_error_set("cannot create " KIQ_SHARE_STATE_TOPIC ": %s", kiq_error_name(rc));
        return NULL;
    }
    return kiq_topics_get(c->topics, KIQ_STR(KIQ_SHARE_STATE_TOPIC));
}

static void encode_key(kiq_wr_t *w, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition)
{
    kiq_wr_init(w);
    kiq_wr_i16(w, RECORD_SNAPSHOT);
    kiq_share_snapshot_key_t k;
    kiq_share_snapshot_key_init(&k);
    k.group_id = group;
    k.topic_id = *topic;
    k.partition = partition;
    kiq_share_snapshot_key_encode(w, 0, &k);
}

/* Kafka's stored delivery states. */
enum { STORED_AVAILABLE = 0, STORED_ACKNOWLEDGED = 2, STORED_ARCHIVED = 4 };

static int8_t stored_state(uint8_t s)
{
    return s == KIQ_SHARE_ACKNOWLEDGED ? STORED_ACKNOWLEDGED : s == KIQ_SHARE_ARCHIVED ? STORED_ARCHIVED : STORED_AVAILABLE;
}

/* Appends the key's record (value NULL: a tombstone; freed either way) to
 * its partition of the topic: here where this broker leads it, else sent
 * to its leader (c->remote). 0 or -1. */
static int append(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                  kiq_wr_t *value)
{
    kiq_topic_t *t = state_topic(c, true);
    if (!t) {
        if (value) kiq_wr_free(value);
        return c->cluster ? kiq_error_set(KIQ_SHARE_STATE_TOPIC " is not hosted here") : -1;
    }
    int32_t index = state_partition(group, topic, partition, t->npartitions);
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    int rc = -1;
    bool led = kiq_replica_led_partition(t, index, -1, &p, &log) == 0;
    if (!led && !(c->cluster && c->remote)) {
        if (value) kiq_wr_free(value);
        kiq_topic_unref(t);
        return kiq_error_set("this broker does not lead " KIQ_SHARE_STATE_TOPIC "-%d", index);
    }
    kiq_wr_t k, batch;
    encode_key(&k, group, topic, partition);
    kiq_keyed_records_t rs;
    kiq_keyed_records_init(&rs, kiq_clock_wall_ms());
    if (kiq_keyed_records_add(&rs, &k, value) == 0 && kiq_keyed_records_build(&rs, &batch) == 0) {
        if (!led) {
            rc = c->remote(c->remote_ctx, index, &batch); /* batch is its now */
        } else {
            kiq_log_append_result_t res;
            rc = kiq_replica_append_as_leader(p, log, batch.buf, batch.len, NULL, 0, &res);
            kiq_wr_free(&batch);
            /* followers fetching it */
            if (rc == 0) kiq_topics_notify_append(c->topics, KIQ_SHARE_STATE_TOPIC, index);
        }
    }
    kiq_keyed_records_free(&rs);
    kiq_topic_unref(t);
    return rc;
}

int kiq_share_state_store(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                          kiq_share_partition_t *sp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_share_snapshot_value_t v;
    kiq_share_snapshot_value_init(&v);
    v.snapshot_epoch = ++sp->snapshot_epoch;
    v.start_offset = sp->start;
    v.create_timestamp = v.write_timestamp = kiq_clock_wall_ms();
    v.state_batches = kiq_arena_calloc(&a, (size_t)(sp->n ? sp->n : 1), sizeof *v.state_batches);
    for (int i = 0; i < sp->n; i++) {
        int8_t st = stored_state(sp->v[i].state);
        kiq_share_snapshot_value_state_batches_t *last = v.state_batches_n ? &v.state_batches[v.state_batches_n - 1] : NULL;
        if (last && last->delivery_state == st && last->delivery_count == sp->v[i].deliveries) {
            last->last_offset++;
            continue;
        }
        last = &v.state_batches[v.state_batches_n++];
        kiq_share_snapshot_value_state_batches_init(last);
        last->first_offset = last->last_offset = sp->start + i;
        last->delivery_state = st;
        last->delivery_count = sp->v[i].deliveries;
    }
    kiq_wr_t val;
    kiq_wr_init(&val);
    kiq_wr_i16(&val, 0);
    kiq_share_snapshot_value_encode(&val, 0, &v);
    kiq_arena_reset(&a);
    return append(c, group, topic, partition, &val);
}

int kiq_share_state_delete(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic,
                           int32_t partition)
{
    /* nothing stored where there is no topic yet */
    kiq_topic_t *t = state_topic(c, false);
    bool stored = t != NULL;
    kiq_topic_unref(t);
    return stored ? append(c, group, topic, partition, NULL) : 0;
}

/* ---- loading ---- */

typedef struct load_ctx {
    const uint8_t *key; /* the record key looked for, version included */
    size_t key_len;
    kiq_share_partition_t *sp;
    bool found;
} load_ctx_t;

/* The value of a snapshot of the key: the share-partition as it says (a
 * later one replaces it). */
static int load_record(const kiq_record_t *rec, void *arg)
{
    load_ctx_t *c = arg;
    if (!rec->key.p || (size_t)rec->key.len != c->key_len || memcmp(rec->key.p, c->key, c->key_len) != 0) return 0;
    kiq_share_partition_t *sp = c->sp;
    if (!rec->value.p) { /* deleted */
        kiq_share_partition_free(sp);
        sp->start = -1;
        c->found = false;
        return 0;
    }
    if (rec->value.len < 2 || kiq_be16(rec->value.p) != 0) {
        KIQ_WARN(KIQ_SHARE_STATE_TOPIC " record at offset %" PRId64 ": unknown value; skipped", rec->offset);
        return 0;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_rd_t rd;
    kiq_rd_init(&rd, rec->value.p + 2, (size_t)rec->value.len - 2);
    kiq_share_snapshot_value_t v;
    kiq_share_snapshot_value_init(&v);
    if (kiq_share_snapshot_value_decode(&rd, 0, &a, &v) != 0) {
        KIQ_WARN(KIQ_SHARE_STATE_TOPIC " record at offset %" PRId64 " is malformed; skipped", rec->offset);
        kiq_arena_reset(&a);
        return 0;
    }
    sp->n = 0;
    sp->start = v.start_offset;
    sp->snapshot_epoch = v.snapshot_epoch;
    for (int32_t i = 0; i < v.state_batches_n; i++) {
        const kiq_share_snapshot_value_state_batches_t *b = &v.state_batches[i];
        enum kiq_share_state st = b->delivery_state == STORED_ACKNOWLEDGED ? KIQ_SHARE_ACKNOWLEDGED
                                  : b->delivery_state == STORED_ARCHIVED   ? KIQ_SHARE_ARCHIVED
                                                                            : KIQ_SHARE_AVAILABLE;
        if (kiq_share_partition_restore(sp, b->first_offset, b->last_offset, st, b->delivery_count) != 0) {
            KIQ_WARN(KIQ_SHARE_STATE_TOPIC " record at offset %" PRId64 ": a run from %" PRId64 " does not fit; "
                     "the rest is left available", rec->offset, b->first_offset);
            break;
        }
    }
    c->found = true;
    kiq_arena_reset(&a);
    return 0;
}

bool kiq_share_state_load(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                          kiq_share_partition_t *sp)
{
    kiq_topic_t *t = state_topic(c, false);
    if (!t) return false;
    int32_t index = state_partition(group, topic, partition, t->npartitions);
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    load_ctx_t lc = {.sp = sp};
    /* in a cluster this broker's replica, led or followed, has what the
     * partition's earlier leaders wrote (as far as it has fetched) */
    if (kiq_replica_led_partition(t, index, -1, &p, &log) != 0)
        log = c->cluster && index < t->npartitions && t->partitions[index] ? atomic_load(&t->partitions[index]->log)
                                                                          : NULL;
    if (log) {
        kiq_wr_t k;
        encode_key(&k, group, topic, partition);
        lc.key = k.buf;
        lc.key_len = k.len;
        if (kiq_partition_log_scan(log, KIQ_SHARE_STATE_TOPIC, load_record, &lc) != 0)
            KIQ_WARN("cannot read " KIQ_SHARE_STATE_TOPIC "-%d: %s", index, kiq_error_get());
        kiq_wr_free(&k);
    }
    kiq_topic_unref(t);
    return lc.found;
}
