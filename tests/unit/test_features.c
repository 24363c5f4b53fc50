/* Feature flags (controller/features.h, KIP-584): FeatureLevelRecord's
 * bytes as Kafka frames them and their decoding, bounds-checked; the
 * controller's rules for an update (unknown feature, level out of range,
 * downgrade types, no metadata.version downgrade); the image keeping the
 * levels with their epoch, and giving them back first among a snapshot's
 * records so a rebuilt image has them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "controller/features.h"
#include "controller/metadata_image.h"
#include "controller/metadata_record.h"
#include "core/arena.h"
#include "core/error.h"
#include "proto/errors.h"

static void test_record_codec(void **state)
{
    (void)state;
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_FEATURE_LEVEL), 0);
    assert_string_equal(kiq_metadata_record_name(KIQ_MR_FEATURE_LEVEL), "FeatureLevelRecord");
    r.m.feature_level.name = KIQ_STR("metadata.version");
    r.m.feature_level.feature_level = 25;
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_metadata_record_encode(&w, &r), 0);
    /* frame 1, type 12, version 0, compact string, int16, no tags */
    static const uint8_t want[] = {1, 12, 0, 17, 'm', 'e', 't', 'a', 'd', 'a', 't', 'a', '.', 'v', 'e', 'r', 's', 'i',
                                   'o', 'n', 0, 25, 0};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t back;
    assert_int_equal(kiq_metadata_record_decode(w.buf, w.len, &a, &back), 0);
    assert_int_equal(back.type, KIQ_MR_FEATURE_LEVEL);
    assert_true(kiq_str_eq(back.m.feature_level.name, "metadata.version"));
    assert_int_equal(back.m.feature_level.feature_level, 25);
    /* every cut short is refused, never read past */
    for (size_t n = 3; n < w.len; n++) assert_int_equal(kiq_metadata_record_decode(w.buf, n, &a, &back), -1);
    /* a name longer than what is left */
    uint8_t bad[sizeof want];
    memcpy(bad, want, sizeof want);
    bad[3] = 100;
    assert_int_equal(kiq_metadata_record_decode(bad, sizeof bad, &a, &back), -1);
    kiq_arena_reset(&a);
    kiq_wr_free(&w);
}

static int check(const kiq_features_t *f, const char *name, int16_t level, int8_t type)
{
    kiq_error_clear();
    return kiq_features_check_update(f, 1, KIQ_STR(name), level, type);
}

static void test_update_rules(void **state)
{
    (void)state;
    kiq_features_t f;
    kiq_features_bootstrap(&f);
    assert_int_equal(f.level[KIQ_FEATURE_METADATA_VERSION], KIQ_METADATA_VERSION_LATEST);
    assert_int_equal(f.level[KIQ_FEATURE_GROUP_VERSION], 1);
    assert_int_equal(f.level[KIQ_FEATURE_TRANSACTION_VERSION], 2);
    /* share groups with the v2 share APIs, as Kafka 4.4 starts */
    assert_int_equal(f.level[KIQ_FEATURE_SHARE_VERSION], 2);
    assert_int_equal(check(&f, "share.version", 3, KIQ_FEATURE_UPGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    f.level[KIQ_FEATURE_GROUP_VERSION] = 0;
    /* within range */
    assert_int_equal(check(&f, "group.version", 1, KIQ_FEATURE_UPGRADE), 0);
    assert_int_equal(check(&f, "metadata.version", KIQ_METADATA_VERSION_LATEST, KIQ_FEATURE_UPGRADE), 0);
    /* unknown feature: refused at any level, 0 (removing it) too */
    assert_int_equal(check(&f, "no.such.feature", 1, KIQ_FEATURE_UPGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_non_null(strstr(kiq_error_get(), "Invalid update version 1 for feature no.such.feature"));
    assert_int_equal(check(&f, "no.such.feature", 0, KIQ_FEATURE_SAFE_DOWNGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_non_null(strstr(kiq_error_get(), "Feature no.such.feature not found."));
    /* levels KafkaIQ does not implement */
    assert_int_equal(check(&f, "eligible.leader.replicas.version", 1, KIQ_FEATURE_UPGRADE),
                     KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_non_null(strstr(kiq_error_get(), "does not support this feature"));
    assert_int_equal(check(&f, "transaction.version", 3, KIQ_FEATURE_UPGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_int_equal(check(&f, "transaction.version", 1, KIQ_FEATURE_SAFE_DOWNGRADE), 0);
    assert_int_equal(check(&f, "group.version", 2, KIQ_FEATURE_UPGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_non_null(strstr(kiq_error_get(), "only supports versions"));
    assert_int_equal(check(&f, "metadata.version", KIQ_METADATA_VERSION_LATEST + 1, KIQ_FEATURE_UPGRADE),
                     KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_int_equal(check(&f, "group.version", -1, KIQ_FEATURE_SAFE_DOWNGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    /* an unknown upgrade type */
    assert_int_equal(check(&f, "group.version", 1, 0), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_int_equal(check(&f, "group.version", 1, 4), KIQ_ERR_INVALID_UPDATE_VERSION);
    /* downgrades need a downgrade type */
    f.level[KIQ_FEATURE_GROUP_VERSION] = 1;
    assert_int_equal(check(&f, "group.version", 0, KIQ_FEATURE_UPGRADE), KIQ_ERR_INVALID_UPDATE_VERSION);
    assert_non_null(strstr(kiq_error_get(), "Can't downgrade"));
    assert_int_equal(check(&f, "group.version", 0, KIQ_FEATURE_SAFE_DOWNGRADE), 0);
    assert_int_equal(check(&f, "group.version", 0, KIQ_FEATURE_UNSAFE_DOWNGRADE), 0);
    /* metadata.version never goes down */
    for (int8_t t = KIQ_FEATURE_UPGRADE; t <= KIQ_FEATURE_UNSAFE_DOWNGRADE; t++) {
        assert_int_equal(check(&f, "metadata.version", 21, t), KIQ_ERR_INVALID_UPDATE_VERSION);
        assert_non_null(strstr(kiq_error_get(), t == KIQ_FEATURE_UPGRADE ? "Can't downgrade" : "metadata.version 21"));
    }
}

static void apply_level(kiq_metadata_image_t *img, int64_t at, const char *name, int16_t level)
{
    kiq_metadata_record_t r;
    kiq_metadata_record_init(&r, KIQ_MR_FEATURE_LEVEL);
    r.m.feature_level.name = KIQ_STR(name);
    r.m.feature_level.feature_level = level;
    assert_int_equal(kiq_metadata_image_apply(img, at, &r), 0);
}

static void test_image_and_snapshot(void **state)
{
    (void)state;
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    assert_int_equal(kiq_metadata_image_features(img)->epoch, -1);
    apply_level(img, 0, "metadata.version", 25);
    apply_level(img, 1, "group.version", 1);
    apply_level(img, 2, "some.future.version", 3); /* a newer writer's: skipped */
    apply_level(img, 3, "share.version", 1);
    apply_level(img, 4, "share.version", 0); /* level 0: out again */
    const kiq_features_t *f = kiq_metadata_image_features(img);
    assert_int_equal(f->level[KIQ_FEATURE_METADATA_VERSION], 25);
    assert_int_equal(f->level[KIQ_FEATURE_GROUP_VERSION], 1);
    assert_int_equal(f->level[KIQ_FEATURE_SHARE_VERSION], 0);
    assert_int_equal(f->epoch, 4);

    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rs[0].type, KIQ_MR_FEATURE_LEVEL);
    assert_true(kiq_str_eq(rs[0].m.feature_level.name, "metadata.version"));
    kiq_metadata_image_t *rebuilt = kiq_metadata_image_new();
    for (size_t i = 0; i < n; i++) assert_int_equal(kiq_metadata_image_apply(rebuilt, 9, &rs[i]), 0);
    assert_memory_equal(kiq_metadata_image_features(rebuilt)->level, f->level, sizeof f->level);
    assert_int_equal(kiq_metadata_image_features(rebuilt)->epoch, 9);
    kiq_metadata_image_free(rebuilt);
    kiq_arena_reset(&a);
    kiq_metadata_image_free(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_codec),
        cmocka_unit_test(test_update_rules),
        cmocka_unit_test(test_image_and_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
