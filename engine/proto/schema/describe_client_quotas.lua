-- DescribeClientQuotas (48): the quotas of the entities (user, client-id,
-- ip) matching every component filter (KIP-546). match_type 0 an exact
-- name, 1 the entity's default, 2 any; strict: only entities of exactly
-- the filtered types.
return {
  key = 48, name = "DescribeClientQuotas",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "components", "[]", fields = {
        { "entity_type", "string" },
        { "match_type", "int8" },
        { "match", "string", null = "0+" },
    } },
    { "strict", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+" },
    { "entries", "[]", null = "0+", fields = {
        { "entity", "[]", fields = {
            { "entity_type", "string" },
            { "entity_name", "string", null = "0+" },
        } },
        { "values", "[]", fields = {
            { "key", "string" },
            { "value", "float64" },
        } },
    } },
  },
}
