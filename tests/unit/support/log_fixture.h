/* Helpers shared by the unit tests that work on real log directories. */
#ifndef KIQ_TEST_LOG_FIXTURE_H
#define KIQ_TEST_LOG_FIXTURE_H

#include <stdint.h>

#include "proto/writer.h"

/* rm -r of a test's temporary directory. */
void kiq_test_remove_tree(const char *path);
/* Appends one uncompressed batch of n records (key "key", a 100-byte value)
 * with timestamps ts, ts+1, ... to w; fails the test if building fails. */
void kiq_test_make_batch(kiq_wr_t *w, int n, int64_t ts);

#endif
