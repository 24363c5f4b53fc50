-- AddPartitionsToTxn (24): a transactional producer names the partitions
-- it is about to write in its transaction. v0-3 are the clients' form
-- (librdkafka sends v0); v4 is the brokers' (KIP-890 part 1): several
-- transactions at once, and verify_only, a partition leader asking whether
-- a partition is in a transaction before it takes that transaction's
-- first records there; without verify_only (transactions v2) the leader
-- has the partition added for a produce v12. v2 adds PRODUCER_FENCED; v3+
-- is flexible; v5 only adds TRANSACTION_ABORTABLE.

return {
  key = 24, name = "AddPartitionsToTxn",
  versions = "0-5",
  flexible = "3+",
  request = {
    { "v3_and_below_transactional_id", "string", v = "0-3" },
    { "v3_and_below_producer_id", "int64", v = "0-3" },
    { "v3_and_below_producer_epoch", "int16", v = "0-3" },
    { "v3_and_below_topics", "[]", v = "0-3", fields = {
        { "name", "string" },
        { "partitions", "[]int32" },
    } },
    { "transactions", "[]", v = "4+", fields = {
        { "transactional_id", "string" },
        { "producer_id", "int64" },
        { "producer_epoch", "int16" },
        { "verify_only", "bool" },
        { "topics", "[]", fields = {
            { "name", "string" },
            { "partitions", "[]int32" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16", v = "4+" },
    { "results_by_transaction", "[]", v = "4+", fields = {
        { "transactional_id", "string" },
        { "topic_results", "[]", fields = {
            { "name", "string" },
            { "results_by_partition", "[]", fields = {
                { "partition_index", "int32" },
                { "partition_error_code", "int16" },
            } },
        } },
    } },
    { "results_by_topic_v3_and_below", "[]", v = "0-3", fields = {
        { "name", "string" },
        { "results_by_partition", "[]", fields = {
            { "partition_index", "int32" },
            { "partition_error_code", "int16" },
        } },
    } },
  },
}
