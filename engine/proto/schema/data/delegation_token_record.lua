-- KRaft metadata record type 10 (__cluster_metadata): a delegation token
-- (KIP-48) as created or renewed, its owner, requester and renewers as
-- principals (Type:name) and its timestamps.
return {
  name = "DelegationTokenRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "owner", "string" },
    { "requester", "string" },
    { "renewers", "[]string" },
    { "issue_timestamp", "int64" },
    { "max_timestamp", "int64" },
    { "expiration_timestamp", "int64" },
    { "token_id", "string" },
  },
}
