-- SaslAuthenticate (36): one SASL token each way (KIP-152); v1 adds the
-- session's lifetime (KIP-368), v2 is flexible.

return {
  key = 36, name = "SaslAuthenticate",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "auth_bytes", "bytes" },
  },
  response = {
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "auth_bytes", "bytes" },
    { "session_lifetime_ms", "int64", v = "1+" },
  },
}
