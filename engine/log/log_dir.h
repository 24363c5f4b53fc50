/* The health of one log directory (Kafka's LogDirFailureChannel) and the
 * disk faults a test injects into it. A write or fsync failure in any log
 * of the directory takes it offline: from then on its partitions answer
 * KAFKA_STORAGE_ERROR until the broker restarts with the directory
 * working again. A write failing for want of space only makes it full
 * (read-only) until there is room again.
 *
 * Owned by the broker from new to free (so an injected fault outlives a
 * restart); every function is callable from any thread: the offline flag
 * and the armed flag are atomics, the fault itself is guarded by mu. */
#ifndef KIQ_LOG_LOG_DIR_H
#define KIQ_LOG_LOG_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kiq_log_dir kiq_log_dir_t;

kiq_log_dir_t *kiq_log_dir_new(const char *path);
void kiq_log_dir_free(kiq_log_dir_t *d);
const char *kiq_log_dir_path(const kiq_log_dir_t *d);

/* NULL is a directory that never fails. */
bool kiq_log_dir_offline(const kiq_log_dir_t *d);
/* Takes the directory offline after a failed write or fsync (err is the
 * errno, what the failure as recorded: file, operation and reason); only
 * the first failure is logged, as an error. NULL is fine. */
void kiq_log_dir_fail(kiq_log_dir_t *d, int err, const char *what);
/* Offline for good without a failure to report: the health of logs a
 * broker no longer serves (they refuse writes quietly). */
void kiq_log_dir_retire(kiq_log_dir_t *d, int err);
/* Back online (the broker's start, before the logs are opened). */
void kiq_log_dir_reset(kiq_log_dir_t *d);
/* The errno of the failure that took the directory offline, 0 if online. */
int kiq_log_dir_error(const kiq_log_dir_t *d);
/* A write that failed for want of space (ENOSPC, EDQUOT: kiq_log_dir_fail
 * then leaves the directory online) makes it full: its logs take no
 * appends but serve reads, until a write of a probe file there works
 * again (tried at most once a second, by whichever append asks). The
 * errno while full, 0 otherwise. */
int kiq_log_dir_full(const kiq_log_dir_t *d);
/* Whether appends may go in: online and not full (a full one is looked
 * at again when its second is up). NULL is fine. */
bool kiq_log_dir_writable(kiq_log_dir_t *d);

/* Makes writes to the directory's logs fail with err once after_bytes
 * more bytes went in (0: at once; a write crossing the limit is torn:
 * its first part reaches the file), and fsyncs fail with err too when
 * fsyncs is set. Replaces any earlier fault; 0 or -1 for a bad errno. */
int kiq_log_dir_inject_fault(kiq_log_dir_t *d, int err, int64_t after_bytes, bool fsyncs);
/* Makes every fsync of the directory's logs take delay_ms longer (a slow
 * disk; 0: as fast as the disk). Kept apart from the fault above;
 * 0 or -1 for a negative delay. */
int kiq_log_dir_slow_fsyncs(kiq_log_dir_t *d, int64_t delay_ms);
/* Clears the fault and the delay. */
void kiq_log_dir_clear_fault(kiq_log_dir_t *d);

/* The log's write path asks before writing n bytes: how many may go in
 * (n when no fault applies); when fewer, *err is the errno to fail with.
 * NULL is fine. */
size_t kiq_log_dir_write_allowance(kiq_log_dir_t *d, size_t n, int *err);
/* Before an fsync: waits the delay injected, if any; the errno it must
 * fail with, 0 when none. */
int kiq_log_dir_sync_fault(kiq_log_dir_t *d);

#endif
