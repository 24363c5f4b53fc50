-- KRaft metadata record type 0 (__cluster_metadata): a broker's
-- registration with the controller. A newer registration of the same id
-- replaces the older one; the controller gives each a new epoch.
return {
  name = "RegisterBrokerRecord",
  versions = "0-3",
  flexible = "0+",
  fields = {
    { "broker_id", "int32" },
    { "is_migrating_zk_broker", "bool", v = "2+" },
    { "incarnation_id", "uuid" },
    { "broker_epoch", "int64" },
    { "end_points", "[]", fields = {
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
    { "rack", "string", null = "0+" },
    { "fenced", "bool", default = true },
    { "in_controlled_shutdown", "bool", v = "1+" },
    { "log_dirs", "[]uuid", v = "3+", tag = 0, tagged = "3+" },
  },
}
