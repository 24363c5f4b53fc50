-- DeleteTopics (20): 0-6; platformatic uses only v6, which names topics by
-- struct (name or id) instead of a plain list of names. v4+ is flexible.

return {
  key = 20, name = "DeleteTopics",
  versions = "0-6",
  flexible = "4+",
  request = {
    { "topics", "[]", v = "6+", fields = {
        { "name", "string", v = "6+", null = "6+", default = "null" },
        { "topic_id", "uuid", v = "6+" },
    } },
    { "topic_names", "[]string", v = "0-5" },
    { "timeout_ms", "int32" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "responses", "[]", fields = {
        { "name", "string", null = "6+" },
        { "topic_id", "uuid", v = "6+" },
        { "error_code", "int16" },
        { "error_message", "string", v = "5+", null = "5+", default = "null" },
    } },
  },
}
