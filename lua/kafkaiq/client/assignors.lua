-- Partition assignors for consumer groups: the group leader runs one over
-- every member's subscription. Each assignor is { name = "...", assign = fn }
-- with fn(members, partitions_per_topic) -> { [member_id] = { [topic] = {p, ...} } }
-- where members = { { member_id =, group_instance_id = (optional), topics = {...} }, ... }
-- and partitions_per_topic = { [topic] = partition count }. Users may pass a
-- table of the same shape; validate() checks what any assignor returns.

local M = {}

-- Kafka's member order (its MemberInfo): static members first, by group
-- instance id, then dynamic members by member id. Keeping static members in
-- a fixed place keeps their partitions across restarts.
local function member_before(a, b)
  if a.group_instance_id and b.group_instance_id then
    if a.group_instance_id ~= b.group_instance_id then return a.group_instance_id < b.group_instance_id end
    return a.member_id < b.member_id
  end
  if a.group_instance_id then return true end
  if b.group_instance_id then return false end
  return a.member_id < b.member_id
end

local function sorted_members(members)
  local list = {}
  for i, m in ipairs(members) do list[i] = m end
  table.sort(list, member_before)
  return list
end

local function subscribes(m, topic)
  for _, t in ipairs(m.topics) do
    if t == topic then return true end
  end
  return false
end

-- Every member starts with an empty assignment, so members that get nothing
-- still receive an answer.
local function empty_result(members)
  local out = {}
  for _, m in ipairs(members) do out[m.member_id] = {} end
  return out
end

local function give(out, member_id, topic, partition)
  local mine = out[member_id]
  mine[topic] = mine[topic] or {}
  table.insert(mine[topic], partition)
end

-- Subscribed topics that exist, sorted.
local function subscribed_topics(members, partitions_per_topic)
  local seen, list = {}, {}
  for _, m in ipairs(members) do
    for _, t in ipairs(m.topics) do
      if not seen[t] and partitions_per_topic[t] then
        seen[t] = true
        list[#list + 1] = t
      end
    end
  end
  table.sort(list)
  return list
end

-- Kafka's RangeAssignor: per topic, the members subscribed to it (in member
-- order) each take a contiguous range; the first (n % m) take one extra.
M.range = { name = "range", assign = function(members, partitions_per_topic)
  local out = empty_result(members)
  local ordered = sorted_members(members)
  for _, topic in ipairs(subscribed_topics(members, partitions_per_topic)) do
    local takers = {}
    for _, m in ipairs(ordered) do
      if subscribes(m, topic) then takers[#takers + 1] = m end
    end
    local n, count = partitions_per_topic[topic], #takers
    local per, extra = math.floor(n / count), n % count
    local start = 0
    for i, m in ipairs(takers) do
      local len = per + (i <= extra and 1 or 0)
      for p = start, start + len - 1 do give(out, m.member_id, topic, p) end
      start = start + len
    end
  end
  return out
end }

-- Kafka's RoundRobinAssignor: every topic-partition (by topic, then
-- partition) goes to the next member in a circular walk over all members,
-- skipping those not subscribed to its topic.
M.roundrobin = { name = "roundrobin", assign = function(members, partitions_per_topic)
  local out = empty_result(members)
  local ordered = sorted_members(members)
  local at = 1
  for _, topic in ipairs(subscribed_topics(members, partitions_per_topic)) do
    for p = 0, partitions_per_topic[topic] - 1 do
      while not subscribes(ordered[at], topic) do at = at % #ordered + 1 end
      give(out, ordered[at].member_id, topic, p)
      at = at % #ordered + 1
    end
  end
  return out
end }

M.builtin = { range = M.range, roundrobin = M.roundrobin }

-- validate(result, members, partitions_per_topic) -> assignment with every
-- member present (partitions sorted) | nil, why. Rejects unknown members,
-- topics a member did not subscribe to, partitions that do not exist, and
-- any partition given twice.
function M.validate(result, members, partitions_per_topic)
  if type(result) ~= "table" then return nil, "result is " .. type(result) .. ", not a table" end
  local by_id = {}
  for _, m in ipairs(members) do by_id[m.member_id] = m end
  local owner = {}
  local out = empty_result(members)
  for member_id, topics in pairs(result) do
    local m = by_id[member_id]
    if not m then return nil, ("unknown member '%s'"):format(tostring(member_id)) end
    if type(topics) ~= "table" then return nil, ("member '%s': table of topics expected"):format(member_id) end
    for topic, parts in pairs(topics) do
      if type(topic) ~= "string" or not subscribes(m, topic) then
        return nil, ("member '%s' is given topic '%s' it did not subscribe to"):format(member_id, tostring(topic))
      end
      if type(parts) ~= "table" then
        return nil, ("member '%s', topic '%s': list of partitions expected"):format(member_id, topic)
      end
      local n = partitions_per_topic[topic] or 0
      local list = {}
      for i, p in ipairs(parts) do
        if type(p) ~= "number" or p ~= math.floor(p) or p < 0 or p >= n then
          return nil, ("member '%s' is given %s[%s], which does not exist (%d partitions)"):format(
            member_id, topic, tostring(p), n)
        end
        local k = topic .. "\0" .. p
        if owner[k] then
          return nil, ("%s[%d] is given to both '%s' and '%s'"):format(topic, p, owner[k], member_id)
        end
        owner[k] = member_id
        list[i] = p
      end
      table.sort(list)
      if #list > 0 then out[member_id][topic] = list end
    end
  end
  return out
end

-- resolve(spec) -> list of assignors in preference order | nil, why.
-- spec: a name ("range", "roundrobin"), a comma-separated list of names (as
-- librdkafka's partition.assignment.strategy), an assignor table, or a list
-- of these.
function M.resolve(spec)
  local items = spec
  if type(spec) == "string" then
    items = {}
    for name in spec:gmatch("[^,%s]+") do items[#items + 1] = name end
  elseif type(spec) ~= "table" or spec.assign ~= nil then
    items = { spec }
  end
  local out, seen = {}, {}
  for _, a in ipairs(items) do
    if type(a) == "string" then
      if not M.builtin[a] then return nil, ("unknown assignor '%s' (known: range, roundrobin)"):format(a) end
      a = M.builtin[a]
    elseif type(a) ~= "table" or type(a.name) ~= "string" or a.name == "" or type(a.assign) ~= "function" then
      return nil, "assignor name or { name = string, assign = function } expected"
    end
    if seen[a.name] then return nil, ("assignor '%s' named twice"):format(a.name) end
    seen[a.name] = true
    out[#out + 1] = a
  end
  if #out == 0 then return nil, "no assignor given" end
  return out
end

return M
