-- BrokerRegistration (62): 0-1. A starting broker registers its listeners
-- and supported features with the controller and gets its broker epoch.
-- Broker to controller only, not advertised to clients. Flexible from v0;
-- v1 adds the ZooKeeper-migration flag, v2 the log directories' ids
-- (KIP-858), by which the controller tells a restart of a broker (its
-- directories, which only one live process can hold) from a second process
-- claiming its id. v3+ (previous epoch) are left out.

return {
  key = 62, name = "BrokerRegistration",
  versions = "0-2",
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
    { "log_dirs", "[]uuid", v = "2+" }, -- directory.id of each log directory
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "broker_epoch", "int64", default = -1 },
  },
}
