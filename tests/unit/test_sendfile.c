/* Zero-copy responses: the writer's file parts (a frame = its bytes with
 * file ranges placed between them) give the same frame as copying the
 * bytes in, through the generated Fetch encoder too; and a processor sends
 * such a frame over a real socket with send() + sendfile(), through partial
 * writes, releasing what the request holds once it is done or its
 * connection is gone, and keeping the request for the next; a writer lent
 * storage moves to the heap only when it outgrows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/processor.h"
#include "net/request_queue.h"
#include "proto/messages.h"
#include "proto/writer.h"

/* A temporary file holding n pattern bytes; its fd stays open (unlinked). */
static int pattern_file(size_t n, uint8_t **copy)
{
    char path[] = "/tmp/kiq_sendfile_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 7 + i / 251);
    assert_int_equal(pwrite(fd, b, n, 0), (ssize_t)n);
    *copy = b;
    return fd;
}

/* The whole frame the parts describe, as a receiver would get it. */
static uint8_t *reassemble(const uint8_t *buf, size_t len, const kiq_file_part_t *parts, size_t nparts,
                           size_t *out_len)
{
    size_t total = len;
    for (size_t i = 0; i < nparts; i++) total += parts[i].range.length;
    uint8_t *f = malloc(total ? total : 1);
    assert_non_null(f);
    size_t o = 0, from = 0;
    for (size_t i = 0; i < nparts; i++) {
        assert_true(parts[i].at >= from && parts[i].at <= len);
        memcpy(f + o, buf + from, parts[i].at - from);
        o += parts[i].at - from;
        from = parts[i].at;
        const kiq_file_range_t *r = &parts[i].range;
        assert_int_equal(pread(r->fd, f + o, r->length, (off_t)r->offset), (ssize_t)r->length);
        o += r->length;
    }
    memcpy(f + o, buf + from, len - from);
    *out_len = o + len - from;
    return f;
}

static void records_frame(bool compact)
{
    uint8_t *data;
    int fd = pattern_file(5000, &data);
    kiq_file_range_t ranges[2] = {{fd, 100, 1000}, {fd, 3000, 1500}};
    kiq_file_records_t files = {ranges, 2};

    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_raw(&w, "HEAD", 4);
    kiq_wr_records(&w, (kiq_bytes_t){0}, &files, compact, true);
    kiq_wr_raw(&w, "TAIL", 4);
    assert_false(w.err);
    size_t prefix = compact ? kiq_uvarint_size(2501) : 4;
    assert_int_equal(w.len, 8 + prefix);
    assert_int_equal(kiq_wr_size(&w), 8 + prefix + 2500);
    size_t nparts;
    kiq_file_part_t *parts = kiq_wr_steal_parts(&w, &nparts);
    assert_int_equal(nparts, 2);
    assert_int_equal(parts[0].at, 4 + prefix);
    assert_int_equal(parts[1].at, 4 + prefix);
    assert_int_equal(kiq_wr_size(&w), w.len); /* the parts went with the steal */

    /* the copy path: the same bytes written into the buffer */
    uint8_t inline_bytes[2500];
    memcpy(inline_bytes, data + 100, 1000);
    memcpy(inline_bytes + 1000, data + 3000, 1500);
    kiq_wr_t c;
    kiq_wr_init(&c);
    kiq_wr_raw(&c, "HEAD", 4);
    kiq_wr_records(&c, (kiq_bytes_t){inline_bytes, 2500}, NULL, compact, true);
    kiq_wr_raw(&c, "TAIL", 4);
    assert_int_equal(c.nparts, 0);

    size_t n;
    uint8_t *frame = reassemble(w.buf, w.len, parts, nparts, &n);
    assert_int_equal(n, c.len);
    assert_memory_equal(frame, c.buf, n);
    free(frame);
    free(parts);
    kiq_wr_free(&w);
    kiq_wr_free(&c);
    free(data);
    close(fd);
}

static void test_records_file_parts_classic(void **state) { records_frame(false); }
static void test_records_file_parts_compact(void **state) { records_frame(true); }

static void test_records_null_and_empty(void **state)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_records(&w, (kiq_bytes_t){0}, NULL, false, true); /* null: -1 */
    kiq_file_records_t none = {NULL, 0};
    kiq_wr_records(&w, (kiq_bytes_t){0}, &none, true, true); /* empty: uvarint 1 */
    assert_false(w.err);
    assert_int_equal(w.nparts, 0);
    const uint8_t want[] = {0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(w.len, sizeof want);
    assert_memory_equal(w.buf, want, sizeof want);
    kiq_wr_free(&w);
}

static void test_records_too_large(void **state)
{
    kiq_file_range_t ranges[2] = {{0, 0, UINT32_C(0x7fffffff)}, {0, 0, 2}};
    kiq_file_records_t files = {ranges, 2};
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_records(&w, (kiq_bytes_t){0}, &files, false, true);
    assert_true(w.err);
    kiq_wr_free(&w);
}

/* A Fetch response with one partition in files and one in memory encodes,
 * at a classic and a flexible version, to what the copy path encodes. */
static void test_fetch_response_encoder(void **state)
{
    uint8_t *data;
    int fd = pattern_file(4096, &data);
    kiq_file_range_t ranges[2] = {{fd, 0, 700}, {fd, 2048, 900}};
    kiq_file_records_t files = {ranges, 2};
    uint8_t joined[1600];
    memcpy(joined, data, 700);
    memcpy(joined + 700, data + 2048, 900);
    const kiq_api_codec_t *codec = kiq_api_codec(KIQ_API_FETCH);
    assert_non_null(codec);

    for (int16_t v = 4; v <= 12; v += 8) {
        kiq_fetch_response_responses_partitions_t parts[2];
        kiq_fetch_response_responses_t topic;
        kiq_fetch_response_t resp;
        kiq_fetch_response_init(&resp);
        kiq_fetch_response_responses_init(&topic);
        for (int i = 0; i < 2; i++) {
            kiq_fetch_response_responses_partitions_init(&parts[i]);
            parts[i].partition_index = i;
            parts[i].high_watermark = 10 + i;
        }
        parts[1].records = (kiq_bytes_t){data + 100, 50};
        topic.topic = KIQ_STR("t");
        topic.partitions = parts;
        topic.partitions_n = 2;
        resp.responses = &topic;
        resp.responses_n = 1;

        parts[0].records_file = &files;
        kiq_wr_t w;
        kiq_wr_init(&w);
        assert_int_equal(codec->response_encode(&w, v, &resp), 0);
        assert_int_equal(w.nparts, 2);
        size_t nparts, n;
        kiq_file_part_t *fp = kiq_wr_steal_parts(&w, &nparts);
        uint8_t *frame = reassemble(w.buf, w.len, fp, nparts, &n);

        parts[0].records_file = NULL;
        parts[0].records = (kiq_bytes_t){joined, sizeof joined};
        kiq_wr_t c;
        kiq_wr_init(&c);
        assert_int_equal(codec->response_encode(&c, v, &resp), 0);
        assert_int_equal(c.nparts, 0);
        assert_int_equal(n, c.len);
        assert_memory_equal(frame, c.buf, n);

        free(frame);
        free(fp);
        kiq_wr_free(&w);
        kiq_wr_free(&c);
    }
    free(data);
    close(fd);
}

/* --- a processor sending a frame with file parts over a socketpair --- */

typedef struct harness {
    kiq_request_queue_t *queue;
    kiq_processor_t *p;
    int client;     /* the test's end of the connection */
    int released[2]; /* pipe: a byte when the request's deferred release ran */
} harness_t;

static int admit_all(void *ctx, kiq_request_t *r) { return 0; }

static void harness_start(harness_t *h)
{
    h->queue = kiq_request_queue_new(8);
    assert_non_null(h->queue);
    kiq_processor_config_t cfg = {
        .id = 0, .max_request_bytes = 1 << 20, .queue = h->queue, .admit = admit_all,
    };
    h->p = kiq_processor_new(&cfg);
    assert_non_null(h->p);
    assert_int_equal(kiq_processor_start(h->p), 0);
    int sv[2];
    /* the processor's end non-blocking, as the acceptor hands sockets over */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    /* a small send buffer forces partial writes and the write watcher */
    int small = 16384;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    h->client = sv[1];
    kiq_processor_add_socket(h->p, sv[0], "socketpair", "local");
    assert_int_equal(pipe(h->released), 0);
}

static void harness_stop(harness_t *h)
{
    kiq_processor_free(h->p);
    kiq_request_queue_free(h->queue);
    if (h->client >= 0) close(h->client);
    close(h->released[0]);
    close(h->released[1]);
}

static void mark_released(void *arg)
{
    int fd = *(int *)arg;
    assert_int_equal(write(fd, "x", 1), 1);
}

/* Sends a Fetch v4 request frame and takes it off the queue. */
static kiq_request_t *harness_request(harness_t *h)
{
    const uint8_t frame[] = {0, 0, 0, 10, 0, 1, 0, 4, 0, 0, 0, 42, 0xff, 0xff};
    assert_int_equal(write(h->client, frame, sizeof frame), (ssize_t)sizeof frame);
    kiq_request_t *r = kiq_request_queue_pop(h->queue);
    assert_non_null(r);
    assert_int_equal(r->header.correlation_id, 42);
    return r;
}

/* Answers r with "size | HEAD | file part | TAIL"; returns the frame's bytes. */
static uint8_t *harness_respond(harness_t *h, kiq_request_t *r, int fd, uint32_t offset, uint32_t length,
                                const uint8_t *data, size_t *frame_len)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, 0);
    kiq_wr_raw(&w, "HEAD", 4);
    kiq_wr_file(&w, (kiq_file_range_t){fd, offset, length});
    kiq_wr_raw(&w, "TAIL", 4);
    kiq_wr_patch_i32(&w, 0, (int32_t)(kiq_wr_size(&w) - 4));
    assert_false(w.err);
    *frame_len = (size_t)kiq_wr_size(&w);
    uint8_t *want = malloc(*frame_len);
    assert_non_null(want);
    memcpy(want, w.buf, 8);
    if (data) memcpy(want + 8, data + offset, length);
    memcpy(want + 8 + length, "TAIL", 4);
    r->response_parts = kiq_wr_steal_parts(&w, &r->response_nparts);
    r->response = kiq_wr_steal(&w, &r->response_len);
    kiq_request_defer(r, mark_released, &h->released[1]);
    kiq_processor_complete(r);
    return want;
}

/* Reads up to n bytes; returns how many came before EOF. */
static size_t read_upto(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        assert_true(k >= 0);
        if (k == 0) break;
        got += (size_t)k;
    }
    return got;
}

static void wait_released(harness_t *h)
{
    char c;
    assert_int_equal(read(h->released[0], &c, 1), 1);
}

/* Answers r with harness_respond and checks the client reads it whole, and
 * that the request is released after. */
static void respond_and_read(harness_t *h, kiq_request_t *r, int fd, uint32_t offset, uint32_t length,
                             const uint8_t *data)
{
    size_t len;
    uint8_t *want = harness_respond(h, r, fd, offset, length, data, &len);
    uint8_t *got = malloc(len);
    assert_non_null(got);
    assert_int_equal(read_upto(h->client, got, len), len);
    assert_memory_equal(got, want, len);
    wait_released(h);
    free(got);
    free(want);
}

static void test_processor_sends_file_parts(void **state)
{
    enum { SIZE = 4 << 20 };
    uint8_t *data;
    int fd = pattern_file(SIZE, &data);
    harness_t h;
    harness_start(&h);
    for (int round = 0; round < 2; round++) { /* the connection serves on after a file frame */
        respond_and_read(&h, harness_request(&h), fd, 1000 + (uint32_t)round, SIZE - 3000, data);
    }
    harness_stop(&h);
    free(data);
    close(fd);
}

/* A processor keeps a request it answered for the next one: the same
 * memory comes back cleared (what it held released, its arena empty), with
 * the new frame. */
static void test_processor_reuses_requests(void **state)
{
    enum { SIZE = 4096 };
    uint8_t *data;
    int fd = pattern_file(SIZE, &data);
    harness_t h;
    harness_start(&h);
    kiq_request_t *first = NULL;
    for (int round = 0; round < 3; round++) {
        kiq_request_t *r = harness_request(&h);
        if (first)
            assert_ptr_equal(r, first);
        else
            first = r;
        assert_null(r->owned);
        assert_null(r->response);
        assert_null(r->response_parts);
        assert_int_equal(r->arena.total, 0);
        assert_int_equal(r->errors.n, 0);
        r->errors.n = 1;
        assert_non_null(kiq_arena_alloc(&r->arena, 100));
        respond_and_read(&h, r, fd, (uint32_t)round, 100, data);
    }
    harness_stop(&h);
    free(data);
    close(fd);
}

/* A writer lent storage (a request's arena) writes there while it fits,
 * then moves bytes and file parts to the heap, leaving the lent storage as
 * it was. */
static void test_writer_lent_storage(void **state)
{
    uint8_t room[16];
    kiq_file_part_t parts[2];
    kiq_wr_t w;
    kiq_wr_init_lent(&w, room, sizeof room, parts, 2);
    kiq_wr_raw(&w, "0123456789", 10);
    kiq_wr_file(&w, (kiq_file_range_t){3, 0, 5});
    kiq_wr_file(&w, (kiq_file_range_t){3, 5, 5});
    assert_true(kiq_wr_lent(&w));
    assert_true(kiq_wr_parts_lent(&w));
    assert_ptr_equal(w.buf, room);
    kiq_wr_file(&w, (kiq_file_range_t){3, 10, 5});
    assert_false(kiq_wr_parts_lent(&w));
    assert_int_equal(w.nparts, 3);
    assert_int_equal(w.parts[1].range.offset, 5);
    kiq_wr_raw(&w, "abcdefghij", 10);
    assert_false(kiq_wr_lent(&w));
    assert_false(w.err);
    assert_memory_equal(room, "0123456789", 10);
    size_t n;
    kiq_file_part_t *p = kiq_wr_steal_parts(&w, &n);
    size_t len;
    uint8_t *b = kiq_wr_steal(&w, &len);
    assert_int_equal(len, 20);
    assert_memory_equal(b, "0123456789abcdefghij", 20);
    assert_int_equal(n, 3);
    free(p);
    free(b);
    /* a lent writer freed frees nothing of the lender's */
    kiq_wr_init_lent(&w, room, sizeof room, parts, 2);
    kiq_wr_raw(&w, "x", 1);
    kiq_wr_free(&w);
}

static void test_processor_client_disconnects(void **state)
{
    enum { SIZE = 4 << 20 };
    uint8_t *data;
    int fd = pattern_file(SIZE, &data);
    harness_t h;
    harness_start(&h);
    kiq_request_t *r = harness_request(&h);
    size_t len;
    uint8_t *want = harness_respond(&h, r, fd, 0, SIZE, data, &len);
    uint8_t head[65536];
    assert_int_equal(read_upto(h.client, head, sizeof head), sizeof head);
    assert_memory_equal(head, want, sizeof head);
    close(h.client); /* gone mid-response */
    h.client = -1;
    wait_released(&h); /* the segments are let go all the same */
    harness_stop(&h);
    free(want);
    free(data);
    close(fd);
}

static void test_processor_truncated_file_closes(void **state)
{
    uint8_t *data;
    int fd = pattern_file(10000, &data);
    harness_t h;
    harness_start(&h);
    kiq_request_t *r = harness_request(&h);
    size_t len;
    /* the part claims more than the file holds, as after a truncation */
    uint8_t *want = harness_respond(&h, r, fd, 5000, 20000, NULL, &len);
    uint8_t *got = malloc(len);
    assert_non_null(got);
    size_t n = read_upto(h.client, got, len);
    assert_int_equal(n, 8 + 5000); /* header, what the file had, then the close */
    assert_memory_equal(got + 8, data + 5000, 5000);
    wait_released(&h);
    free(got);
    harness_stop(&h);
    free(want);
    free(data);
    close(fd);
}

/* Records the order deferred functions ran in. */
typedef struct order_slot {
    int *order, *next;
} order_slot_t;

static void mark_order(void *arg)
{
    order_slot_t *s = arg;
    *s->order = (*s->next)++;
}

static void test_defer_runs_most_recent_first(void **state)
{
    int order[2] = {0, 0}, next = 1;
    order_slot_t s0 = {&order[0], &next}, s1 = {&order[1], &next};
    kiq_request_t *r = kiq_request_new(NULL, 1, malloc(1), 1);
    assert_non_null(r);
    kiq_request_defer(r, mark_order, &s0);
    kiq_request_defer(r, mark_order, &s1);
    kiq_request_free(r);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[0], 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_file_parts_classic),
        cmocka_unit_test(test_records_file_parts_compact),
        cmocka_unit_test(test_records_null_and_empty),
        cmocka_unit_test(test_records_too_large),
        cmocka_unit_test(test_fetch_response_encoder),
        cmocka_unit_test(test_processor_sends_file_parts),
        cmocka_unit_test(test_processor_reuses_requests),
        cmocka_unit_test(test_writer_lent_storage),
        cmocka_unit_test(test_processor_client_disconnects),
        cmocka_unit_test(test_processor_truncated_file_closes),
        cmocka_unit_test(test_defer_runs_most_recent_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
