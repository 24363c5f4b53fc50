/* Delegation tokens in the metadata image: DelegationTokenRecord adds (and
 * on renewal replaces) a token, RemoveDelegationTokenRecord deletes it, a
 * record without an id is refused, the image's records (a snapshot) carry
 * them; the HMAC is HMAC-SHA512 of the id keyed by the secret (computed
 * here with OpenSSL's one-shot EVP_MAC for comparison), a token is found
 * by it only under the same secret, and who may renew it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "controller/metadata_image.h"
#include "core/arena.h"

static void token_record(kiq_metadata_record_t *r, const char *id, const char *owner, int64_t expiry,
                         kiq_str_t *renewers, int nrenewers)
{
    assert_int_equal(kiq_metadata_record_init(r, KIQ_MR_DELEGATION_TOKEN), 0);
    kiq_delegation_token_record_t *t = &r->m.delegation_token;
    t->token_id = KIQ_STR(id);
    t->owner = KIQ_STR(owner);
    t->requester = KIQ_STR("User:admin");
    t->renewers = renewers;
    t->renewers_n = nrenewers;
    t->issue_timestamp = 1000;
    t->max_timestamp = 100000;
    t->expiration_timestamp = expiry;
}

static void test_image_keeps_tokens(void **state)
{
    (void)state;
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    kiq_metadata_record_t r;
    kiq_str_t renewers[] = {KIQ_STR("User:bob"), KIQ_STR("User:carol")};
    token_record(&r, "tok-b", "User:alice", 5000, renewers, 2);
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), 0);
    token_record(&r, "tok-a", "User:dave", 6000, NULL, 0);
    assert_int_equal(kiq_metadata_image_apply(img, 2, &r), 0);
    token_record(&r, "tok-b", "User:alice", 9000, renewers, 1); /* renewed */
    assert_int_equal(kiq_metadata_image_apply(img, 3, &r), 0);
    token_record(&r, "", "User:alice", 9000, NULL, 0);
    assert_int_equal(kiq_metadata_image_apply(img, 4, &r), -1);
    const kiq_dtoken_store_t *s = kiq_metadata_image_tokens(img);
    assert_int_equal(s->n, 2);
    assert_string_equal(s->tokens[0].id, "tok-a"); /* sorted by id */
    const kiq_dtoken_t *t = kiq_dtoken_store_get(s, "tok-b", 5);
    assert_non_null(t);
    assert_int_equal(t->expiry_ms, 9000);
    assert_int_equal(t->nrenewers, 1);
    assert_string_equal(t->owner, "User:alice");
    assert_true(kiq_dtoken_may_renew(t, "User:alice"));
    assert_true(kiq_dtoken_may_renew(t, "User:admin")); /* the requester */
    assert_true(kiq_dtoken_may_renew(t, "User:bob"));
    assert_false(kiq_dtoken_may_renew(t, "User:carol")); /* no longer a renewer */
    assert_null(kiq_dtoken_store_get(s, "tok-", 4));

    /* the HMAC, and the token found by it under its secret only */
    uint8_t h[KIQ_DTOKEN_HMAC_LEN], want[KIQ_DTOKEN_HMAC_LEN];
    size_t wl;
    kiq_dtoken_hmac("s3cret", "tok-b", h);
    assert_non_null(EVP_Q_mac(NULL, "HMAC", NULL, "SHA512", NULL, "s3cret", 6, (const unsigned char *)"tok-b", 5, want,
                              sizeof want, &wl));
    assert_int_equal(wl, 64);
    assert_memory_equal(h, want, 64);
    assert_ptr_equal(kiq_dtoken_store_by_hmac(s, "s3cret", h, sizeof h), t);
    assert_null(kiq_dtoken_store_by_hmac(s, "other", h, sizeof h));
    assert_null(kiq_dtoken_store_by_hmac(s, "s3cret", h, 32));

    /* the image as records, into a second image */
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    kiq_metadata_image_t *again = kiq_metadata_image_new();
    for (size_t i = 0; i < n; i++) assert_int_equal(kiq_metadata_image_apply(again, (int64_t)i, &rs[i]), 0);
    const kiq_dtoken_store_t *s2 = kiq_metadata_image_tokens(again);
    assert_int_equal(s2->n, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(s2->tokens[i].id, s->tokens[i].id);
        assert_string_equal(s2->tokens[i].owner, s->tokens[i].owner);
        assert_string_equal(s2->tokens[i].requester, s->tokens[i].requester);
        assert_int_equal(s2->tokens[i].nrenewers, s->tokens[i].nrenewers);
        assert_int_equal(s2->tokens[i].issue_ms, s->tokens[i].issue_ms);
        assert_int_equal(s2->tokens[i].max_ms, s->tokens[i].max_ms);
        assert_int_equal(s2->tokens[i].expiry_ms, s->tokens[i].expiry_ms);
    }
    assert_string_equal(s2->tokens[1].renewers[0], "User:bob");
    kiq_arena_reset(&a);

    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_REMOVE_DELEGATION_TOKEN), 0);
    r.m.remove_delegation_token.token_id = KIQ_STR("tok-a");
    assert_int_equal(kiq_metadata_image_apply(img, 5, &r), 0);
    assert_int_equal(kiq_metadata_image_apply(img, 6, &r), 0); /* removing what is gone changes nothing */
    assert_int_equal(s->n, 1);
    assert_null(kiq_dtoken_store_get(s, "tok-a", 5));
    kiq_metadata_image_free(img);
    kiq_metadata_image_free(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_keeps_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
