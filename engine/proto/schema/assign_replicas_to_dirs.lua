-- AssignReplicasToDirs (73): 0. A broker tells the controller which of its
-- log directories holds each of its replicas (KIP-858). A replica assigned
-- to the LOST directory id (…AQ, Kafka's DirectoryId.LOST) cannot be
-- trusted to write: the controller moves its leadership and takes it out
-- of the ISR. KafkaIQ's brokers send it for replicas in a full or offline
-- directory and for damaged logs, and assign them back when they recover.
-- Broker to controller only; flexible from v0.

return {
  key = 73, name = "AssignReplicasToDirs",
  versions = "0",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64", default = -1 },
    { "directories", "[]", fields = {
        { "id", "uuid" },
        { "topics", "[]", fields = {
            { "topic_id", "uuid" },
            { "partitions", "[]", fields = {
                { "partition_index", "int32" },
            } },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "directories", "[]", fields = {
        { "id", "uuid" },
        { "topics", "[]", fields = {
            { "topic_id", "uuid" },
            { "partitions", "[]", fields = {
                { "partition_index", "int32" },
                { "error_code", "int16" },
            } },
        } },
    } },
  },
}
