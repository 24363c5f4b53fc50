/* The broker's metadata cache (controller/metadata_cache.h): UpdateMetadata in
 * both layouts, lookups, whole-view replacement, broker listeners, and
 * waiting for versions and brokers across threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "controller/metadata_cache.h"

/* ---- building requests -------------------------------------------------- */

typedef struct builder {
    kiq_arena_t a;
    kiq_update_metadata_request_t req;
} builder_t;

static void builder_init(builder_t *b, int32_t controller)
{
    kiq_arena_init(&b->a);
    memset(&b->req, 0, sizeof b->req);
    b->req.controller_id = controller;
    b->req.topic_states = kiq_arena_calloc(&b->a, 16, sizeof *b->req.topic_states);
    b->req.ungrouped_partition_states = kiq_arena_calloc(&b->a, 16, sizeof *b->req.ungrouped_partition_states);
    b->req.live_brokers = kiq_arena_calloc(&b->a, 16, sizeof *b->req.live_brokers);
}

static int32_t *ids(builder_t *b, int n, const int32_t *v)
{
    int32_t *p = kiq_arena_calloc(&b->a, (size_t)(n ? n : 1), sizeof *p);
    memcpy(p, v, (size_t)n * sizeof *p);
    return p;
}

static kiq_uuid_t uuid_of(uint8_t x)
{
    kiq_uuid_t u;
    memset(u.b, x, sizeof u.b);
    return u;
}

/* v5+ layout: a topic with n partitions, leader of p = replicas[p % nrep]. */
static void add_topic(builder_t *b, const char *name, uint8_t id, int n, int nrep, const int32_t *replicas)
{
    kiq_update_metadata_request_topic_states_t *t = &b->req.topic_states[b->req.topic_states_n++];
    t->topic_name = KIQ_STR(name);
    t->topic_id = uuid_of(id);
    t->partition_states = kiq_arena_calloc(&b->a, (size_t)n, sizeof *t->partition_states);
    t->partition_states_n = n;
    for (int p = 0; p < n; p++) {
        kiq_update_metadata_request_topic_states_partition_states_t *s = &t->partition_states[p];
        s->partition_index = p;
        s->leader = replicas[p % nrep];
        s->leader_epoch = 10 + p;
        s->partition_epoch = 20 + p;
        s->replicas_n = s->isr_n = nrep;
        s->replicas = s->isr = ids(b, nrep, replicas);
    }
}

/* v1+ broker with a PLAINTEXT and a CONTROLLER endpoint. */
static void add_broker(builder_t *b, int32_t id, int port, int control_port, const char *rack)
{
    kiq_update_metadata_request_live_brokers_t *lb = &b->req.live_brokers[b->req.live_brokers_n++];
    lb->id = id;
    lb->rack = rack ? KIQ_STR(rack) : KIQ_STR_NULL;
    lb->endpoints = kiq_arena_calloc(&b->a, 2, sizeof *lb->endpoints);
    lb->endpoints_n = 2;
    lb->endpoints[0] = (kiq_update_metadata_request_live_brokers_endpoints_t){
        .port = port, .host = KIQ_STR("127.0.0.1"), .listener = KIQ_STR("PLAINTEXT")};
    lb->endpoints[1] = (kiq_update_metadata_request_live_brokers_endpoints_t){
        .port = control_port, .host = KIQ_STR("127.0.0.2"), .listener = KIQ_STR("CONTROLLER")};
}

static void builder_free(builder_t *b) { kiq_arena_reset(&b->a); }

/* ---- tests -------------------------------------------------------------- */

static void test_empty_cache(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    assert_non_null(mc);
    assert_int_equal(kiq_metadata_cache_version(mc), 0);
    assert_int_equal(kiq_metadata_cache_controller(mc), -1);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "t", 1), -1);
    assert_int_equal(kiq_metadata_cache_broker_count(mc), 0);
    kiq_cached_partition_t p;
    assert_false(kiq_metadata_cache_partition(mc, "t", 1, 0, &p));
    assert_false(kiq_metadata_cache_wait_version(mc, 1, 0));
    kiq_metadata_cache_free(mc);
}

static void test_update_and_lookup(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 0);
    add_topic(&b, "orders", 1, 3, 3, (int32_t[]){1, 2, 0});
    add_topic(&b, "audit", 2, 1, 1, (int32_t[]){2});
    add_broker(&b, 0, 9092, 9093, NULL);
    add_broker(&b, 1, 9192, 9193, "rack-b");
    add_broker(&b, 2, 9292, 9293, NULL);
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);

    assert_int_equal(kiq_metadata_cache_version(mc), 1);
    assert_int_equal(kiq_metadata_cache_controller(mc), 0);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "orders", 6), 3);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "audit", 5), 1);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "order", 5), -1);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "orders!", 7), -1);

    kiq_cached_partition_t p;
    assert_true(kiq_metadata_cache_partition(mc, "orders", 6, 1, &p));
    assert_int_equal(p.leader, 2);
    assert_int_equal(p.leader_epoch, 11);
    assert_int_equal(p.partition_epoch, 21);
    assert_int_equal(p.nreplicas, 3);
    assert_int_equal(p.replicas[0], 1);
    assert_int_equal(p.replicas[2], 0);
    assert_int_equal(p.nisr, 3);
    assert_int_equal(p.noffline, 0);
    assert_false(kiq_metadata_cache_partition(mc, "orders", 6, 3, &p));
    assert_false(kiq_metadata_cache_partition(mc, "orders", 6, -1, &p));

    kiq_uuid_t id, want = uuid_of(2);
    assert_true(kiq_metadata_cache_topic_id(mc, "audit", 5, &id));
    assert_memory_equal(id.b, want.b, 16);
    assert_false(kiq_metadata_cache_topic_id(mc, "nope", 4, &id));

    char host[64];
    int port = 0;
    assert_true(kiq_metadata_cache_broker(mc, 1, NULL, host, sizeof host, &port));
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 9192);
    assert_true(kiq_metadata_cache_broker(mc, 1, "CONTROLLER", host, sizeof host, &port));
    assert_string_equal(host, "127.0.0.2");
    assert_int_equal(port, 9193);
    assert_false(kiq_metadata_cache_broker(mc, 1, "SSL", host, sizeof host, &port));
    assert_false(kiq_metadata_cache_broker(mc, 7, NULL, host, sizeof host, &port));
    /* a short buffer gets a cut, terminated host */
    char tiny[4];
    assert_true(kiq_metadata_cache_broker(mc, 0, NULL, tiny, sizeof tiny, &port));
    assert_string_equal(tiny, "127");
    kiq_metadata_cache_free(mc);
}

static void test_copies_into_arena(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 1);
    add_topic(&b, "zeta", 3, 2, 2, (int32_t[]){0, 1});
    add_topic(&b, "alpha", 4, 1, 1, (int32_t[]){1});
    add_broker(&b, 0, 1000, 1001, NULL);
    add_broker(&b, 1, 1100, 1101, "r1");
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);

    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_cached_topic_t *topics;
    assert_int_equal(kiq_metadata_cache_topics(mc, &a, &topics), 2);
    assert_string_equal(topics[0].name, "alpha"); /* sorted */
    assert_string_equal(topics[1].name, "zeta");
    assert_int_equal(topics[1].npartitions, 2);
    assert_int_equal(topics[1].partitions[1].leader, 1);

    kiq_cached_topic_t t;
    kiq_uuid_t zid = uuid_of(3), none = uuid_of(0);
    assert_true(kiq_metadata_cache_topic_by_id(mc, &zid, &a, &t));
    assert_string_equal(t.name, "zeta");
    assert_false(kiq_metadata_cache_topic_by_id(mc, &none, &a, &t));
    assert_true(kiq_metadata_cache_topic(mc, "alpha", 5, &a, &t));

    kiq_cached_broker_t *brokers;
    assert_int_equal(kiq_metadata_cache_brokers(mc, NULL, &a, &brokers), 2);
    assert_int_equal(brokers[1].id, 1);
    assert_int_equal(brokers[1].port, 1100);
    assert_string_equal(brokers[1].rack, "r1");
    assert_null(brokers[0].rack);
    kiq_cached_broker_t *control;
    assert_int_equal(kiq_metadata_cache_brokers(mc, "CONTROLLER", &a, &control), 2);
    assert_int_equal(control[0].port, 1001);

    /* the copies outlive the view they came from */
    builder_init(&b, 1);
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);
    assert_int_equal(kiq_metadata_cache_broker_count(mc), 0);
    assert_string_equal(t.name, "alpha");
    assert_string_equal(brokers[1].host, "127.0.0.1");
    kiq_arena_reset(&a);
    kiq_metadata_cache_free(mc);
}

static void test_update_replaces_view(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 0);
    add_topic(&b, "gone", 1, 1, 1, (int32_t[]){0});
    add_topic(&b, "kept", 2, 1, 2, (int32_t[]){0, 1});
    add_broker(&b, 0, 1, 2, NULL);
    add_broker(&b, 1, 3, 4, NULL);
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);

    builder_init(&b, 2);
    add_topic(&b, "kept", 2, 1, 2, (int32_t[]){1, 0});
    add_broker(&b, 1, 3, 4, NULL);
    add_broker(&b, 2, 5, 6, NULL);
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);

    assert_int_equal(kiq_metadata_cache_version(mc), 2);
    assert_int_equal(kiq_metadata_cache_controller(mc), 2);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "gone", 4), -1);
    kiq_cached_partition_t p;
    assert_true(kiq_metadata_cache_partition(mc, "kept", 4, 0, &p));
    assert_int_equal(p.leader, 1);
    char host[32];
    int port;
    assert_false(kiq_metadata_cache_broker(mc, 0, NULL, host, sizeof host, &port));
    assert_true(kiq_metadata_cache_broker(mc, 2, NULL, host, sizeof host, &port));
    assert_int_equal(port, 5);
    assert_int_equal(kiq_metadata_cache_broker_count(mc), 2);
    kiq_metadata_cache_free(mc);
}

/* The v0-4 layout: partition states not grouped by topic, in any order,
 * possibly with holes; brokers of v0 with one host and port. */
static void test_ungrouped_states_and_v0_brokers(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 5);
    int32_t order[][2] = {{'b', 2}, {'a', 0}, {'b', 0}};
    for (int i = 0; i < 3; i++) {
        kiq_update_metadata_request_ungrouped_partition_states_t *s =
            &b.req.ungrouped_partition_states[b.req.ungrouped_partition_states_n++];
        s->topic_name = order[i][0] == 'a' ? KIQ_STR("topic-a") : KIQ_STR("topic-b");
        s->partition_index = order[i][1];
        s->leader = 100 + i;
        s->leader_epoch = 1;
        s->replicas_n = 1;
        s->replicas = ids(&b, 1, (int32_t[]){100 + i});
        s->offline_replicas_n = i == 0 ? 1 : 0;
        s->offline_replicas = ids(&b, 1, (int32_t[]){7});
    }
    /* nonsense that must be skipped, not allocated for */
    kiq_update_metadata_request_ungrouped_partition_states_t *bad =
        &b.req.ungrouped_partition_states[b.req.ungrouped_partition_states_n++];
    bad->topic_name = KIQ_STR("topic-c");
    bad->partition_index = -4;
    kiq_update_metadata_request_live_brokers_t *lb = &b.req.live_brokers[b.req.live_brokers_n++];
    lb->id = 100;
    lb->v0_host = KIQ_STR("h100");
    lb->v0_port = 4242;
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);

    assert_int_equal(kiq_metadata_cache_partition_count(mc, "topic-a", 7), 1);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "topic-b", 7), 3);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "topic-c", 7), -1);
    kiq_cached_partition_t p;
    assert_true(kiq_metadata_cache_partition(mc, "topic-b", 7, 1, &p));
    assert_int_equal(p.leader, -1); /* the hole */
    assert_int_equal(p.nreplicas, 0);
    assert_true(kiq_metadata_cache_partition(mc, "topic-b", 7, 2, &p));
    assert_int_equal(p.leader, 100);
    assert_int_equal(p.noffline, 1);
    assert_int_equal(p.offline[0], 7);
    assert_true(kiq_metadata_cache_partition(mc, "topic-b", 7, 0, &p));
    assert_int_equal(p.leader, 102);
    char host[32];
    int port;
    assert_true(kiq_metadata_cache_broker(mc, 100, "PLAINTEXT", host, sizeof host, &port));
    assert_string_equal(host, "h100");
    assert_int_equal(port, 4242);
    kiq_metadata_cache_free(mc);
}

static void test_long_replica_lists_are_cut(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 0);
    int32_t many[KIQ_MAX_REPLICAS + 5];
    for (int i = 0; i < KIQ_MAX_REPLICAS + 5; i++) many[i] = i;
    add_topic(&b, "wide", 1, 1, KIQ_MAX_REPLICAS + 5, many);
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    builder_free(&b);
    kiq_cached_partition_t p;
    assert_true(kiq_metadata_cache_partition(mc, "wide", 4, 0, &p));
    assert_int_equal(p.nreplicas, KIQ_MAX_REPLICAS);
    assert_int_equal(p.replicas[KIQ_MAX_REPLICAS - 1], KIQ_MAX_REPLICAS - 1);
    kiq_metadata_cache_free(mc);
}

/* ---- waiting ------------------------------------------------------------ */

typedef struct updater {
    kiq_metadata_cache_t *mc;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool go;
    int nbrokers;
    const char *topic; /* NULL: none */
} updater_t;

/* Waits for the test's go, then applies one update. */
static void *updater_main(void *arg)
{
    updater_t *u = arg;
    pthread_mutex_lock(&u->mu);
    while (!u->go) pthread_cond_wait(&u->cond, &u->mu);
    pthread_mutex_unlock(&u->mu);
    builder_t b;
    builder_init(&b, 0);
    for (int i = 0; i < u->nbrokers; i++) add_broker(&b, i, 100 + i, 200 + i, NULL);
    if (u->topic) add_topic(&b, u->topic, 9, 2, 1, (int32_t[]){0});
    kiq_metadata_cache_update(u->mc, &b.req);
    builder_free(&b);
    return NULL;
}

static void start_updater(updater_t *u, pthread_t *t, kiq_metadata_cache_t *mc, int nbrokers, const char *topic)
{
    *u = (updater_t){.mc = mc, .nbrokers = nbrokers, .topic = topic};
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cond, NULL);
    assert_int_equal(pthread_create(t, NULL, updater_main, u), 0);
    pthread_mutex_lock(&u->mu);
    u->go = true;
    pthread_cond_signal(&u->cond);
    pthread_mutex_unlock(&u->mu);
}

static void join_updater(updater_t *u, pthread_t t)
{
    pthread_join(t, NULL);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cond);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_wait_version_and_brokers(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    updater_t u;
    pthread_t t;
    start_updater(&u, &t, mc, 1, "fresh");
    /* generous timeouts: they only bound a failure */
    assert_true(kiq_metadata_cache_wait_version(mc, 1, 10000));
    join_updater(&u, t);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "fresh", 5), 2);

    /* the topic goes away with the next update */
    start_updater(&u, &t, mc, 3, NULL);
    assert_true(kiq_metadata_cache_wait_brokers(mc, 3, 10000));
    join_updater(&u, t);
    assert_int_equal(kiq_metadata_cache_partition_count(mc, "fresh", 5), -1);
    assert_int_equal(kiq_metadata_cache_version(mc), 2);
    kiq_metadata_cache_free(mc);
}

static void test_wait_times_out(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    int64_t t0 = now_ms();
    assert_false(kiq_metadata_cache_wait_version(mc, 1, 60));
    assert_false(kiq_metadata_cache_wait_brokers(mc, 1, 60));
    int64_t took = now_ms() - t0;
    assert_true(took >= 100);
    assert_true(took < 5000);
    /* already true: no wait at all, even with no timeout */
    assert_true(kiq_metadata_cache_wait_brokers(mc, 0, -1));
    kiq_metadata_cache_free(mc);
}

/* The SCRAM credentials a controller's update carries: each kept by user
 * and mechanism (a broker that is no voter authenticates with them), one
 * with a key of the wrong size or an unknown mechanism left out, and the
 * next update's set replacing the last's. */
static void test_scram_credentials(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    builder_t b;
    builder_init(&b, 0);
    static uint8_t salt[16] = {1}, k32[32] = {2}, k64[64] = {3};
    kiq_update_metadata_request_kafkaiq_scram_credentials_t creds[] = {
        {.name = KIQ_STR("alice"), .mechanism = 1, .salt = {salt, 16}, .stored_key = {k32, 32},
         .server_key = {k32, 32}, .iterations = 4096},
        {.name = KIQ_STR("alice"), .mechanism = 2, .salt = {salt, 16}, .stored_key = {k64, 64},
         .server_key = {k64, 64}, .iterations = 8192},
        {.name = KIQ_STR("bad"), .mechanism = 2, .salt = {salt, 16}, .stored_key = {k32, 32},
         .server_key = {k32, 32}, .iterations = 4096},
        {.name = KIQ_STR("odd"), .mechanism = 9, .salt = {salt, 16}, .stored_key = {k32, 32},
         .server_key = {k32, 32}, .iterations = 4096},
    };
    b.req.kafkaiq_scram_credentials = creds;
    b.req.kafkaiq_scram_credentials_n = 4;
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    kiq_scram_credential_t c;
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_256, "alice", &c), 0);
    assert_int_equal(c.iterations, 4096);
    assert_memory_equal(c.stored_key, k32, 32);
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_512, "alice", &c), 0);
    assert_int_equal(c.iterations, 8192);
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_512, "bad", &c), -1);
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_256, "odd", &c), -1);
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_256, "nobody", &c), -1);
    b.req.kafkaiq_scram_credentials_n = 0; /* alice's removed since */
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    assert_int_equal(kiq_metadata_cache_scram(mc, KIQ_SCRAM_SHA_256, "alice", &c), -1);
    builder_free(&b);
    kiq_metadata_cache_free(mc);
}

/* The ACL bindings and delegation tokens an update carries: a malformed
 * binding left out, the bindings published as a snapshot that a reader
 * holding the last one keeps whole after the next update replaced it. */
static void test_acls_and_tokens(void **state)
{
    (void)state;
    kiq_metadata_cache_t *mc = kiq_metadata_cache_new();
    kiq_acl_snapshot_t *none = kiq_metadata_cache_acls(mc);
    assert_int_equal(none->store.n, 0);
    kiq_acl_snapshot_release(none);
    builder_t b;
    builder_init(&b, 0);
    kiq_update_metadata_request_kafkaiq_acls_t acls[] = {
        {.resource_type = KIQ_RES_TOPIC, .resource_name = KIQ_STR("t"), .pattern_type = KIQ_PAT_LITERAL,
         .principal = KIQ_STR("User:alice"), .host = KIQ_STR("*"), .operation = KIQ_OP_READ,
         .permission_type = KIQ_PERM_ALLOW},
        /* no such operation: left out */
        {.resource_type = KIQ_RES_TOPIC, .resource_name = KIQ_STR("t"), .pattern_type = KIQ_PAT_LITERAL,
         .principal = KIQ_STR("User:bob"), .host = KIQ_STR("*"), .operation = 99, .permission_type = KIQ_PERM_ALLOW},
    };
    kiq_update_metadata_request_kafkaiq_delegation_tokens_t tokens[] = {
        {.token_id = KIQ_STR("tok1"), .owner = KIQ_STR("User:alice"), .expiry_timestamp_ms = 1234},
        {.token_id = {0}, .owner = KIQ_STR("User:nobody"), .expiry_timestamp_ms = 1},
    };
    b.req.kafkaiq_acls = acls;
    b.req.kafkaiq_acls_n = 2;
    b.req.kafkaiq_delegation_tokens = tokens;
    b.req.kafkaiq_delegation_tokens_n = 2;
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    kiq_acl_snapshot_t *first = kiq_metadata_cache_acls(mc);
    assert_int_equal(first->store.n, 1);
    assert_string_equal(first->store.acls[0].principal, "User:alice");
    char owner[64];
    int64_t expiry = 0;
    assert_int_equal(kiq_metadata_cache_token(mc, "tok1", owner, sizeof owner, &expiry), 0);
    assert_string_equal(owner, "User:alice");
    assert_int_equal(expiry, 1234);
    assert_int_equal(kiq_metadata_cache_token(mc, "tok2", owner, sizeof owner, &expiry), -1);
    b.req.kafkaiq_acls_n = 0; /* removed since */
    b.req.kafkaiq_delegation_tokens_n = 0;
    assert_int_equal(kiq_metadata_cache_update(mc, &b.req), 0);
    kiq_acl_snapshot_t *second = kiq_metadata_cache_acls(mc);
    assert_int_equal(second->store.n, 0);
    assert_int_equal(first->store.n, 1); /* still whole for its reader */
    assert_string_equal(first->store.acls[0].resource_name, "t");
    assert_int_equal(kiq_metadata_cache_token(mc, "tok1", owner, sizeof owner, &expiry), -1);
    kiq_acl_snapshot_release(first);
    kiq_acl_snapshot_release(second);
    builder_free(&b);
    kiq_metadata_cache_free(mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scram_credentials),
        cmocka_unit_test(test_acls_and_tokens),
        cmocka_unit_test(test_empty_cache),
        cmocka_unit_test(test_update_and_lookup),
        cmocka_unit_test(test_copies_into_arena),
        cmocka_unit_test(test_update_replaces_view),
        cmocka_unit_test(test_ungrouped_states_and_v0_brokers),
        cmocka_unit_test(test_long_replica_lists_are_cut),
        cmocka_unit_test(test_wait_version_and_brokers),
        cmocka_unit_test(test_wait_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
