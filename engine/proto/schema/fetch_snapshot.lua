-- FetchSnapshot (59): 0-1. A KRaft follower whose fetch offset fell below
-- the leader's log start (Fetch answered with a snapshot_id) copies that
-- snapshot from the leader in chunks, from a byte position (KIP-630). v1
-- adds the follower's directory id and the leaders' endpoints (KIP-853).
-- Between controllers and from brokers; flexible from v0.

return {
  key = 59, name = "FetchSnapshot",
  versions = "0-1",
  flexible = "0+",
  request = {
    -- Tagged, so it sits in the request's tag section, not here on the wire.
    { "cluster_id", "string", null = "0+", default = "null", tag = 0, tagged = "0+" },
    { "replica_id", "int32", default = -1 }, -- the follower
    { "max_bytes", "int32", default = 2147483647 }, -- for all snapshots together
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition", "int32" },
            { "current_leader_epoch", "int32" }, -- -1 when unknown
            { "snapshot_id", "struct", fields = {
                { "end_offset", "int64" },
                { "epoch", "int32" },
            } },
            { "position", "int64" }, -- byte offset in the snapshot
            { "replica_directory_id", "uuid", v = "1+", tag = 0, tagged = "1+" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "index", "int32" },
            { "error_code", "int16" },
            { "snapshot_id", "struct", fields = {
                { "end_offset", "int64" },
                { "epoch", "int32" },
            } },
            { "current_leader", "struct", tag = 0, tagged = "0+", fields = {
                { "leader_id", "int32" }, -- -1 when unknown
                { "leader_epoch", "int32" },
            } },
            { "size", "int64" }, -- of the whole snapshot
            { "position", "int64" }, -- where unaligned_records starts
            -- a byte range of the snapshot, not cut at record boundaries
            { "unaligned_records", "records" },
        } },
    } },
    -- the leaders named in current_leader
    { "node_endpoints", "[]", v = "1+", tag = 0, tagged = "1+", fields = {
        { "node_id", "int32" },
        { "host", "string" },
        { "port", "uint16" },
    } },
  },
}
