-- DescribeUserScramCredentials (50): which SCRAM mechanisms each user has
-- a credential for, and their iterations (KIP-554); users null: all.
return {
  key = 50, name = "DescribeUserScramCredentials",
  versions = "0",
  flexible = "0+",
  request = {
    { "users", "[]", null = "0+", fields = {
        { "name", "string" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "results", "[]", fields = {
        { "user", "string" },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
        { "credential_infos", "[]", fields = {
            { "mechanism", "int8" },
            { "iterations", "int32" },
        } },
    } },
  },
}
