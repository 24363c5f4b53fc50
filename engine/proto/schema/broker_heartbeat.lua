-- BrokerHeartbeat (63): 0. A registered broker's periodic sign of life to
-- the controller, which answers whether the broker is fenced or should shut
-- down. Broker to controller only, not advertised to clients. Flexible from
-- v0. v1 (offline log directories, tagged) is left out.

return {
  key = 63, name = "BrokerHeartbeat",
  versions = "0",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64", default = -1 },
    { "current_metadata_offset", "int64" }, -- how far the broker has applied the metadata log
    { "want_fence", "bool" },
    { "want_shut_down", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "is_caught_up", "bool" },
    { "is_fenced", "bool", default = true },
    { "should_shut_down", "bool" },
  },
}
