-- PushTelemetry (72): a client's metrics, pushed as its subscription asked
-- (KIP-714), kept by the broker (server/client_telemetry.h).

return {
  key = 72, name = "PushTelemetry",
  versions = "0",
  flexible = "0+",
  request = {
    { "client_instance_id", "uuid" },
    { "subscription_id", "int32" },
    { "terminating", "bool" },
    { "compression_type", "int8" },
    { "metrics", "bytes" }, -- OpenTelemetry MetricsData, protobuf
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
  },
}
