-- KRaft metadata record type 4 (__cluster_metadata): one configuration
-- key of a resource (resource type 2 = topic, 4 = broker); a null value
-- deletes the key.
return {
  name = "ConfigRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "resource_type", "int8" },
    { "resource_name", "string" },
    { "name", "string" },
    { "value", "string", null = "0+" },
  },
}
