-- WriteTxnMarkers (27): a transaction coordinator has the leaders of a
-- transaction's partitions write its COMMIT or ABORT marker. Broker to
-- broker; v1+ is flexible (Kafka 4.0 serves only v1).

return {
  key = 27, name = "WriteTxnMarkers",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "markers", "[]", fields = {
        { "producer_id", "int64" },
        { "producer_epoch", "int16" },
        { "transaction_result", "bool" },
        { "topics", "[]", fields = {
            { "name", "string" },
            { "partition_indexes", "[]int32" },
        } },
        { "coordinator_epoch", "int32" },
    } },
  },
  response = {
    { "markers", "[]", fields = {
        { "producer_id", "int64" },
        { "topics", "[]", fields = {
            { "name", "string" },
            { "partitions", "[]", fields = {
                { "partition_index", "int32" },
                { "error_code", "int16" },
            } },
        } },
    } },
  },
}
