-- InitProducerId (22): 0-5; the idempotent producer needs v0. v2+ is
-- flexible; v5 only adds the TRANSACTION_ABORTABLE error.

return {
  key = 22, name = "InitProducerId",
  versions = "0-5",
  flexible = "2+",
  request = {
    { "transactional_id", "string", null = "0+" },
    { "transaction_timeout_ms", "int32" },
    { "producer_id", "int64", v = "3+", default = -1 },
    { "producer_epoch", "int16", v = "3+", default = -1 },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "producer_id", "int64", default = -1 },
    { "producer_epoch", "int16" },
  },
}
