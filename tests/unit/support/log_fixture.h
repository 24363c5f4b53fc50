/* Helpers shared by the unit tests that work on real log directories. */
#ifndef KIQ_TEST_LOG_FIXTURE_H
#define KIQ_TEST_LOG_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "log/partition_log.h"
#include "proto/writer.h"

/* A listening TCP socket on 127.0.0.1 and a free port (*port) that takes
 * connections into its backlog; the test accepts, or never does. */
int kiq_test_listen_any(int *port);
/* rm -r of a test's temporary directory. */
void kiq_test_remove_tree(const char *path);
/* Makes a fresh /tmp/kiq-test-<tag>-XXXXXX directory and puts its path in
 * buf (n bytes). 0 or -1. */
int kiq_test_temp_dir(char *buf, size_t n, const char *tag);
/* Appends one uncompressed batch of n records (key "key", a 100-byte value)
 * with timestamps ts, ts+1, ... to w; fails the test if building fails. */
void kiq_test_make_batch(kiq_wr_t *w, int n, int64_t ts);
/* Appends one kiq_test_make_batch(n, ts) batch to l with leader_epoch;
 * returns kiq_partition_log_append's result, *base / *last (may be NULL)
 * as it fills them. */
int kiq_test_append_batch(kiq_partition_log_t *l, int n, int64_t ts, int32_t leader_epoch, int64_t *base,
                          int64_t *last);
/* Checks that data is whole batches with sound CRCs and consecutive offsets
 * from `first`, failing the test if not; returns how many, *end (may be
 * NULL) the offset after the last one. */
int kiq_test_check_batches(const uint8_t *data, size_t len, int64_t first, int64_t *end);

/* One test's log directory: a temporary root holding the partition
 * directory, and the log settings to open it with. Owned by the test's
 * thread; threads it starts only read it. */
typedef struct kiq_test_log_dir {
    char root[64];        /* /tmp/kiq-test-<tag>-XXXXXX, removed by _free */
    char dir[128];        /* the partition directory below root, or root */
    kiq_log_config_t cfg; /* Kafka's defaults until the test changes them */
    size_t batch_size;    /* of kiq_test_make_batch(3 records) */
} kiq_test_log_dir_t;

/* Makes the root; dir is root/<partition_dir> (not made: opening the log
 * does that), or root itself when partition_dir is NULL. Also turns the
 * log down to errors, as tests provoke warnings on purpose. NULL on
 * failure. */
kiq_test_log_dir_t *kiq_test_log_dir_new(const char *tag, const char *partition_dir);
/* Removes the whole tree under root and frees t (NULL is fine). */
void kiq_test_log_dir_free(kiq_test_log_dir_t *t);
/* A cmocka teardown for tests whose state is a kiq_test_log_dir_t. */
int kiq_test_log_dir_teardown(void **state);

#endif
