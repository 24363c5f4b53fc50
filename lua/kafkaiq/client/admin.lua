-- The admin client: create, delete and describe topics, describe configs,
-- alter and describe client quotas.
-- Calls about several items return per-item results (common.finish).

local options = require "kafkaiq.client.options"
local common = require "kafkaiq.client.common"
local errors = require "kafkaiq.client.errors"
local core = require "kafkaiq.core"

local M = {}
local Admin = {}
Admin.__index = Admin

local CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS = 19, 20, 32
local DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
local NOT_CONTROLLER = 41

local RESOURCE_TYPES = { topic = 2, broker = 4 }
local RESOURCE_NAMES = { [2] = "topic", [4] = "broker" }
local CONFIG_SOURCES = {
  [-1] = "UNKNOWN", [0] = "UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",
  "DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG",
  "DYNAMIC_BROKER_LOGGER_CONFIG", "CLIENT_METRICS_CONFIG",
}

local SPEC = options.common()

-- new(opts) -> admin. opts: bootstrap (required), client_id, request_timeout_ms,
-- connect_timeout_ms, retries, retry_backoff_ms, log. Connects lazily.
function M.new(opts)
  local cfg = options.check(opts, SPEC, "admin", 2)
  return common.setup(setmetatable({}, Admin), cfg, "admin", 2)
end

local function result(name, code, message)
  return {
    name = name, error_code = code,
    error = code ~= 0 and errors.name(code) or nil,
    error_message = message,
  }
end

-- Sends body to the controller; retries after NOT_CONTROLLER (the
-- controller moved) and connection failures. Returns the response.
local function to_controller(self, api, body, entries)
  local err
  for attempt = 0, self.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.cfg.retry_backoff_ms) end
    local conn, resp
    conn, err = self.cluster:controller_conn()
    if conn then
      resp, err = conn:request(api, body)
      if resp then
        local moved = false
        for _, e in ipairs(entries(resp)) do
          if e.error_code == NOT_CONTROLLER then moved = true end
        end
        if not moved or attempt == self.cfg.retries then return resp end
        err = errors.format("controller", NOT_CONTROLLER)
      end
    end
  end
  return nil, err
end

local CREATE_SPEC = {
  name = options.string(),
  partitions = options.integer(-1, 2 ^ 31 - 1, -1),
  replication_factor = options.integer(-1, 32767, -1),
  configs = options.custom(function(v)
    if type(v) ~= "table" then return nil, "table of name = value expected" end
    local list = {}
    for k, val in pairs(v) do
      local tv = type(val)
      if type(k) ~= "string" or (tv ~= "string" and tv ~= "number" and tv ~= "boolean") then
        return nil, ("config '%s': string, number or boolean value expected"):format(tostring(k))
      end
      list[#list + 1] = { name = k, value = tostring(val) }
    end
    table.sort(list, function(a, b) return a.name < b.name end)
    return list
  end, {}),
}
local CALL_SPEC = {
  timeout_ms = options.integer(0, 2 ^ 31 - 1, 30000),
  validate_only = options.boolean(false),
}

-- a:create_topics({ {name=, partitions=, replication_factor=, configs={k=v}}, ... }[, {timeout_ms=, validate_only=}])
-- -> results | nil, err, results. Sent to the controller; partitions and
-- replication_factor default to the broker's (-1). Each result: name,
-- error (nil or a Kafka error name), error_code, error_message, topic_id,
-- partitions, replication_factor.
function Admin:create_topics(list, opts)
  if type(list) ~= "table" or #list == 0 then
    error("create_topics: non-empty list of topics expected", 2)
  end
  local call = options.check(opts, CALL_SPEC, "create_topics", 2)
  local topics = {}
  for i, t in ipairs(list) do
    local spec = options.check(t, CREATE_SPEC, ("create_topics: topic %d"):format(i), 2)
    common.check_name(spec.name, ("create_topics: topic %d: name"):format(i), 2)
    topics[i] = {
      name = spec.name, num_partitions = spec.partitions,
      replication_factor = spec.replication_factor, assignments = {}, configs = spec.configs,
    }
  end
  local resp, err = to_controller(self, CREATE_TOPICS,
    { topics = topics, timeout_ms = call.timeout_ms, validate_only = call.validate_only },
    function(r) return r.topics end)
  if not resp then return nil, "create_topics: " .. err end
  local by_name = {}
  for _, t in ipairs(resp.topics) do by_name[t.name] = t end
  local results = {}
  for i, t in ipairs(topics) do
    local r = by_name[t.name]
    if r then
      results[i] = result(t.name, r.error_code, r.error_message)
      results[i].topic_id = r.topic_id
      results[i].partitions = r.num_partitions
      results[i].replication_factor = r.replication_factor
    else
      results[i] = result(t.name, -1, "missing from the broker's response")
    end
    self.cluster:invalidate(t.name)
  end
  return common.finish(results, "create_topics")
end

-- a:delete_topics({name, ...}[, {timeout_ms=}]) -> results | nil, err, results.
-- Each result: name, error, error_code, error_message.
function Admin:delete_topics(names, opts)
  if type(names) ~= "table" or #names == 0 then
    error("delete_topics: non-empty list of topic names expected", 2)
  end
  local call = options.check(opts, { timeout_ms = CALL_SPEC.timeout_ms }, "delete_topics", 2)
  local topics = {}
  for i, n in ipairs(names) do
    common.check_name(n, ("delete_topics: name %d"):format(i), 2)
    topics[i] = { name = n }
  end
  -- v0-5 name topics in a string list, v6 in structs: set both, the codec
  -- takes the one the negotiated version has.
  local resp, err = to_controller(self, DELETE_TOPICS,
    { topics = topics, topic_names = names, timeout_ms = call.timeout_ms },
    function(r) return r.responses end)
  if not resp then return nil, "delete_topics: " .. err end
  local by_name = {}
  for _, t in ipairs(resp.responses) do
    if t.name then by_name[t.name] = t end
  end
  local results = {}
  for i, n in ipairs(names) do
    local r = by_name[n]
    if r then
      results[i] = result(n, r.error_code, r.error_message)
    else
      results[i] = result(n, -1, "missing from the broker's response")
    end
    self.cluster:invalidate(n)
  end
  return common.finish(results, "delete_topics")
end

local function describe(t)
  local r = result(t.name, t.error or 0)
  if t.error then return r end
  r.id = t.id
  r.internal = t.internal
  r.partition_count = t.count
  r.partitions = {}
  for p, info in pairs(t.partitions) do
    r.partitions[p] = {
      partition = p, leader = info.leader, leader_epoch = info.leader_epoch,
      replicas = info.replicas, isr = info.isr, offline = info.offline,
      error = info.error ~= 0 and errors.name(info.error) or nil,
    }
  end
  return r
end

-- a:describe_topics([names]) -> results | nil, err, results (Metadata; never
-- auto-creates). Without names: every topic, sorted by name. Each result:
-- name, error, id, internal, partition_count, partitions = { [p] =
-- { partition, leader, leader_epoch, replicas, isr, offline, error } } keyed from 0.
function Admin:describe_topics(names)
  if names ~= nil then
    if type(names) ~= "table" then error("describe_topics: list of topic names expected", 2) end
    for i, n in ipairs(names) do common.check_name(n, ("describe_topics: name %d"):format(i), 2) end
  end
  local resp, err = self.cluster:refresh(names, false)
  if not resp then return nil, "describe_topics: " .. err end
  local results = {}
  if names then
    local by_name = {}
    for _, t in ipairs(resp.topics) do
      if t.name then by_name[t.name] = t end
    end
    for i, n in ipairs(names) do
      local t = by_name[n]
      results[i] = t and describe(self.cluster.topics[n]) or result(n, 3)
    end
  else
    for _, t in ipairs(resp.topics) do
      if t.name then results[#results + 1] = describe(self.cluster.topics[t.name]) end
    end
    table.sort(results, function(a, b) return a.name < b.name end)
  end
  return common.finish(results, "describe_topics")
end

local RESOURCE_SPEC = {
  type = options.enum({ "topic", "broker" }),
  name = options.string(),
  keys = options.custom(function(v)
    if type(v) ~= "table" then return nil, "list of config names expected" end
    for _, k in ipairs(v) do
      if type(k) ~= "string" then return nil, "list of config names expected" end
    end
    return v
  end),
}

-- a:describe_configs({ {type = "topic"|"broker", name = , keys = {...}?}, ... })
-- -> results | nil, err, results. Broker resources go to that broker (name is
-- its node id), topics to any broker. Each result: type, name, error,
-- error_code, error_message, configs = { [config name] = { value, read_only,
-- default, source, sensitive } }.
function Admin:describe_configs(resources)
  if type(resources) ~= "table" or #resources == 0 then
    error("describe_configs: non-empty list of resources expected", 2)
  end
  local groups, order = {}, {}
  for i, res in ipairs(resources) do
    local r = options.check(res, RESOURCE_SPEC, ("describe_configs: resource %d"):format(i), 2)
    if not r.type then error(("describe_configs: resource %d: type is required"):format(i), 2) end
    common.check_name(r.name, ("describe_configs: resource %d: name"):format(i), 2)
    local target = "any"
    if r.type == "broker" then
      target = tonumber(r.name)
      if not target then error(("describe_configs: resource %d: broker name must be its node id"):format(i), 2) end
    end
    if not groups[target] then
      groups[target] = {}
      order[#order + 1] = target
    end
    table.insert(groups[target], { index = i, resource_type = RESOURCE_TYPES[r.type],
      resource_name = r.name, configuration_keys = r.keys })
  end
  local results = {}
  for _, target in ipairs(order) do
    local conn, err
    if target == "any" then
      conn, err = self.cluster:any_conn()
    else
      if not self.cluster.brokers[target] then self.cluster:refresh({}, false) end
      conn, err = self.cluster:broker_conn(target)
    end
    if not conn then return nil, "describe_configs: " .. err end
    local resp
    resp, err = conn:request(DESCRIBE_CONFIGS, { resources = groups[target], include_synonyms = false })
    if not resp then return nil, "describe_configs: " .. err end
    local by_key = {}
    for _, r in ipairs(resp.results) do by_key[r.resource_type .. "/" .. r.resource_name] = r end
    for _, req in ipairs(groups[target]) do
      local r = by_key[req.resource_type .. "/" .. req.resource_name]
      local out
      if not r then
        out = result(req.resource_name, -1, "missing from the broker's response")
      else
        out = result(r.resource_name, r.error_code, r.error_message)
        out.configs = {}
        for _, c in ipairs(r.configs) do
          local source = c.config_source
          local is_default = c.is_default or source == 5
          out.configs[c.name] = {
            value = c.value, read_only = c.read_only, default = is_default and true or false,
            source = CONFIG_SOURCES[source] or tostring(source), sensitive = c.is_sensitive,
          }
        end
      end
      out.type = RESOURCE_NAMES[req.resource_type]
      results[req.index] = out
    end
  end
  return common.finish(results, "describe_configs")
end

-- Client quota entities name a user, a client id or both: a name, or
-- M.DEFAULT for that part's default ("<default>" in Kafka's tools).
M.DEFAULT = setmetatable({}, { __tostring = function() return "<default>" end })
Admin.DEFAULT = M.DEFAULT -- a.DEFAULT
local QUOTA_PARTS = { user = "user", client_id = "client-id" }
local PART_KEYS = { user = "user", ["client-id"] = "client_id" }

local function entity_parts(entity, what)
  if type(entity) ~= "table" then error(what .. ": entity table expected", 3) end
  local parts = {}
  for key, name in pairs(entity) do
    local t = QUOTA_PARTS[key]
    if not t then error(("%s: unknown entity part '%s' (user, client_id)"):format(what, tostring(key)), 3) end
    if name ~= M.DEFAULT then common.check_name(name, what .. ": " .. key, 3) end
    parts[#parts + 1] = { entity_type = t, entity_name = name ~= M.DEFAULT and name or nil }
  end
  if #parts == 0 then error(what .. ": the entity names no user or client_id", 3) end
  table.sort(parts, function(a, b) return a.entity_type > b.entity_type end) -- user first
  return parts
end

local function entity_of(parts)
  local e = {}
  for _, p in ipairs(parts) do e[PART_KEYS[p.entity_type] or p.entity_type] = p.entity_name or M.DEFAULT end
  return e
end

local function entity_text(parts)
  local s = {}
  for _, p in ipairs(parts) do s[#s + 1] = p.entity_type .. "=" .. tostring(p.entity_name or "<default>") end
  return table.concat(s, ",")
end

-- a:alter_client_quotas({ { entity = { user =, client_id = }, quotas = { producer_byte_rate = 1024,
--   consumer_byte_rate = false, ... } }, ... }[, { validate_only = }]) -> results | nil, err, results.
-- A quota set to false is removed. Sent to any broker (it forwards to the
-- controller). Each result: entity, name (the entity as text), error,
-- error_code, error_message.
function Admin:alter_client_quotas(list, opts)
  if type(list) ~= "table" or #list == 0 then
    error("alter_client_quotas: non-empty list of entries expected", 2)
  end
  local call = options.check(opts, { validate_only = options.boolean(false) }, "alter_client_quotas", 2)
  local entries = {}
  for i, e in ipairs(list) do
    local what = ("alter_client_quotas: entry %d"):format(i)
    if type(e) ~= "table" or type(e.quotas) ~= "table" then error(what .. ": { entity =, quotas = } expected", 2) end
    local ops = {}
    for key, value in pairs(e.quotas) do
      if type(key) ~= "string" or (value ~= false and type(value) ~= "number") then
        error(("%s: quota '%s': a number, or false to remove it, expected"):format(what, tostring(key)), 2)
      end
      ops[#ops + 1] = { key = key, value = value or 0, remove = value == false }
    end
    table.sort(ops, function(a, b) return a.key < b.key end)
    entries[i] = { entity = entity_parts(e.entity, what), ops = ops }
  end
  local conn, err = self.cluster:any_conn()
  if not conn then return nil, "alter_client_quotas: " .. err end
  local resp
  resp, err = conn:request(ALTER_CLIENT_QUOTAS, { entries = entries, validate_only = call.validate_only })
  if not resp then return nil, "alter_client_quotas: " .. err end
  local by_text = {}
  for _, r in ipairs(resp.entries) do
    table.sort(r.entity, function(a, b) return a.entity_type > b.entity_type end)
    by_text[entity_text(r.entity)] = r
  end
  local results = {}
  for i, e in ipairs(entries) do
    local text = entity_text(e.entity)
    local r = by_text[text]
    results[i] = r and result(text, r.error_code, r.error_message) or result(text, -1, "missing from the broker's response")
    results[i].entity = entity_of(e.entity)
  end
  return common.finish(results, "alter_client_quotas")
end

-- a:describe_client_quotas([{ user = name | M.DEFAULT | true, client_id = ... }[, { strict = }]])
-- -> { { entity = { user =, client_id = }, quotas = { key = value } }, ... } | nil, err.
-- Each part filters: a name or the default matches only it, true any name
-- (the default included); no filter: every entity. strict: only entities
-- with no other parts.
function Admin:describe_client_quotas(filter, opts)
  local call = options.check(opts, { strict = options.boolean(false) }, "describe_client_quotas", 2)
  local components = {}
  for key, v in pairs(filter or {}) do
    local t = QUOTA_PARTS[key]
    if not t then error(("describe_client_quotas: unknown filter part '%s' (user, client_id)"):format(tostring(key)), 2) end
    if v == true then components[#components + 1] = { entity_type = t, match_type = 2 }
    elseif v == M.DEFAULT then components[#components + 1] = { entity_type = t, match_type = 1 }
    else
      common.check_name(v, "describe_client_quotas: " .. key, 2)
      components[#components + 1] = { entity_type = t, match_type = 0, match = v }
    end
  end
  local conn, err = self.cluster:any_conn()
  if not conn then return nil, "describe_client_quotas: " .. err end
  local resp
  resp, err = conn:request(DESCRIBE_CLIENT_QUOTAS, { components = components, strict = call.strict })
  if not resp then return nil, "describe_client_quotas: " .. err end
  if resp.error_code ~= 0 then
    return nil, errors.format("describe_client_quotas", resp.error_code, resp.error_message)
  end
  local out = {}
  for _, e in ipairs(resp.entries or {}) do
    local quotas = {}
    for _, v in ipairs(e.values) do quotas[v.key] = v.value end
    out[#out + 1] = { entity = entity_of(e.entity), quotas = quotas }
  end
  table.sort(out, function(a, b)
    return tostring(a.entity.user) .. "/" .. tostring(a.entity.client_id) <
      tostring(b.entity.user) .. "/" .. tostring(b.entity.client_id)
  end)
  return out
end

-- a:close() closes the admin's connections.
function Admin:close()
  self.cluster:close()
end

return M
