/* What a leader does with a partition it leads, the same for every API
 * that writes or reads as leader: find the partition for a client, append
 * to it and move its high watermark. Any thread; the partition's log and
 * replica state have their own locks. */
#ifndef KIQ_REPLICA_LEADER_H
#define KIQ_REPLICA_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/partition_log.h"
#include "log/topics.h"

/* Partition `index` of topic (NULL: unknown) when this broker leads it,
 * with its log loaded once: 0, or UNKNOWN_TOPIC_OR_PARTITION,
 * NOT_LEADER_OR_FOLLOWER (not a replica here, or a follower),
 * KAFKA_STORAGE_ERROR (its directory is offline), and with a client's
 * current_leader_epoch (-1: none) FENCED_LEADER_EPOCH or
 * UNKNOWN_LEADER_EPOCH, in Kafka's order. */
int16_t kiq_replica_led_partition(kiq_topic_t *topic, int32_t index, int32_t current_leader_epoch, kiq_partition_t **part,
                                  kiq_partition_log_t **log);

/* Appends checked batches to part (led here; log its log) stamped with
 * this term's leader epoch, with the idempotent producer's checks, then
 * moves the high watermark as far as the ISR allows (alone in it: past
 * the new records). Announces APPENDED, FLUSHED when flush.messages
 * fsynced, and HW_ADVANCED to the partition's observers; request is the
 * one the batches came with (NULL: none); txn_guard as for
 * kiq_partition_log_append_checked. Returns 0 (res says where; a
 * duplicate appends nothing), a Kafka error code from the producer checks
 * (nothing appended) or -1 with the reason (the write failed). The
 * caller wakes the partition's waiters (followers fetching, produces
 * waiting for the high watermark). */
int kiq_replica_append_as_leader(kiq_partition_t *part, kiq_partition_log_t *log, uint8_t *batches, size_t len,
                                 const void *request, uint64_t txn_guard, kiq_log_append_result_t *res);

/* A transaction marker appended to part (led here; log its log) at this
 * term's leader epoch, announced and the high watermark moved as for
 * kiq_replica_append_as_leader. 0, a Kafka error code from the marker's
 * checks (see kiq_partition_log_append_marker), or -1 with the reason. */
int kiq_replica_append_marker_as_leader(kiq_partition_t *part, kiq_partition_log_t *log, const kiq_txn_marker_t *m,
                                        kiq_log_append_result_t *res);

#endif
