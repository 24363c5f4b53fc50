/* The transaction coordinator's pieces that need no broker: which
 * __transaction_state partition holds a transactional id (Java's hashCode,
 * the classic INT_MIN case, non-ASCII ids); the state rules of
 * InitProducerId, AddPartitionsToTxn and EndTxn, each answer of Kafka's
 * tables; and metadata written to a real partition log and loaded back,
 * tombstones included, with the bytes Kafka writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/coordinator_key.h"
#include "proto/errors.h"
#include "support/log_fixture.h"
#include "txn/txn_log.h"
#include "txn/txn_metadata.h"

static int32_t part(const char *id) { return kiq_coordinator_partition(id, strlen(id), 50); }

/* Values from Java: "my-txn".hashCode() = -1061187895, and so on. */
static void test_partition_for_is_javas(void **state)
{
    (void)state;
    assert_int_equal(part("my-txn"), 45);
    assert_int_equal(part("txn-1"), 10);
    assert_int_equal(part("transactional-producer"), 8);
    assert_int_equal(part(""), 0);
    assert_int_equal(part("polygenelubricants"), 0); /* hashCode is INT_MIN: Utils.abs gives 0 */
    assert_int_equal(part("\xc3\xa9-\xc3\xbc"), 10);  /* "é-ü": 225560 */
    assert_int_equal(part("\xf0\x9f\x98\x80x"), 39);  /* an emoji is two UTF-16 units: 54959989 */
    /* invalid UTF-8 counts as U+FFFD, as Java decodes it */
    assert_int_equal(kiq_coordinator_partition("\xff", 1, 1000), 65533 % 1000);
    assert_int_equal(kiq_coordinator_partition("x", 1, 0), 0);
}

static kiq_txn_t made(kiq_txn_state_t st, int64_t pid, int16_t epoch)
{
    kiq_txn_t t;
    assert_int_equal(kiq_txn_init(&t, "t1", 1000), 0);
    t.producer_id = pid;
    t.producer_epoch = epoch;
    t.timeout_ms = 60000;
    t.state = st;
    return t;
}

static void test_init_producer_id_rules(void **state)
{
    (void)state;
    kiq_txn_init_action_t act;
    kiq_txn_t t = made(KIQ_TXN_EMPTY, -1, -1);
    /* the timeout must be in (0, transaction.max.timeout.ms] */
    assert_int_equal(kiq_txn_check_init(&t, -1, -1, 0, 900000, &act), KIQ_ERR_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(kiq_txn_check_init(&t, -1, -1, 900001, 900000, &act), KIQ_ERR_INVALID_TRANSACTION_TIMEOUT);
    /* a new id: a producer id at epoch 0 */
    assert_int_equal(kiq_txn_check_init(&t, -1, -1, 30000, 900000, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_INIT_BUMP);
    assert_true(kiq_txn_needs_new_id(&t));
    kiq_txn_bump(&t, 4000, 30000, 2000, false);
    assert_int_equal(t.producer_id, 4000);
    assert_int_equal(t.producer_epoch, 0);
    assert_int_equal(t.timeout_ms, 30000);
    /* again: the next epoch of the same id */
    assert_int_equal(kiq_txn_check_init(&t, -1, -1, 30000, 900000, &act), KIQ_ERR_NONE);
    assert_false(kiq_txn_needs_new_id(&t));
    kiq_txn_bump(&t, 9999, 30000, 3000, false);
    assert_int_equal(t.producer_id, 4000);
    assert_int_equal(t.producer_epoch, 1);
    /* KIP-360: a producer naming an old epoch is fenced; the current one is fine */
    assert_int_equal(kiq_txn_check_init(&t, 4000, 0, 30000, 900000, &act), KIQ_ERR_PRODUCER_FENCED);
    assert_int_equal(kiq_txn_check_init(&t, 77, 1, 30000, 900000, &act), KIQ_ERR_PRODUCER_FENCED);
    assert_int_equal(kiq_txn_check_init(&t, 4000, 1, 30000, 900000, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_INIT_BUMP);
    /* the producer's own bump: a retry naming the epoch before it gets the current one */
    kiq_txn_bump(&t, 9999, 30000, 3500, true);
    assert_int_equal(t.producer_epoch, 2);
    assert_int_equal(kiq_txn_check_init(&t, 4000, 1, 30000, 900000, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_INIT_CURRENT);
    assert_int_equal(kiq_txn_check_init(&t, 4000, 0, 30000, 900000, &act), KIQ_ERR_PRODUCER_FENCED);
    /* the last epoch rotates to a new producer id */
    t.producer_epoch = KIQ_TXN_LAST_EPOCH;
    assert_true(kiq_txn_needs_new_id(&t));
    kiq_txn_bump(&t, 5000, 30000, 4000, false);
    assert_int_equal(t.producer_id, 5000);
    assert_int_equal(t.producer_epoch, 0);
    assert_int_equal(t.previous_producer_id, 4000);
    assert_int_equal(kiq_txn_check_init(&t, 4000, KIQ_TXN_LAST_EPOCH, 30000, 900000, &act), KIQ_ERR_NONE);
    /* an ongoing transaction is aborted under a new epoch: the client retries */
    kiq_txn_begin_if_needed(&t, 5000);
    assert_int_equal(kiq_txn_check_init(&t, -1, -1, 30000, 900000, &act), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(act, KIQ_TXN_INIT_FENCE_ABORT);
    /* one being completed: wait */
    for (kiq_txn_state_t s = KIQ_TXN_PREPARE_COMMIT; s <= KIQ_TXN_PREPARE_ABORT; s++) {
        t.state = s;
        assert_int_equal(kiq_txn_check_init(&t, -1, -1, 30000, 900000, &act), KIQ_ERR_CONCURRENT_TRANSACTIONS);
        assert_int_equal(act, KIQ_TXN_INIT_BUMP);
    }
    kiq_txn_free(&t);
}

static void test_add_partitions_rules(void **state)
{
    (void)state;
    const char *topics[] = {"a", "a", "b"};
    const int32_t parts[] = {0, 1, 0};
    bool there;
    assert_int_equal(kiq_txn_check_add(NULL, 7, 0, 3, topics, parts, &there), KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
    kiq_txn_t t = made(KIQ_TXN_EMPTY, 7, 2);
    assert_int_equal(kiq_txn_check_add(&t, 8, 2, 3, topics, parts, &there), KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(kiq_txn_check_add(&t, 7, 1, 3, topics, parts, &there), KIQ_ERR_PRODUCER_FENCED);
    assert_int_equal(kiq_txn_check_add(&t, 7, 2, 3, topics, parts, &there), KIQ_ERR_NONE);
    assert_false(there);
    for (int i = 0; i < 3; i++) assert_int_equal(kiq_txn_add_partition(&t, topics[i], parts[i]), 0);
    assert_int_equal(kiq_txn_add_partition(&t, "a", 1), 0); /* once only */
    assert_int_equal(t.npartitions, 3);
    kiq_txn_begin_if_needed(&t, 5000);
    assert_int_equal(t.state, KIQ_TXN_ONGOING);
    assert_int_equal(t.start_ms, 5000);
    kiq_txn_begin_if_needed(&t, 6000); /* a later add keeps the start */
    assert_int_equal(t.start_ms, 5000);
    assert_int_equal(kiq_txn_check_add(&t, 7, 2, 3, topics, parts, &there), KIQ_ERR_NONE);
    assert_true(there); /* all in already: nothing to write */
    const char *more[] = {"c"};
    const int32_t zero[] = {0};
    assert_int_equal(kiq_txn_check_add(&t, 7, 2, 1, more, zero, &there), KIQ_ERR_NONE);
    assert_false(there);
    t.state = KIQ_TXN_PREPARE_COMMIT;
    assert_int_equal(kiq_txn_check_add(&t, 7, 2, 1, more, zero, &there), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    assert_false(kiq_txn_timed_out(&t, 100000)); /* only an Ongoing one times out */
    t.state = KIQ_TXN_ONGOING;
    assert_false(kiq_txn_timed_out(&t, 5000 + 60000));
    assert_true(kiq_txn_timed_out(&t, 5000 + 60001));
    kiq_txn_free(&t);
}

/* Kafka's EndTxn table (transaction version 0/1). */
static void test_end_txn_table(void **state)
{
    (void)state;
    static const struct {
        kiq_txn_state_t state;
        int16_t commit, abort;
    } table[] = {
        {KIQ_TXN_EMPTY, KIQ_ERR_INVALID_TXN_STATE, KIQ_ERR_INVALID_TXN_STATE},
        {KIQ_TXN_ONGOING, KIQ_ERR_NONE, KIQ_ERR_NONE},
        {KIQ_TXN_PREPARE_COMMIT, KIQ_ERR_CONCURRENT_TRANSACTIONS, KIQ_ERR_INVALID_TXN_STATE},
        {KIQ_TXN_PREPARE_ABORT, KIQ_ERR_INVALID_TXN_STATE, KIQ_ERR_CONCURRENT_TRANSACTIONS},
        {KIQ_TXN_COMPLETE_COMMIT, KIQ_ERR_NONE, KIQ_ERR_INVALID_TXN_STATE},
        {KIQ_TXN_COMPLETE_ABORT, KIQ_ERR_INVALID_TXN_STATE, KIQ_ERR_NONE},
        {KIQ_TXN_PREPARE_EPOCH_FENCE, KIQ_ERR_CONCURRENT_TRANSACTIONS, KIQ_ERR_CONCURRENT_TRANSACTIONS},
        {KIQ_TXN_DEAD, KIQ_ERR_INVALID_TXN_STATE, KIQ_ERR_INVALID_TXN_STATE},
    };
    kiq_txn_end_action_t act;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        kiq_txn_t t = made(table[i].state, 7, 3);
        assert_int_equal(kiq_txn_check_end(&t, 7, 3, true, false, &act), table[i].commit);
        if (table[i].state == KIQ_TXN_ONGOING) assert_int_equal(act, KIQ_TXN_END_PREPARE);
        if (table[i].state == KIQ_TXN_COMPLETE_COMMIT) assert_int_equal(act, KIQ_TXN_END_DONE);
        assert_int_equal(kiq_txn_check_end(&t, 7, 3, false, false, &act), table[i].abort);
        if (table[i].state == KIQ_TXN_COMPLETE_ABORT) assert_int_equal(act, KIQ_TXN_END_DONE);
        /* a stranger and a zombie first */
        assert_int_equal(kiq_txn_check_end(&t, 8, 3, true, false, &act), KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
        assert_int_equal(kiq_txn_check_end(&t, 7, 2, true, false, &act), KIQ_ERR_PRODUCER_FENCED);
        kiq_txn_free(&t);
    }
    assert_int_equal(kiq_txn_check_end(NULL, 7, 3, true, false, &act), KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
    kiq_txn_t t = made(KIQ_TXN_ONGOING, 7, 3);
    assert_int_equal(kiq_txn_add_partition(&t, "a", 0), 0);
    t.start_ms = 10;
    kiq_txn_set_state(&t, KIQ_TXN_PREPARE_ABORT, 20);
    kiq_txn_complete(&t, 30);
    assert_int_equal(t.state, KIQ_TXN_COMPLETE_ABORT);
    assert_int_equal(t.npartitions, 0);
    assert_int_equal(t.start_ms, -1);
    assert_int_equal(t.updated_ms, 30);
    assert_string_equal(kiq_txn_state_names[KIQ_TXN_PREPARE_EPOCH_FENCE], "PrepareEpochFence");
    /* a producer replaced mid-transaction: a later epoch fences it, then the abort */
    kiq_txn_free(&t);
    t = made(KIQ_TXN_ONGOING, 7, 3);
    kiq_txn_fence(&t, 40);
    assert_int_equal(t.producer_epoch, 4);
    assert_int_equal(t.state, KIQ_TXN_PREPARE_ABORT);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, false, false, &act), KIQ_ERR_PRODUCER_FENCED);
    kiq_txn_complete(&t, 50);
    assert_int_equal(t.state, KIQ_TXN_COMPLETE_ABORT);
    /* even at the last epoch the old producer is fenced; then a new id */
    t.producer_epoch = KIQ_TXN_LAST_EPOCH;
    kiq_txn_fence(&t, 60);
    assert_int_equal(t.producer_epoch, INT16_MAX);
    assert_true(kiq_txn_needs_new_id(&t));
    /* an expired id takes no partitions */
    t.state = KIQ_TXN_DEAD;
    const char *topic[] = {"a"};
    const int32_t p0[] = {0};
    bool there;
    assert_int_equal(kiq_txn_check_add(&t, 7, INT16_MAX, 1, topic, p0, &there), KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
    kiq_txn_free(&t);
}

/* Transactions v2 (EndTxn v5): each end bumps the epoch, a retry comes at
 * the epoch before it, an abort with nothing under way is allowed, and the
 * last epoch moves to a new producer id once the markers are written. */
static void test_end_txn_v2(void **state)
{
    (void)state;
    kiq_txn_end_action_t act;
    kiq_txn_t t = made(KIQ_TXN_ONGOING, 7, 3);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, true, true, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_END_PREPARE);
    kiq_txn_prepare_end(&t, true, true, -1, 10);
    assert_int_equal(t.state, KIQ_TXN_PREPARE_COMMIT);
    assert_int_equal(t.producer_epoch, 4);
    assert_int_equal(t.client_version, 2);
    int64_t pid;
    int16_t epoch;
    kiq_txn_end_answer(&t, &pid, &epoch);
    assert_true(pid == 7 && epoch == 4);
    /* the retry while the markers are written (the other end is not one), then after */
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, true, true, &act), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, false, true, &act), KIQ_ERR_INVALID_TXN_STATE);
    /* the next transaction's end (at the new epoch) waits for the markers */
    assert_int_equal(kiq_txn_check_end(&t, 7, 4, false, true, &act), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    kiq_txn_complete(&t, 20);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, true, true, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_END_DONE);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, false, true, &act), KIQ_ERR_INVALID_TXN_STATE);
    /* at the new epoch: committing nothing is refused, aborting nothing bumps */
    assert_int_equal(kiq_txn_check_end(&t, 7, 4, true, true, &act), KIQ_ERR_INVALID_TXN_STATE);
    assert_int_equal(kiq_txn_check_end(&t, 7, 4, false, true, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_END_PREPARE);
    /* an epoch older than the one before the bump is fenced */
    assert_int_equal(kiq_txn_check_end(&t, 7, 2, true, true, &act), KIQ_ERR_PRODUCER_FENCED);
    kiq_txn_free(&t);
    t = made(KIQ_TXN_EMPTY, 7, 0);
    assert_int_equal(kiq_txn_check_end(&t, 7, 0, false, true, &act), KIQ_ERR_NONE);
    assert_int_equal(kiq_txn_check_end(&t, 7, 0, false, false, &act), KIQ_ERR_INVALID_TXN_STATE);
    kiq_txn_free(&t);
    /* the last epoch: the markers carry 32767, then a new id at epoch 0 */
    t = made(KIQ_TXN_ONGOING, 7, KIQ_TXN_LAST_EPOCH);
    assert_true(kiq_txn_end_needs_new_id(&t));
    kiq_txn_prepare_end(&t, false, true, 99, 30);
    assert_int_equal(t.producer_epoch, INT16_MAX);
    assert_int_equal(t.producer_id, 7);
    kiq_txn_end_answer(&t, &pid, &epoch);
    assert_true(pid == 99 && epoch == 0);
    /* the new id's next transaction waits for the markers; the retry too */
    const char *topic[] = {"a"};
    const int32_t p0[] = {0};
    bool there;
    assert_int_equal(kiq_txn_check_add(&t, 99, 0, 1, topic, p0, &there), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(kiq_txn_check_end(&t, 7, KIQ_TXN_LAST_EPOCH, false, true, &act), KIQ_ERR_CONCURRENT_TRANSACTIONS);
    kiq_txn_complete(&t, 40);
    assert_true(t.producer_id == 99 && t.producer_epoch == 0 && t.previous_producer_id == 7 && t.next_producer_id == -1);
    /* the retry at the old id and epoch is still recognised */
    assert_int_equal(kiq_txn_check_end(&t, 7, KIQ_TXN_LAST_EPOCH, false, true, &act), KIQ_ERR_NONE);
    assert_int_equal(act, KIQ_TXN_END_DONE);
    assert_int_equal(kiq_txn_check_end(&t, 7, KIQ_TXN_LAST_EPOCH, false, false, &act),
                     KIQ_ERR_INVALID_PRODUCER_ID_MAPPING);
    kiq_txn_free(&t);
    /* a v2 transaction fenced (a new producer, its timeout) moves one epoch
     * on, as Kafka's: the old producer's end at the epoch before is fenced,
     * not taken for an end's retry */
    t = made(KIQ_TXN_ONGOING, 7, 3);
    t.client_version = 2;
    kiq_txn_fence(&t, 45);
    assert_int_equal(t.producer_epoch, 4);
    kiq_txn_complete(&t, 46);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, true, true, &act), KIQ_ERR_PRODUCER_FENCED);
    assert_int_equal(kiq_txn_check_end(&t, 7, 3, false, true, &act), KIQ_ERR_PRODUCER_FENCED);
    /* nothing ended at the epoch before an InitProducerId's bump */
    kiq_txn_bump(&t, -1, 60000, 47, false);
    assert_int_equal(t.producer_epoch, 5);
    assert_int_equal(kiq_txn_check_end(&t, 7, 4, false, true, &act), KIQ_ERR_PRODUCER_FENCED);
    kiq_txn_free(&t);
    /* v0/v1 ends keep the epoch */
    t = made(KIQ_TXN_ONGOING, 7, 3);
    kiq_txn_prepare_end(&t, true, false, -1, 50);
    assert_true(t.producer_epoch == 3 && t.client_version == 0 && t.state == KIQ_TXN_PREPARE_COMMIT);
    kiq_txn_free(&t);
}

/* ---- __transaction_state on a real log ---- */

typedef struct seen {
    int n;
    kiq_txn_t txn[8];
    bool deleted[8];
} seen_t;

static void on_txn(void *ctx, kiq_str_t id, const kiq_transaction_log_value_t *v)
{
    seen_t *s = ctx;
    assert_true(s->n < 8);
    s->deleted[s->n] = v == NULL;
    if (v) {
        assert_int_equal(kiq_txn_from_value(&s->txn[s->n], id, v), 0);
    } else {
        char *name = strndup(id.p, (size_t)id.len);
        assert_int_equal(kiq_txn_init(&s->txn[s->n], name, 0), 0);
        free(name);
    }
    s->n++;
}

static void test_log_round_trip(void **state)
{
    (void)state;
    kiq_test_log_dir_t *ld = kiq_test_log_dir_new("txn", "__transaction_state-3");
    assert_non_null(ld);
    kiq_partition_log_t *log = kiq_partition_log_open(ld->dir, &ld->cfg);
    assert_non_null(log);
    kiq_txn_t a = made(KIQ_TXN_EMPTY, 11, 0);
    kiq_txn_t b = made(KIQ_TXN_ONGOING, 12, 4);
    free(b.id);
    b.id = strdup("t2");
    b.start_ms = 1500;
    b.previous_producer_id = 3;
    b.client_version = 2;
    b.next_producer_id = 13;
    assert_int_equal(kiq_txn_add_partition(&b, "orders", 2), 0);
    assert_int_equal(kiq_txn_add_partition(&b, "payments", 0), 0);
    assert_int_equal(kiq_txn_add_partition(&b, "orders", 5), 0);
    kiq_keyed_records_t rs;
    kiq_keyed_records_init(&rs, 2000);
    assert_int_equal(kiq_txn_records_add(&rs, &a), 0);
    assert_int_equal(kiq_txn_records_add(&rs, &b), 0);
    assert_int_equal(kiq_txn_records_add_tombstone(&rs, "t1"), 0);
    kiq_wr_t w;
    assert_int_equal(kiq_keyed_records_build(&rs, &w), 0);
    assert_int_equal(kiq_partition_log_append(log, w.buf, w.len, 0, NULL, NULL), 0);
    kiq_wr_free(&w);
    kiq_keyed_records_free(&rs);

    seen_t s = {0};
    kiq_txn_loader_t loader = {&s, on_txn};
    assert_int_equal(kiq_txn_log_load(log, &loader), 3);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.txn[0].id, "t1");
    assert_int_equal(s.txn[0].producer_id, 11);
    assert_int_equal(s.txn[0].state, KIQ_TXN_EMPTY);
    assert_int_equal(s.txn[0].npartitions, 0);
    assert_string_equal(s.txn[1].id, "t2");
    assert_int_equal(s.txn[1].producer_id, 12);
    assert_int_equal(s.txn[1].producer_epoch, 4);
    assert_int_equal(s.txn[1].previous_producer_id, 3);
    assert_int_equal(s.txn[1].client_version, 2);
    assert_int_equal(s.txn[1].next_producer_id, 13);
    assert_int_equal(s.txn[0].client_version, 0);
    assert_int_equal(s.txn[0].next_producer_id, -1);
    assert_int_equal(s.txn[1].timeout_ms, 60000);
    assert_int_equal(s.txn[1].state, KIQ_TXN_ONGOING);
    assert_int_equal(s.txn[1].start_ms, 1500);
    assert_int_equal(s.txn[1].npartitions, 3); /* grouped by topic on disk, all back */
    assert_true(kiq_txn_has_partition(&s.txn[1], "orders", 2));
    assert_true(kiq_txn_has_partition(&s.txn[1], "orders", 5));
    assert_true(kiq_txn_has_partition(&s.txn[1], "payments", 0));
    assert_true(s.deleted[2]);
    assert_string_equal(s.txn[2].id, "t1");
    for (int i = 0; i < s.n; i++) kiq_txn_free(&s.txn[i]);
    kiq_txn_free(&a);
    kiq_txn_free(&b);
    kiq_partition_log_free(log);
    kiq_test_log_dir_free(ld);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_for_is_javas),
        cmocka_unit_test(test_init_producer_id_rules),
        cmocka_unit_test(test_add_partitions_rules),
        cmocka_unit_test(test_end_txn_table),
        cmocka_unit_test(test_end_txn_v2),
        cmocka_unit_test(test_log_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
