-- AlterReplicaLogDirs (34): moves replicas between this broker's log
-- directories (KIP-113). Served from v1 (Kafka 4.0's floor; v1 is v0 on
-- the wire); v2 is flexible.

return {
  key = 34, name = "AlterReplicaLogDirs",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "dirs", "[]", fields = {
        { "path", "string" },       -- absolute, as DescribeLogDirs names it
        { "topics", "[]", fields = {
            { "name", "string" },
            { "partitions", "[]int32" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
        } },
    } },
  },
}
