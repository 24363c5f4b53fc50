-- AllocateProducerIds (67): a broker asks the controller for a block of
-- producer ids (KIP-730), so that no two brokers hand out the same one.
-- Brokers to the controller only; flexible from v0.

return {
  key = 67, name = "AllocateProducerIds",
  versions = "0",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64", default = -1 },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "producer_id_start", "int64" },
    { "producer_id_len", "int32" },
  },
}
