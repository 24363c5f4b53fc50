-- DescribeDelegationToken (41): the tokens of the given owners (null: all),
-- with their HMACs and renewers; v3 adds the requester (KIP-373). v0 is
-- gone since Kafka 4.0; v2 is flexible.
return {
  key = 41, name = "DescribeDelegationToken",
  versions = "1-3",
  flexible = "2+",
  request = {
    { "owners", "[]", null = "0+", fields = {
        { "principal_type", "string" },
        { "principal_name", "string" },
    } },
    -- KafkaIQ's own, tagged: the client's principal (Type:name) where a
    -- broker forwarded the request to the active controller, which acts for
    -- it; honoured only from a node (ClusterAction on the control plane).
    { "kafkaiq_requester", "string", v = "2+", null = "2+", default = "null", tag = 10000, tagged = "2+" },
  },
  response = {
    { "error_code", "int16" },
    { "tokens", "[]", fields = {
        { "principal_type", "string" },
        { "principal_name", "string" },
        { "token_requester_principal_type", "string", v = "3+" },
        { "token_requester_principal_name", "string", v = "3+" },
        { "issue_timestamp", "int64" },
        { "expiry_timestamp", "int64" },
        { "max_timestamp", "int64" },
        { "token_id", "string" },
        { "hmac", "bytes" },
        { "renewers", "[]", fields = {
            { "principal_type", "string" },
            { "principal_name", "string" },
        } },
    } },
    { "throttle_time_ms", "int32" },
  },
}
