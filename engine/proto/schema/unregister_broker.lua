-- UnregisterBroker (64): an operator removes a broker's registration
-- (KIP-500's decommissioning, Admin.unregisterBroker); its leaderships
-- move and it leaves the cluster's metadata until it registers again.
-- Brokers forward it to the controller; flexible from v0.

return {
  key = 64, name = "UnregisterBroker",
  versions = "0",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
  },
}
