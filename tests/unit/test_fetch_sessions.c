/* Incremental fetch sessions (server/fetch_sessions.h), as Kafka's
 * FetchSessionCache answers them: a full fetch at epoch 0 opens a session
 * holding its partitions; an incremental fetch at the session's next epoch
 * reads all of them, names only what changed, and its answer keeps only
 * partitions with news (records, an error, a moved high watermark or log
 * start); a wrong epoch, an unknown id, or a session named by the other
 * kind of topic key is refused; epoch -1 closes; forgotten partitions
 * leave; partitions that returned records move to the end; a full cache
 * evicts an idle session, or a consumer's for a follower, else declines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "server/fetch_sessions.h"

static const kiq_fetch_session_limits_t LIMITS = {.slots = 10, .eviction_ms = 1000, .now_ms = 0};

typedef struct ask {
    const char *topic;
    int32_t partition;
    int64_t offset;
} ask_t;

static kiq_uuid_t id_of(const char *topic)
{
    kiq_uuid_t u = {{0}};
    size_t len = strlen(topic);
    memcpy(u.b, topic, len < sizeof u.b ? len : sizeof u.b);
    return u;
}

/* A topic entry's name: the one it carries, or (by id) the one its test id spells. */
static kiq_str_t name_of(kiq_str_t topic, const kiq_uuid_t *id)
{
    if (topic.p) return topic;
    return (kiq_str_t){(const char *)id->b, (int32_t)strnlen((const char *)id->b, sizeof id->b)};
}

/* A fetch of the partitions asked (one topic entry each), forgetting those in forget. */
static kiq_fetch_request_t *request(kiq_arena_t *a, int32_t id, int32_t epoch, const ask_t *asks, int n,
                                    const ask_t *forget, int nforget)
{
    kiq_fetch_request_t *req = kiq_arena_calloc(a, 1, sizeof *req);
    kiq_fetch_request_init(req);
    req->session_id = id;
    req->session_epoch = epoch;
    req->topics = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *req->topics);
    for (int i = 0; i < n; i++) {
        kiq_fetch_request_topics_t *t = &req->topics[req->topics_n++];
        kiq_fetch_request_topics_init(t);
        t->topic = KIQ_STR(asks[i].topic);
        t->topic_id = id_of(asks[i].topic);
        t->partitions_n = 1;
        t->partitions = kiq_arena_calloc(a, 1, sizeof *t->partitions);
        kiq_fetch_request_topics_partitions_init(t->partitions);
        t->partitions->partition = asks[i].partition;
        t->partitions->fetch_offset = asks[i].offset;
        t->partitions->partition_max_bytes = 1000;
    }
    req->forgotten_topics_data = kiq_arena_calloc(a, (size_t)(nforget ? nforget : 1), sizeof *req->forgotten_topics_data);
    for (int i = 0; i < nforget; i++) {
        kiq_fetch_request_forgotten_topics_data_t *f = &req->forgotten_topics_data[req->forgotten_topics_data_n++];
        kiq_fetch_request_forgotten_topics_data_init(f);
        f->topic = KIQ_STR(forget[i].topic);
        f->topic_id = id_of(forget[i].topic);
        f->partitions_n = 1;
        f->partitions = kiq_arena_calloc(a, 1, sizeof *f->partitions);
        f->partitions[0] = forget[i].partition;
    }
    return req;
}

/* The answer a read of `read` would give: each partition at high
 * watermark hw, records for those listed in with_records. */
static kiq_fetch_response_t *answer(kiq_arena_t *a, const kiq_fetch_request_t *read, int64_t hw, const char *with_records)
{
    kiq_fetch_response_t *resp = kiq_arena_calloc(a, 1, sizeof *resp);
    kiq_fetch_response_init(resp);
    resp->responses_n = read->topics_n;
    resp->responses = kiq_arena_calloc(a, (size_t)(read->topics_n ? read->topics_n : 1), sizeof *resp->responses);
    for (int32_t i = 0; i < read->topics_n; i++) {
        kiq_fetch_response_responses_t *tr = &resp->responses[i];
        kiq_fetch_response_responses_init(tr);
        tr->topic = name_of(read->topics[i].topic, &read->topics[i].topic_id);
        tr->topic_id = read->topics[i].topic_id;
        tr->partitions_n = read->topics[i].partitions_n;
        tr->partitions = kiq_arena_calloc(a, (size_t)tr->partitions_n, sizeof *tr->partitions);
        for (int32_t j = 0; j < tr->partitions_n; j++) {
            kiq_fetch_response_responses_partitions_t *pr = &tr->partitions[j];
            kiq_fetch_response_responses_partitions_init(pr);
            pr->partition_index = read->topics[i].partitions[j].partition;
            pr->high_watermark = hw;
            pr->log_start_offset = 0;
            char name[64];
            snprintf(name, sizeof name, "%.*s-%d", tr->topic.len, tr->topic.p ? tr->topic.p : "", pr->partition_index);
            pr->records = strstr(with_records, name) ? (kiq_bytes_t){(const uint8_t *)"x", 1}
                                                     : (kiq_bytes_t){(const uint8_t *)"", 0};
        }
    }
    return resp;
}

/* "t-0 t-1" for the partitions an answer or a read holds, in order. */
static void names(const kiq_fetch_response_t *resp, char *out, size_t cap)
{
    out[0] = 0;
    for (int32_t i = 0; i < resp->responses_n; i++)
        for (int32_t j = 0; j < resp->responses[i].partitions_n; j++) {
            size_t len = strlen(out);
            snprintf(out + len, cap - len, "%s%.*s-%d", len ? " " : "", resp->responses[i].topic.len,
                     resp->responses[i].topic.p, resp->responses[i].partitions[j].partition_index);
        }
}

static void read_names(const kiq_fetch_request_t *read, char *out, size_t cap)
{
    out[0] = 0;
    for (int32_t i = 0; i < read->topics_n; i++)
        for (int32_t j = 0; j < read->topics[i].partitions_n; j++) {
            size_t len = strlen(out);
            kiq_str_t name = name_of(read->topics[i].topic, &read->topics[i].topic_id);
            snprintf(out + len, cap - len, "%s%.*s-%d@%lld", len ? " " : "", name.len, name.p,
                     read->topics[i].partitions[j].partition,
                     (long long)read->topics[i].partitions[j].fetch_offset);
        }
}

/* One fetch through the cache: its error; the answer's partitions in got. */
static int16_t fetch(kiq_fetch_sessions_t *s, int16_t version, bool follower, const kiq_fetch_session_limits_t *l,
                     const kiq_fetch_request_t *req, int64_t hw, const char *with_records, int32_t *session,
                     char *read, char *got)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    const kiq_fetch_request_t *rd;
    kiq_fetch_session_ticket_t t;
    int16_t err = kiq_fetch_sessions_begin(s, version, follower, l, req, &a, &rd, &t);
    if (!err) {
        if (read) read_names(rd, read, 256);
        kiq_fetch_response_t *resp = answer(&a, rd, hw, with_records);
        kiq_fetch_sessions_answer(s, &t, resp);
        if (session) *session = resp->session_id;
        if (got) names(resp, got, 256);
    }
    kiq_arena_reset(&a);
    return err;
}

static void incremental_fetches(void **state)
{
    (void)state;
    kiq_fetch_sessions_t *s = kiq_fetch_sessions_new();
    kiq_arena_t a;
    kiq_arena_init(&a);
    ask_t both[] = {{"t", 0, 0}, {"t", 1, 0}};
    int32_t id = 0, again = 0;
    char read[256], got[256];
    /* opened by a full fetch: the answer names every partition */
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, 0, 0, both, 2, NULL, 0), 5, "", &id, read, got));
    assert_true(id > 0);
    assert_string_equal("t-0 t-1", got);
    kiq_fetch_sessions_stats_t st;
    kiq_fetch_sessions_stats(s, &st);
    assert_int_equal(1, st.sessions);
    assert_int_equal(2, st.partitions);
    /* nothing changed, nothing asked: every partition read, none answered */
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, 1, NULL, 0, NULL, 0), 5, "", &again, read, got));
    assert_int_equal(id, again);
    assert_string_equal("t-0@0 t-1@0", read);
    assert_string_equal("", got);
    /* records for t-0 and a moved high watermark: both answered */
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, 2, NULL, 0, NULL, 0), 6, "t-0", NULL, read, got));
    assert_string_equal("t-0 t-1", got);
    /* t-0 returned records: it moved to the end; its new position, asked alone */
    ask_t moved[] = {{"t", 0, 4}};
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, 3, moved, 1, NULL, 0), 6, "", NULL, read, got));
    assert_string_equal("t-1@0 t-0@4", read);
    assert_string_equal("", got);
    /* a partition added; one forgotten */
    ask_t added[] = {{"u", 0, 7}};
    ask_t forget[] = {{"t", 1, 0}};
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, 4, added, 1, forget, 1), 6, "", NULL, read, got));
    assert_string_equal("t-0@4 u-0@7", read);
    assert_string_equal("u-0", got); /* never answered before */
    /* the wrong epoch, an unknown session, topics by name in a session by id */
    assert_int_equal(KIQ_ERR_INVALID_FETCH_SESSION_EPOCH,
                     fetch(s, 13, false, &LIMITS, request(&a, id, 4, NULL, 0, NULL, 0), 6, "", NULL, NULL, NULL));
    assert_int_equal(KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND,
                     fetch(s, 13, false, &LIMITS, request(&a, id + 1, 1, NULL, 0, NULL, 0), 6, "", NULL, NULL, NULL));
    assert_int_equal(KIQ_ERR_FETCH_SESSION_TOPIC_ID_ERROR,
                     fetch(s, 12, false, &LIMITS, request(&a, id, 5, NULL, 0, NULL, 0), 6, "", NULL, NULL, NULL));
    /* the refusals did not move the epoch: 5 is still next */
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, 5, NULL, 0, NULL, 0), 6, "", NULL, NULL, got));
    /* epoch -1 closes the session; its id is unknown after */
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, id, -1, both, 2, NULL, 0), 6, "", &again, NULL, got));
    assert_int_equal(0, again);
    assert_string_equal("t-0 t-1", got);
    assert_int_equal(KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND,
                     fetch(s, 13, false, &LIMITS, request(&a, id, 6, NULL, 0, NULL, 0), 6, "", NULL, NULL, NULL));
    kiq_fetch_sessions_stats(s, &st);
    assert_int_equal(0, st.sessions);
    assert_int_equal(0, st.partitions);
    kiq_arena_reset(&a);
    kiq_fetch_sessions_free(s);
}

/* Errors always go out; a partition in error goes out again once the
 * error clears, even at an unchanged high watermark. */
static void errors_always_answered(void **state)
{
    (void)state;
    kiq_fetch_sessions_t *s = kiq_fetch_sessions_new();
    kiq_arena_t a;
    kiq_arena_init(&a);
    ask_t one[] = {{"t", 0, 0}};
    int32_t id = 0;
    char got[256];
    assert_int_equal(0, fetch(s, 13, true, &LIMITS, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &id, NULL, got));
    const kiq_fetch_request_t *rd;
    kiq_fetch_session_ticket_t t;
    assert_int_equal(0, kiq_fetch_sessions_begin(s, 13, true, &LIMITS, request(&a, id, 1, NULL, 0, NULL, 0), &a, &rd, &t));
    kiq_fetch_response_t *resp = answer(&a, rd, 5, "");
    resp->responses[0].partitions[0].error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    kiq_fetch_sessions_answer(s, &t, resp);
    names(resp, got, sizeof got);
    assert_string_equal("t-0", got);
    assert_int_equal(0, fetch(s, 13, true, &LIMITS, request(&a, id, 2, NULL, 0, NULL, 0), 5, "", NULL, NULL, got));
    assert_string_equal("t-0", got);
    assert_int_equal(0, fetch(s, 13, true, &LIMITS, request(&a, id, 3, NULL, 0, NULL, 0), 5, "", NULL, NULL, got));
    assert_string_equal("", got);
    kiq_arena_reset(&a);
    kiq_fetch_sessions_free(s);
}

/* Topics by name (Fetch v7-12) work the same way. */
static void sessions_by_name(void **state)
{
    (void)state;
    kiq_fetch_sessions_t *s = kiq_fetch_sessions_new();
    kiq_arena_t a;
    kiq_arena_init(&a);
    ask_t two[] = {{"alpha", 0, 3}, {"beta", 2, 9}};
    int32_t id = 0;
    char read[256], got[256];
    assert_int_equal(0, fetch(s, 12, false, &LIMITS, request(&a, 0, 0, two, 2, NULL, 0), 5, "", &id, NULL, got));
    assert_true(id > 0);
    ask_t forget[] = {{"alpha", 0, 0}};
    assert_int_equal(0, fetch(s, 12, false, &LIMITS, request(&a, id, 1, NULL, 0, forget, 1), 5, "beta-2", NULL, read, got));
    assert_string_equal("beta-2@9", read);
    assert_string_equal("beta-2", got);
    /* forgetting the last partition closes the session */
    ask_t last[] = {{"beta", 2, 0}};
    assert_int_equal(0, fetch(s, 12, false, &LIMITS, request(&a, id, 2, NULL, 0, last, 1), 5, "", NULL, NULL, NULL));
    kiq_fetch_sessions_stats_t st;
    kiq_fetch_sessions_stats(s, &st);
    assert_int_equal(0, st.sessions);
    kiq_arena_reset(&a);
    kiq_fetch_sessions_free(s);
}

/* A full cache: no slots means no sessions; an idle session is evicted;
 * a follower's new session evicts a consumer's; otherwise declined. */
static void eviction(void **state)
{
    (void)state;
    kiq_fetch_sessions_t *s = kiq_fetch_sessions_new();
    kiq_arena_t a;
    kiq_arena_init(&a);
    ask_t one[] = {{"t", 0, 0}};
    int32_t id = -1, first = 0, second = 0;
    kiq_fetch_session_limits_t none = {.slots = 0, .eviction_ms = 1000};
    assert_int_equal(0, fetch(s, 13, true, &none, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &id, NULL, NULL));
    assert_int_equal(0, id);
    kiq_fetch_session_limits_t two = {.slots = 2, .eviction_ms = 1000, .now_ms = 0};
    assert_int_equal(0, fetch(s, 13, false, &two, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &first, NULL, NULL));
    two.now_ms = 10;
    assert_int_equal(0, fetch(s, 13, true, &two, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &second, NULL, NULL));
    assert_true(first > 0 && second > 0 && first != second);
    /* full, nothing idle long enough, a consumer: declined */
    two.now_ms = 500;
    assert_int_equal(0, fetch(s, 13, false, &two, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &id, NULL, NULL));
    assert_int_equal(0, id);
    /* a follower: the consumer's session goes */
    int32_t third = 0;
    assert_int_equal(0, fetch(s, 13, true, &two, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &third, NULL, NULL));
    assert_true(third > 0);
    assert_int_equal(KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND,
                     fetch(s, 13, false, &two, request(&a, first, 1, NULL, 0, NULL, 0), 5, "", NULL, NULL, NULL));
    /* later, the least recently used is idle long enough for anyone */
    two.now_ms = 1200;
    int32_t fourth = 0;
    assert_int_equal(0, fetch(s, 13, false, &two, request(&a, 0, 0, one, 1, NULL, 0), 5, "", &fourth, NULL, NULL));
    assert_true(fourth > 0);
    assert_int_equal(KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND,
                     fetch(s, 13, true, &two, request(&a, second, 1, NULL, 0, NULL, 0), 5, "", NULL, NULL, NULL));
    kiq_fetch_sessions_stats_t st;
    kiq_fetch_sessions_stats(s, &st);
    assert_int_equal(2, st.sessions);
    assert_int_equal(2, (int)st.evictions);
    kiq_arena_reset(&a);
    kiq_fetch_sessions_free(s);
}

/* Many partitions: each found by its index, none lost as they move. */
static void many_partitions(void **state)
{
    (void)state;
    kiq_fetch_sessions_t *s = kiq_fetch_sessions_new();
    kiq_arena_t a;
    kiq_arena_init(&a);
    enum { N = 300 };
    ask_t *asks = calloc(N, sizeof *asks);
    for (int i = 0; i < N; i++) asks[i] = (ask_t){i % 2 ? "odd" : "even", i, 0};
    int32_t id = 0;
    assert_int_equal(0, fetch(s, 13, false, &LIMITS, request(&a, 0, 0, asks, N, NULL, 0), 5, "", &id, NULL, NULL));
    /* every partition asked anew: each updated in place */
    for (int i = 0; i < N; i++) asks[i].offset = i + 1;
    const kiq_fetch_request_t *rd;
    kiq_fetch_session_ticket_t t;
    assert_int_equal(0, kiq_fetch_sessions_begin(s, 13, false, &LIMITS, request(&a, id, 1, asks, N, NULL, 0), &a, &rd, &t));
    int seen = 0;
    for (int32_t i = 0; i < rd->topics_n; i++)
        for (int32_t j = 0; j < rd->topics[i].partitions_n; j++) {
            assert_int_equal(rd->topics[i].partitions[j].partition + 1, rd->topics[i].partitions[j].fetch_offset);
            seen++;
        }
    assert_int_equal(N, seen);
    kiq_fetch_sessions_stats_t st;
    kiq_fetch_sessions_stats(s, &st);
    assert_int_equal(N, (int)st.partitions);
    free(asks);
    kiq_arena_reset(&a);
    kiq_fetch_sessions_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(incremental_fetches), cmocka_unit_test(errors_always_answered),
        cmocka_unit_test(sessions_by_name),    cmocka_unit_test(eviction),
        cmocka_unit_test(many_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
