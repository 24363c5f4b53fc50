/* SCRAM credentials in the metadata image: UserScramCredentialRecord sets
 * (and replaces) one per user and mechanism, RemoveUserScramCredentialRecord
 * deletes it, a malformed one is refused, and the image's records (a
 * snapshot) carry them, so an image rebuilt from them answers the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "controller/metadata_image.h"
#include "core/arena.h"

static void credential_record(kiq_metadata_record_t *r, const char *user, int8_t mech, int32_t iterations,
                              const kiq_scram_credential_t *c, size_t kl)
{
    assert_int_equal(kiq_metadata_record_init(r, KIQ_MR_USER_SCRAM_CREDENTIAL), 0);
    r->m.user_scram_credential.name = KIQ_STR(user);
    r->m.user_scram_credential.mechanism = mech;
    r->m.user_scram_credential.salt = (kiq_bytes_t){c->salt, (int32_t)c->salt_len};
    r->m.user_scram_credential.stored_key = (kiq_bytes_t){c->stored_key, (int32_t)kl};
    r->m.user_scram_credential.server_key = (kiq_bytes_t){c->server_key, (int32_t)kl};
    r->m.user_scram_credential.iterations = iterations;
}

static void test_image_keeps_credentials(void **state)
{
    (void)state;
    kiq_scram_credential_t c256, c512;
    assert_int_equal(kiq_scram_credential_make(KIQ_SCRAM_SHA_256, "pw", 2, (const uint8_t *)"salt", 4, 4096, &c256), 0);
    assert_int_equal(kiq_scram_credential_make(KIQ_SCRAM_SHA_512, "pw", 2, (const uint8_t *)"salt", 4, 8192, &c512), 0);
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    kiq_metadata_record_t r;
    credential_record(&r, "bob", KIQ_SCRAM_WIRE_SHA_256, 4096, &c256, 32);
    assert_int_equal(kiq_metadata_image_apply(img, 1, &r), 0);
    credential_record(&r, "alice", KIQ_SCRAM_WIRE_SHA_512, 8192, &c512, 64);
    assert_int_equal(kiq_metadata_image_apply(img, 2, &r), 0);
    credential_record(&r, "alice", KIQ_SCRAM_WIRE_SHA_256, 4096, &c256, 32);
    assert_int_equal(kiq_metadata_image_apply(img, 3, &r), 0);
    /* a key of the other digest's size, an unknown mechanism: refused */
    credential_record(&r, "carol", KIQ_SCRAM_WIRE_SHA_256, 4096, &c512, 64);
    assert_int_equal(kiq_metadata_image_apply(img, 4, &r), -1);
    credential_record(&r, "carol", 3, 4096, &c256, 32);
    assert_int_equal(kiq_metadata_image_apply(img, 4, &r), -1);
    const kiq_scram_store_t *s = kiq_metadata_image_scram(img);
    assert_int_equal(s->n, 3);
    const kiq_scram_entry_t *e = kiq_scram_store_get(s, "alice", 5, KIQ_SCRAM_WIRE_SHA_512);
    assert_non_null(e);
    assert_int_equal(e->cred.iterations, 8192);
    assert_memory_equal(e->cred.stored_key, c512.stored_key, 64);
    assert_null(kiq_scram_store_get(s, "carol", 5, KIQ_SCRAM_WIRE_SHA_256));
    assert_null(kiq_scram_store_get(s, "alic", 4, KIQ_SCRAM_WIRE_SHA_256));

    /* the image as records, into a second image */
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    kiq_metadata_image_t *again = kiq_metadata_image_new();
    for (size_t i = 0; i < n; i++) assert_int_equal(kiq_metadata_image_apply(again, (int64_t)i, &rs[i]), 0);
    const kiq_scram_store_t *s2 = kiq_metadata_image_scram(again);
    assert_int_equal(s2->n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(s2->entries[i].user, s->entries[i].user);
        assert_int_equal(s2->entries[i].mechanism, s->entries[i].mechanism);
        assert_memory_equal(&s2->entries[i].cred, &s->entries[i].cred, sizeof s->entries[i].cred);
    }
    kiq_arena_reset(&a);

    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_REMOVE_USER_SCRAM_CREDENTIAL), 0);
    r.m.remove_user_scram_credential.name = KIQ_STR("alice");
    r.m.remove_user_scram_credential.mechanism = KIQ_SCRAM_WIRE_SHA_256;
    assert_int_equal(kiq_metadata_image_apply(img, 5, &r), 0);
    assert_null(kiq_scram_store_get(s, "alice", 5, KIQ_SCRAM_WIRE_SHA_256));
    assert_non_null(kiq_scram_store_get(s, "alice", 5, KIQ_SCRAM_WIRE_SHA_512));
    assert_int_equal(s->n, 2);
    kiq_metadata_image_free(img);
    kiq_metadata_image_free(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_keeps_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
