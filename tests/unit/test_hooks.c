/* Interceptors without a broker: the registry, chunk checks at install, and
 * the request / produce / fetch entry points on hand-made requests. The
 * busted spec tests/lua/intercept_spec.lua drives them over sockets. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/error.h"
#include "lua/hooks.h"
#include "record/batch.h"
#include "record/compression.h"

#define SMALL_BUDGET 100000


/* As the engine asks, through the broker's interceptor table. */
static bool active(kiq_hooks_t *h, int point)
{
    kiq_interceptors_t in = {&kiq_hooks_ops, h, h->active};
    return kiq_interceptors_active(&in, (enum kiq_hook_point)point);
}

static int add(kiq_hooks_t *h, enum kiq_hook_point point, const char *src)
{
    kiq_hook_spec_t spec = {.point = point, .api_key = -1, .source = src, .source_len = strlen(src)};
    return kiq_hooks_add(h, &spec);
}

static kiq_request_t *fake_request(int16_t api_key, int16_t version, const char *client_id)
{
    kiq_request_t *r = kiq_request_new(NULL, 1, NULL, 0);
    assert_non_null(r);
    r->codec = kiq_api_codec(api_key);
    assert_non_null(r->codec);
    r->header.api_key = api_key;
    r->header.api_version = version;
    r->header.correlation_id = 7;
    r->header.client_id = client_id ? KIQ_STR(client_id) : KIQ_STR_NULL;
    snprintf(r->peer, sizeof r->peer, "127.0.0.1:9");
    return r;
}

/* A Metadata v9 request naming one topic, and its empty response. */
typedef struct metadata_call {
    kiq_request_t *r;
    kiq_metadata_request_t req;
    kiq_metadata_response_t resp;
    kiq_metadata_request_topics_t topic;
} metadata_call_t;

static void metadata_call(metadata_call_t *m, const char *client_id, const char *topic)
{
    m->r = fake_request(KIQ_API_METADATA, 9, client_id);
    kiq_metadata_request_init(&m->req);
    kiq_metadata_response_init(&m->resp);
    kiq_metadata_request_topics_init(&m->topic);
    m->topic.name = KIQ_STR(topic);
    m->req.topics = &m->topic;
    m->req.topics_n = 1;
}

static kiq_hook_action_t run_metadata(kiq_hooks_t *h, metadata_call_t *m)
{
    kiq_hook_action_t act;
    kiq_hooks_ops.on_request(h, m->r, &m->req, &m->resp, &act);
    return act;
}

static kiq_hook_action_t request_verdict(kiq_hooks_t *h, const char *client_id, const char *topic)
{
    metadata_call_t m;
    metadata_call(&m, client_id, topic);
    kiq_hook_action_t act = run_metadata(h, &m);
    kiq_request_free(m.r);
    return act;
}

static uint64_t failures(kiq_hooks_t *h, int id, char *last_error, size_t n)
{
    kiq_hook_info_t *list;
    int count = kiq_hooks_list(h, &list);
    uint64_t f = UINT64_MAX;
    for (int i = 0; i < count; i++) {
        if (list[i].id != id) continue;
        f = list[i].failures;
        if (last_error) snprintf(last_error, n, "%s", list[i].last_error ? list[i].last_error : "");
    }
    kiq_hooks_list_free(list, count);
    return f;
}

static void test_install_refuses_bad_chunks(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    assert_int_equal(add(h, KIQ_HOOK_REQUEST, "return function( end"), -1);
    assert_non_null(strstr(kiq_error_get(), "interceptor:1:"));
    assert_int_equal(add(h, KIQ_HOOK_PRODUCE, "return 'not a function'"), -1);
    assert_non_null(strstr(kiq_error_get(), "not a string"));
    assert_int_equal(add(h, KIQ_HOOK_FETCH, "error('at load')"), -1);
    assert_non_null(strstr(kiq_error_get(), "at load"));
    assert_int_equal(add(h, KIQ_HOOK_FETCH, "while true do end"), -1);
    assert_non_null(strstr(kiq_error_get(), "over its budget of 100000 instructions"));
    /* the sandbox keeps hooks from lifting their budget */
    assert_int_equal(add(h, KIQ_HOOK_REQUEST, "debug.sethook() return function() end"), -1);
    assert_int_equal(add(h, KIQ_HOOK_REQUEST, "jit.on() return function() end"), -1);
    kiq_hook_spec_t spec = {.point = KIQ_HOOK_PRODUCE, .api_key = 0, .source = "return print",
                            .source_len = 12};
    assert_int_equal(kiq_hooks_add(h, &spec), -1);
    assert_int_equal(atomic_load(&h->generation), 0);
    for (int p = 0; p < KIQ_HOOK__POINTS; p++) assert_false(active(h, p));
    kiq_hooks_free(h);
}

static void test_registry_add_list_remove(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    kiq_hook_spec_t spec = {.point = KIQ_HOOK_REQUEST, .api_key = KIQ_API_FETCH, .client_id = "c",
                            .source = "return function() end", .source_len = 21};
    int a = kiq_hooks_add(h, &spec);
    int b = add(h, KIQ_HOOK_PRODUCE, "return function() end");
    assert_true(a > 0 && b > a);
    assert_true(active(h, KIQ_HOOK_REQUEST));
    assert_true(active(h, KIQ_HOOK_PRODUCE));
    assert_false(active(h, KIQ_HOOK_FETCH));
    kiq_hook_info_t *list;
    assert_int_equal(kiq_hooks_list(h, &list), 2);
    assert_int_equal(list[0].id, a);
    assert_int_equal(list[0].point, KIQ_HOOK_REQUEST);
    assert_int_equal(list[0].api_key, KIQ_API_FETCH);
    assert_string_equal(list[0].client_id, "c");
    assert_null(list[0].topic);
    assert_int_equal(list[1].id, b);
    assert_int_equal(list[1].api_key, -1);
    kiq_hooks_list_free(list, 2);
    unsigned gen = atomic_load(&h->generation);
    assert_int_equal(kiq_hooks_remove(h, a), 0);
    assert_int_equal(kiq_hooks_remove(h, a), -1);
    assert_string_equal(kiq_error_get(), "no interceptor 1");
    assert_int_equal(atomic_load(&h->generation), gen + 1);
    assert_false(active(h, KIQ_HOOK_REQUEST));
    kiq_hooks_free(h);
}

static void test_request_verdicts(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        enum kiq_hook_verdict verdict;
        int16_t error_code;
        int32_t delay_ms;
        bool fails;
    } cases[] = {
        {"return function() end", KIQ_HOOK_PROCEED, 0, 0, false},
        {"return function() return {} end", KIQ_HOOK_PROCEED, 0, 0, false},
        {"return function() return { delay_ms = 250 } end", KIQ_HOOK_PROCEED, 0, 250, false},
        {"return function() return { drop = true } end", KIQ_HOOK_DROP, 0, 0, false},
        {"return function() return { drop = 'after', delay_ms = 5 } end", KIQ_HOOK_DROP_AFTER, 0, 5, false},
        {"return function() return { error = 29 } end", KIQ_HOOK_ANSWER, 29, 0, false},
        {"return function() return { error = 0 } end", KIQ_HOOK_PROCEED, 0, 0, false},
        {"return function() return { error = 1.5 } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return { error = 1e10 } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return { delay_ms = -1 } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return { drop = 'later' } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return { drop = true, error = 3 } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return { eror = 3 } end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return 'drop' end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() error('boom') end", KIQ_HOOK_PROCEED, 0, 0, true},
        {"return function() return setmetatable({}, { __index = function() error('x') end }) end",
         KIQ_HOOK_PROCEED, 0, 0, false},
    };
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int id = add(h, KIQ_HOOK_REQUEST, cases[i].src);
        assert_true(id > 0);
        kiq_hook_action_t act = request_verdict(h, "client", "t");
        if (act.verdict != cases[i].verdict || act.error_code != cases[i].error_code ||
            act.delay_ms != cases[i].delay_ms)
            fail_msg("%s: verdict %d error %d delay %d", cases[i].src, act.verdict, act.error_code,
                     act.delay_ms);
        assert_int_equal(failures(h, id, NULL, 0), cases[i].fails ? 1 : 0);
        assert_int_equal(kiq_hooks_remove(h, id), 0);
    }
    kiq_hooks_free(h);
}

static void test_request_context_and_answer(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    int id = add(h, KIQ_HOOK_REQUEST,
                 "return function(ctx)\n"
                 "  assert(ctx.api_key == 3 and ctx.api_name == 'Metadata' and ctx.api_version == 9)\n"
                 "  assert(ctx.correlation_id == 7 and ctx.client_id == 'me' and ctx.peer == '127.0.0.1:9')\n"
                 "  assert(#ctx.topics == 1 and ctx.topics[1] == 'orders')\n"
                 "  assert(ctx.request.topics[1].name == 'orders')\n"
                 "  return { error = 29 }\n"
                 "end");
    assert_true(id > 0);
    metadata_call_t m;
    metadata_call(&m, "me", "orders");
    kiq_hook_action_t act = run_metadata(h, &m);
    char err[512];
    assert_int_equal(failures(h, id, err, sizeof err), 0);
    assert_int_equal(act.verdict, KIQ_HOOK_ANSWER);
    assert_int_equal(m.resp.topics_n, 1);
    assert_true(kiq_str_eq(m.resp.topics[0].name, "orders"));
    assert_int_equal(m.resp.topics[0].error_code, 29);
    assert_int_equal(m.resp.brokers_n, 0);
    kiq_request_free(m.r);
    kiq_hooks_free(h);
}

static void test_request_selection(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    const char *src = "return function() return { error = 31 } end";
    kiq_hook_spec_t by_api = {.point = KIQ_HOOK_REQUEST, .api_key = KIQ_API_FETCH, .source = src,
                              .source_len = strlen(src)};
    kiq_hook_spec_t by_client = {.point = KIQ_HOOK_REQUEST, .api_key = -1, .client_id = "bad",
                                 .source = src, .source_len = strlen(src)};
    kiq_hook_spec_t by_topic = {.point = KIQ_HOOK_REQUEST, .api_key = -1, .topic = "secret",
                                .source = src, .source_len = strlen(src)};
    int id = kiq_hooks_add(h, &by_api);
    assert_int_equal(request_verdict(h, "c", "t").verdict, KIQ_HOOK_PROCEED);
    kiq_hooks_remove(h, id);
    id = kiq_hooks_add(h, &by_client);
    assert_int_equal(request_verdict(h, "c", "t").verdict, KIQ_HOOK_PROCEED);
    assert_int_equal(request_verdict(h, NULL, "t").verdict, KIQ_HOOK_PROCEED);
    assert_int_equal(request_verdict(h, "bad", "t").verdict, KIQ_HOOK_ANSWER);
    kiq_hooks_remove(h, id);
    id = kiq_hooks_add(h, &by_topic);
    assert_int_equal(request_verdict(h, "c", "t").verdict, KIQ_HOOK_PROCEED);
    assert_int_equal(request_verdict(h, "c", "secret").verdict, KIQ_HOOK_ANSWER);
    kiq_hooks_free(h);
}

static void test_budget_stops_every_time(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    int id = add(h, KIQ_HOOK_REQUEST,
                 "return function() while true do pcall(function() while true do end end) end end");
    /* a second hook still runs after the first was stopped */
    int next = add(h, KIQ_HOOK_REQUEST, "return function() return { error = 3 } end");
    for (int i = 0; i < 3; i++) {
        kiq_hook_action_t act = request_verdict(h, "c", "t");
        assert_int_equal(act.verdict, KIQ_HOOK_ANSWER);
        assert_int_equal(act.error_code, 3);
    }
    char err[512];
    assert_int_equal(failures(h, id, err, sizeof err), 3);
    assert_non_null(strstr(err, "over its budget of 100000 instructions"));
    assert_int_equal(failures(h, next, NULL, 0), 0);
    kiq_hooks_free(h);
}

static const char *const counting_hook =
    "local n = 0\n"
    "return function() n = n + 1; if n == 2 then return { error = 2 } end end";

typedef struct verdict_arg {
    kiq_hooks_t *h;
    kiq_hook_action_t act;
} verdict_arg_t;

static void *verdict_thread(void *arg)
{
    verdict_arg_t *v = arg;
    v->act = request_verdict(v->h, "c", "t");
    return NULL; /* the thread's Lua state is closed as it exits */
}

static void test_states_are_per_thread_and_kept(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    assert_true(add(h, KIQ_HOOK_REQUEST, counting_hook) > 0);
    assert_int_equal(request_verdict(h, "c", "t").verdict, KIQ_HOOK_PROCEED); /* n = 1 here */
    verdict_arg_t v = {h, {0}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, verdict_thread, &v), 0);
    pthread_join(t, NULL);
    assert_int_equal(v.act.verdict, KIQ_HOOK_PROCEED); /* its own n = 1 */
    /* another install reloads the thread's hooks but keeps the loaded one */
    assert_true(add(h, KIQ_HOOK_FETCH, "return function() end") > 0);
    kiq_hook_action_t act = request_verdict(h, "c", "t");
    assert_int_equal(act.verdict, KIQ_HOOK_ANSWER);
    assert_int_equal(act.error_code, 2);
    kiq_hooks_free(h);
}

/* Two records, the second without headers, as a producer would send them. */
static uint8_t *produced_batch(size_t *len, int codec)
{
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, codec, 1000);
    kiq_batch_builder_set_producer(&bb, 42, 3, 10);
    kiq_record_header_t hdr = {KIQ_STR("trace"), {(const uint8_t *)"t1", 2}};
    assert_int_equal(kiq_batch_builder_add(&bb, "k1", 2, "hello", 5, &hdr, 1, 1000), 0);
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, "world", 5, NULL, 0, 1005), 0);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&bb, &w), 0);
    kiq_batch_builder_free(&bb);
    return kiq_wr_steal(&w, len);
}

typedef struct collected {
    int n;
    char values[4][16];
    char keys[4][16];
    int64_t timestamps[4];
    int32_t headers[4];
} collected_t;

static int collect(const kiq_record_t *rec, void *arg)
{
    collected_t *c = arg;
    if (c->n >= 4) return -1;
    snprintf(c->values[c->n], 16, "%.*s", rec->value.len, (const char *)rec->value.p);
    snprintf(c->keys[c->n], 16, "%.*s", rec->key.p ? rec->key.len : 4,
             rec->key.p ? (const char *)rec->key.p : "null");
    c->timestamps[c->n] = rec->timestamp;
    c->headers[c->n] = rec->header_count;
    c->n++;
    return 0;
}

static void test_produce_reject_and_rewrite(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    size_t len;
    uint8_t *data = produced_batch(&len, KIQ_CODEC_LZ4);
    kiq_request_t *r = fake_request(KIQ_API_PRODUCE, 8, "p");

    int reject = add(h, KIQ_HOOK_PRODUCE,
                     "return function(ctx)\n"
                     "  assert(ctx.topic == 'orders' and ctx.partition == 2 and ctx.client_id == 'p')\n"
                     "  for _, rec in ipairs(ctx.records) do\n"
                     "    if #rec.headers == 0 then\n"
                     "      return { error = 87, message = 'no header at ' .. rec.offset_delta }\n"
                     "    end\n"
                     "  end\n"
                     "end");
    kiq_hook_produce_t p = {.topic = "orders", .partition = 2, .records = data, .len = len};
    kiq_hooks_ops.on_produce(h, r, &p);
    assert_int_equal(failures(h, reject, NULL, 0), 0);
    assert_int_equal(p.error_code, 87);
    assert_true(kiq_str_eq(p.error_message, "no header at 1"));
    assert_null(p.rewritten);
    kiq_hooks_remove(h, reject);

    int upper = add(h, KIQ_HOOK_PRODUCE,
                    "return function(ctx)\n"
                    "  local out = {}\n"
                    "  for i, rec in ipairs(ctx.records) do\n"
                    "    out[i] = { key = rec.key, value = rec.value:upper(), headers = rec.headers,\n"
                    "               timestamp = rec.timestamp }\n"
                    "  end\n"
                    "  return { records = out }\n"
                    "end");
    int suffix = add(h, KIQ_HOOK_PRODUCE,
                     "return function(ctx)\n"
                     "  local out = {}\n"
                     "  for i, rec in ipairs(ctx.records) do out[i] = rec; rec.value = rec.value .. '!' end\n"
                     "  return { records = out }\n"
                     "end");
    p = (kiq_hook_produce_t){.topic = "orders", .partition = 2, .records = data, .len = len};
    kiq_hooks_ops.on_produce(h, r, &p);
    assert_int_equal(failures(h, upper, NULL, 0), 0);
    assert_int_equal(failures(h, suffix, NULL, 0), 0);
    assert_int_equal(p.error_code, 0);
    assert_non_null(p.rewritten);
    kiq_batch_header_t bh;
    assert_int_equal(kiq_batch_validate(p.rewritten, p.rewritten_len, 0, KIQ_BATCH_MAX_DECOMPRESSED, &bh, NULL), 0);
    assert_int_equal(bh.producer_id, 42);
    assert_int_equal(bh.producer_epoch, 3);
    assert_int_equal(bh.base_sequence, 10);
    assert_int_equal(kiq_batch_codec(&bh), KIQ_CODEC_LZ4);
    collected_t got = {0};
    assert_int_equal(kiq_batch_foreach_record(p.rewritten, p.rewritten_len, 1 << 20, collect, &got), 0);
    assert_int_equal(got.n, 2);
    assert_string_equal(got.values[0], "HELLO!");
    assert_string_equal(got.values[1], "WORLD!");
    assert_string_equal(got.keys[0], "k1");
    assert_string_equal(got.keys[1], "null");
    assert_int_equal(got.timestamps[0], 1000);
    assert_int_equal(got.timestamps[1], 1005);
    assert_int_equal(got.headers[0], 1);
    assert_int_equal(got.headers[1], 0);
    kiq_hooks_remove(h, upper);
    kiq_hooks_remove(h, suffix);

    /* a malformed rewrite counts as a failure: the data passes as it was */
    int bad = add(h, KIQ_HOOK_PRODUCE, "return function() return { records = { 'x' } } end");
    p = (kiq_hook_produce_t){.topic = "orders", .partition = 2, .records = data, .len = len};
    kiq_hooks_ops.on_produce(h, r, &p);
    assert_int_equal(p.error_code, 0);
    assert_null(p.rewritten);
    char err[512];
    assert_int_equal(failures(h, bad, err, sizeof err), 1);
    assert_non_null(strstr(err, "records[1]: table expected"));
    kiq_hooks_remove(h, bad);

    /* no records left: refused */
    add(h, KIQ_HOOK_PRODUCE, "return function() return { records = {} } end");
    p = (kiq_hook_produce_t){.topic = "orders", .partition = 2, .records = data, .len = len};
    kiq_hooks_ops.on_produce(h, r, &p);
    assert_int_equal(p.error_code, KIQ_ERR_INVALID_RECORD);

    kiq_request_free(r);
    free(data);
    kiq_hooks_free(h);
}

static void test_fetch_error(void **state)
{
    (void)state;
    kiq_hooks_t *h = kiq_hooks_new(SMALL_BUDGET);
    size_t len;
    uint8_t *data = produced_batch(&len, KIQ_CODEC_NONE);
    kiq_batch_set_base_offset(data, 40);
    kiq_request_t *r = fake_request(KIQ_API_FETCH, 11, "c");
    kiq_hook_spec_t spec = {.point = KIQ_HOOK_FETCH, .api_key = -1, .topic = "orders",
                            .source = "return function(ctx)\n"
                                      "  assert(ctx.fetch_offset == 40 and ctx.high_watermark == 42)\n"
                                      "  assert(ctx.log_start_offset == 0 and ctx.records[2].offset == 41)\n"
                                      "  if ctx.records[2].value == 'world' then return { error = 6 } end\n"
                                      "end"};
    spec.source_len = strlen(spec.source);
    int id = kiq_hooks_add(h, &spec);
    assert_true(id > 0);
    kiq_hook_fetch_t f = {.topic = KIQ_STR("orders"), .partition = 0, .fetch_offset = 40,
                          .high_watermark = 42, .records = {data, (int32_t)len}};
    kiq_hooks_ops.on_fetch(h, r, &f);
    assert_int_equal(failures(h, id, NULL, 0), 0);
    assert_int_equal(f.error_code, 6);
    f.topic = KIQ_STR("other");
    kiq_hooks_ops.on_fetch(h, r, &f);
    assert_int_equal(f.error_code, 0);
    kiq_request_free(r);
    free(data);
    kiq_hooks_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_refuses_bad_chunks),
        cmocka_unit_test(test_registry_add_list_remove),
        cmocka_unit_test(test_request_verdicts),
        cmocka_unit_test(test_request_context_and_answer),
        cmocka_unit_test(test_request_selection),
        cmocka_unit_test(test_budget_stops_every_time),
        cmocka_unit_test(test_states_are_per_thread_and_kept),
        cmocka_unit_test(test_produce_reject_and_rewrite),
        cmocka_unit_test(test_fetch_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
