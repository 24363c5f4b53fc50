/* Checking log files without opening them as logs (nothing is recovered,
 * truncated or rewritten): what `kafkaiq verify DIR` does offline, like
 * Kafka's DumpLogSegments and log-dirs tools, and what the scrubber does
 * to closed segments while the broker runs. On the calling thread. */
#ifndef KIQ_LOG_LOG_VERIFY_H
#define KIQ_LOG_LOG_VERIFY_H

#include <stdint.h>
#include <stdio.h>

/* What a check of one segment file found. A value owned by the caller. */
typedef struct kiq_log_verify_result {
    int64_t last_offset;  /* of the last sound batch; after_offset when none */
    int64_t batches;      /* sound batches */
    uint64_t sound_bytes; /* where they end: the position of any damage */
    char why[512];        /* what was found and where; "" when sound */
} kiq_log_verify_result_t;

/* One segment file's batches, read whole in order: each must frame and
 * match its CRC, its offsets follow the previous batch's (after_offset:
 * the last offset before this segment, -1 for none). A torn tail is damage
 * unless tail_ok (the active segment a crash may leave torn; then only
 * described in res->why). 0 when sound, 1 when damaged (what and where in
 * res->why), -1 when the file cannot be read. */
int kiq_log_verify_segment(const char *path, int64_t after_offset, int tail_ok, kiq_log_verify_result_t *res);
/* The same over the first size bytes of an open file (a live segment's
 * descriptor, which stays open); name is used in messages. */
int kiq_log_verify_fd(int fd, uint64_t size, const char *name, int64_t after_offset, int tail_ok,
                      kiq_log_verify_result_t *res);

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
