-- Topic configs in cluster mode: CreateTopics' configs, sent to a broker
-- that is not the controller, are kept by the controller with the topic and
-- reach every replica, which then acts on them (min.insync.replicas,
-- cleanup.policy, message.timestamp.after.max.ms) rather than on its
-- broker defaults.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, CREATE_TOPICS, INCREMENTAL_ALTER_CONFIGS = 0, 19, 44
local INVALID_RECORD, NOT_ENOUGH_REPLICAS, INVALID_REQUEST, INVALID_TIMESTAMP = 87, 19, 42, 32

local function open(port)
  return assert(connection.open("127.0.0.1", port, { client_id = "spec", connect_timeout_ms = 2000,
    request_timeout_ms = 15000 }))
end

-- One batch to partition 0 of topic on the broker at port; the partition's
-- response.
local function produce(port, topic, records, acks)
  local c = open(port)
  local resp = assert(c:request(PRODUCE, { acks = acks, timeout_ms = 5000,
    topic_data = { { name = topic, partition_data = {
      { index = 0, records = assert(core.build_batch { records = records }) } } } } }))
  c:close()
  return resp.responses[1].partition_responses[1]
end

describe("cluster topic configs", function()
  local c

  setup(function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.heartbeat.interval.ms"] = 200,
      ["replica.lag.time.max.ms"] = 500, ["min.insync.replicas"] = 1 })
    local conn = open(c:broker(2).port)
    local resp = assert(conn:request(CREATE_TOPICS, {
      topics = { { name = "conf", num_partitions = 1, replication_factor = 3, assignments = {},
        configs = { { name = "min.insync.replicas", value = "3" }, { name = "cleanup.policy", value = "compact" } } } },
      timeout_ms = 10000, validate_only = false,
    }))
    conn:close()
    assert.are.equal(0, resp.topics[1].error_code)
    assert(c:wait_for_isr("conf", 0, 3, 10000))
    assert(c:wait_for_replicas("conf", 0, 10000))
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("shows the topic's configs as dynamic topic configs on every broker", function()
    for id = 0, 2 do
      local a = assert(kiq.admin{ bootstrap = c:broker(id).bootstrap })
      local res = assert(a:describe_configs{ { type = "topic", name = "conf" } })
      a:close()
      local cfg = res[1].configs
      assert.are.equal("3", cfg["min.insync.replicas"].value, "broker " .. id)
      assert.are.equal("DYNAMIC_TOPIC_CONFIG", cfg["min.insync.replicas"].source, "broker " .. id)
      assert.are.equal("compact", cfg["cleanup.policy"].value, "broker " .. id)
      assert.are.equal("DYNAMIC_TOPIC_CONFIG", cfg["cleanup.policy"].source, "broker " .. id)
      assert.are.equal("DEFAULT_CONFIG", cfg["segment.bytes"].source, "broker " .. id)
    end
  end)

  it("refuses keyless records on the compacted topic's leader", function()
    local leader = assert(c:wait_for_leader("conf", 0, 10000))
    local p = produce(c:broker(leader).port, "conf", { { value = "no key" } }, -1)
    assert.are.equal(INVALID_RECORD, p.error_code)
    -- KIP-467: each keyless record is named by its index, with the reason
    p = produce(c:broker(leader).port, "conf",
      { { key = "a", value = "1" }, { value = "2" }, { key = "c", value = "3" }, { value = "4" } }, -1)
    assert.are.equal(INVALID_RECORD, p.error_code)
    local why = "Compacted topic cannot accept message without key in topic partition conf-0"
    assert.are.equal("One or more records have been rejected due to 2 record errors in total, and only showing "
      .. "the first three errors at most: [RecordError(batchIndex=1, message='" .. why .. "'), "
      .. "RecordError(batchIndex=3, message='" .. why .. "')]", p.error_message)
    assert.are.same({ { batch_index = 1, batch_index_error_message = why },
      { batch_index = 3, batch_index_error_message = why } }, p.record_errors)
    p = produce(c:broker(leader).port, "conf", { { key = "k", value = "v" } }, -1)
    assert.are.equal(0, p.error_code)
  end)

  it("refuses acks=all below the topic's min.insync.replicas, not the broker's", function()
    local leader = assert(c:wait_for_leader("conf", 0, 10000))
    local follower = c:partition("conf", 0).replicas[1] == leader and c:partition("conf", 0).replicas[2]
      or c:partition("conf", 0).replicas[1]
    c:cut(leader, follower)
    assert(c:wait_for_isr("conf", 0, 2, 10000))
    local p = produce(c:broker(leader).port, "conf", { { key = "k", value = "v" } }, -1)
    assert.are.equal(NOT_ENOUGH_REPLICAS, p.error_code)
    -- acks=1 does not wait for the ISR
    p = produce(c:broker(leader).port, "conf", { { key = "k", value = "v" } }, 1)
    assert.are.equal(0, p.error_code)
    c:heal(leader, follower)
    assert(c:wait_for_isr("conf", 0, 3, 10000))
  end)

  -- any broker asked forwards to the controller, which keeps the change
  -- and pushes it to every replica
  local function described(id, topic, name)
    local a = assert(kiq.admin{ bootstrap = c:broker(id).bootstrap })
    local res = assert(a:describe_configs{ { type = "topic", name = topic } })
    a:close()
    return res[1].configs[name]
  end

  it("alters a topic's configs through the controller, and every replica takes them", function()
    local conn = open(c:broker(1).port)
    local resp = assert(conn:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
      { resource_type = 2, resource_name = "conf",
        configs = { { name = "min.insync.replicas", config_operation = 0, value = "1" },
          { name = "cleanup.policy", config_operation = 1 } } } } }))
    assert.are.equal(0, resp.responses[1].error_code)
    for id = 0, 2 do
      assert(kiq.wait_for(function() return described(id, "conf", "min.insync.replicas").value == "1" end, 10000,
        "broker " .. id .. " to see min.insync.replicas=1"))
      assert.are.equal("DYNAMIC_TOPIC_CONFIG", described(id, "conf", "min.insync.replicas").source)
      -- cleanup.policy deleted: back to the broker default
      assert.are.equal("DEFAULT_CONFIG", described(id, "conf", "cleanup.policy").source)
    end
    -- the leader acts on it: keyless records are taken now
    local leader = assert(c:wait_for_leader("conf", 0, 10000))
    assert(kiq.wait_for(function()
      return produce(c:broker(leader).port, "conf", { { value = "no key now" } }, -1).error_code == 0
    end, 10000, "a keyless record taken"))
    -- an unknown topic, an unknown config: refused, nothing changes
    resp = assert(conn:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
      { resource_type = 2, resource_name = "nowhere", configs = { { name = "retention.ms", config_operation = 0,
        value = "1" } } },
      { resource_type = 2, resource_name = "conf", configs = { { name = "bogus.config", config_operation = 0,
        value = "1" } } } } }))
    assert.are.same({ 3, 40 }, { resp.responses[1].error_code, resp.responses[2].error_code })
    conn:close()
  end)

  it("bounds record timestamps on the leader by message.timestamp.after.max.ms altered through the controller",
    function()
    local function alter(op, value)
      local conn = open(c:broker(1).port)
      local resp = assert(conn:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
        { resource_type = 2, resource_name = "conf",
          configs = { { name = "message.timestamp.after.max.ms", config_operation = op, value = value } } } } }))
      conn:close()
      assert.are.equal(0, resp.responses[1].error_code)
    end
    local leader = assert(c:wait_for_leader("conf", 0, 10000))
    local function ahead(ms)
      return produce(c:broker(leader).port, "conf", { { key = "k", value = "v", timestamp = core.now_ms() + ms } }, 1)
    end
    assert.are.equal(0, ahead(600000).error_code) -- within Kafka 4.0's default hour
    alter(0, "60000")
    local p
    assert(kiq.wait_for(function()
      p = ahead(600000)
      return p.error_code == INVALID_TIMESTAMP
    end, 10000, "the leader to refuse a record 10 minutes ahead"))
    assert.are.equal("One or more records have been rejected due to invalid timestamp", p.error_message)
    assert.are.equal(0, p.record_errors[1].batch_index)
    assert.truthy(p.record_errors[1].batch_index_error_message:find("^Timestamp %d+ of message with offset 0 is out "
      .. "of range%. The timestamp should be within %[%-?%d+, %d+%]$"), p.record_errors[1].batch_index_error_message)
    alter(1, nil)
    assert(kiq.wait_for(function() return ahead(600000).error_code == 0 end, 10000,
      "the leader to take it again"))
  end)
end)
