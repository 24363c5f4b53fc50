-- AlterUserScramCredentials (51): SCRAM credentials deleted and set
-- (KIP-554); the client sends the salted password, the controller keeps
-- the keys derived from it. One result per user named.
return {
  key = 51, name = "AlterUserScramCredentials",
  versions = "0",
  flexible = "0+",
  request = {
    { "deletions", "[]", fields = {
        { "name", "string" },
        { "mechanism", "int8" },
    } },
    { "upsertions", "[]", fields = {
        { "name", "string" },
        { "mechanism", "int8" },
        { "iterations", "int32" },
        { "salt", "bytes" },
        { "salted_password", "bytes" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "user", "string" },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
