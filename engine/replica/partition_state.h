/* A partition's state as /api/state and b:state() show it, built once
 * (core/view.h): partition, hosted, leader_epoch and, when hosted here,
 * its offsets (log start, log end, high watermark, last stable), aborted
 * transactions, size, offline, damaged = {segment, why} (what the scrubber
 * found), data_loss = {from, to, at_ms, findings, why} (until
 * acknowledged), its replication state (role "leader", "follower" or
 * "none", leader, partition_epoch, replicas, isr and, on the leader,
 * followers = {"<broker id>": {leo}}), segment_count and segments (the
 * newest, oldest first, each {base_offset, next_offset, size,
 * max_timestamp}). Any thread. */
#ifndef KIQ_REPLICA_PARTITION_STATE_H
#define KIQ_REPLICA_PARTITION_STATE_H

#include "core/view.h"
#include "log/topics.h"

/* Partition p's state into v (an object's fields); newest_segments: how
 * many of the newest segments to list (< 0: all). */
void kiq_partition_state_view(kiq_partition_t *p, int newest_segments, const kiq_view_t *v);

#endif
