/* The share-partition state machine (share/share_partition.h, KIP-932):
 * acquiring hands each available record to one member at a time, with
 * its delivery count; acknowledgements accept, release or reject only
 * what the member holds; expired locks and releases make records
 * available again until the delivery limit, which archives them; the
 * start offset moves past what is done with; sessions' epochs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto/errors.h"
#include "config/group_configs.h"
#include "share/share_manager.h"
#include "share/share_partition.h"

#define A 11 /* owners */
#define B 22

static void test_acquire_and_accept(void **state)
{
    (void)state;
    kiq_share_partition_t sp;
    kiq_share_partition_init(&sp, 5, 100);
    kiq_share_partition_start_at(&sp, 10);
    kiq_share_ranges_t got = {0};
    assert_int_equal(kiq_share_partition_acquire(&sp, 10, 14, 1000, A, 1000, &got), 5);
    assert_int_equal(got.n, 1);
    assert_true(got.v[0].first == 10 && got.v[0].last == 14 && got.v[0].deliveries == 1);
    assert_int_equal(kiq_share_partition_next(&sp), 15);
    /* another member gets none of them, only what follows */
    got.n = 0;
    assert_int_equal(kiq_share_partition_acquire(&sp, 10, 16, 1000, B, 1000, &got), 2);
    assert_true(got.n == 1 && got.v[0].first == 15 && got.v[0].last == 16);
    /* B may not acknowledge A's records; nothing changes */
    assert_int_equal(kiq_share_partition_ack(&sp, 12, 15, KIQ_SHARE_ACK_ACCEPT, B, 0), KIQ_ERR_INVALID_RECORD_STATE);
    assert_int_equal(kiq_share_partition_state(&sp, 15), KIQ_SHARE_ACQUIRED);
    assert_int_equal(kiq_share_partition_ack(&sp, 10, 11, 9, A, 0), KIQ_ERR_INVALID_REQUEST);
    /* A accepts the first two: the start moves past them */
    assert_int_equal(kiq_share_partition_ack(&sp, 10, 11, KIQ_SHARE_ACK_ACCEPT, A, 0), 0);
    assert_int_equal(sp.start, 12);
    /* before the start: done with, acknowledging again is no error (as Kafka) */
    assert_int_equal(kiq_share_partition_ack(&sp, 10, 11, KIQ_SHARE_ACK_ACCEPT, A, 0), 0);
    assert_int_equal(sp.start, 12);
    /* accepted twice is not accepted again */
    assert_int_equal(kiq_share_partition_ack(&sp, 15, 16, KIQ_SHARE_ACK_ACCEPT, B, 0), 0);
    assert_int_equal(kiq_share_partition_ack(&sp, 15, 15, KIQ_SHARE_ACK_ACCEPT, B, 0), KIQ_ERR_INVALID_RECORD_STATE);
    assert_int_equal(sp.start, 12);
    assert_int_equal(kiq_share_partition_ack(&sp, 12, 14, KIQ_SHARE_ACK_ACCEPT, A, 0), 0);
    assert_int_equal(sp.start, 17);
    assert_int_equal(sp.n, 0);
    kiq_share_ranges_free(&got);
    kiq_share_partition_free(&sp);
}

static void test_release_reject_and_the_limit(void **state)
{
    (void)state;
    kiq_share_partition_t sp;
    kiq_share_partition_init(&sp, 3, 100);
    kiq_share_partition_start_at(&sp, 0);
    kiq_share_ranges_t got = {0};
    for (int d = 1; d <= 3; d++) {
        got.n = 0;
        assert_int_equal(kiq_share_partition_acquire(&sp, 0, 1, 1000, A, 1000, &got), d == 1 ? 2 : 1);
        assert_int_equal(got.v[0].first, 0);
        assert_int_equal(got.v[0].deliveries, d);
        if (d == 1) assert_int_equal(kiq_share_partition_ack(&sp, 1, 1, KIQ_SHARE_ACK_REJECT, A, 0), 0);
        assert_int_equal(kiq_share_partition_ack(&sp, 0, 0, KIQ_SHARE_ACK_RELEASE, A, 0), 0);
    }
    /* the third release reached the limit: archived, and the start passed both */
    assert_int_equal(kiq_share_partition_state(&sp, 0), KIQ_SHARE_ACKNOWLEDGED);
    assert_int_equal(sp.start, 2);
    got.n = 0;
    assert_int_equal(kiq_share_partition_acquire(&sp, 0, 1, 1000, A, 1000, &got), 0);
    kiq_share_ranges_free(&got);
    kiq_share_partition_free(&sp);
}

static void test_locks_expire(void **state)
{
    (void)state;
    kiq_share_partition_t sp;
    kiq_share_partition_init(&sp, 2, 100);
    kiq_share_partition_start_at(&sp, 5);
    kiq_share_ranges_t got = {0};
    assert_int_equal(kiq_share_partition_acquire(&sp, 5, 7, 1000, A, 1000, &got), 3);
    assert_int_equal(kiq_share_partition_expire(&sp, 999, NULL), 0);
    got.n = 0;
    assert_int_equal(kiq_share_partition_expire(&sp, 1000, &got), 3);
    assert_true(got.n == 1 && got.v[0].first == 5 && got.v[0].last == 7 && got.v[0].deliveries == 1);
    assert_int_equal(kiq_share_partition_next(&sp), 5);
    /* an expired holder's acknowledgement comes too late */
    assert_int_equal(kiq_share_partition_ack(&sp, 5, 5, KIQ_SHARE_ACK_RENEW, A, 5000), KIQ_ERR_INVALID_RECORD_STATE);
    assert_int_equal(kiq_share_partition_ack(&sp, 5, 5, KIQ_SHARE_ACK_ACCEPT, A, 0), KIQ_ERR_INVALID_RECORD_STATE);
    got.n = 0;
    assert_int_equal(kiq_share_partition_acquire(&sp, 5, 7, 1000, B, 2000, &got), 3);
    assert_true(got.n == 1 && got.v[0].deliveries == 2);
    /* a renewal (v2) moves the lock on, the record stays B's */
    assert_int_equal(kiq_share_partition_ack(&sp, 7, 7, KIQ_SHARE_ACK_RENEW, B, 3000), 0);
    assert_int_equal(kiq_share_partition_expire(&sp, 2000, NULL), 2);
    assert_int_equal(kiq_share_partition_state(&sp, 7), KIQ_SHARE_ACQUIRED);
    assert_int_equal(kiq_share_partition_expire(&sp, 3000, NULL), 1);
    /* the second expiry reaches the limit of 2: archived */
    assert_int_equal(sp.start, 8);
    kiq_share_ranges_free(&got);
    kiq_share_partition_free(&sp);
}

static void test_gaps_control_batches_and_release_on_close(void **state)
{
    (void)state;
    kiq_share_partition_t sp;
    kiq_share_partition_init(&sp, 5, 4);
    kiq_share_partition_start_at(&sp, 0);
    kiq_share_ranges_t got = {0};
    /* offsets 0-1 not in the log (compacted away): archived on the way */
    assert_int_equal(kiq_share_partition_acquire(&sp, 2, 2, 1000, A, 1000, &got), 1);
    assert_int_equal(sp.start, 2);
    /* a control batch is never handed out */
    assert_int_equal(kiq_share_partition_archive(&sp, 3, 3), 0);
    /* at most 4 in flight */
    got.n = 0;
    assert_int_equal(kiq_share_partition_acquire(&sp, 4, 20, 1000, B, 1000, &got), 2);
    assert_true(got.v[0].first == 4 && got.v[0].last == 5);
    assert_int_equal(kiq_share_partition_release_owner(&sp, B), 2);
    assert_int_equal(kiq_share_partition_count(&sp, KIQ_SHARE_AVAILABLE), 2);
    assert_int_equal(kiq_share_partition_ack(&sp, 2, 2, KIQ_SHARE_ACK_GAP, A, 0), 0);
    assert_int_equal(sp.start, 4);
    /* the ranges: runs of equal delivery counts */
    got.n = 0;
    assert_int_equal(kiq_share_partition_acquire(&sp, 4, 20, 1000, A, 1000, &got), 4);
    assert_int_equal(got.n, 2);
    assert_true(got.v[0].first == 4 && got.v[0].last == 5 && got.v[0].deliveries == 2);
    assert_true(got.v[1].first == 6 && got.v[1].last == 7 && got.v[1].deliveries == 1);
    /* log start moved past in-flight records: they are dropped */
    kiq_share_partition_start_at(&sp, 6);
    assert_int_equal(sp.n, 2);
    assert_int_equal(kiq_share_partition_state(&sp, 6), KIQ_SHARE_ACQUIRED);
    kiq_share_ranges_free(&got);
    kiq_share_partition_free(&sp);
}

/* v2's record-limit acquire mode: no more than asked for. */
static void test_record_limit(void **state)
{
    (void)state;
    kiq_share_partition_t sp;
    kiq_share_partition_init(&sp, 5, 100);
    kiq_share_partition_start_at(&sp, 0);
    kiq_share_ranges_t got = {0};
    assert_int_equal(kiq_share_partition_acquire(&sp, 0, 9, 3, A, 1000, &got), 3);
    assert_true(got.n == 1 && got.v[0].first == 0 && got.v[0].last == 2);
    assert_int_equal(kiq_share_partition_next(&sp), 3);
    kiq_share_ranges_free(&got);
    kiq_share_partition_free(&sp);
}

static void test_sessions(void **state)
{
    (void)state;
    kiq_share_manager_t *m = kiq_share_manager_new();
    assert_non_null(m);
    kiq_uuid_t t = {{1, 2, 3}};
    kiq_share_partition_t *sp = kiq_share_partition_get(m, "g", 1, &t, 0, 5, 100);
    assert_non_null(sp);
    assert_ptr_equal(kiq_share_partition_get(m, "g", 1, &t, 0, 5, 100), sp);
    assert_ptr_not_equal(kiq_share_partition_get(m, "h", 1, &t, 0, 5, 100), sp);
    int released;
    kiq_share_session_t *s = kiq_share_session_open(m, "g", 1, "m1", 2, &released);
    assert_non_null(s);
    assert_int_equal(s->next_epoch, 1);
    assert_int_equal(kiq_share_session_add(s, &t, 0), 0);
    assert_int_equal(kiq_share_session_add(s, &t, 0), 0);
    assert_int_equal(s->n, 1);
    kiq_share_partition_start_at(sp, 0);
    kiq_share_ranges_t got = {0};
    assert_int_equal(kiq_share_partition_acquire(sp, 0, 2, 1000, s->owner, 1000, &got), 3);
    assert_ptr_equal(kiq_share_session_find(m, "g", 1, "m1", 2), s);
    assert_null(kiq_share_session_find(m, "g", 1, "m2", 2));
    /* closing gives back what the member held */
    assert_int_equal(kiq_share_session_close(m, "g", 1, "m1", 2), 3);
    assert_null(kiq_share_session_find(m, "g", 1, "m1", 2));
    assert_int_equal(kiq_share_partition_next(sp), 0);
    assert_int_equal(kiq_share_next_epoch(INT32_MAX), 1);
    /* an idle session makes room: the least recently used, if idle enough */
    kiq_share_session_t *s1 = kiq_share_session_open(m, "g", 1, "m1", 2, &released);
    kiq_share_session_t *s2 = kiq_share_session_open(m, "g", 1, "m2", 2, &released);
    s1->used_ms = 500;
    s2->used_ms = 100;
    assert_false(kiq_share_session_evict_idle(m, 100));
    assert_true(kiq_share_session_evict_idle(m, 1000));
    assert_null(kiq_share_session_find(m, "g", 1, "m2", 2));
    assert_ptr_equal(kiq_share_session_find(m, "g", 1, "m1", 2), s1);
    kiq_share_ranges_free(&got);
    kiq_share_manager_free(m);
}

/* A share group's configs: Kafka's names and checks, set and deleted. */
static void test_group_configs(void **state)
{
    (void)state;
    kiq_share_manager_t *m = kiq_share_manager_new();
    assert_non_null(m);
    kiq_group_configs_t c = {{0}};
    int reset = kiq_group_config_find(KIQ_STR("share.auto.offset.reset"));
    assert_int_equal(reset, KIQ_GROUP_CFG_AUTO_OFFSET_RESET);
    assert_int_equal(kiq_group_config_find(KIQ_STR("share.no.such")), -1);
    assert_int_equal(kiq_group_configs_set(&c, reset, KIQ_STR("sometimes")), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_group_configs_set(&c, reset, KIQ_STR("earliest")), 0);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_LOCK_DURATION_MS, KIQ_STR("999")), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_LOCK_DURATION_MS, KIQ_STR("15000x")), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_LOCK_DURATION_MS, KIQ_STR("15000")), 0);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT, KIQ_STR("11")), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_ISOLATION_LEVEL, KIQ_STR("serializable")),
                     KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(kiq_group_configs_set(&c, KIQ_GROUP_CFG_ISOLATION_LEVEL, KIQ_STR("read_committed")), 0);
    assert_int_equal(kiq_share_group_configs_put(m, "g", 1, &c), 0);
    const kiq_group_configs_t *got = kiq_share_group_configs(m, "g", 1);
    assert_non_null(got);
    assert_string_equal(got->v[reset], "earliest");
    assert_string_equal(got->v[KIQ_GROUP_CFG_LOCK_DURATION_MS], "15000");
    assert_null(got->v[KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT]);
    assert_string_equal(got->v[KIQ_GROUP_CFG_ISOLATION_LEVEL], "read_committed");
    assert_null(kiq_share_group_configs(m, "h", 1));
    /* every one deleted: the group has none */
    kiq_group_configs_t d;
    assert_int_equal(kiq_group_configs_copy(&d, got), 0);
    assert_int_equal(kiq_group_configs_set(&d, reset, KIQ_STR_NULL), 0);
    assert_int_equal(kiq_group_configs_set(&d, KIQ_GROUP_CFG_LOCK_DURATION_MS, KIQ_STR_NULL), 0);
    assert_int_equal(kiq_group_configs_set(&d, KIQ_GROUP_CFG_ISOLATION_LEVEL, KIQ_STR_NULL), 0);
    assert_int_equal(kiq_share_group_configs_put(m, "g", 1, &d), 0);
    assert_null(kiq_share_group_configs(m, "g", 1));
    kiq_share_manager_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_and_accept),
        cmocka_unit_test(test_release_reject_and_the_limit),
        cmocka_unit_test(test_locks_expire),
        cmocka_unit_test(test_gaps_control_batches_and_release_on_close),
        cmocka_unit_test(test_record_limit),
        cmocka_unit_test(test_sessions),
        cmocka_unit_test(test_group_configs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
