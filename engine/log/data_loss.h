/* Data loss, remembered where it survives restarts (beyond Kafka, which
 * only logs it once): when a partition's log is found without records it
 * once held (a segment file cut under the running broker, or a log that
 * opens short of the recovery point its directory checkpointed, or with a
 * segment file missing between others), a line goes to the partition
 * directory's KIQ_DATA_LOSS_FILE:
 *
 *     <first offset lost> <offset after the last lost> <ms since the epoch> <what was found>
 *
 * While that file is there the partition is marked (b:state(), the HTTP
 * state, kafkaiq_log_data_loss_partitions) and `kafkaiq verify` fails on
 * it, across any number of restarts; an operator who has dealt with the
 * loss acknowledges it (`kafkaiq verify --acknowledge`), which removes the
 * file. The broker keeps serving what is left meanwhile, as Kafka does.
 *
 * Plain file operations on the calling thread; the partition log keeps its
 * copy under its mutex. */
#ifndef KIQ_LOG_DATA_LOSS_H
#define KIQ_LOG_DATA_LOSS_H

#include <stdbool.h>
#include <stdint.h>

#define KIQ_DATA_LOSS_FILE "kafkaiq-data-loss"

/* The first finding and how many there are. A value owned by the caller. */
typedef struct kiq_data_loss {
    int64_t from, to; /* the offsets lost, [from, to) */
    int64_t at_ms;    /* when it was found */
    int findings;     /* lines in the file (0: not marked) */
    char why[256];
} kiq_data_loss_t;

/* Adds a finding to partition_dir's file (unless the same range is there
 * already), synced with its directory; *out (may be NULL) gets the file's
 * first finding and count. 1 when added, 0 when known, -1 when it cannot
 * be written. */
int kiq_data_loss_record(const char *partition_dir, int64_t from, int64_t to, const char *why,
                         kiq_data_loss_t *out);
/* 1 with *out when partition_dir's file is there, 0 when it is not, -1
 * when it cannot be read (a line that does not parse is shown whole as
 * why, with from and to -1: the partition stays marked). */
int kiq_data_loss_load(const char *partition_dir, kiq_data_loss_t *out);
/* Removes partition_dir's file: 0, 1 when there was none, -1. */
int kiq_data_loss_acknowledge(const char *partition_dir);
/* Whether partition_dir's file is still there (an operator may have
 * acknowledged meanwhile), without reading it; true when that cannot be
 * told. */
bool kiq_data_loss_marked(const char *partition_dir);

#endif
