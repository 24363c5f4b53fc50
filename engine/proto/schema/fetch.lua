-- Fetch (1): 4-17. librdkafka needs v4 (RecordBatch v2) and v10 (zstd);
-- v12 is flexible and adds the tagged divergence/leader/snapshot hints.
-- v13+ names topics by id (KIP-516; an unknown one is UNKNOWN_TOPIC_ID);
-- v15 moves a follower's id into the tagged replica_state; v16 answers
-- NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the leader's endpoint;
-- v17 lets a follower name its log directory.

return {
  key = 1, name = "Fetch",
  versions = "4-17",
  flexible = "12+",
  request = {
    -- Tagged, so it sits in the request's tag section, not here on the wire.
    { "cluster_id", "string", v = "12+", null = "12+", tag = 0, tagged = "12+", default = "null" },
    { "replica_id", "int32", v = "0-14", default = -1 }, -- -1: a consumer, else a follower's broker id
    { "replica_state", "struct", v = "15+", tag = 1, tagged = "15+", fields = {
        { "replica_id", "int32", v = "15+", default = -1 },
        { "replica_epoch", "int64", v = "15+", default = -1 },
    } },
    { "max_wait_ms", "int32" },
    { "min_bytes", "int32" },
    { "max_bytes", "int32", v = "3+", default = 2147483647 },
    { "isolation_level", "int8", v = "4+" },
    { "session_id", "int32", v = "7+" },
    { "session_epoch", "int32", v = "7+", default = -1 },
    { "topics", "[]", fields = {
        { "topic", "string", v = "0-12" },
        { "topic_id", "uuid", v = "13+" },
        { "partitions", "[]", fields = {
            { "partition", "int32" },
            { "current_leader_epoch", "int32", v = "9+", default = -1 },
            { "fetch_offset", "int64" },
            { "last_fetched_epoch", "int32", v = "12+", default = -1 },
            { "log_start_offset", "int64", v = "5+", default = -1 },
            { "partition_max_bytes", "int32" },
            { "replica_directory_id", "uuid", v = "17+", tag = 0, tagged = "17+" },
        } },
    } },
    { "forgotten_topics_data", "[]", v = "7+", fields = {
        { "topic", "string", v = "7-12" },
        { "topic_id", "uuid", v = "13+" },
        { "partitions", "[]int32", v = "7+" },
    } },
    { "rack_id", "string", v = "11+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16", v = "7+" },
    { "session_id", "int32", v = "7+" },
    { "responses", "[]", fields = {
        { "topic", "string", v = "0-12" },
        { "topic_id", "uuid", v = "13+" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "high_watermark", "int64" },
            { "last_stable_offset", "int64", v = "4+", default = -1 },
            { "log_start_offset", "int64", v = "5+", default = -1 },
            -- Tagged hints for the follower/consumer; absent unless set.
            { "diverging_epoch", "struct", v = "12+", tag = 0, tagged = "12+", fields = {
                { "epoch", "int32", v = "12+", default = -1 },
                { "end_offset", "int64", v = "12+", default = -1 },
            } },
            { "current_leader", "struct", v = "12+", tag = 1, tagged = "12+", fields = {
                { "leader_id", "int32", v = "12+", default = -1 },
                { "leader_epoch", "int32", v = "12+", default = -1 },
            } },
            { "snapshot_id", "struct", v = "12+", tag = 2, tagged = "12+", fields = {
                { "end_offset", "int64", default = -1 },
                { "epoch", "int32", default = -1 },
            } },
            { "aborted_transactions", "[]", v = "4+", null = "4+", fields = {
                { "producer_id", "int64", v = "4+" },
                { "first_offset", "int64", v = "4+" },
            } },
            { "preferred_read_replica", "int32", v = "11+", default = -1 },
            { "records", "records", null = "0+" },
        } },
    } },
    -- the leaders named in current_leader (v16+)
    { "node_endpoints", "[]", v = "16+", tag = 0, tagged = "16+", fields = {
        { "node_id", "int32", v = "16+" },
        { "host", "string", v = "16+" },
        { "port", "int32", v = "16+" },
        { "rack", "string", v = "16+", null = "16+", default = "null" },
    } },
  },
}
