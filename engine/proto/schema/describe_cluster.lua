-- DescribeCluster (60): the brokers, the controller and the cluster id,
-- as admin clients ask for them (KIP-700). v1 picks brokers or controllers
-- (endpoint_type); v2 can list fenced brokers too. Flexible from v0.

return {
  key = 60, name = "DescribeCluster",
  versions = "0-2",
  flexible = "0+",
  request = {
    { "include_cluster_authorized_operations", "bool" },
    { "endpoint_type", "int8", v = "1+", default = 1 }, -- 1 brokers, 2 controllers
    { "include_fenced_brokers", "bool", v = "2+" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "endpoint_type", "int8", v = "1+", default = 1 },
    { "cluster_id", "string" },
    { "controller_id", "int32", default = -1 },
    { "brokers", "[]", fields = {
        { "broker_id", "int32" },
        { "host", "string" },
        { "port", "int32" },
        { "rack", "string", null = "0+", default = "null" },
        { "is_fenced", "bool", v = "2+" },
    } },
    { "cluster_authorized_operations", "int32", default = -2147483648 },
  },
}
