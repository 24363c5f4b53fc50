-- UpdateFeatures (57): an operator finalizes feature levels for the whole
-- cluster (kafka-features upgrade / downgrade, Admin.updateFeatures). The
-- controller decides; brokers forward it there. v1 replaces allow_downgrade
-- with upgrade_type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and
-- adds validate_only; v2 answers with the top-level error only. All
-- flexible.

return {
  key = 57, name = "UpdateFeatures",
  versions = "0-2",
  flexible = "0+",
  request = {
    { "timeout_ms", "int32", default = 60000 },
    { "feature_updates", "[]", fields = {
        { "feature", "string" },
        { "max_version_level", "int16" },
        { "allow_downgrade", "bool", v = "0" },
        { "upgrade_type", "int8", v = "1+", default = 1 },
    } },
    { "validate_only", "bool", v = "1+" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "results", "[]", v = "0-1", fields = {
        { "feature", "string" },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
