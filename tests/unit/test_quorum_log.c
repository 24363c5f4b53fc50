/* The quorum's log on a real directory (controller/quorum_log.h): batches
 * of metadata records appended with their Raft epoch, read back as one
 * entry per batch, copied to a second log as a follower copies them,
 * replayed by offset range, cut back (epochs with them, across reopen);
 * the quorum-state file written and read in Kafka's JSON, and a broken
 * one refused with its reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/metadata_record.h"
#include "controller/quorum_log.h"
#include "core/error.h"
#include "support/log_fixture.h"

static const int32_t VOTERS[] = { 0, 1, 2 };

/* A batch of n TopicRecords named t<first>... */
static void topics_batch(kiq_wr_t *w, int first, int n)
{
    kiq_metadata_record_t r[8];
    char names[8][16];
    for (int i = 0; i < n; i++) {
        assert_int_equal(kiq_metadata_record_init(&r[i], KIQ_MR_TOPIC), 0);
        snprintf(names[i], sizeof names[i], "t%d", first + i);
        r[i].m.topic.name = (kiq_str_t){ names[i], (int32_t)strlen(names[i]) };
        r[i].m.topic.topic_id.b[0] = (uint8_t)(first + i + 1);
    }
    kiq_wr_init(w);
    assert_int_equal(kiq_quorum_log_batch(r, (size_t)n, w), 0);
}

static void append(kiq_quorum_log_t *l, int64_t at, int32_t epoch, int first, int n)
{
    kiq_wr_t w;
    topics_batch(&w, first, n);
    kiq_raft_entry_t e = { epoch, n, w.buf, w.len, NULL };
    if (kiq_quorum_log_append(l, at, &e, 1) != 0)
        fail_msg("append: %s", kiq_error_get());
    kiq_wr_free(&w);
}

typedef struct seen {
    int64_t offsets[16];
    char names[16][16];
    int n;
} seen_t;

static int collect(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    seen_t *s = ctx;
    assert_int_equal(r->type, KIQ_MR_TOPIC);
    s->offsets[s->n] = offset;
    snprintf(s->names[s->n++], 16, "%.*s", r->m.topic.name.len, r->m.topic.name.p);
    return 0;
}

static void test_entries_epochs_and_replay(void **state)
{
    char root[128];
    assert_int_equal(kiq_test_temp_dir(root, sizeof root, "quorum-log"), 0);
    kiq_quorum_log_t *l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    kiq_raft_config_t c = { 0 };
    kiq_quorum_log_fill(l, &c);
    assert_int_equal(c.log_end, 0);
    assert_int_equal(c.n_epoch_starts, 0);
    assert_int_equal(c.state.epoch, 0);
    assert_int_equal(c.state.voted_for, -1);

    append(l, 0, 1, 0, 2);
    append(l, 2, 3, 2, 1);
    append(l, 3, 3, 3, 2);
    assert_int_equal(kiq_quorum_log_end(l), 5);
    /* an append anywhere but the end is refused */
    kiq_wr_t w;
    topics_batch(&w, 9, 1);
    kiq_raft_entry_t bad = { 3, 1, w.buf, w.len, NULL };
    assert_int_equal(kiq_quorum_log_append(l, 2, &bad, 1), -1);
    /* and so is an entry whose count is not its batch's */
    bad.count = 2;
    assert_int_equal(kiq_quorum_log_append(l, 5, &bad, 1), -1);
    kiq_wr_free(&w);

    kiq_quorum_log_fill(l, &c);
    assert_int_equal(c.n_epoch_starts, 2);
    assert_true(c.epoch_starts[0].epoch == 1 && c.epoch_starts[0].end_offset == 0);
    assert_true(c.epoch_starts[1].epoch == 3 && c.epoch_starts[1].end_offset == 2);

    const kiq_raft_entry_t *e;
    int n;
    assert_int_equal(kiq_quorum_log_read(l, 0, 1 << 20, &e, &n), 0);
    assert_int_equal(n, 3);
    assert_true(e[0].epoch == 1 && e[0].count == 2 && e[1].epoch == 3 && e[1].count == 1 && e[2].count == 2);
    assert_int_equal(kiq_quorum_log_read(l, 2, 1 << 20, &e, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(kiq_quorum_log_read(l, 5, 1 << 20, &e, &n), 0);
    assert_int_equal(n, 0);

    /* a follower copies the leader's entries as they are */
    char root2[128];
    assert_int_equal(kiq_test_temp_dir(root2, sizeof root2, "quorum-log-follower"), 0);
    kiq_quorum_log_t *f = kiq_quorum_log_open(root2, VOTERS, 3);
    assert_non_null(f);
    assert_int_equal(kiq_quorum_log_read(l, 0, 1 << 20, &e, &n), 0);
    assert_int_equal(kiq_quorum_log_append(f, 0, e, n), 0);
    assert_int_equal(kiq_quorum_log_end(f), 5);
    kiq_quorum_log_fill(f, &c);
    assert_int_equal(c.n_epoch_starts, 2);

    seen_t s = { 0 };
    assert_int_equal(kiq_quorum_log_replay(f, 0, 5, collect, &s), 0);
    assert_int_equal(s.n, 5);
    for (int i = 0; i < 5; i++) {
        char want[16];
        snprintf(want, sizeof want, "t%d", i);
        assert_string_equal(s.names[i], want);
        assert_int_equal(s.offsets[i], i);
    }
    /* a range: only what is committed gets applied */
    memset(&s, 0, sizeof s);
    assert_int_equal(kiq_quorum_log_replay(f, 1, 3, collect, &s), 0);
    assert_int_equal(s.n, 2);
    assert_true(s.offsets[0] == 1 && s.offsets[1] == 2);

    /* cut back to 2: epoch 3 goes, and stays gone after a reopen */
    assert_int_equal(kiq_quorum_log_truncate(f, 2), 0);
    kiq_quorum_log_free(f);
    f = kiq_quorum_log_open(root2, VOTERS, 3);
    assert_non_null(f);
    kiq_quorum_log_fill(f, &c);
    assert_int_equal(c.log_end, 2);
    assert_int_equal(c.n_epoch_starts, 1);
    kiq_quorum_log_free(f);
    kiq_quorum_log_free(l);
    kiq_test_remove_tree(root);
    kiq_test_remove_tree(root2);
}

static void test_quorum_state_file(void **state)
{
    char root[128], path[256];
    assert_int_equal(kiq_test_temp_dir(root, sizeof root, "quorum-state"), 0);
    kiq_quorum_log_t *l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    kiq_raft_quorum_state_t st = { 7, 2, -1 };
    assert_int_equal(kiq_quorum_log_persist(l, &st), 0);
    kiq_quorum_log_free(l);

    snprintf(path, sizeof path, "%s/__cluster_metadata-0/quorum-state", root);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char text[512] = { 0 };
    assert_true(fread(text, 1, sizeof text - 1, fp) > 0);
    fclose(fp);
    /* Kafka's field names */
    assert_non_null(strstr(text, "\"leaderEpoch\":7"));
    assert_non_null(strstr(text, "\"votedId\":2"));
    assert_non_null(strstr(text, "\"leaderId\":-1"));
    assert_non_null(strstr(text, "\"currentVoters\":[{\"voterId\":0},{\"voterId\":1},{\"voterId\":2}]"));

    l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    kiq_raft_config_t c = { 0 };
    kiq_quorum_log_fill(l, &c);
    assert_true(c.state.epoch == 7 && c.state.voted_for == 2 && c.state.leader_id == -1);
    kiq_quorum_log_free(l);

    /* a broken file: refused, with the file named */
    fp = fopen(path, "w");
    fputs("{\"leaderEpoch\":", fp);
    fclose(fp);
    assert_null(kiq_quorum_log_open(root, VOTERS, 3));
    assert_non_null(strstr(kiq_error_get(), "quorum-state"));
    fp = fopen(path, "w");
    fputs("{\"leaderEpoch\":\"seven\",\"leaderId\":1,\"votedId\":1}", fp);
    fclose(fp);
    assert_null(kiq_quorum_log_open(root, VOTERS, 3));
    assert_non_null(strstr(kiq_error_get(), "leaderEpoch"));
    kiq_test_remove_tree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_epochs_and_replay),
        cmocka_unit_test(test_quorum_state_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
