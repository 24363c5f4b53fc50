-- RenewDelegationToken (39): a token, named by its HMAC, lives a period
-- longer (up to its maximum). v0 is gone since Kafka 4.0; v2 is flexible.
return {
  key = 39, name = "RenewDelegationToken",
  versions = "1-2",
  flexible = "2+",
  request = {
    { "hmac", "bytes" },
    { "renew_period_ms", "int64" },
  },
  response = {
    { "error_code", "int16" },
    { "expiry_timestamp_ms", "int64" },
    { "throttle_time_ms", "int32" },
  },
}
