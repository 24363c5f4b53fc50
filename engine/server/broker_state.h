/* The broker's state as /api/state and b:state() show it, built once
 * (core/view.h), each boundary making its own values:
 *
 *   node_id, cluster_id, port, control_port (with a control plane), running,
 *   cluster, controller (its id), threads = {network, io},
 *   log_dirs = [{path, offline, error?, full?}], offline_log_dirs = [path],
 *   and while it runs:
 *   acceptor = {port, accepted}, processors = [{id, connections, muted,
 *   requests, bytes_in, bytes_out, idle_ns, up_ns}], io = {threads,
 *   busy_ns, up_ns}, control_plane = {port, depth, processor}?,
 *   isr_changes = {shrinks, expands, max_lag}?, controller_view =
 *   {metadata_offset, brokers = [{id, epoch, fenced, host, port}],
 *   partitions = [{topic, partition, leader, leader_epoch, isr}],
 *   unclean_elections}? (on the controller's broker), request_queue =
 *   {depth, bound, muted, waits = {Produce|Fetch = {count, p50_ms,
 *   p99_ms}}}, control_queue = {depth}?, purgatory = {waiting, parked,
 *   tried, expired}, fetch_bytes = {sendfile, copied}, journeys = {kept,
 *   recorded, bytes}?, topics = {[name] = {name, id, partition_count,
 *   partitions = {["0"] = partition state (replica/partition_state.h)}}}.
 *
 * Any thread. */
#ifndef KIQ_SERVER_BROKER_STATE_H
#define KIQ_SERVER_BROKER_STATE_H

#include "core/view.h"
#include "server/broker.h"

/* b's state into v (an object's fields); newest_segments: how many of each
 * partition's newest segments to list (< 0: all). */
void kiq_broker_state_view(kiq_broker_t *b, int newest_segments, const kiq_view_t *v);
/* One partition's state (replica/partition_state.h, no segments) into v:
 * 0, or -1 when the broker is not running or has no such partition. */
int kiq_broker_partition_view(kiq_broker_t *b, const char *topic, int32_t partition, const kiq_view_t *v);

#endif
