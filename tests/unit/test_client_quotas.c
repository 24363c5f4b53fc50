/* Client quotas: Kafka's sampled rate (windows, the minimum span of
 * samples - 1 windows, reuse of the oldest, expiry) and its throttle time;
 * the precedence of quota entities; ClientQuotaRecords in the metadata
 * image, removed, and carried by its records (a snapshot). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "controller/metadata_image.h"
#include "core/arena.h"
#include "metrics/sampled_rate.h"

static void test_rate_counts_at_least_samples_minus_one_windows(void **state)
{
    (void)state;
    kiq_sampled_rate_t r;
    kiq_rate_init(&r, 11, 1000);
    /* a first burst is spread over ten windows, not over the 100 ms it took */
    kiq_rate_record(&r, 1000000, 100000);
    assert_int_equal(kiq_rate_window_ms(&r, 100100), 10100);
    assert_true(kiq_rate_measure(&r, 100100) > 99009 && kiq_rate_measure(&r, 100100) < 99010);
    /* ten seconds on, the burst's window is the oldest of eleven */
    for (int s = 1; s <= 10; s++) kiq_rate_record(&r, 100, 100000 + s * 1000);
    assert_int_equal(kiq_rate_window_ms(&r, 110500), 10500);
    /* eleven windows on, the oldest (the burst's) is reused */
    kiq_rate_record(&r, 100, 111000);
    assert_int_equal(r.nsamples, 11);
    assert_int_equal(kiq_rate_window_ms(&r, 111000), 10000);
    double rate = kiq_rate_measure(&r, 111000);
    assert_true(rate > 109.9 && rate < 110.1); /* 11 x 100 bytes over 10 s */
    /* windows older than all of them together count for nothing */
    assert_true(kiq_rate_measure(&r, 200000) == 0);
}

static void test_throttle_time(void **state)
{
    (void)state;
    /* Kafka's QuotaUtils.throttleTime: (rate - bound) / bound * window */
    assert_int_equal(kiq_quota_throttle_ms(300, 200, 10000), 5000);
    assert_int_equal(kiq_quota_throttle_ms(200.5, 200, 10000), 25);
    assert_int_equal(kiq_quota_throttle_ms(200, 200, 10000), 0); /* at the bound: none */
    assert_int_equal(kiq_quota_throttle_ms(100, 200, 10000), 0);
    assert_int_equal(kiq_quota_throttle_ms(100, 0, 10000), 0);
    /* a producer at twice a 1000 B/s quota over its span waits as long as
     * that span again: its bytes over the longer span are at the quota */
    kiq_sampled_rate_t r;
    kiq_rate_init(&r, 2, 1000);
    kiq_rate_record(&r, 2000, 0);
    int64_t w = kiq_rate_window_ms(&r, 0);
    int64_t ms = kiq_quota_throttle_ms(kiq_rate_measure(&r, 0), 1000, w);
    assert_int_equal(w, 1000);
    assert_int_equal(ms, 1000);
    assert_true(2000.0 * 1000 / (double)(w + ms) == 1000.0);
}

static void quota_record(kiq_metadata_record_t *r, const char *user, const char *client, bool has_user,
                         bool has_client, const char *key, double value, bool remove,
                         kiq_client_quota_record_entity_t *parts)
{
    assert_int_equal(kiq_metadata_record_init(r, KIQ_MR_CLIENT_QUOTA), 0);
    int n = 0;
    if (has_user) {
        kiq_client_quota_record_entity_init(&parts[n]);
        parts[n].entity_type = KIQ_STR("user");
        parts[n++].entity_name = user ? KIQ_STR(user) : KIQ_STR_NULL;
    }
    if (has_client) {
        kiq_client_quota_record_entity_init(&parts[n]);
        parts[n].entity_type = KIQ_STR("client-id");
        parts[n++].entity_name = client ? KIQ_STR(client) : KIQ_STR_NULL;
    }
    r->m.client_quota.entity = parts;
    r->m.client_quota.entity_n = n;
    r->m.client_quota.key = KIQ_STR(key);
    r->m.client_quota.value = value;
    r->m.client_quota.remove = remove;
}

static void apply(kiq_metadata_image_t *img, const char *user, const char *client, bool has_user, bool has_client,
                  const char *key, double value, bool remove)
{
    kiq_client_quota_record_entity_t parts[2];
    kiq_metadata_record_t r;
    quota_record(&r, user, client, has_user, has_client, key, value, remove, parts);
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), 0);
}

static double resolve(const kiq_metadata_image_t *img, const char *user, const char *client, bool *by_user,
                      bool *by_client)
{
    double bound = -1;
    kiq_quota_entity_t m;
    if (!kiq_client_quota_resolve(kiq_metadata_image_quotas(img), user, client, KIQ_QUOTA_PRODUCER_BYTE_RATE,
                                  &bound, &m))
        return -1;
    *by_user = m.has_user;
    *by_client = m.has_client;
    return bound;
}

static void test_precedence(void **state)
{
    (void)state;
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    bool u, c;
    assert_true(resolve(img, "alice", "app", &u, &c) == -1);
    /* from the lowest precedence up, each taking over from the one before */
    const char *P = "producer_byte_rate";
    apply(img, NULL, NULL, false, true, P, 8, false); /* clients/<default> */
    assert_true(resolve(img, "alice", "app", &u, &c) == 8 && !u && c);
    apply(img, NULL, "app", false, true, P, 7, false); /* clients/app */
    assert_true(resolve(img, "alice", "app", &u, &c) == 7);
    assert_true(resolve(img, "alice", "other", &u, &c) == 8);
    apply(img, NULL, NULL, true, false, P, 6, false); /* users/<default> */
    assert_true(resolve(img, "alice", "app", &u, &c) == 6 && u && !c);
    apply(img, NULL, NULL, true, true, P, 5, false); /* users/<default>/clients/<default> */
    assert_true(resolve(img, "alice", "app", &u, &c) == 5 && u && c);
    apply(img, NULL, "app", true, true, P, 4, false); /* users/<default>/clients/app */
    assert_true(resolve(img, "alice", "app", &u, &c) == 4);
    apply(img, "alice", NULL, true, false, P, 3, false); /* users/alice */
    assert_true(resolve(img, "alice", "app", &u, &c) == 3 && u && !c);
    assert_true(resolve(img, "bob", "app", &u, &c) == 4);
    apply(img, "alice", NULL, true, true, P, 2, false); /* users/alice/clients/<default> */
    assert_true(resolve(img, "alice", "app", &u, &c) == 2);
    apply(img, "alice", "app", true, true, P, 1, false); /* users/alice/clients/app */
    assert_true(resolve(img, "alice", "app", &u, &c) == 1);
    /* a quota of another key does not take over this one */
    apply(img, "carol", NULL, true, false, "consumer_byte_rate", 99, false);
    assert_true(resolve(img, "carol", "app", &u, &c) == 4);
    /* removed: the next one down applies again */
    apply(img, "alice", "app", true, true, P, 0, true);
    assert_true(resolve(img, "alice", "app", &u, &c) == 2);
    assert_int_equal(kiq_metadata_image_quotas(img)->n, 8);

    /* the image as records, into a second image that resolves alike */
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    kiq_metadata_image_t *again = kiq_metadata_image_new();
    size_t quotas = 0;
    for (size_t i = 0; i < n; i++) {
        quotas += rs[i].type == KIQ_MR_CLIENT_QUOTA;
        assert_int_equal(kiq_metadata_image_apply(again, (int64_t)i, &rs[i]), 0);
    }
    assert_int_equal(quotas, 8);
    assert_true(resolve(again, "alice", "app", &u, &c) == 2);
    assert_true(resolve(again, "bob", "x", &u, &c) == 5);
    assert_true(resolve(again, "carol", "app", &u, &c) == 4);
    kiq_arena_reset(&a);
    kiq_metadata_image_free(again);
    kiq_metadata_image_free(img);
}

static void test_malformed_records_refused(void **state)
{
    (void)state;
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    kiq_client_quota_record_entity_t parts[2];
    kiq_metadata_record_t r;
    quota_record(&r, "alice", NULL, true, false, "bogus_rate", 1, false, parts);
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), -1);
    quota_record(&r, NULL, NULL, false, false, "producer_byte_rate", 1, false, parts);
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), -1);
    quota_record(&r, "alice", NULL, true, false, "producer_byte_rate", 1, false, parts);
    parts[0].entity_type = KIQ_STR("group");
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), -1);
    assert_int_equal(kiq_metadata_image_quotas(img)->n, 0);
    kiq_metadata_image_free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_counts_at_least_samples_minus_one_windows),
        cmocka_unit_test(test_throttle_time),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_malformed_records_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
