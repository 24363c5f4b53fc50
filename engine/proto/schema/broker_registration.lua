-- BrokerRegistration (62): 0-1. A starting broker registers its listeners
-- and supported features with the controller and gets its broker epoch.
-- Broker to controller only, not advertised to clients. Flexible from v0;
-- v1 adds the ZooKeeper-migration flag. v2+ (log directory ids, previous
-- epoch) are left out.

return {
  key = 62, name = "BrokerRegistration",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
    { "cluster_id", "string" },
    { "incarnation_id", "uuid" }, -- new on every start of the broker process
    { "listeners", "[]", fields = {
        { "name", "string" },
        { "host", "string" },
        { "port", "uint16" },
        { "security_protocol", "int16" },
    } },
    { "features", "[]", fields = {
        { "name", "string" },
        { "min_supported_version", "int16" },
        { "max_supported_version", "int16" },
    } },
    { "rack", "string", null = "0+", default = "null" },
    { "is_migrating_zk_broker", "bool", v = "1+" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "broker_epoch", "int64", default = -1 },
  },
}
