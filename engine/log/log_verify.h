/* Checking log files without opening them as logs (nothing is recovered,
 * truncated or rewritten): what `kafkaiq verify DIR` does offline, like
 * Kafka's DumpLogSegments and log-dirs tools, and what the scrubber does
 * to closed segments while the broker runs. On the calling thread. */
#ifndef KIQ_LOG_LOG_VERIFY_H
#define KIQ_LOG_LOG_VERIFY_H

#include <stdint.h>
#include <stdio.h>

/* One segment file's batches, read whole in order: each must frame and
 * match its CRC, its offsets follow the previous batch's (after_offset:
 * the last offset before this segment, -1 for none). A torn tail is damage
 * unless tail_ok (the active segment a crash may leave torn). 0 when
 * sound (*last_offset: its last batch's last offset, or after_offset when
 * empty; *batches counted); 1 with what and where in why; -1 when the file
 * cannot be read. */
int kiq_log_verify_segment(const char *path, int64_t after_offset, int tail_ok, int64_t *last_offset,
                           int64_t *batches, char *why, size_t n);

typedef struct kiq_log_verify_report {
    int partitions, segments;
    int64_t batches;
    int damaged;  /* damage found: CRC, framing, offsets, a missing end */
    int warnings; /* what a broker repairs by itself (a torn active tail, a stale index) */
} kiq_log_verify_report_t;

/* Checks every partition directory under root (a log directory, a data
 * directory of several, or one partition's), and the recovery points the
 * log directories' checkpoints promise. One line per finding and one per
 * partition go to out. 0, or -1 when root cannot be read. */
int kiq_log_verify(const char *root, FILE *out, kiq_log_verify_report_t *rep);

#endif
