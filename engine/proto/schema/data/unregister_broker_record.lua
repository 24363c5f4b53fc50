-- KRaft metadata record type 1 (__cluster_metadata): the broker with this
-- id and epoch is no longer registered (UnregisterBroker).
return {
  name = "UnregisterBrokerRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64" },
  },
}
