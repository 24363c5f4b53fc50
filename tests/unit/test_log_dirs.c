/* Several log directories (JBOD log.dirs): the config check, placement of
 * new partitions on the directory with the fewest, per-directory
 * checkpoints, loading from every directory, refusal of a partition found
 * twice and of directories from different clusters, and a disk fault that
 * takes only its own directory offline. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/error.h"
#include "include/kafkaiq.h"
#include "log/log_dir.h"
#include "record/batch.h"
#include "record/compression.h"
#include "log/topics.h"
#include "support/log_fixture.h"

typedef struct fixture {
    kiq_test_log_dir_t *ld; /* ld->root holds the two log dirs */
    char dir[2][128];       /* ld->root/d1 and ld->root/d2 */
    kiq_log_dir_t *health[2];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !(f->ld = kiq_test_log_dir_new("logdirs", NULL))) {
        free(f);
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(f->dir[i], sizeof f->dir[i], "%s/d%d", f->ld->root, i + 1);
        mkdir(f->dir[i], 0755);
        f->health[i] = kiq_log_dir_new(f->dir[i]);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_test_log_dir_free(f->ld);
    for (int i = 0; i < 2; i++) kiq_log_dir_free(f->health[i]);
    free(f);
    return 0;
}

static kiq_topics_t *open_both(fixture_t *f, bool clean)
{
    kiq_topics_dir_spec_t specs[2];
    for (int i = 0; i < 2; i++)
        specs[i] = (kiq_topics_dir_spec_t){.path = f->dir[i], .clean_shutdown = clean, .health = f->health[i]};
    return kiq_topics_open_dirs(specs, 2, &f->ld->cfg);
}

static bool exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* The "topic partition" lines of a checkpoint, joined by ';'. */
static void checkpoint_lines(const char *dir, const char *file, char *out, size_t n)
{
    char path[512], name[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int version, count, partition;
    long long offset;
    assert_int_equal(fscanf(fp, "%d %d", &version, &count), 2);
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        assert_int_equal(fscanf(fp, "%255s %d %lld", name, &partition, &offset), 3);
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s %d;", name, partition);
    }
    fclose(fp);
}

static int append_one(kiq_partition_log_t *l)
{
    char value[64];
    memset(value, 'v', sizeof value);
    kiq_batch_builder_t b;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, 1000);
    assert_int_equal(kiq_batch_builder_add(&b, "k", 1, value, sizeof value, NULL, 0, 1000), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
    kiq_batch_builder_free(&b);
    int rc = kiq_partition_log_append(l, w.buf, w.len, 0, NULL, NULL);
    kiq_wr_free(&w);
    return rc;
}

static void test_config_accepts_a_list(void **state)
{
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "log.dirs", "/a,/b"), 0);
    assert_int_equal(kiq_config_validate(c), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", "/a, /b ,/c"), 0);
    assert_int_equal(kiq_config_validate(c), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", "/a,,/b"), 0);
    assert_int_equal(kiq_config_validate(c), -1);
    assert_non_null(strstr(kiq_error_get(), "empty entry"));
    assert_int_equal(kiq_config_set(c, "log.dirs", "/a,/b, /a"), 0);
    assert_int_equal(kiq_config_validate(c), -1);
    assert_non_null(strstr(kiq_error_get(), "'/a' is listed twice"));
    kiq_config_free(c);
}

static void test_spread_checkpoints_and_reload(void **state)
{
    fixture_t *f = *state;
    kiq_topics_t *t = open_both(f, false);
    assert_non_null(t);
    kiq_topic_configs_t cfg = {0};
    assert_int_equal(kiq_topic_configs_set(&cfg, "retention.ms", 12, "60000", 5), 0);
    assert_int_equal(kiq_topics_create_with_configs(t, KIQ_STR("orders"), 4, 1, &cfg, false), 0);
    kiq_topic_configs_clear(&cfg);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("orders"));
    int in[2] = {0, 0};
    for (int p = 0; p < 4; p++) {
        int d = topic->partitions[p]->dir_index;
        assert_true(d == 0 || d == 1);
        assert_string_equal(topic->partitions[p]->dir, f->dir[d]);
        char name[32];
        snprintf(name, sizeof name, "orders-%d", p);
        assert_true(exists(f->dir[d], name));
        assert_false(exists(f->dir[1 - d], name));
        in[d]++;
    }
    assert_int_equal(in[0], 2);
    assert_int_equal(in[1], 2);
    /* the next one goes where there are fewest: both have 2, so the first */
    assert_int_equal(kiq_topics_create(t, KIQ_STR("one"), 1, 1, false), 0);
    kiq_topic_t *one = kiq_topics_get(t, KIQ_STR("one"));
    assert_int_equal(one->partitions[0]->dir_index, 0);
    kiq_topic_unref(one);
    assert_int_equal(append_one(topic->partitions[0]->log), 0);
    int d0 = topic->partitions[0]->dir_index;
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    /* each directory's checkpoints list only its own partitions */
    char lines[2][256];
    for (int i = 0; i < 2; i++) {
        checkpoint_lines(f->dir[i], "recovery-point-offset-checkpoint", lines[i], sizeof lines[i]);
        char other[256];
        checkpoint_lines(f->dir[i], "log-start-offset-checkpoint", other, sizeof other);
        assert_string_equal(lines[i], other);
    }
    for (int p = 0; p < 4; p++) {
        char entry[32];
        snprintf(entry, sizeof entry, "orders %d;", p);
        assert_true((strstr(lines[0], entry) != NULL) != (strstr(lines[1], entry) != NULL));
    }
    assert_non_null(strstr(lines[0], "one 0;"));
    assert_null(strstr(lines[1], "one 0;"));
    /* topic configs stay in the first directory */
    assert_true(exists(f->dir[0], ".topic-configs"));
    assert_false(exists(f->dir[1], ".topic-configs"));

    t = open_both(f, false);
    assert_non_null(t);
    topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    assert_int_equal(topic->npartitions, 4);
    in[0] = in[1] = 0;
    for (int p = 0; p < 4; p++) in[topic->partitions[p]->dir_index]++;
    assert_int_equal(in[0], 2);
    assert_int_equal(in[1], 2);
    assert_int_equal(topic->partitions[0]->dir_index, d0);
    assert_int_equal(kiq_partition_log_end_offset(topic->partitions[0]->log), 1);
    assert_int_equal(kiq_topic_configs_int(&topic->configs, KIQ_TCFG_RETENTION_MS, -1), 60000);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

static void test_partition_in_two_dirs_refused(void **state)
{
    fixture_t *f = *state;
    kiq_topics_t *t = open_both(f, false);
    assert_non_null(t);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("dup"), 2, 1, false), 0);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("dup"));
    int d = topic->partitions[0]->dir_index;
    kiq_topic_unref(topic);
    kiq_topics_free(t);
    char copy[256];
    snprintf(copy, sizeof copy, "%s/dup-0", f->dir[1 - d]);
    assert_int_equal(mkdir(copy, 0755), 0);
    assert_null(open_both(f, false));
    assert_non_null(strstr(kiq_error_get(), "partition dup-0 is in two log directories"));
}

static void test_fault_takes_only_its_dir_offline(void **state)
{
    fixture_t *f = *state;
    kiq_topics_t *t = open_both(f, false);
    assert_non_null(t);
    assert_int_equal(kiq_topics_create(t, KIQ_STR("io"), 2, 1, false), 0);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("io"));
    kiq_partition_t *p1 = topic->partitions[0], *p2 = topic->partitions[1];
    assert_int_equal(p1->dir_index, 0);
    assert_int_equal(p2->dir_index, 1);
    assert_int_equal(kiq_log_dir_inject_fault(f->health[1], EIO, 0, false), 0);
    assert_int_not_equal(append_one(p2->log), 0);
    assert_true(kiq_log_dir_offline(f->health[1]));
    assert_false(kiq_log_dir_offline(f->health[0]));
    assert_true(kiq_partition_log_offline(p2->log));
    assert_false(kiq_partition_log_offline(p1->log));
    assert_int_equal(append_one(p1->log), 0);
    assert_int_equal(kiq_partition_log_end_offset(p1->log), 1);
    /* new partitions avoid the offline directory */
    assert_int_equal(kiq_topics_create(t, KIQ_STR("later"), 2, 1, false), 0);
    kiq_topic_t *later = kiq_topics_get(t, KIQ_STR("later"));
    assert_int_equal(later->partitions[0]->dir_index, 0);
    assert_int_equal(later->partitions[1]->dir_index, 0);
    kiq_topic_unref(later);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

static kiq_broker_t *broker_on(const char *dirs)
{
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "listeners", "PLAINTEXT://127.0.0.1:0"), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", dirs), 0);
    kiq_broker_t *b = kiq_broker_new(c);
    kiq_config_free(c);
    return b;
}

static void test_broker_meta_in_every_dir(void **state)
{
    fixture_t *f = *state;
    char both[300], meta[2][4096];
    snprintf(both, sizeof both, "%s,%s", f->dir[0], f->dir[1]);
    kiq_broker_t *b = broker_on(both);
    assert_non_null(b);
    kiq_broker_free(b);
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/meta.properties", f->dir[i]);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        size_t n = fread(meta[i], 1, sizeof meta[i] - 1, fp);
        meta[i][n] = '\0';
        fclose(fp);
        assert_true(exists(f->dir[i], ".lock"));
    }
    /* each directory has its own directory.id (KIP-858), the rest is shared */
    char *id[2];
    for (int i = 0; i < 2; i++) {
        id[i] = strstr(meta[i], "directory.id=");
        assert_non_null(id[i]);
        assert_int_equal(strlen(id[i]), strlen("directory.id=") + 22 + 1);
    }
    assert_string_not_equal(id[0], id[1]);
    char kept[2][64];
    for (int i = 0; i < 2; i++) {
        snprintf(kept[i], sizeof kept[i], "%s", id[i]);
        *id[i] = '\0';
    }
    assert_string_equal(meta[0], meta[1]);
    /* and keeps it across starts */
    b = broker_on(both);
    assert_non_null(b);
    kiq_broker_free(b);
    for (int i = 0; i < 2; i++) {
        char path[256], again[4096];
        snprintf(path, sizeof path, "%s/meta.properties", f->dir[i]);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        size_t n = fread(again, 1, sizeof again - 1, fp);
        again[n] = '\0';
        fclose(fp);
        assert_non_null(strstr(again, kept[i]));
    }
    /* a fresh third directory joins the same cluster */
    char three[512], d3[200];
    snprintf(d3, sizeof d3, "%s/d3", f->ld->root);
    snprintf(three, sizeof three, "%s,%s", both, d3);
    b = broker_on(three);
    assert_non_null(b);
    kiq_broker_free(b);
}

static void test_cluster_id_mismatch_refused(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < 2; i++) {
        kiq_broker_t *b = broker_on(f->dir[i]); /* each gets its own new cluster */
        assert_non_null(b);
        kiq_broker_free(b);
    }
    char both[300];
    snprintf(both, sizeof both, "%s,%s", f->dir[0], f->dir[1]);
    assert_null(broker_on(both));
    assert_non_null(strstr(kiq_error_get(), "belong to different clusters"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_accepts_a_list),
        cmocka_unit_test_setup_teardown(test_spread_checkpoints_and_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_in_two_dirs_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_takes_only_its_dir_offline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_meta_in_every_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_id_mismatch_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
