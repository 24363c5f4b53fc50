-- KRaft metadata record type 7 (__cluster_metadata): the broker with this
-- id and epoch is fenced (it stopped heartbeating or asked to be); it
-- leads nothing until unfenced.
return {
  name = "FenceBrokerRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "id", "int32" },
    { "epoch", "int64" },
  },
}
