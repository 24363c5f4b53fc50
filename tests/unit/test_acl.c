/* ACL bindings as Kafka's StandardAuthorizer reads them: LITERAL, PREFIXED
 * and the wildcard name, the User:* principal, hosts, DENY before ALLOW,
 * implied DESCRIBE and DESCRIBE_CONFIGS (ALLOW only), ALL,
 * allow.everyone.if.no.acl.found, filters of Describe/DeleteAcls, the
 * store, authorizeByResourceType, operation bitfields, super.users
 * through the authorizer, and the bindings as AccessControlEntryRecords
 * in the metadata image and its snapshot records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "config/config.h"
#include "controller/metadata_image.h"
#include "core/arena.h"
#include "security/acl.h"
#include "security/acl_snapshot.h"
#include "security/authorizer.h"

static kiq_acl_t acl(int8_t type, const char *name, int8_t pattern, const char *principal, const char *host, int8_t op,
                     int8_t perm)
{
    static uint8_t next = 1;
    kiq_acl_t a = {{{0}}, type, pattern, op, perm, (char *)name, (char *)principal, (char *)host};
    a.id.b[0] = next++;
    return a;
}

static void add(kiq_acl_store_t *s, kiq_acl_t a) { assert_int_equal(kiq_acl_store_add(s, &a), 0); }

static bool may(const kiq_acl_store_t *s, const char *principal, const char *host, int8_t op, int8_t type,
                const char *name, bool allow_if_none)
{
    kiq_acl_request_t q = {principal, host, op, type, KIQ_STR(name)};
    return kiq_acl_authorize(s, &q, allow_if_none, NULL) == KIQ_ACL_ALLOWED;
}

static void test_literal_prefixed_wildcard(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    add(&s, acl(KIQ_RES_TOPIC, "orders", KIQ_PAT_LITERAL, "User:alice", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    add(&s, acl(KIQ_RES_TOPIC, "logs-", KIQ_PAT_PREFIXED, "User:alice", "*", KIQ_OP_WRITE, KIQ_PERM_ALLOW));
    add(&s, acl(KIQ_RES_GROUP, "*", KIQ_PAT_LITERAL, "User:*", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_true(may(&s, "User:alice", "10.0.0.1", KIQ_OP_READ, KIQ_RES_TOPIC, "orders", false));
    /* a literal name is the whole name, not a prefix */
    assert_false(may(&s, "User:alice", "10.0.0.1", KIQ_OP_READ, KIQ_RES_TOPIC, "orders2", false));
    assert_false(may(&s, "User:bob", "10.0.0.1", KIQ_OP_READ, KIQ_RES_TOPIC, "orders", false));
    assert_false(may(&s, "User:alice", "10.0.0.1", KIQ_OP_WRITE, KIQ_RES_TOPIC, "orders", false));
    assert_true(may(&s, "User:alice", "10.0.0.1", KIQ_OP_WRITE, KIQ_RES_TOPIC, "logs-app", false));
    assert_true(may(&s, "User:alice", "10.0.0.1", KIQ_OP_WRITE, KIQ_RES_TOPIC, "logs-", false));
    assert_false(may(&s, "User:alice", "10.0.0.1", KIQ_OP_WRITE, KIQ_RES_TOPIC, "log", false));
    /* the wildcard name and the wildcard principal */
    assert_true(may(&s, "User:anyone", "10.0.0.1", KIQ_OP_READ, KIQ_RES_GROUP, "g1", false));
    /* the resource type must match */
    assert_false(may(&s, "User:alice", "10.0.0.1", KIQ_OP_READ, KIQ_RES_TRANSACTIONAL_ID, "orders", false));
    kiq_acl_store_clear(&s);
}

static void test_deny_wins_and_hosts(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    add(&s, acl(KIQ_RES_TOPIC, "*", KIQ_PAT_LITERAL, "User:alice", "*", KIQ_OP_ALL, KIQ_PERM_ALLOW));
    add(&s, acl(KIQ_RES_TOPIC, "secret", KIQ_PAT_PREFIXED, "User:alice", "*", KIQ_OP_READ, KIQ_PERM_DENY));
    add(&s, acl(KIQ_RES_TOPIC, "lan", KIQ_PAT_LITERAL, "User:bob", "192.168.1.5", KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_true(may(&s, "User:alice", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "public", false));
    assert_false(may(&s, "User:alice", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "secret-plans", false));
    /* a DENY of READ does not deny what READ would imply */
    assert_true(may(&s, "User:alice", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "secret-plans", false));
    assert_true(may(&s, "User:alice", "h", KIQ_OP_WRITE, KIQ_RES_TOPIC, "secret-plans", false));
    assert_true(may(&s, "User:bob", "192.168.1.5", KIQ_OP_READ, KIQ_RES_TOPIC, "lan", false));
    assert_false(may(&s, "User:bob", "192.168.1.6", KIQ_OP_READ, KIQ_RES_TOPIC, "lan", false));
    /* DENY on ALL denies everything, ALLOW included */
    add(&s, acl(KIQ_RES_TOPIC, "public", KIQ_PAT_LITERAL, "User:*", "*", KIQ_OP_ALL, KIQ_PERM_DENY));
    assert_false(may(&s, "User:alice", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "public", false));
    kiq_acl_store_clear(&s);
}

static void test_implied_operations(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    const int8_t implying[] = {KIQ_OP_READ, KIQ_OP_WRITE, KIQ_OP_DELETE, KIQ_OP_ALTER};
    for (size_t i = 0; i < sizeof implying; i++) {
        kiq_acl_store_t one = {0};
        add(&one, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:a", "*", implying[i], KIQ_PERM_ALLOW));
        assert_true(may(&one, "User:a", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "t", false));
        assert_false(may(&one, "User:a", "h", KIQ_OP_DESCRIBE_CONFIGS, KIQ_RES_TOPIC, "t", false));
        kiq_acl_store_clear(&one);
    }
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:a", "*", KIQ_OP_ALTER_CONFIGS, KIQ_PERM_ALLOW));
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:b", "*", KIQ_OP_CREATE, KIQ_PERM_ALLOW));
    assert_true(may(&s, "User:a", "h", KIQ_OP_DESCRIBE_CONFIGS, KIQ_RES_TOPIC, "t", false));
    assert_false(may(&s, "User:a", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "t", false));
    /* CREATE implies nothing */
    assert_false(may(&s, "User:b", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "t", false));
    kiq_acl_store_clear(&s);
}

static void test_no_acl_found(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    assert_false(may(&s, "User:a", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "t", false));
    assert_true(may(&s, "User:a", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "t", true));
    /* a binding naming the resource (for anyone) takes the default away */
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_PREFIXED, "User:other", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_false(may(&s, "User:a", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "t", true));
    assert_true(may(&s, "User:a", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "u", true));
    kiq_acl_store_clear(&s);
}

static void test_filters_and_store(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    kiq_acl_t lit = acl(KIQ_RES_TOPIC, "orders", KIQ_PAT_LITERAL, "User:alice", "*", KIQ_OP_READ, KIQ_PERM_ALLOW);
    kiq_acl_t pre = acl(KIQ_RES_TOPIC, "ord", KIQ_PAT_PREFIXED, "User:bob", "*", KIQ_OP_WRITE, KIQ_PERM_DENY);
    kiq_acl_t wild = acl(KIQ_RES_TOPIC, "*", KIQ_PAT_LITERAL, "User:carol", "*", KIQ_OP_READ, KIQ_PERM_ALLOW);
    add(&s, lit);
    add(&s, pre);
    add(&s, wild);
    kiq_acl_filter_t any = {KIQ_RES_ANY, KIQ_PAT_ANY, KIQ_OP_ANY, KIQ_PERM_ANY, KIQ_STR_NULL, KIQ_STR_NULL,
                            KIQ_STR_NULL};
    kiq_acl_filter_t match = any;
    match.pattern_type = KIQ_PAT_MATCH;
    match.resource_name = KIQ_STR("orders");
    int n_any = 0, n_match = 0;
    for (size_t i = 0; i < s.n; i++) {
        n_any += kiq_acl_filter_matches(&any, &s.acls[i]);
        n_match += kiq_acl_filter_matches(&match, &s.acls[i]);
    }
    assert_int_equal(n_any, 3);
    assert_int_equal(n_match, 3); /* literal, prefix and wildcard all apply to "orders" */
    kiq_acl_filter_t exact = any;
    exact.pattern_type = KIQ_PAT_PREFIXED;
    exact.resource_name = KIQ_STR("orders");
    assert_false(kiq_acl_filter_matches(&exact, &s.acls[1]));
    exact.resource_name = KIQ_STR("ord");
    assert_true(kiq_acl_filter_matches(&exact, &s.acls[1]));
    exact.permission = KIQ_PERM_ALLOW;
    assert_false(kiq_acl_filter_matches(&exact, &s.acls[1]));
    kiq_acl_filter_t bad = any;
    bad.operation = KIQ_OP_UNKNOWN;
    assert_non_null(kiq_acl_filter_invalid(&bad));
    assert_null(kiq_acl_filter_invalid(&any));
    /* creations: what a controller keeps */
    assert_null(kiq_acl_invalid(KIQ_RES_TOPIC, KIQ_STR("t"), KIQ_PAT_PREFIXED, KIQ_STR("User:a"), KIQ_STR("*"),
                                KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_non_null(kiq_acl_invalid(KIQ_RES_ANY, KIQ_STR("t"), KIQ_PAT_LITERAL, KIQ_STR("User:a"), KIQ_STR("*"),
                                    KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_non_null(kiq_acl_invalid(KIQ_RES_TOPIC, KIQ_STR("t"), KIQ_PAT_MATCH, KIQ_STR("User:a"), KIQ_STR("*"),
                                    KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_non_null(kiq_acl_invalid(KIQ_RES_TOPIC, KIQ_STR("t"), KIQ_PAT_LITERAL, KIQ_STR("alice"), KIQ_STR("*"),
                                    KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_non_null(kiq_acl_invalid(KIQ_RES_TOPIC, KIQ_STR("t"), KIQ_PAT_LITERAL, KIQ_STR("User:a"), KIQ_STR("*"),
                                    KIQ_OP_ANY, KIQ_PERM_ALLOW));
    assert_true(kiq_acl_same(&s.acls[0], KIQ_RES_TOPIC, KIQ_STR("orders"), KIQ_PAT_LITERAL, KIQ_STR("User:alice"),
                             KIQ_STR("*"), KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_int_equal(kiq_acl_store_remove(&s, &pre.id), 0);
    assert_int_equal(kiq_acl_store_remove(&s, &pre.id), 1);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.acls[1].principal, "User:carol");
    kiq_acl_store_clear(&s);
}

static void test_by_resource_type_and_operations(void **state)
{
    (void)state;
    kiq_acl_store_t s = {0};
    kiq_acl_request_t q = {"User:p", "h", KIQ_OP_WRITE, KIQ_RES_TOPIC, KIQ_STR("")};
    assert_false(kiq_acl_authorize_any(&s, &q, false));
    assert_true(kiq_acl_authorize_any(&s, &q, true));
    add(&s, acl(KIQ_RES_TOPIC, "out-", KIQ_PAT_PREFIXED, "User:p", "*", KIQ_OP_WRITE, KIQ_PERM_ALLOW));
    assert_true(kiq_acl_authorize_any(&s, &q, false));
    /* a DENY on a shorter prefix takes that ALLOW away */
    add(&s, acl(KIQ_RES_TOPIC, "out", KIQ_PAT_PREFIXED, "User:p", "*", KIQ_OP_WRITE, KIQ_PERM_DENY));
    assert_false(kiq_acl_authorize_any(&s, &q, false));
    kiq_acl_store_clear(&s);

    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:p", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:p", "*", KIQ_OP_ALTER_CONFIGS, KIQ_PERM_ALLOW));
    const int8_t ops[] = {KIQ_OP_READ, KIQ_OP_WRITE, KIQ_OP_DESCRIBE, KIQ_OP_DESCRIBE_CONFIGS, KIQ_OP_ALTER_CONFIGS};
    kiq_acl_request_t t = {"User:p", "h", KIQ_OP_ALL, KIQ_RES_TOPIC, KIQ_STR("t")};
    assert_int_equal(kiq_acl_operations(&s, &t, false, ops, sizeof ops),
                     (1 << KIQ_OP_READ) | (1 << KIQ_OP_DESCRIBE) | (1 << KIQ_OP_DESCRIBE_CONFIGS) |
                         (1 << KIQ_OP_ALTER_CONFIGS));
    kiq_acl_store_clear(&s);
}

static kiq_acl_snapshot_t *with_store(void *ctx) { return kiq_acl_published_get(ctx); }

static void test_authorizer(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    kiq_authorizer_t *a = NULL;
    kiq_acl_published_t pub;
    assert_int_equal(kiq_acl_published_init(&pub), 0);
    /* no class name: no authorizer */
    assert_int_equal(kiq_authorizer_new(c, with_store, &pub, &a), 0);
    assert_null(a);
    assert_int_equal(kiq_config_set(c, "authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"), 0);
    assert_int_equal(kiq_authorizer_new(c, with_store, &pub, &a), -1);
    assert_int_equal(kiq_config_set(c, "authorizer.class.name", KIQ_STANDARD_AUTHORIZER), 0);
    assert_int_equal(kiq_config_set(c, "super.users", "User:admin; User:CN=broker,O=x"), 0);
    assert_int_equal(kiq_authorizer_new(c, with_store, &pub, &a), 0);
    assert_non_null(a);
    assert_true(kiq_authorizer_is_super(a, "User:admin"));
    assert_true(kiq_authorizer_is_super(a, "User:CN=broker,O=x"));
    assert_false(kiq_authorizer_is_super(a, "User:alice"));
    kiq_acl_store_t s = {0};
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:*", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_int_equal(kiq_acl_published_set(&pub, &s), 0);
    kiq_acl_request_t q = {"User:admin", "h", KIQ_OP_CLUSTER_ACTION, KIQ_RES_CLUSTER, KIQ_STR(KIQ_ACL_CLUSTER_NAME)};
    const char *why = NULL;
    assert_int_equal(kiq_authorizer_authorize(a, &q, &why), KIQ_ACL_ALLOWED);
    q.principal = "User:alice";
    assert_int_equal(kiq_authorizer_authorize(a, &q, &why), KIQ_ACL_DENIED);
    kiq_acl_request_t r = {"User:bob", "h", KIQ_OP_READ, KIQ_RES_TOPIC, KIQ_STR("t")};
    assert_int_equal(kiq_authorizer_authorize(a, &r, NULL), KIQ_ACL_ALLOWED);
    r.operation = KIQ_OP_WRITE;
    assert_int_equal(kiq_authorizer_authorize(a, &r, NULL), KIQ_ACL_DENIED);
    /* a super user has every operation */
    r.principal = "User:admin";
    const int8_t ops[] = {KIQ_OP_READ, KIQ_OP_ALTER};
    assert_int_equal(kiq_authorizer_operations(a, &r, ops, 2), (1 << KIQ_OP_READ) | (1 << KIQ_OP_ALTER));
    kiq_authorizer_free(a);
    assert_int_equal(kiq_config_set(c, "super.users", "admin"), 0);
    assert_int_equal(kiq_authorizer_new(c, with_store, &pub, &a), -1);
    kiq_acl_store_clear(&s);
    kiq_acl_published_destroy(&pub);
    kiq_config_free(c);
}

/* A snapshot taken stays whole while newer ones are published; each is
 * freed by its last release (asan/valgrind catch a double free or leak). */
static void test_acl_snapshot(void **state)
{
    (void)state;
    kiq_acl_published_t pub;
    assert_int_equal(kiq_acl_published_init(&pub), 0);
    kiq_acl_snapshot_t *empty = kiq_acl_published_get(&pub);
    assert_int_equal(empty->store.n, 0);
    kiq_acl_store_t s = {0};
    add(&s, acl(KIQ_RES_TOPIC, "t", KIQ_PAT_LITERAL, "User:alice", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    assert_int_equal(kiq_acl_published_set(&pub, &s), 0);
    /* the publisher's store is copied: changing it later changes no snapshot */
    add(&s, acl(KIQ_RES_TOPIC, "u", KIQ_PAT_LITERAL, "User:bob", "*", KIQ_OP_READ, KIQ_PERM_ALLOW));
    kiq_acl_snapshot_t *one = kiq_acl_published_get(&pub);
    assert_int_equal(one->store.n, 1);
    assert_string_equal(one->store.acls[0].principal, "User:alice");
    assert_int_equal(empty->store.n, 0); /* the older one, still held, unchanged */
    assert_int_equal(kiq_acl_published_set(&pub, &s), 0);
    kiq_acl_snapshot_t *two = kiq_acl_published_get(&pub);
    assert_int_equal(two->store.n, 2);
    assert_ptr_not_equal(one, two);
    assert_int_equal(atomic_load(&one->refs), 1); /* only this reader holds it now */
    assert_int_equal(atomic_load(&two->refs), 2); /* the publisher's and this reader's */
    kiq_acl_request_t q = {"User:bob", "h", KIQ_OP_READ, KIQ_RES_TOPIC, KIQ_STR("u")};
    assert_int_equal(kiq_acl_authorize(&one->store, &q, false, NULL), KIQ_ACL_DENIED);
    assert_int_equal(kiq_acl_authorize(&two->store, &q, false, NULL), KIQ_ACL_ALLOWED);
    kiq_acl_snapshot_release(empty);
    kiq_acl_snapshot_release(one);
    kiq_acl_snapshot_release(two);
    kiq_acl_published_destroy(&pub);
    kiq_acl_store_clear(&s);
}

static kiq_metadata_record_t entry_record(uint8_t id, const char *name, int8_t pattern, const char *principal)
{
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_ACCESS_CONTROL_ENTRY), 0);
    kiq_access_control_entry_record_t *e = &r.m.access_control_entry;
    e->id.b[15] = id;
    e->resource_type = KIQ_RES_TOPIC;
    e->resource_name = KIQ_STR(name);
    e->pattern_type = pattern;
    e->principal = KIQ_STR(principal);
    e->host = KIQ_STR("*");
    e->operation = KIQ_OP_READ;
    e->permission_type = KIQ_PERM_ALLOW;
    return r;
}

static void test_image_records(void **state)
{
    (void)state;
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    kiq_metadata_record_t r = entry_record(1, "orders", KIQ_PAT_LITERAL, "User:alice");
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), 0);
    r = entry_record(2, "log-", KIQ_PAT_PREFIXED, "User:bob");
    assert_int_equal(kiq_metadata_image_apply(img, 2, &r), 0);
    /* a binding no controller would keep is refused like any bad record */
    r = entry_record(3, "x", KIQ_PAT_MATCH, "User:bob");
    assert_int_equal(kiq_metadata_image_apply(img, 3, &r), -1);
    r = entry_record(3, "x", KIQ_PAT_LITERAL, "bob");
    assert_int_equal(kiq_metadata_image_apply(img, 3, &r), -1);
    const kiq_acl_store_t *s = kiq_metadata_image_acls(img);
    assert_int_equal(s->n, 2);
    assert_true(may(s, "User:bob", "h", KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, "log-app", false));

    /* the image as records, into a second image */
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    kiq_metadata_image_t *again = kiq_metadata_image_new();
    int entries = 0;
    for (size_t i = 0; i < n; i++) {
        entries += rs[i].type == KIQ_MR_ACCESS_CONTROL_ENTRY;
        assert_int_equal(kiq_metadata_image_apply(again, (int64_t)i, &rs[i]), 0);
    }
    assert_int_equal(entries, 2);
    const kiq_acl_store_t *s2 = kiq_metadata_image_acls(again);
    assert_int_equal(s2->n, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_memory_equal(s2->acls[i].id.b, s->acls[i].id.b, 16);
        assert_string_equal(s2->acls[i].resource_name, s->acls[i].resource_name);
        assert_int_equal(s2->acls[i].pattern_type, s->acls[i].pattern_type);
    }
    kiq_arena_reset(&a);

    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY), 0);
    r.m.remove_access_control_entry.id.b[15] = 1;
    assert_int_equal(kiq_metadata_image_apply(img, 4, &r), 0);
    assert_int_equal(s->n, 1);
    assert_false(may(s, "User:alice", "h", KIQ_OP_READ, KIQ_RES_TOPIC, "orders", false));
    kiq_metadata_image_free(img);
    kiq_metadata_image_free(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_prefixed_wildcard),
        cmocka_unit_test(test_deny_wins_and_hosts),
        cmocka_unit_test(test_implied_operations),
        cmocka_unit_test(test_no_acl_found),
        cmocka_unit_test(test_filters_and_store),
        cmocka_unit_test(test_by_resource_type_and_operations),
        cmocka_unit_test(test_authorizer),
        cmocka_unit_test(test_acl_snapshot),
        cmocka_unit_test(test_image_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
