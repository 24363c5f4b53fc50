-- KRaft metadata record type 26 (__cluster_metadata): a delegation token
-- expired at once (ExpireDelegationToken with a negative period).
return {
  name = "RemoveDelegationTokenRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "token_id", "string" },
  },
}
