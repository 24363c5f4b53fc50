#include "support/log_fixture.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/say.h"
#include "record/batch.h"
#include "record/compression.h"

void kiq_test_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    char sub[512];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        kiq_test_remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

int kiq_test_temp_dir(char *buf, size_t n, const char *tag)
{
    int len = snprintf(buf, n, "/tmp/kiq-test-%s-XXXXXX", tag);
    if (len < 0 || (size_t)len >= n) return -1;
    return mkdtemp(buf) ? 0 : -1;
}

void kiq_test_make_batch(kiq_wr_t *w, int n, int64_t ts)
{
    char value[100];
    memset(value, 'x', sizeof value);
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, ts);
    for (int i = 0; i < n; i++)
        assert_int_equal(kiq_batch_builder_add(&b, "key", 3, value, sizeof value, NULL, 0, ts + i), 0);
    assert_int_equal(kiq_batch_builder_finish(&b, w), 0);
    kiq_batch_builder_free(&b);
}

int kiq_test_append_batch(kiq_partition_log_t *l, int n, int64_t ts, int32_t leader_epoch, int64_t *base,
                          int64_t *last)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_test_make_batch(&w, n, ts);
    int rc = kiq_partition_log_append(l, w.buf, w.len, leader_epoch, base, last);
    kiq_wr_free(&w);
    return rc;
}

int kiq_test_check_batches(const uint8_t *data, size_t len, int64_t first, int64_t *end)
{
    kiq_batch_iter_t it;
    const uint8_t *b;
    size_t blen;
    kiq_batch_header_t h;
    int n = 0, rc;
    int64_t next = first;
    kiq_batch_iter_init(&it, data, len, false);
    while ((rc = kiq_batch_iter_next(&it, &b, &blen, &h)) == 1) {
        assert_int_equal(kiq_batch_check(b, blen, &h), 0);
        assert_int_equal(h.base_offset, next);
        next = kiq_batch_last_offset(&h) + 1;
        n++;
    }
    assert_int_equal(rc, 0);
    if (end) *end = next;
    return n;
}

kiq_test_log_dir_t *kiq_test_log_dir_new(const char *tag, const char *partition_dir)
{
    kiq_test_log_dir_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (kiq_test_temp_dir(t->root, sizeof t->root, tag) != 0) {
        free(t);
        return NULL;
    }
    if (partition_dir)
        snprintf(t->dir, sizeof t->dir, "%s/%s", t->root, partition_dir);
    else
        snprintf(t->dir, sizeof t->dir, "%s", t->root);
    kiq_log_config_default(&t->cfg);
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_test_make_batch(&w, 3, 0);
    t->batch_size = w.len;
    kiq_wr_free(&w);
    kiq_say_set_level(KIQ_SAY_ERROR);
    return t;
}

void kiq_test_log_dir_free(kiq_test_log_dir_t *t)
{
    if (!t) return;
    kiq_test_remove_tree(t->root);
    free(t);
}

int kiq_test_log_dir_teardown(void **state)
{
    kiq_test_log_dir_free(*state);
    return 0;
}

int kiq_test_listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}
