-- KRaft metadata record type 22 (__cluster_metadata): a user's SCRAM
-- credential for one mechanism is deleted (KIP-554).
return {
  name = "RemoveUserScramCredentialRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "name", "string" },
    { "mechanism", "int8" },
  },
}
