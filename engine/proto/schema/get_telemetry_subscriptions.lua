-- GetTelemetrySubscriptions (71): a client asks which of its metrics the
-- broker wants pushed (KIP-714): kafkaiq.telemetry.metrics, every
-- kafkaiq.telemetry.push.interval.ms (api/telemetry.c).

return {
  key = 71, name = "GetTelemetrySubscriptions",
  versions = "0",
  flexible = "0+",
  request = {
    { "client_instance_id", "uuid" }, -- zero on the first request
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "client_instance_id", "uuid" }, -- assigned when the request's was zero
    { "subscription_id", "int32" },
    { "accepted_compression_types", "[]int8" },
    { "push_interval_ms", "int32" },
    { "telemetry_max_bytes", "int32" },
    { "delta_temporality", "bool" },
    { "requested_metrics", "[]string" }, -- name prefixes; empty: none, [""]: all
  },
}
