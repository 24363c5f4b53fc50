-- Helpers every interceptor state loads (embedded into the engine at build
-- time, see engine/lua/hook_answers.h): which topics a decoded request
-- names, and the error response that mirrors a request. Plain Lua over the
-- tables the generated converters make, so one description per API serves
-- every version. Field names are those of the schemas in
-- engine/proto/schema; an API missing from the tables still gets the
-- top-level error_code (where its response has one).
local H = {}
-- Where a request names topics: a path of array fields ending with the
-- element's name field (no name field: the elements are the names).
local topic_paths = {
  Produce = { { 'topic_data', 'name' } },
  Fetch = { { 'topics', 'topic' } },
  ListOffsets = { { 'topics', 'name' } },
  Metadata = { { 'topics', 'name' } },
  OffsetCommit = { { 'topics', 'name' } },
  OffsetFetch = { { 'topics', 'name' }, { 'groups', 'topics', 'name' } },
  CreateTopics = { { 'topics', 'name' } },
  DeleteTopics = { { 'topics', 'name' }, { 'topic_names' } },
  DeleteRecords = { { 'topics', 'name' } },
  OffsetForLeaderEpoch = { { 'topics', 'topic' } },
  OffsetDelete = { { 'topics', 'name' } },
}
-- config resources of type 2 are topics
local resource_apis = { DescribeConfigs = true, AlterConfigs = true,
  IncrementalAlterConfigs = true }
local function collect(list, path, i, out)
  if type(list) ~= 'table' then return end
  for _, e in ipairs(list) do
    if i > #path then
      if type(e) == 'string' then out[#out + 1] = e end
    elseif type(e) == 'table' then
      if i == #path then
        if type(e[path[i]]) == 'string' then out[#out + 1] = e[path[i]] end
      else
        collect(e[path[i]], path, i + 1, out)
      end
    end
  end
end
function H.topics(api, req)
  local names = {}
  for _, path in ipairs(topic_paths[api] or {}) do collect(req[path[1]], path, 2, names) end
  if resource_apis[api] and type(req.resources) == 'table' then
    for _, r in ipairs(req.resources) do
      if r.resource_type == 2 then names[#names + 1] = r.resource_name end
    end
  end
  local seen, out = {}, {}
  for _, n in ipairs(names) do
    if not seen[n] then seen[n] = true; out[#out + 1] = n end
  end
  return out
end
-- How an error answer mirrors its request: { request array, response
-- array, copy = { request field = response field }, set = { response
-- field = value }, inner = <the same for the nested array> }; `value`
-- names the response field that takes an element which is itself the
-- value (lists of ints or strings). `set` overrides defaults of 0 that
-- would read as real offsets. error_code goes on every level: the
-- converter ignores fields a version does not have.
local configs = { resource_type = 'resource_type', resource_name = 'resource_name' }
local function partitions(index, set)
  return { 'partitions', 'partitions', copy = { [index] = index }, set = set }
end
local answers = {
  Produce = { { 'topic_data', 'responses', copy = { name = 'name' },
    inner = { 'partition_data', 'partition_responses', copy = { index = 'index' },
      set = { base_offset = -1 } } } },
  Fetch = { { 'topics', 'responses', copy = { topic = 'topic' },
    inner = { 'partitions', 'partitions', copy = { partition = 'partition_index' },
      set = { high_watermark = -1, last_stable_offset = -1, log_start_offset = -1,
        records = '' } } } },
  ListOffsets = { { 'topics', 'topics', copy = { name = 'name' },
    inner = partitions('partition_index') } },
  Metadata = { { 'topics', 'topics', copy = { name = 'name', topic_id = 'topic_id' } } },
  OffsetCommit = { { 'topics', 'topics', copy = { name = 'name' },
    inner = partitions('partition_index') } },
  OffsetFetch = {
    { 'topics', 'topics', copy = { name = 'name' },
      inner = { 'partition_indexes', 'partitions', value = 'partition_index',
        set = { committed_offset = -1 } } },
    { 'groups', 'groups', copy = { group_id = 'group_id' },
      inner = { 'topics', 'topics', copy = { name = 'name' },
        inner = { 'partition_indexes', 'partitions', value = 'partition_index',
          set = { committed_offset = -1 } } } } },
  CreateTopics = { { 'topics', 'topics', copy = { name = 'name' } } },
  DeleteTopics = { { 'topics', 'responses', copy = { name = 'name', topic_id = 'topic_id' } },
    { 'topic_names', 'responses', value = 'name' } },
  DeleteRecords = { { 'topics', 'topics', copy = { name = 'name' },
    inner = partitions('partition_index', { low_watermark = -1 }) } },
  OffsetForLeaderEpoch = { { 'topics', 'topics', copy = { topic = 'topic' },
    inner = partitions('partition') } },
  OffsetDelete = { { 'topics', 'topics', copy = { name = 'name' },
    inner = partitions('partition_index') } },
  DescribeConfigs = { { 'resources', 'results', copy = configs } },
  AlterConfigs = { { 'resources', 'responses', copy = configs } },
  IncrementalAlterConfigs = { { 'resources', 'responses', copy = configs } },
}
local function mirror(spec, list, code)
  local out = {}
  if type(list) ~= 'table' then return out end
  for i, e in ipairs(list) do
    local r = { error_code = code }
    if spec.value then
      r[spec.value] = e
    elseif type(e) == 'table' then
      for from, to in pairs(spec.copy or {}) do r[to] = e[from] end
      if spec.inner then r[spec.inner[2]] = mirror(spec.inner, e[spec.inner[1]], code) end
    end
    for k, v in pairs(spec.set or {}) do r[k] = v end
    out[i] = r
  end
  return out
end
function H.error_response(api, req, code)
  local resp = { error_code = code }
  for _, spec in ipairs(answers[api] or {}) do
    if req[spec[1]] ~= nil then resp[spec[2]] = mirror(spec, req[spec[1]], code) end
  end
  return resp
end
-- Whether a request names partition p of topic (a fault rule's pick),
-- read from the same descriptions: the element's topic name is the field
-- copied to the response's name or topic, its partitions the inner array.
function H.names_partition(api, req, topic, p)
  for _, spec in ipairs(answers[api] or {}) do
    local inner = spec.inner
    local name_field
    for from, to in pairs(spec.copy or {}) do
      if to == 'name' or to == 'topic' then name_field = from end
    end
    if inner and name_field and type(req[spec[1]]) == 'table' then
      local index_field = next(inner.copy or {})
      for _, e in ipairs(req[spec[1]]) do
        if type(e) == 'table' and e[name_field] == topic and type(e[inner[1]]) == 'table' then
          for _, pe in ipairs(e[inner[1]]) do
            local idx = inner.value and pe or (type(pe) == 'table' and pe[index_field])
            if idx == p then return true end
          end
        end
      end
    end
  end
  return false
end
return H
