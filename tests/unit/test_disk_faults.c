/* Disk faults in the log's write path: an injected EIO (torn after some
 * bytes or at once) fails the append, cuts the segment back, leaves the
 * LEO alone and takes the log directory offline; ENOSPC does the same but
 * only makes it full (read-only until there is room); fsync faults take it
 * offline from flushes; a reopen shows no partial batch. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/error.h"
#include "log/log_dir.h"
#include "log/log_names.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

typedef struct fixture {
    kiq_test_log_dir_t *ld;
    kiq_log_dir_t *health; /* of ld->root */
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !(f->ld = kiq_test_log_dir_new("diskf", "t-0"))) {
        free(f);
        return -1;
    }
    f->health = kiq_log_dir_new(f->ld->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_test_log_dir_free(f->ld);
    kiq_log_dir_free(f->health);
    free(f);
    return 0;
}

static kiq_partition_log_t *open_log(fixture_t *f, bool clean)
{
    f->ld->cfg.clean_shutdown = clean;
    kiq_partition_log_t *l = kiq_partition_log_open(f->ld->dir, &f->ld->cfg);
    assert_non_null(l);
    kiq_partition_log_set_log_dir(l, f->health);
    return l;
}

/* 0 or -1 from appending one 3-record batch. */
static int append_one(kiq_partition_log_t *l, int64_t ts) { return kiq_test_append_batch(l, 3, ts, 0, NULL, NULL); }

static off_t file_size(const fixture_t *f, int64_t base)
{
    char path[256];
    struct stat st;
    assert_int_equal(kiq_log_segment_path(path, sizeof path, f->ld->dir, base, KIQ_LOG_SUFFIX), 0);
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

/* Whole batches with sound CRCs and dense offsets from 0 up to leo. */
static void check_log(kiq_partition_log_t *l, int64_t leo, size_t batches, size_t batch_size)
{
    assert_int_equal(kiq_partition_log_end_offset(l), leo);
    kiq_wr_t out;
    kiq_wr_init(&out);
    assert_int_equal(kiq_partition_log_read(l, 0, 1 << 20, INT64_MAX, &out), (int)(batches * batch_size));
    int64_t end;
    assert_int_equal(kiq_test_check_batches(out.buf, out.len, 0, &end), batches);
    assert_int_equal(end, leo);
    kiq_wr_free(&out);
}

static void test_torn_append_is_cut_back(void **state)
{
    fixture_t *f = *state;
    kiq_partition_log_t *l = open_log(f, true);
    for (int i = 0; i < 3; i++) assert_int_equal(append_one(l, i), 0);
    assert_false(kiq_partition_log_offline(l));

    /* Half of the next batch reaches the file, then the disk fails. */
    assert_int_equal(kiq_log_dir_inject_fault(f->health, EIO, (int64_t)f->ld->batch_size / 2, false), 0);
    assert_int_equal(append_one(l, 3), -1);
    assert_int_equal(file_size(f, 0), (off_t)(3 * f->ld->batch_size));
    assert_int_equal(kiq_partition_log_end_offset(l), 9);
    assert_true(kiq_partition_log_offline(l));
    assert_int_equal(kiq_log_dir_error(f->health), EIO);

    /* Offline stays offline, even with space again, until a restart. */
    kiq_log_dir_clear_fault(f->health);
    assert_int_equal(append_one(l, 4), -1);
    assert_int_equal(file_size(f, 0), (off_t)(3 * f->ld->batch_size));
    check_log(l, 9, 3, f->ld->batch_size);
    kiq_partition_log_free(l);

    kiq_log_dir_reset(f->health);
    l = open_log(f, false);
    kiq_segment_recovery_t rep;
    kiq_partition_log_recovery(l, &rep);
    assert_int_equal(rep.bytes_truncated, 0);
    check_log(l, 9, 3, f->ld->batch_size);
    assert_int_equal(append_one(l, 5), 0);
    check_log(l, 12, 4, f->ld->batch_size);
    kiq_partition_log_free(l);
}

/* ENOSPC (EDQUOT alike) makes the directory full, not offline: the torn
 * write is cut back, what is there is still read, appends are refused
 * until a probe write there works again, then resume by themselves. */
static void test_full_disk_is_read_only(void **state)
{
    fixture_t *f = *state;
    kiq_partition_log_t *l = open_log(f, true);
    for (int i = 0; i < 3; i++) assert_int_equal(append_one(l, i), 0);
    assert_int_equal(kiq_log_dir_inject_fault(f->health, ENOSPC, (int64_t)f->ld->batch_size / 2, false), 0);
    assert_int_equal(append_one(l, 3), -1);
    assert_false(kiq_partition_log_offline(l));
    assert_int_equal(kiq_log_dir_error(f->health), 0);
    assert_int_equal(kiq_log_dir_full(f->health), ENOSPC);
    assert_int_equal(file_size(f, 0), (off_t)(3 * f->ld->batch_size));
    check_log(l, 9, 3, f->ld->batch_size);
    assert_int_equal(append_one(l, 4), -1);
    assert_non_null(strstr(kiq_error_get(), "is full (No space left on device)"));
    /* room again: appends resume by themselves, within a second or so */
    kiq_log_dir_clear_fault(f->health);
    struct timespec pause = {0, 20 * 1000000};
    int rc = -1;
    for (int i = 0; i < 250 && (rc = append_one(l, 5)) != 0; i++) nanosleep(&pause, NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(kiq_log_dir_full(f->health), 0);
    check_log(l, 12, 4, f->ld->batch_size);
    kiq_partition_log_free(l);
}

static void test_after_bytes_spans_appends(void **state)
{
    fixture_t *f = *state;
    kiq_partition_log_t *l = open_log(f, true);
    assert_int_equal(kiq_log_dir_inject_fault(f->health, EIO, (int64_t)(f->ld->batch_size * 3 / 2), false), 0);
    assert_int_equal(append_one(l, 0), 0);
    assert_false(kiq_partition_log_offline(l));
    assert_int_equal(append_one(l, 1), -1);
    assert_int_equal(kiq_log_dir_error(f->health), EIO);
    assert_int_equal(file_size(f, 0), (off_t)f->ld->batch_size);
    assert_int_equal(kiq_partition_log_end_offset(l), 3);
    kiq_partition_log_free(l);

    kiq_log_dir_clear_fault(f->health);
    kiq_log_dir_reset(f->health);
    l = open_log(f, false);
    check_log(l, 3, 1, f->ld->batch_size);
    kiq_partition_log_free(l);
}

static void test_immediate_fault_on_roll(void **state)
{
    fixture_t *f = *state;
    f->ld->cfg.segment_bytes = (int32_t)(2 * f->ld->batch_size);
    kiq_partition_log_t *l = open_log(f, true);
    assert_int_equal(append_one(l, 0), 0);
    assert_int_equal(append_one(l, 1), 0);
    assert_int_equal(kiq_log_dir_inject_fault(f->health, EIO, 0, false), 0);
    /* This append rolls first; the new segment must not stay behind empty. */
    assert_int_equal(append_one(l, 2), -1);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 1);
    assert_int_equal(kiq_partition_log_end_offset(l), 6);
    assert_true(kiq_partition_log_offline(l));
    kiq_partition_log_free(l);

    kiq_log_dir_clear_fault(f->health);
    kiq_log_dir_reset(f->health);
    l = open_log(f, false);
    check_log(l, 6, 2, f->ld->batch_size);
    assert_int_equal(append_one(l, 3), 0);
    assert_int_equal(kiq_partition_log_segments(l, NULL, 0), 2);
    kiq_partition_log_free(l);
}

static void test_fsync_fault(void **state)
{
    fixture_t *f = *state;
    kiq_partition_log_t *l = open_log(f, true);
    assert_int_equal(append_one(l, 0), 0);
    /* Without fsync faults, flushes still work. */
    assert_int_equal(kiq_log_dir_inject_fault(f->health, EIO, 1 << 20, false), 0);
    assert_int_equal(kiq_partition_log_flush(l), 0);
    assert_int_equal(kiq_log_dir_inject_fault(f->health, EIO, 1 << 20, true), 0);
    assert_int_equal(kiq_partition_log_flush(l), -1);
    assert_true(kiq_partition_log_offline(l));
    assert_int_equal(kiq_log_dir_error(f->health), EIO);
    assert_int_equal(append_one(l, 1), -1);
    kiq_partition_log_free(l);
    kiq_log_dir_clear_fault(f->health);
}

static void test_bad_fault_and_no_dir(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(kiq_log_dir_inject_fault(f->health, 0, 0, false), -1);
    assert_int_equal(kiq_log_dir_inject_fault(f->health, ENOSPC, -1, false), -1);
    /* A log without a directory state never goes offline. */
    kiq_partition_log_t *l = kiq_partition_log_open(f->ld->dir, &f->ld->cfg);
    assert_non_null(l);
    assert_false(kiq_partition_log_offline(l));
    assert_int_equal(append_one(l, 0), 0);
    kiq_partition_log_free(l);
    /* The first failure is the one reported. */
    kiq_log_dir_fail(f->health, EROFS, "test");
    kiq_log_dir_fail(f->health, EIO, "test");
    assert_int_equal(kiq_log_dir_error(f->health), EROFS);
    kiq_log_dir_reset(f->health);
    assert_false(kiq_log_dir_offline(f->health));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_torn_append_is_cut_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_disk_is_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_after_bytes_spans_appends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_immediate_fault_on_roll, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_fault, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_fault_and_no_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
