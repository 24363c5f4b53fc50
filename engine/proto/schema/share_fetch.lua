-- ShareFetch (78): a share group member's fetch from a partition leader
-- (KIP-932). The leader hands out records by acquiring them for the
-- member (AcquiredRecords, each range with its delivery count) under a
-- lock that expires; acknowledgements of earlier deliveries ride along.
-- ShareSessionEpoch 0 opens a share session, -1 closes it, anything else
-- must be the next in sequence. v2 (Kafka 4.2, KIP-1206 and KIP-1222) adds
-- the acquire mode (0 whole batches, 1 exactly max_records) and renewing
-- locks (acknowledge type 4; is_renew_ack: a request that only renews).

local batches = {
  { "first_offset", "int64" },
  { "last_offset", "int64" },
  -- 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v2)
  { "acknowledge_types", "[]int8" },
}

local node_endpoints = {
  { "node_id", "int32" },
  { "host", "string" },
  { "port", "int32" },
  { "rack", "string", null = "0+", default = "null" },
}

return {
  key = 78, name = "ShareFetch",
  versions = "1-2",
  flexible = "0+",
  request = {
    { "group_id", "string", null = "0+", default = "null" },
    { "member_id", "string", null = "0+" },
    { "share_session_epoch", "int32" },
    { "max_wait_ms", "int32" },
    { "min_bytes", "int32" },
    { "max_bytes", "int32", default = 0x7fffffff },
    { "max_records", "int32" },
    { "batch_size", "int32" },
    { "share_acquire_mode", "int8", v = "2+" },
    { "is_renew_ack", "bool", v = "2+" },
    { "topics", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "acknowledgement_batches", "[]", fields = batches },
        } },
    } },
    { "forgotten_topics_data", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "acquisition_lock_timeout_ms", "int32" },
    { "responses", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
            { "acknowledge_error_code", "int16" },
            { "acknowledge_error_message", "string", null = "0+", default = "null" },
            { "current_leader", "struct", fields = {
                { "leader_id", "int32" },
                { "leader_epoch", "int32" },
            } },
            { "records", "records", null = "0+" },
            { "acquired_records", "[]", fields = {
                { "first_offset", "int64" },
                { "last_offset", "int64" },
                { "delivery_count", "int16" },
            } },
        } },
    } },
    { "node_endpoints", "[]", fields = node_endpoints },
  },
}
