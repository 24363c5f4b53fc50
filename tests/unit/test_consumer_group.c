/* Consumer groups of the new protocol (KIP-848), without a broker: the
 * uniform and range assignors (balance, stickiness, ranges by member id)
 * and reconciliation (a member gives up partitions before anyone gets
 * them, epochs move only once revocation is done, a member waits for
 * partitions others still hold), and partition sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"
#include "group/consumer_group.h"

static kiq_uuid_t T1 = {{1}}, T2 = {{2}};

static kiq_cg_member_t *join(kiq_cgroup_t *cg, const char *id, const char *topic)
{
    kiq_cg_member_t *m = kiq_cgroup_add_member(cg, id, strlen(id));
    assert_non_null(m);
    const char *names[2] = {topic, "b"};
    int32_t lens[2] = {(int32_t)strlen(topic), 1};
    assert_int_equal(kiq_cg_member_set_topics(m, names, lens, 1), 1);
    return m;
}

static void test_set(void **state)
{
    (void)state;
    kiq_cg_set_t s = {0}, c = {0};
    for (int p = 5; p >= 0; p--) assert_int_equal(kiq_cg_set_add(&s, &T1, p), 0);
    assert_int_equal(kiq_cg_set_add(&s, &T1, 3), 0);
    assert_int_equal(s.n, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(s.v[i].partition, i);
    assert_true(kiq_cg_set_has(&s, &T1, 4));
    assert_false(kiq_cg_set_has(&s, &T2, 4));
    assert_int_equal(kiq_cg_set_copy(&c, &s), 0);
    assert_true(kiq_cg_set_eq(&c, &s));
    assert_true(kiq_cg_set_remove(&c, &T1, 4));
    assert_false(kiq_cg_set_eq(&c, &s));
    kiq_cg_set_free(&s);
    kiq_cg_set_free(&c);
}

static void test_uniform_balanced_and_sticky(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_topic_t topics[] = {{T1, "a", 6}};
    kiq_cg_member_t *m1 = join(cg, "m1", "a");
    assert_int_equal(kiq_cg_assign_uniform(cg, topics, 1), 0);
    assert_int_equal(m1->target.n, 6);
    kiq_cg_member_t *m2 = join(cg, "m2", "a"), *m3 = join(cg, "m3", "a");
    assert_int_equal(kiq_cg_assign_uniform(cg, topics, 1), 0);
    assert_int_equal(m1->target.n, 2);
    assert_int_equal(m2->target.n, 2);
    assert_int_equal(m3->target.n, 2);
    for (int p = 0; p < 6; p++)
        assert_int_equal(kiq_cg_set_has(&m1->target, &T1, p) + kiq_cg_set_has(&m2->target, &T1, p) +
                             kiq_cg_set_has(&m3->target, &T1, p), 1);
    /* m2 goes: m1 and m3 keep theirs and share m2's */
    kiq_cg_set_t k1 = {0}, k3 = {0};
    kiq_cg_set_copy(&k1, &m1->target);
    kiq_cg_set_copy(&k3, &m3->target);
    kiq_cgroup_remove_member(cg, m2);
    assert_int_equal(kiq_cg_assign_uniform(cg, topics, 1), 0);
    assert_int_equal(m1->target.n, 3);
    assert_int_equal(m3->target.n, 3);
    for (int i = 0; i < k1.n; i++) assert_true(kiq_cg_set_has(&m1->target, &T1, k1.v[i].partition));
    for (int i = 0; i < k3.n; i++) assert_true(kiq_cg_set_has(&m3->target, &T1, k3.v[i].partition));
    kiq_cg_set_free(&k1);
    kiq_cg_set_free(&k3);
    kiq_cgroup_free(cg);
}

static void test_uniform_heterogeneous(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_topic_t topics[] = {{T1, "a", 4}, {T2, "b", 2}};
    kiq_cg_member_t *ma = join(cg, "ma", "a"), *mb = join(cg, "mb", "b");
    assert_int_equal(kiq_cg_assign_uniform(cg, topics, 2), 0);
    assert_int_equal(ma->target.n, 4);
    assert_int_equal(mb->target.n, 2);
    for (int i = 0; i < ma->target.n; i++) assert_memory_equal(ma->target.v[i].topic.b, T1.b, 16);
    kiq_cgroup_free(cg);
}

static void test_range(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_topic_t topics[] = {{T1, "a", 7}};
    kiq_cg_member_t *z = join(cg, "z", "a"), *a = join(cg, "a", "a");
    assert_int_equal(kiq_cg_assign_range(cg, topics, 1), 0);
    /* sorted by member id: "a" first, with the extra one */
    assert_int_equal(a->target.n, 4);
    assert_int_equal(z->target.n, 3);
    for (int p = 0; p < 4; p++) assert_true(kiq_cg_set_has(&a->target, &T1, p));
    for (int p = 4; p < 7; p++) assert_true(kiq_cg_set_has(&z->target, &T1, p));
    assert_ptr_equal(kiq_cg_assignor("range", 5), kiq_cg_assign_range);
    const char *cls = "org.apache.kafka.coordinator.group.assignor.UniformAssignor";
    assert_ptr_equal(kiq_cg_assignor(cls, strlen(cls)), kiq_cg_assign_uniform);
    assert_null(kiq_cg_assignor("sticky", 6));
    kiq_cgroup_free(cg);
}

/* The coordinator's order on a heartbeat: target for the epoch, then
 * reconcile the member. */
static int beat(kiq_cgroup_t *cg, kiq_cg_member_t *m, const kiq_cg_set_t *owned)
{
    return kiq_cgroup_reconcile(cg, m, owned, 0);
}

static void test_revoke_before_assign(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_topic_t topics[] = {{T1, "a", 4}};
    kiq_cg_member_t *m1 = join(cg, "m1", "a");
    cg->epoch = 1;
    kiq_cg_assign_uniform(cg, topics, 1);
    cg->assignment_epoch = 1;
    assert_int_equal(beat(cg, m1, NULL), 1);
    assert_int_equal(m1->epoch, 1);
    assert_int_equal(m1->state, KIQ_CG_STABLE);
    assert_int_equal(m1->assigned.n, 4);

    /* m2 joins: epoch 2, two partitions move from m1 to m2 */
    kiq_cg_member_t *m2 = join(cg, "m2", "a");
    cg->epoch = 2;
    kiq_cg_assign_uniform(cg, topics, 1);
    cg->assignment_epoch = 2;
    assert_int_equal(beat(cg, m2, NULL), 1);
    /* m1 still owns them: m2 gets nothing yet, but takes the epoch */
    assert_int_equal(m2->epoch, 2);
    assert_int_equal(m2->state, KIQ_CG_UNRELEASED_PARTITIONS);
    assert_int_equal(m2->assigned.n, 0);

    /* m1 must revoke first, keeping its epoch */
    kiq_cg_set_t owned = {0};
    kiq_cg_set_copy(&owned, &m1->assigned);
    assert_int_equal(beat(cg, m1, &owned), 1);
    assert_int_equal(m1->state, KIQ_CG_UNREVOKED_PARTITIONS);
    assert_int_equal(m1->epoch, 1);
    assert_int_equal(m1->assigned.n, 2);
    assert_int_equal(m1->revoking.n, 2);
    /* still listing them: nothing moves, and m2 still waits */
    assert_int_equal(beat(cg, m1, &owned), 0);
    assert_int_equal(beat(cg, m2, NULL), 0);
    assert_int_equal(m2->assigned.n, 0);

    /* m1 revoked: it takes epoch 2, then m2 gets the partitions */
    kiq_cg_set_copy(&owned, &m1->assigned);
    assert_int_equal(beat(cg, m1, &owned), 1);
    assert_int_equal(m1->state, KIQ_CG_STABLE);
    assert_int_equal(m1->epoch, 2);
    assert_int_equal(m1->previous_epoch, 1);
    assert_int_equal(beat(cg, m2, NULL), 1);
    assert_int_equal(m2->state, KIQ_CG_STABLE);
    assert_int_equal(m2->assigned.n, 2);
    for (int i = 0; i < m2->assigned.n; i++)
        assert_false(kiq_cg_set_has(&m1->assigned, &T1, m2->assigned.v[i].partition));
    /* assignment epochs (KIP-1251): m1 has kept its two since epoch 1, so a
     * commit it sent at epoch 1 still counts for them; m2 got its at 2 */
    for (int i = 0; i < m1->assigned.n; i++) assert_int_equal(m1->assigned.v[i].epoch, 1);
    for (int i = 0; i < m2->assigned.n; i++) assert_int_equal(m2->assigned.v[i].epoch, 2);
    assert_string_equal(kiq_cgroup_state_name(cg), "Stable");
    kiq_cg_set_free(&owned);
    kiq_cgroup_free(cg);
}

static void test_leaver_releases(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_topic_t topics[] = {{T1, "a", 2}};
    kiq_cg_member_t *m1 = join(cg, "m1", "a"), *m2 = join(cg, "m2", "a");
    cg->epoch = cg->assignment_epoch = 1;
    kiq_cg_assign_uniform(cg, topics, 1);
    beat(cg, m1, NULL);
    beat(cg, m2, NULL);
    assert_int_equal(m1->assigned.n + m2->assigned.n, 2);
    /* m1 goes: its partition is free for m2 at once at the next epoch */
    kiq_cgroup_remove_member(cg, m1);
    cg->epoch = cg->assignment_epoch = 2;
    kiq_cg_assign_uniform(cg, topics, 1);
    assert_int_equal(beat(cg, m2, NULL), 1);
    assert_int_equal(m2->assigned.n, 2);
    assert_int_equal(m2->epoch, 2);
    assert_string_equal(kiq_cgroup_state_name(cg), "Stable");
    kiq_cgroup_free(cg);
}

/* A regex subscription matches whole names (internal ones too), a bad one
 * is refused with the reason, and an empty one clears it. */
static void test_regex_subscription(void **state)
{
    (void)state;
    kiq_cgroup_t *cg = kiq_cgroup_new();
    kiq_cg_member_t *m = kiq_cgroup_add_member(cg, "m1", 2);
    assert_non_null(m);
    const char *re = "orders-\\d+|__consumer_offsets";
    assert_int_equal(kiq_cg_member_set_regex(m, re, strlen(re)), 1);
    assert_int_equal(kiq_cg_member_set_regex(m, re, strlen(re)), 0);
    assert_true(kiq_cg_member_subscribes(m, "orders-12"));
    assert_true(kiq_cg_member_subscribes(m, "__consumer_offsets"));
    assert_false(kiq_cg_member_subscribes(m, "orders-12-v2"));
    assert_false(kiq_cg_member_subscribes(m, "my-orders-1"));
    assert_int_equal(kiq_cg_member_set_regex(m, "orders-(", 8), -1);
    assert_non_null(strstr(kiq_error_get(), "Invalid regular expression orders-("));
    assert_true(kiq_cg_member_subscribes(m, "orders-1")); /* the last good one stays */
    assert_int_equal(kiq_cg_member_set_regex(m, "", 0), 1);
    assert_false(kiq_cg_member_subscribes(m, "orders-1"));
    kiq_cgroup_free(cg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_uniform_balanced_and_sticky),
        cmocka_unit_test(test_uniform_heterogeneous),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_revoke_before_assign),
        cmocka_unit_test(test_leaver_releases),
        cmocka_unit_test(test_regex_subscription),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
