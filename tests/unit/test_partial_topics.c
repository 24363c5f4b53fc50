/* Partial topics (a cluster broker hosts only the partitions it
 * replicates): creating a topic with some partitions hosted, loading in
 * partial and standalone mode, hosting and unhosting one partition while
 * a reader holds the topic, the checkpoints naming only hosted partitions,
 * and the background passes over a topic with unhosted slots. */
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/uuid.h"
#include "proto/errors.h"
#include "log/cleaner_threads.h"
#include "log/log_flusher.h"
#include "log/log_retention.h"
#include "log/topics.h"
#include "support/log_fixture.h"

static kiq_topics_t *open_mode(kiq_test_log_dir_t *ld, bool partial)
{
    kiq_topics_dir_spec_t spec = {.path = ld->root, .clean_shutdown = true};
    return kiq_topics_open_dirs_ex(&spec, 1, &ld->cfg, partial);
}

static bool exists(const kiq_test_log_dir_t *ld, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", ld->root, name);
    return stat(path, &st) == 0;
}

/* The "topic partition offset" lines of a checkpoint, joined by ';'. */
static void checkpoint_lines(const kiq_test_log_dir_t *ld, const char *file, char *out, size_t n)
{
    char path[512], name[256];
    snprintf(path, sizeof path, "%s/%s", ld->root, file);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int version, count, partition;
    long long offset;
    assert_int_equal(fscanf(fp, "%d %d", &version, &count), 2);
    assert_int_equal(version, 0);
    out[0] = '\0';
    for (int i = 0; i < count; i++) {
        assert_int_equal(fscanf(fp, "%255s %d %lld", name, &partition, &offset), 3);
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s %d %lld;", name, partition, offset);
    }
    assert_int_equal(fscanf(fp, "%255s", name), EOF);
    fclose(fp);
}

static kiq_partition_log_t *log_of(kiq_topic_t *topic, int32_t p) { return atomic_load(&topic->partitions[p]->log); }

static void test_create_hosted_and_reload(void **state)
{
    kiq_test_log_dir_t *ld = *state;
    kiq_topics_t *t = open_mode(ld, true);
    assert_non_null(t);
    kiq_uuid_t id;
    assert_int_equal(kiq_uuid_random(&id), 0);
    const bool hosted[3] = {true, false, true};
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("orders"), &id, 3, 3, hosted, NULL), 0);
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("orders"), &id, 3, 3, hosted, NULL),
                     KIQ_ERR_TOPIC_ALREADY_EXISTS);
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("none"), &id, 0, 1, hosted, NULL), KIQ_ERR_INVALID_PARTITIONS);
    assert_true(exists(ld, "orders-0"));
    assert_false(exists(ld, "orders-1"));
    assert_true(exists(ld, "orders-2"));

    char path[512], line[128], b64[23];
    snprintf(path, sizeof path, "%s/orders-2/partition.metadata", ld->root);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof line, fp));
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    kiq_uuid_to_base64(&id, b64);
    assert_non_null(strstr(line, b64));

    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    assert_int_equal(topic->npartitions, 3);
    assert_int_equal(topic->replication_factor, 3);
    assert_memory_equal(topic->id.b, id.b, 16);
    assert_null(log_of(topic, 1));
    assert_int_equal(topic->partitions[1]->dir_index, -1);
    /* p0: two records, the high watermark kept at 1; p2: log start at 1 */
    assert_int_equal(kiq_test_append_batch(log_of(topic, 0), 1, 1000, 0, NULL, NULL), 0);
    assert_int_equal(kiq_test_append_batch(log_of(topic, 0), 1, 1001, 0, NULL, NULL), 0);
    kiq_partition_log_set_high_watermark(log_of(topic, 0), 1);
    assert_int_equal(kiq_test_append_batch(log_of(topic, 2), 1, 1000, 0, NULL, NULL), 0);
    assert_int_equal(kiq_test_append_batch(log_of(topic, 2), 1, 1001, 0, NULL, NULL), 0);
    kiq_partition_log_set_high_watermark(log_of(topic, 2), 2);
    assert_int_equal(kiq_partition_log_advance_start(log_of(topic, 2), 1), 0);
    assert_int_equal(kiq_partition_log_flush(log_of(topic, 2)), 0);

    char lines[512];
    assert_int_equal(kiq_topics_checkpoint_high_watermarks(t), 0);
    checkpoint_lines(ld, "replication-offset-checkpoint", lines, sizeof lines);
    assert_string_equal(lines, "orders 0 1;orders 2 2;");
    assert_int_equal(kiq_topics_checkpoint_log_start(t), 0);
    checkpoint_lines(ld, "log-start-offset-checkpoint", lines, sizeof lines);
    assert_string_equal(lines, "orders 0 0;orders 2 1;");
    assert_int_equal(kiq_topics_checkpoint_recovery_points(t), 0);
    checkpoint_lines(ld, "recovery-point-offset-checkpoint", lines, sizeof lines);
    assert_string_equal(lines, "orders 0 0;orders 2 2;");
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    /* partial: the missing partition stays unhosted, the rest read back */
    t = open_mode(ld, true);
    assert_non_null(t);
    topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    assert_int_equal(topic->npartitions, 3);
    assert_memory_equal(topic->id.b, id.b, 16);
    assert_null(log_of(topic, 1));
    assert_false(exists(ld, "orders-1"));
    assert_int_equal(kiq_partition_log_end_offset(log_of(topic, 0)), 2);
    assert_int_equal(kiq_partition_log_high_watermark(log_of(topic, 0)), 1);
    assert_int_equal(kiq_partition_log_start_offset(log_of(topic, 2)), 1);
    assert_int_equal(kiq_topics_get_by_id(t, &id), topic);
    kiq_topic_unref(topic);
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    /* standalone: today's behaviour, the missing partition is made */
    kiq_topics_dir_spec_t spec = {.path = ld->root, .clean_shutdown = true};
    t = kiq_topics_open_dirs(&spec, 1, &ld->cfg);
    assert_non_null(t);
    topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    assert_non_null(log_of(topic, 1));
    assert_true(exists(ld, "orders-1"));
    assert_memory_equal(topic->id.b, id.b, 16);
    kiq_topic_unref(topic);
    kiq_topics_free(t);

    /* the highest partition found sets the count: drop the last one */
    kiq_test_remove_tree(strcat(strcpy(path, ld->root), "/orders-2"));
    t = open_mode(ld, true);
    topic = kiq_topics_get(t, KIQ_STR("orders"));
    assert_non_null(topic);
    assert_int_equal(topic->npartitions, 2);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

static void test_host_and_unhost(void **state)
{
    kiq_test_log_dir_t *ld = *state;
    kiq_topics_t *t = open_mode(ld, true);
    assert_non_null(t);
    kiq_uuid_t id;
    assert_int_equal(kiq_uuid_random(&id), 0);
    const bool hosted[2] = {true, false};
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("events"), &id, 2, 1, hosted, NULL), 0);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("events"));
    assert_non_null(topic);

    assert_int_equal(kiq_topics_host_partition(t, topic, 2), KIQ_ERR_INVALID_PARTITIONS);
    assert_int_equal(kiq_topics_host_partition(t, topic, -1), KIQ_ERR_INVALID_PARTITIONS);
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 2, false), KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 1, true), 0); /* not hosted: nothing to do */

    assert_int_equal(kiq_topics_host_partition(t, topic, 1), 0);
    kiq_partition_log_t *first = log_of(topic, 1);
    assert_non_null(first);
    assert_true(exists(ld, "events-1/partition.metadata"));
    assert_int_equal(topic->partitions[1]->dir_index, 0);
    assert_int_equal(kiq_topics_host_partition(t, topic, 1), 0);
    assert_ptr_equal(log_of(topic, 1), first);
    assert_int_equal(kiq_test_append_batch(first, 3, 1000, 0, NULL, NULL), 0);

    /* a reader holding the topic loaded the log just before the unhost */
    kiq_topic_t *reader = kiq_topics_get(t, KIQ_STR("events"));
    kiq_partition_log_t *held = log_of(reader, 1);
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 1, false), 0);
    assert_null(log_of(topic, 1));
    assert_int_equal(topic->partitions[1]->dir_index, -1);
    assert_true(exists(ld, "events-1"));
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(held, 0, 1 << 20, INT64_MAX, &w) > 0);
    assert_int_equal(kiq_test_check_batches(w.buf, w.len, 0, NULL), 1);
    kiq_wr_free(&w);
    assert_true(kiq_partition_log_offline(held));
    assert_int_equal(kiq_test_append_batch(held, 1, 1000, 0, NULL, NULL), -1);
    assert_int_equal(kiq_partition_log_end_offset(held), 3);

    char lines[512];
    assert_int_equal(kiq_topics_checkpoint_recovery_points(t), 0);
    checkpoint_lines(ld, "recovery-point-offset-checkpoint", lines, sizeof lines);
    assert_string_equal(lines, "events 0 0;");

    /* hosted again: the kept log comes back as it was */
    assert_int_equal(kiq_topics_host_partition(t, topic, 1), 0);
    assert_ptr_equal(log_of(topic, 1), held);
    assert_false(kiq_partition_log_offline(held));
    assert_int_equal(kiq_partition_log_recovery_point(held), 3); /* flushed when unhosted */
    assert_int_equal(kiq_test_append_batch(held, 1, 1000, 0, NULL, NULL), 0);
    assert_int_equal(kiq_partition_log_end_offset(held), 4);

    /* deleted while the reader still holds it: files gone, reads go on */
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 1, true), 0);
    assert_false(exists(ld, "events-1"));
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(held, 0, 1 << 20, INT64_MAX, &w) > 0);
    assert_int_equal(kiq_test_check_batches(w.buf, w.len, 0, NULL), 2);
    kiq_wr_free(&w);

    /* hosted after a delete: a new, empty log */
    assert_int_equal(kiq_topics_host_partition(t, topic, 1), 0);
    assert_non_null(log_of(topic, 1));
    assert_int_equal(kiq_partition_log_end_offset(log_of(topic, 1)), 0);
    assert_true(exists(ld, "events-1/partition.metadata"));
    kiq_topic_unref(reader);

    /* kept, then deleted while unhosted: what was kept goes */
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 0, false), 0);
    assert_true(exists(ld, "events-0"));
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 0, true), 0);
    assert_false(exists(ld, "events-0"));

    /* unhosted without delete at shutdown: closed cleanly, loaded next time */
    assert_int_equal(kiq_test_append_batch(log_of(topic, 1), 2, 1000, 0, NULL, NULL), 0);
    assert_int_equal(kiq_topics_unhost_partition(t, topic, 1, false), 0);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
    t = open_mode(ld, true);
    assert_non_null(t);
    topic = kiq_topics_get(t, KIQ_STR("events"));
    assert_non_null(topic);
    assert_null(log_of(topic, 0));
    assert_non_null(log_of(topic, 1));
    assert_int_equal(kiq_partition_log_end_offset(log_of(topic, 1)), 2);

    /* a deleted topic hosts nothing */
    kiq_topic_t *keep = kiq_topics_get(t, KIQ_STR("events"));
    assert_int_equal(kiq_topics_delete(t, topic), 0);
    assert_int_equal(kiq_topics_host_partition(t, keep, 0), KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    kiq_topic_unref(keep);
    kiq_topic_unref(topic);
    assert_false(exists(ld, "events-1"));
    kiq_topics_free(t);
}

static int edit_compact(kiq_topic_configs_t *cfg, void *ctx)
{
    (void)ctx;
    return kiq_topic_configs_set(cfg, "cleanup.policy", 14, "compact,delete", 14);
}

static void test_passes_over_partial_topic(void **state)
{
    kiq_test_log_dir_t *ld = *state;
    kiq_topics_t *t = open_mode(ld, true);
    assert_non_null(t);
    kiq_uuid_t id;
    assert_int_equal(kiq_uuid_random(&id), 0);
    const bool hosted[4] = {false, true, false, true};
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("mixed"), &id, 4, 1, hosted, NULL), 0);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("mixed"));
    assert_non_null(topic);
    assert_int_equal(kiq_topics_update_configs(t, topic, edit_compact, NULL, false), 0);
    for (int p = 1; p < 4; p += 2)
        for (int i = 0; i < 3; i++)
            assert_int_equal(kiq_test_append_batch(log_of(topic, p), 2, 1000 + i, 0, NULL, NULL), 0);

    kiq_config_t *config = kiq_config_new();
    assert_non_null(config);
    kiq_log_retention_apply_configs(t, config);
    assert_true(kiq_log_retention_run(t, config, 2000) >= 0);
    assert_true(kiq_log_flusher_run(t, kiq_partition_log_now_ms()) >= 0);
    assert_true(kiq_log_cleaner_run(t, config, 2000, 0, 1) >= 0);
    assert_int_equal(kiq_partition_log_end_offset(log_of(topic, 1)), 6);
    assert_null(log_of(topic, 0));
    assert_null(log_of(topic, 2));

    /* a partition hosted later gets the topic's configs and the passes */
    assert_int_equal(kiq_topics_host_partition(t, topic, 2), 0);
    kiq_log_retention_apply_topic(topic, config);
    assert_true(kiq_log_retention_run(t, config, 2000) >= 0);
    assert_true(kiq_log_flusher_run(t, kiq_partition_log_now_ms()) >= 0);
    char lines[512];
    assert_int_equal(kiq_topics_checkpoint_log_start(t), 0);
    checkpoint_lines(ld, "log-start-offset-checkpoint", lines, sizeof lines);
    assert_string_equal(lines, "mixed 1 0;mixed 2 0;mixed 3 0;");
    kiq_config_free(config);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

/* Reads partition 1 of "churn" through fresh topic references until told
 * to stop, as an I/O thread would. */
typedef struct churn_reader {
    kiq_topics_t *t;
    atomic_bool stop;
    atomic_int rounds, hosted_reads;
} churn_reader_t;

static void *churn_read(void *arg)
{
    churn_reader_t *r = arg;
    while (!atomic_load(&r->stop)) {
        kiq_topic_t *topic = kiq_topics_get(r->t, KIQ_STR("churn"));
        kiq_partition_log_t *l = topic ? atomic_load(&topic->partitions[1]->log) : NULL;
        if (l) {
            kiq_wr_t w;
            kiq_wr_init(&w);
            if (kiq_partition_log_read(l, kiq_partition_log_start_offset(l), 1 << 16, INT64_MAX, &w) >= 0)
                atomic_fetch_add(&r->hosted_reads, 1);
            kiq_wr_free(&w);
            kiq_partition_log_end_offset(l);
        }
        kiq_topic_unref(topic);
        atomic_fetch_add(&r->rounds, 1);
    }
    return NULL;
}

/* Hosting and unhosting (with and without delete) while another thread
 * keeps reading the partition: no reader ever sees a freed log (run under
 * ASan/TSan to see it), and retired logs are freed along the way. */
static void test_churn_with_concurrent_reader(void **state)
{
    kiq_test_log_dir_t *ld = *state;
    kiq_topics_t *t = open_mode(ld, true);
    assert_non_null(t);
    kiq_uuid_t id;
    assert_int_equal(kiq_uuid_random(&id), 0);
    const bool hosted[2] = {true, true};
    assert_int_equal(kiq_topics_create_hosted(t, KIQ_STR("churn"), &id, 2, 1, hosted, NULL), 0);
    kiq_topic_t *topic = kiq_topics_get(t, KIQ_STR("churn"));
    assert_int_equal(kiq_test_append_batch(log_of(topic, 1), 2, 1000, 0, NULL, NULL), 0);
    churn_reader_t r = {.t = t};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, churn_read, &r), 0);
    while (atomic_load(&r.hosted_reads) == 0) sched_yield();
    for (int i = 0; i < 40; i++) {
        assert_int_equal(kiq_topics_unhost_partition(t, topic, 1, i % 2 == 1), 0);
        assert_null(log_of(topic, 1));
        assert_int_equal(kiq_topics_host_partition(t, topic, 1), 0);
        assert_non_null(log_of(topic, 1));
        int seen = atomic_load(&r.rounds);
        while (atomic_load(&r.rounds) < seen + 2) sched_yield(); /* let it read this incarnation */
    }
    atomic_store(&r.stop, true);
    pthread_join(th, NULL);
    assert_true(atomic_load(&r.hosted_reads) > 0);
    assert_int_equal(kiq_test_append_batch(log_of(topic, 1), 1, 1000, 0, NULL, NULL), 0);
    kiq_topic_unref(topic);
    kiq_topics_free(t);
}

static int setup(void **state)
{
    *state = kiq_test_log_dir_new("partial", NULL);
    return *state ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_hosted_and_reload, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_host_and_unhost, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_passes_over_partial_topic, setup, kiq_test_log_dir_teardown),
        cmocka_unit_test_setup_teardown(test_churn_with_concurrent_reader, setup, kiq_test_log_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
