-- ListConfigResources (74): the config resources a broker knows, by type
-- (KIP-1142); v0 was ListClientMetricsResources (KIP-714), listing the
-- client-metrics resources only. Flexible from v0.

return {
  key = 74, name = "ListConfigResources",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "resource_types", "[]int8", v = "1+" }, -- empty: every type served
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "config_resources", "[]", fields = {
        { "resource_name", "string" },
        { "resource_type", "int8", v = "1+", default = 16 },
    } },
  },
}
