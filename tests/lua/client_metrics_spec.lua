-- KIP-714's client-metrics resources (config resource type 16): set with
-- IncrementalAlterConfigs (metrics, match, interval.ms; bad values and
-- operations refused), described with DescribeConfigs, listed with
-- ListConfigResources (v0 as ListClientMetricsResources, v1 by type), and
-- the subscription GetTelemetrySubscriptions offers a client following
-- the resources that match it, else the broker's default; a push is then
-- seen in b:clients(). In a cluster the controller keeps them, so every
-- broker offers the same subscription.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
local GET_TELEMETRY, PUSH_TELEMETRY, LIST_CONFIG_RESOURCES = 71, 72, 74
local INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_SUBSCRIPTION_ID = 40, 42, 117
local ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
local SET, DELETE, APPEND = 0, 1, 2

-- OTLP MetricsData: one gauge "m" whose one point is 2.5
local function otlp_payload()
  local point = "\33\0\0\0\0\0\0\4\64" -- as_double (field 4, fixed64) 2.5
  local gauge = "\10" .. string.char(#point) .. point
  local metric = "\10\1m\42" .. string.char(#gauge) .. gauge
  local scope = "\18" .. string.char(#metric) .. metric
  local rm = "\18" .. string.char(#scope) .. scope
  return "\10" .. string.char(#rm) .. rm
end

local function open(port, client_id)
  return assert(connection.open("127.0.0.1", port, { client_id = client_id or "spec", connect_timeout_ms = 5000,
    request_timeout_ms = 15000 }))
end

local function alter(c, name, configs)
  local r = assert(c:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
    { resource_type = 16, resource_name = name, configs = configs } } }))
  return r.responses[1].error_code, r.responses[1].error_message
end

-- { error code, names }, and the response
local function listed(c, version, types)
  local r = assert(c:request(LIST_CONFIG_RESOURCES, { resource_types = types }, { version = version }))
  local names = {}
  for _, e in ipairs(r.config_resources) do names[#names + 1] = e.resource_name end
  return { r.error_code, names }, r
end

local function subscription(port, client_id)
  local c = open(port, client_id)
  local r = assert(c:request(GET_TELEMETRY, { client_instance_id = ZERO_UUID }))
  c:close()
  return r
end

describe("client-metrics resources on a standalone broker", function()
  local b, c

  setup(function()
    b = assert(kiq.broker {})
    c = open(b.port)
  end)

  teardown(function()
    if c then c:close() end
    if b then b:stop() end
  end)

  it("takes metrics, match and interval.ms, and refuses what Kafka refuses", function()
    assert.are.equal(0, alter(c, "producers", {
      { name = "metrics", config_operation = SET, value = "org.apache.kafka.producer." },
      { name = "match", config_operation = SET, value = "client_id=app-.*" },
      { name = "interval.ms", config_operation = SET, value = "1000" } }))
    assert.are.equal(INVALID_CONFIG, alter(c, "bad", { { name = "interval.ms", config_operation = SET, value = "5" } }))
    assert.are.equal(INVALID_CONFIG, alter(c, "bad", { { name = "match", config_operation = SET, value = "who=x" } }))
    assert.are.equal(INVALID_CONFIG, alter(c, "bad", { { name = "match", config_operation = SET,
      value = "client_id=(" } }))
    assert.are.equal(INVALID_CONFIG, alter(c, "bad", { { name = "colour", config_operation = SET, value = "x" } }))
    assert.are.equal(INVALID_REQUEST, alter(c, "bad", { { name = "metrics", config_operation = APPEND, value = "x" } }))
    assert.are.equal(INVALID_REQUEST, alter(c, "", { { name = "metrics", config_operation = SET, value = "x" } }))
  end)

  it("describes a resource's own configs and the others' defaults", function()
    local r = assert(c:request(DESCRIBE_CONFIGS, { include_synonyms = false, include_documentation = false,
      resources = { { resource_type = 16, resource_name = "producers" } } }))
    local res = r.results[1]
    assert.are.equal(0, res.error_code)
    local by = {}
    for _, e in ipairs(res.configs) do by[e.name] = e end
    assert.are.same({ "org.apache.kafka.producer.", 7 }, { by.metrics.value, by.metrics.config_source })
    assert.are.same({ "client_id=app-.*", 7 }, { by.match.value, by.match.config_source })
    assert.are.same({ "1000", 7 }, { by["interval.ms"].value, by["interval.ms"].config_source })
  end)

  it("lists the resources, by type from v1", function()
    assert.are.same({ 0, { "producers" } }, (listed(c, 0)))
    local got, r = listed(c, 1, { 16 })
    assert.are.same({ 0, { "producers" } }, got)
    assert.are.equal(16, r.config_resources[1].resource_type)
    assert.are.same({ 0, { "producers" } }, (listed(c, 1, {})))
    assert.are.equal(INVALID_REQUEST, listed(c, 1, { 2 })[1])
  end)

  it("offers a matching client its resource's subscription, any other the broker's", function()
    local r = subscription(b.port, "app-1")
    assert.are.same({ { "org.apache.kafka.producer." }, 1000 }, { r.requested_metrics, r.push_interval_ms })
    local other = subscription(b.port, "other")
    assert.are.same({ { "" }, 60000 }, { other.requested_metrics, other.push_interval_ms })
    -- a push under the default subscription, from app-1's instance, is for a subscription it no longer has
    local a = open(b.port, "app-1")
    local push = assert(a:request(PUSH_TELEMETRY, { client_instance_id = r.client_instance_id,
      subscription_id = r.subscription_id, compression_type = 0, metrics = "" }))
    assert.are.equal(0, push.error_code)
    push = assert(a:request(PUSH_TELEMETRY, { client_instance_id = other.client_instance_id,
      subscription_id = other.subscription_id, compression_type = 0, metrics = "" }))
    assert.are.equal(UNKNOWN_SUBSCRIPTION_ID, push.error_code)
    push = assert(a:request(PUSH_TELEMETRY, { client_instance_id = r.client_instance_id,
      subscription_id = r.subscription_id, compression_type = 0, metrics = otlp_payload() }))
    assert.are.equal(89, push.error_code) -- THROTTLING_QUOTA_EXCEEDED: within its 1000 ms
    assert(a:request(GET_TELEMETRY, { client_instance_id = r.client_instance_id }))
    push = assert(a:request(PUSH_TELEMETRY, { client_instance_id = r.client_instance_id,
      subscription_id = r.subscription_id, compression_type = 0, metrics = otlp_payload() }))
    assert.are.equal(0, push.error_code) -- the first after asking again
    a:close()
    local seen = b:clients("app-1")
    assert.are.equal(1, #seen)
    assert.are.same({ r.client_instance_id, 2 }, { seen[1].client_instance_id, seen[1].pushes })
    assert.are.same({ { name = "m", kind = "gauge", value = 2.5, attributes = {} } }, seen[1].metrics)
    assert.are.same({}, b:clients("nobody"))
  end)

  it("forgets a resource whose configs are all deleted", function()
    assert.are.equal(0, alter(c, "producers", { { name = "metrics", config_operation = DELETE },
      { name = "match", config_operation = DELETE }, { name = "interval.ms", config_operation = DELETE } }))
    assert.are.same({ 0, {} }, (listed(c, 0)))
    assert.are.same({ "" }, subscription(b.port, "app-1").requested_metrics)
  end)
end)

describe("client-metrics resources in a cluster", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["broker.heartbeat.interval.ms"] = 200 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("are the controller's, offered by every broker", function()
    local conn = open(c:broker(1).port)
    assert.are.equal(0, alter(conn, "all-consumers", {
      { name = "metrics", config_operation = SET, value = "org.apache.kafka.consumer." },
      { name = "interval.ms", config_operation = SET, value = "2000" } }))
    conn:close()
    for id = 0, 2 do
      assert.is_true(kiq.wait_for(function()
        local r = subscription(c:broker(id).port, "anyone")
        return r.push_interval_ms == 2000 and r.requested_metrics[1] == "org.apache.kafka.consumer."
      end, 10000), "broker " .. id)
      local l = open(c:broker(id).port)
      assert.are.same({ 0, { "all-consumers" } }, (listed(l, 0)))
      l:close()
    end
  end)
end)
