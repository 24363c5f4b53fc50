-- KRaft metadata record type 14 (__cluster_metadata): one quota value of
-- a client entity set, or removed (remove true). A null entity name is
-- that entity type's default.
return {
  name = "ClientQuotaRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "entity", "[]", fields = {
        { "entity_type", "string" },
        { "entity_name", "string", null = "0+" },
    } },
    { "key", "string" },
    { "value", "float64" },
    { "remove", "bool" },
  },
}
