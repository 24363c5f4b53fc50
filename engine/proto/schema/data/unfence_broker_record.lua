-- KRaft metadata record type 8 (__cluster_metadata): the broker with this
-- id and epoch caught up with the metadata and may lead partitions.
return {
  name = "UnfenceBrokerRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "id", "int32" },
    { "epoch", "int64" },
  },
}
