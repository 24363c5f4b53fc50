/* The embedded metadata store: Kafka's KRaft metadata log, the partition
 * `__cluster_metadata-0` in a log directory, as a partition log of its own
 * (engine/log) holding RecordBatch v2 batches of metadata records (framing
 * in metadata_record.h). Each append is one batch, so recovery's cut of a
 * torn tail drops whole appends; each append is fsynced before it returns.
 * The log is never subject to retention.
 *
 * Differences from Kafka's log: no Raft control records (LeaderChange,
 * snapshot headers), no quorum-state file and no snapshots, so a restart
 * replays the whole log; batches carry partition leader epoch 0.
 *
 * The store belongs to the controller thread (metadata_store.h). */
#ifndef KIQ_CONTROLLER_METADATA_LOG_H
#define KIQ_CONTROLLER_METADATA_LOG_H

#include "controller/metadata_store.h"
#include "log/log_names.h"

#define KIQ_METADATA_PARTITION_DIR "__cluster_metadata-0"

/* Opens (creating if needed) `<dir>/__cluster_metadata-0`. Every batch is
 * checked on open as after an unclean shutdown (the log is small and a
 * wrong image costs more than the scan): a torn tail is cut off and
 * logged. NULL with the reason on failure. */
kiq_metadata_store_t *kiq_metadata_log_new(const char *dir);

/* The offset the next append will get (the log end offset); -1 when s is
 * not a metadata log. */
int64_t kiq_metadata_log_end_offset(kiq_metadata_store_t *s);

#endif
