-- Dynamic broker configs, as Kafka changes them: AlterConfigs and
-- IncrementalAlterConfigs on a broker resource (its id, or "" for the
-- cluster-wide default), shown by DescribeConfigs with their sources, in
-- effect at once, kept across a restart; in a cluster kept by the
-- controller and pushed to every broker.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL = 0, 32, 33, 44
local SET, DELETE = 0, 1
local BROKER, TOPIC = 4, 2

local function open(port)
  return assert(connection.open("127.0.0.1", port, {
    client_id = "dyn-spec", connect_timeout_ms = 5000, request_timeout_ms = 15000 }))
end

local function incremental(port, resources, validate_only)
  local c = open(port)
  local r = assert(c:request(INCREMENTAL, { validate_only = validate_only or false, resources = resources }))
  c:close()
  local out = {}
  for _, res in ipairs(r.responses) do out[#out + 1] = { res.error_code, res.error_message } end
  return out
end

-- name -> { value, source, read_only, synonyms = { {name, value, source} } }
local function configs_of(port, type, name, keys)
  local c = open(port)
  local r = assert(c:request(DESCRIBE_CONFIGS, { resources = { { resource_type = type, resource_name = name,
    configuration_keys = keys } }, include_synonyms = true }))
  c:close()
  local res = r.results[1]
  if res.error_code ~= 0 then return nil, res.error_code end
  local out = {}
  for _, e in ipairs(res.configs) do
    local syn = {}
    for _, s in ipairs(e.synonyms or {}) do syn[#syn + 1] = { s.name, s.value, s.source } end
    out[e.name] = { e.value, e.config_source, e.read_only, synonyms = syn }
  end
  return out
end

local function produce_size(port, topic, bytes)
  local c = open(port)
  local batch = assert(core.build_batch { records = { { key = "k", value = string.rep("x", bytes) } } })
  local r = assert(c:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
    { name = topic, partition_data = { { index = 0, records = batch } } } } }))
  c:close()
  return r.responses[1].partition_responses[1].error_code
end

describe("dynamic broker configs on one broker", function()
  local b

  setup(function()
    b = assert(kiq.broker {})
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "dyn", partitions = 1 } })
    a:close()
  end)

  teardown(function()
    if b then b:stop() end
  end)

  it("sets one for this broker, in effect at once and shown with its source", function()
    assert.are.equal(0, produce_size(b.port, "dyn", 3000))
    assert.are.same({ { 0, nil } }, incremental(b.port, { { resource_type = BROKER, resource_name = "0",
      configs = { { name = "message.max.bytes", config_operation = SET, value = "2000" } } } }))
    assert.are.equal(10, produce_size(b.port, "dyn", 3000)) -- MESSAGE_TOO_LARGE
    local d = configs_of(b.port, BROKER, "0", { "message.max.bytes", "num.io.threads" })
    assert.are.same({ "2000", 2, false }, { d["message.max.bytes"][1], d["message.max.bytes"][2],
      d["message.max.bytes"][3] })
    assert.are.same({ "message.max.bytes", "2000", 2 }, d["message.max.bytes"].synonyms[1])
    -- then the built-in default, as this broker's properties leave it unset
    assert.are.same({ "message.max.bytes", "1048588", 5 }, d["message.max.bytes"].synonyms[2])
    assert.is_true(d["num.io.threads"][3]) -- read-only here
    -- a topic inherits it, saying where from
    local t = configs_of(b.port, TOPIC, "dyn", { "max.message.bytes" })
    assert.are.same({ "2000", 2 }, { t["max.message.bytes"][1], t["max.message.bytes"][2] })
  end)

  it("sets a cluster-wide default, which this broker's own value wins over", function()
    assert.are.same({ { 0, nil } }, incremental(b.port, { { resource_type = BROKER, resource_name = "",
      configs = { { name = "message.max.bytes", config_operation = SET, value = "5000" },
        { name = "log.retention.ms", config_operation = SET, value = "3600000" } } } }))
    local d = configs_of(b.port, BROKER, "0", { "message.max.bytes", "log.retention.ms" })
    assert.are.equal("2000", d["message.max.bytes"][1])
    assert.are.same({ "3600000", 3 }, { d["log.retention.ms"][1], d["log.retention.ms"][2] })
    -- the default resource lists what is set there, and only that
    local def = configs_of(b.port, BROKER, "")
    local names = {}
    for name, e in pairs(def) do
      names[#names + 1] = name
      assert.are.equal(3, e[2])
    end
    table.sort(names)
    -- with min.insync.replicas, kept there from the first start (KIP-966)
    assert.are.same({ "log.retention.ms", "message.max.bytes", "min.insync.replicas" }, names)
    assert.are.equal("1", def["min.insync.replicas"][1])
    local t = configs_of(b.port, TOPIC, "dyn", { "retention.ms" })
    assert.are.same({ "3600000", 3 }, { t["retention.ms"][1], t["retention.ms"][2] })
    -- deleting this broker's value falls back to the cluster's
    assert.are.same({ { 0, nil } }, incremental(b.port, { { resource_type = BROKER, resource_name = "0",
      configs = { { name = "message.max.bytes", config_operation = DELETE } } } }))
    assert.are.equal("5000", configs_of(b.port, BROKER, "0", { "message.max.bytes" })["message.max.bytes"][1])
    assert.are.equal(0, produce_size(b.port, "dyn", 3000))
  end)

  it("refuses what Kafka refuses, changing nothing", function()
    local function one(name, value, resource, op)
      return incremental(b.port, { { resource_type = BROKER, resource_name = resource or "0",
        configs = { { name = name, config_operation = op or SET, value = value } } } })[1]
    end
    local r = one("num.io.threads", "8")
    assert.are.equal(42, r[1])
    assert.matches("Cannot update these configs dynamically: %[num.io.threads%]", r[2])
    assert.are.equal(42, one("no.such.config", "1")[1])
    r = one("message.max.bytes", "lots")
    assert.are.equal(40, r[1])
    assert.matches("message.max.bytes", r[2])
    assert.are.equal(42, one("message.max.bytes", "1", "7")[1]) -- another broker's id
    assert.are.equal(40, one("message.max.bytes", "1", "0", 2)[1]) -- APPEND on a non-list
    assert.are.same({ { 0, nil } }, incremental(b.port, { { resource_type = BROKER, resource_name = "0",
      configs = { { name = "min.insync.replicas", config_operation = SET, value = "3" } } } }, true))
    -- validate_only left the cluster-wide value in effect
    assert.are.equal(3, configs_of(b.port, BROKER, "0", { "min.insync.replicas" })["min.insync.replicas"][2])
    -- the cluster-wide min.insync.replicas stays (Kafka 4.1+)
    r = one("min.insync.replicas", nil, "", DELETE)
    assert.are.equal(40, r[1])
    assert.matches("min.insync.replicas cannot be removed", r[2])
    -- AlterConfigs replaces the whole level, which must keep it too
    local function replace(configs)
      local c = open(b.port)
      local ar = assert(c:request(ALTER_CONFIGS, { validate_only = false, resources = { { resource_type = BROKER,
        resource_name = "", configs = configs } } }))
      c:close()
      return ar.responses[1].error_code
    end
    assert.are.equal(40, replace { { name = "log.retention.ms", value = "7200000" } })
    assert.are.equal("3600000", configs_of(b.port, BROKER, "")["log.retention.ms"][1])
    assert.are.equal(0, replace { { name = "log.retention.ms", value = "7200000" },
      { name = "min.insync.replicas", value = "1" } })
    local def = configs_of(b.port, BROKER, "")
    assert.are.equal("7200000", def["log.retention.ms"][1])
    assert.is_nil(def["message.max.bytes"])
  end)

  it("keeps them across a restart", function()
    assert(b:restart())
    local d = configs_of(b.port, BROKER, "0", { "log.retention.ms", "message.max.bytes" })
    assert.are.same({ "7200000", 3 }, { d["log.retention.ms"][1], d["log.retention.ms"][2] })
    assert.are_not.equal(2, d["message.max.bytes"][2])
  end)
end)

describe("dynamic broker configs in a cluster", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["broker.heartbeat.interval.ms"] = 200 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("keeps them with the controller and pushes them to every broker", function()
    -- asked of broker 2: the default for all, and broker 1's own
    assert.are.same({ { 0, nil }, { 0, nil } }, incremental(c:broker(2).port, {
      { resource_type = BROKER, resource_name = "", configs = {
        { name = "log.retention.ms", config_operation = SET, value = "1800000" } } },
      { resource_type = BROKER, resource_name = "1", configs = {
        { name = "log.retention.ms", config_operation = SET, value = "900000" } } } }))
    for id = 0, 2 do
      local want = id == 1 and { "900000", 2 } or { "1800000", 3 }
      assert(kiq.wait_for(function()
        local d = configs_of(c:broker(id).port, BROKER, tostring(id), { "log.retention.ms" })
        return d["log.retention.ms"][1] == want[1] and d["log.retention.ms"][2] == want[2]
      end, 10000, "broker " .. id .. " to have log.retention.ms " .. want[1]))
    end
    -- the controller keeps min.insync.replicas cluster-wide, as Kafka 4.1+'s
    local def = configs_of(c:broker(0).port, BROKER, "")
    assert.are.same({ "1", 3 }, { def["min.insync.replicas"][1], def["min.insync.replicas"][2] })
    local r = incremental(c:broker(0).port, { { resource_type = BROKER, resource_name = "", configs = {
      { name = "min.insync.replicas", config_operation = DELETE } } } })
    assert.are.equal(40, r[1][1])
    -- a registered broker's id only; and kept in the metadata log
    r = incremental(c:broker(0).port, { { resource_type = BROKER, resource_name = "9", configs = {
      { name = "log.retention.ms", config_operation = SET, value = "1" } } } })
    assert.are.equal(42, r[1][1])
    c:restart(1)
    assert(kiq.wait_for(function()
      local ok, d = pcall(configs_of, c:broker(1).port, BROKER, "1", { "log.retention.ms" })
      return ok and d and d["log.retention.ms"][1] == "900000"
    end, 15000, "broker 1 to have its value again after a restart"))
  end)
end)
