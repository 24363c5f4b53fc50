-- RenewDelegationToken (39): a token, named by its HMAC, lives a period
-- longer (up to its maximum). v0 is gone since Kafka 4.0; v2 is flexible.
return {
  key = 39, name = "RenewDelegationToken",
  versions = "1-2",
  flexible = "2+",
  request = {
    { "hmac", "bytes" },
    { "renew_period_ms", "int64" },
    -- KafkaIQ's own, tagged: the client's principal (Type:name) where a
    -- broker forwarded the request to the active controller, which acts for
    -- it; honoured only from a node (ClusterAction on the control plane).
    { "kafkaiq_requester", "string", v = "2+", null = "2+", default = "null", tag = 10000, tagged = "2+" },
  },
  response = {
    { "error_code", "int16" },
    { "expiry_timestamp_ms", "int64" },
    { "throttle_time_ms", "int32" },
  },
}
