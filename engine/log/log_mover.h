/* Moving a partition between the broker's log directories
 * (AlterReplicaLogDirs, KIP-113; Kafka's ReplicaAlterLogDirsThread): a
 * "future" copy `<topic>-<p>.<id>-future` is made in the target directory
 * and filled from the current log by a thread of its own while the
 * current one keeps serving; once it has caught up, appends to the
 * current log are refused for the moment it takes to copy the last
 * batches, the current directory is renamed `<topic>-<p>.<id>-delete`,
 * the copy takes the partition's name, the partition's slot gets the
 * new log and the old one is deleted. An append refused in that moment
 * is retried on the new log by the leader's path (replica/leader.c), so
 * producers see nothing of it. A stop before the swap abandons the copy;
 * one between the two renames is finished at the next open.
 *
 * The mover is owned by the broker from new to free; moves are asked for
 * and looked at from any thread (its mutex), the copying happens on its
 * worker thread only. */
#ifndef KIQ_LOG_LOG_MOVER_H
#define KIQ_LOG_LOG_MOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "log/topics.h"

typedef struct kiq_log_mover kiq_log_mover_t;

/* Starts the thread (idle until asked). NULL with the reason. */
kiq_log_mover_t *kiq_log_mover_new(kiq_topics_t *topics, const kiq_config_t *config);
/* Stops the thread; copies not swapped yet are deleted (their partitions
 * stay where they were). Before the topics are closed. NULL is fine. */
void kiq_log_mover_free(kiq_log_mover_t *m);

/* Any thread: moves topic's partition to the registry's directory dir
 * (one asked before for another directory is cancelled). Kafka error
 * code: NONE (moving, or there already), REPLICA_NOT_AVAILABLE when it is
 * not hosted here (it is then made in dir when it comes, as Kafka's
 * preferred log directory), KAFKA_STORAGE_ERROR when dir is offline,
 * UNKNOWN_SERVER_ERROR when out of memory. */
int kiq_log_mover_move(kiq_log_mover_t *m, kiq_topic_t *topic, int32_t partition, int dir);

/* A future copy as DescribeLogDirs shows it: in which directory, its
 * size, and how far it trails the current log. */
typedef struct kiq_log_future {
    int dir;
    uint64_t size;
    int64_t lag;
} kiq_log_future_t;
/* Any thread: whether topic's partition has a future copy, into *out. */
bool kiq_log_mover_future(kiq_log_mover_t *m, const kiq_topic_t *topic, int32_t partition, kiq_log_future_t *out);

#endif
