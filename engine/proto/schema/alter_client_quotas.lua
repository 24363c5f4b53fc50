-- AlterClientQuotas (49): quota values set or removed per entity (a user,
-- a client id, both, or their defaults: a null name), all or nothing per
-- entity; one result per entity.
return {
  key = 49, name = "AlterClientQuotas",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "entries", "[]", fields = {
        { "entity", "[]", fields = {
            { "entity_type", "string" },
            { "entity_name", "string", null = "0+" },
        } },
        { "ops", "[]", fields = {
            { "key", "string" },
            { "value", "float64" },
            { "remove", "bool" },
        } },
    } },
    { "validate_only", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "entries", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+" },
        { "entity", "[]", fields = {
            { "entity_type", "string" },
            { "entity_name", "string", null = "0+" },
        } },
    } },
  },
}
