-- ApiVersions (18): the first request every client sends, to learn which
-- versions of each API the broker speaks. 0-4 covers kafka-python (v0),
-- kafkajs (v2, falling back to v1 and v0), librdkafka and platformatic (v3)
-- and Java 3.9+ (v4). v3 is flexible; its response carries the feature
-- lists as tagged fields. v4 changes nothing on the wire (it lets features
-- with a minimum level of 0 be listed).

return {
  key = 18, name = "ApiVersions",
  versions = "0-4",
  flexible = "3+",
  request = {
    { "client_software_name", "string", v = "3+" },
    { "client_software_version", "string", v = "3+" },
  },
  response = {
    { "error_code", "int16" },
    { "api_keys", "[]", fields = {
        { "api_key", "int16" },
        { "min_version", "int16" },
        { "max_version", "int16" },
    } },
    { "throttle_time_ms", "int32", v = "1+" },
    -- Feature flags, tagged, so older v3 clients skip them.
    { "supported_features", "[]", v = "3+", tag = 0, tagged = "3+", fields = {
        { "name", "string", v = "3+" },
        { "min_version", "int16", v = "3+" },
        { "max_version", "int16", v = "3+" },
    } },
    { "finalized_features_epoch", "int64", v = "3+", tag = 1, tagged = "3+", default = -1 },
    { "finalized_features", "[]", v = "3+", tag = 2, tagged = "3+", fields = {
        { "name", "string", v = "3+" },
        { "max_version_level", "int16", v = "3+" },
        { "min_version_level", "int16", v = "3+" },
    } },
    { "zk_migration_ready", "bool", v = "3+", tag = 3, tagged = "3+" },
  },
}
