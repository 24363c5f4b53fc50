-- CreateDelegationToken (38): a token for the requester, or from v3 for
-- another owner (KIP-373), its renewers and maximum lifetime (KIP-48). v0
-- is gone since Kafka 4.0 (KIP-896); v2 is flexible.
return {
  key = 38, name = "CreateDelegationToken",
  versions = "1-3",
  flexible = "2+",
  request = {
    { "owner_principal_type", "string", v = "3+", null = "3+", default = "null" },
    { "owner_principal_name", "string", v = "3+", null = "3+", default = "null" },
    { "renewers", "[]", fields = {
        { "principal_type", "string" },
        { "principal_name", "string" },
    } },
    { "max_lifetime_ms", "int64" },
    -- KafkaIQ's own, tagged: the client's principal (Type:name) where a
    -- broker forwarded the request to the active controller, which acts for
    -- it; honoured only from a node (ClusterAction on the control plane).
    { "kafkaiq_requester", "string", v = "2+", null = "2+", default = "null", tag = 10000, tagged = "2+" },
  },
  response = {
    { "error_code", "int16" },
    { "principal_type", "string" },
    { "principal_name", "string" },
    { "token_requester_principal_type", "string", v = "3+" },
    { "token_requester_principal_name", "string", v = "3+" },
    { "issue_timestamp_ms", "int64" },
    { "expiry_timestamp_ms", "int64" },
    { "max_timestamp_ms", "int64" },
    { "token_id", "string" },
    { "hmac", "bytes" },
    { "throttle_time_ms", "int32" },
  },
}
