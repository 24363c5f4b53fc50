/* __transaction_state records; see txn_log.h. */
#include "txn/txn_log.h"

#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "core/say.h"
#include "log/log_scan.h"
#include "proto/reader.h"

enum {
    KEY_VERSION = 0,
    VALUE_VERSION = 1, /* flexible: what Kafka 4 writes */
};

static void key_of(kiq_wr_t *w, const char *id)
{
    kiq_transaction_log_key_t k;
    kiq_transaction_log_key_init(&k);
    k.transactional_id = KIQ_STR(id);
    kiq_wr_init(w);
    kiq_wr_i16(w, KEY_VERSION);
    kiq_transaction_log_key_encode(w, KEY_VERSION, &k);
}

int kiq_txn_records_add(kiq_keyed_records_t *rs, const kiq_txn_t *t)
{
    /* the partitions grouped by topic, in the order they came */
    int ntopics = 0;
    kiq_transaction_log_value_transaction_partitions_t *topics =
        calloc((size_t)(t->npartitions ? t->npartitions : 1), sizeof *topics);
    int32_t *ids = calloc((size_t)(t->npartitions ? t->npartitions : 1), sizeof *ids);
    if (!topics || !ids) {
        free(topics);
        free(ids);
        return kiq_error_set("out of memory");
    }
    int used = 0;
    for (int i = 0; i < t->npartitions; i++) {
        int k = 0;
        while (k < ntopics && !kiq_str_eq(topics[k].topic, t->partitions[i].topic)) k++;
        if (k < ntopics) continue;
        kiq_transaction_log_value_transaction_partitions_init(&topics[ntopics]);
        topics[ntopics].topic = KIQ_STR(t->partitions[i].topic);
        topics[ntopics].partition_ids = ids + used;
        for (int j = i; j < t->npartitions; j++)
            if (strcmp(t->partitions[j].topic, t->partitions[i].topic) == 0) ids[used++] = t->partitions[j].partition;
        topics[ntopics].partition_ids_n = (int32_t)(ids + used - topics[ntopics].partition_ids);
        ntopics++;
    }
    kiq_transaction_log_value_t v;
    kiq_transaction_log_value_init(&v);
    v.producer_id = t->producer_id;
    v.previous_producer_id = t->previous_producer_id;
    v.producer_epoch = t->producer_epoch;
    v.transaction_timeout_ms = t->timeout_ms;
    v.transaction_status = (int8_t)t->state;
    /* Kafka writes no partition list for an Empty transactional id */
    v.transaction_partitions_n = t->state == KIQ_TXN_EMPTY ? -1 : ntopics;
    v.transaction_partitions = topics;
    v.transaction_last_update_timestamp_ms = t->updated_ms;
    v.transaction_start_timestamp_ms = t->start_ms;
    v.client_transaction_version = t->client_version;
    v.next_producer_id = t->next_producer_id;
    if (t->next_producer_id >= 0) v.next_producer_epoch = 0;
    kiq_wr_t key, value;
    key_of(&key, t->id);
    kiq_wr_init(&value);
    kiq_wr_i16(&value, VALUE_VERSION);
    kiq_transaction_log_value_encode(&value, VALUE_VERSION, &v);
    free(topics);
    free(ids);
    return kiq_keyed_records_add(rs, &key, &value);
}

int kiq_txn_records_add_tombstone(kiq_keyed_records_t *rs, const char *id)
{
    kiq_wr_t key;
    key_of(&key, id);
    return kiq_keyed_records_add(rs, &key, NULL);
}

int kiq_txn_from_value(kiq_txn_t *t, kiq_str_t id, const kiq_transaction_log_value_t *v)
{
    char *name = strndup(id.p ? id.p : "", id.p ? (size_t)id.len : 0);
    if (!name || kiq_txn_init(t, name, v->transaction_last_update_timestamp_ms) != 0) {
        free(name);
        return kiq_error_set("out of memory");
    }
    free(name);
    t->producer_id = v->producer_id;
    t->previous_producer_id = v->previous_producer_id;
    t->producer_epoch = v->producer_epoch;
    t->timeout_ms = v->transaction_timeout_ms;
    t->state = v->transaction_status >= 0 && v->transaction_status < KIQ__TXN_STATES
                   ? (kiq_txn_state_t)v->transaction_status
                   : KIQ_TXN_DEAD;
    t->start_ms = v->transaction_start_timestamp_ms;
    t->client_version = v->client_transaction_version;
    t->next_producer_id = v->next_producer_id;
    for (int32_t i = 0; i < v->transaction_partitions_n; i++) {
        const kiq_transaction_log_value_transaction_partitions_t *tp = &v->transaction_partitions[i];
        char *topic = strndup(tp->topic.p ? tp->topic.p : "", tp->topic.p ? (size_t)tp->topic.len : 0);
        int rc = topic ? 0 : kiq_error_set("out of memory");
        for (int32_t k = 0; rc == 0 && k < tp->partition_ids_n; k++)
            rc = kiq_txn_add_partition(t, topic, tp->partition_ids[k]);
        free(topic);
        if (rc != 0) {
            kiq_txn_free(t);
            return -1;
        }
    }
    return 0;
}

/* ---- loading ---- */

typedef struct load_ctx {
    const kiq_txn_loader_t *ld;
    int applied;
} load_ctx_t;

static int load_record(const kiq_record_t *rec, void *arg)
{
    load_ctx_t *c = arg;
    if (!rec->key.p || rec->key.len < 2 || kiq_be16(rec->key.p) != KEY_VERSION) {
        KIQ_WARN(KIQ_TXN_TOPIC " record at offset %lld: no key of version %d; skipped", (long long)rec->offset,
                 KEY_VERSION);
        return 0;
    }
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_rd_t rd;
    kiq_rd_init(&rd, rec->key.p + 2, (size_t)rec->key.len - 2);
    kiq_transaction_log_key_t k;
    kiq_transaction_log_key_init(&k);
    if (kiq_transaction_log_key_decode(&rd, KEY_VERSION, &arena, &k) != 0) goto malformed;
    if (!rec->value.p) {
        c->ld->txn(c->ld->ctx, k.transactional_id, NULL);
    } else {
        if (rec->value.len < 2) goto malformed;
        int16_t vv = (int16_t)kiq_be16(rec->value.p);
        if (vv < 0 || vv > VALUE_VERSION) {
            KIQ_WARN(KIQ_TXN_TOPIC " record at offset %lld: value version %d unknown; skipped",
                     (long long)rec->offset, vv);
            kiq_arena_reset(&arena);
            return 0;
        }
        kiq_rd_init(&rd, rec->value.p + 2, (size_t)rec->value.len - 2);
        kiq_transaction_log_value_t v;
        kiq_transaction_log_value_init(&v);
        if (kiq_transaction_log_value_decode(&rd, vv, &arena, &v) != 0) goto malformed;
        c->ld->txn(c->ld->ctx, k.transactional_id, &v);
    }
    c->applied++;
    kiq_arena_reset(&arena);
    return 0;
malformed:
    KIQ_WARN(KIQ_TXN_TOPIC " record at offset %lld is malformed; skipped", (long long)rec->offset);
    kiq_arena_reset(&arena);
    return 0;
}

int kiq_txn_log_load(kiq_partition_log_t *log, const kiq_txn_loader_t *ld)
{
    load_ctx_t c = {.ld = ld};
    if (kiq_partition_log_scan(log, KIQ_TXN_TOPIC, load_record, &c) != 0) return -1;
    return c.applied;
}
