-- KRaft metadata record type 15 (__cluster_metadata): a block of producer
-- ids was given to a broker; every id below next_producer_id is taken.
return {
  name = "ProducerIdsRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64" },
    { "next_producer_id", "int64" },
  },
}
