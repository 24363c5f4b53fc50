-- KRaft metadata record type 11 (__cluster_metadata): a user's SCRAM
-- credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), as
-- the server keeps it: salt, stored key, server key, iterations (KIP-554;
-- the form Kafka writes since 3.5).
return {
  name = "UserScramCredentialRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "name", "string" },
    { "mechanism", "int8" },
    { "salt", "bytes" },
    { "stored_key", "bytes" },
    { "server_key", "bytes" },
    { "iterations", "int32" },
  },
}
