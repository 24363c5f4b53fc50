-- KRaft metadata record type 18 (__cluster_metadata): an ACL binding, named
-- by an id of the controller's so RemoveAccessControlEntryRecord can name it.
return {
  name = "AccessControlEntryRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "id", "uuid" },
    { "resource_type", "int8" },
    { "resource_name", "string" },
    { "pattern_type", "int8" },
    { "principal", "string" },
    { "host", "string" },
    { "operation", "int8" },
    { "permission_type", "int8" },
  },
}
