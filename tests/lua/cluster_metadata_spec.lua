-- The brokers' side of the cluster control plane: three in-process brokers
-- register with the controller hosted by broker 0, learn the cluster from
-- its UpdateMetadata pushes, answer Metadata from that view, and forward
-- CreateTopics / DeleteTopics to the controller.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("warn")

local METADATA, CREATE_TOPICS, DELETE_TOPICS, FIND_COORDINATOR = 3, 19, 20, 10

local function open(port)
  return assert(connection.open("127.0.0.1", port, { client_id = "spec", connect_timeout_ms = 2000,
    request_timeout_ms = 15000 }))
end

local function metadata(b, topics)
  local c = open(b.port)
  local md = assert(c:request(METADATA, { topics = topics, allow_auto_topic_creation = false }))
  c:close()
  return md
end

local function topic_of(md, name)
  for _, t in ipairs(md.topics) do
    if t.name == name then return t end
  end
end

describe("cluster metadata", function()
  local brokers

  setup(function()
    local cp = core.free_port()
    local voters = ("0@127.0.0.1:%d"):format(cp)
    brokers = {}
    for id = 0, 2 do
      brokers[id] = assert(kiq.broker{
        id = id, control_port = id == 0 and cp or 0,
        ["controller.quorum.voters"] = voters,
        ["broker.heartbeat.interval.ms"] = 200,
      })
    end
  end)

  teardown(function()
    for id = 2, 0, -1 do
      if brokers[id] then brokers[id]:stop() end
    end
  end)

  it("lists every registered broker from any broker, the controller being broker 0", function()
    for id = 0, 2 do
      local md = assert(kiq.wait_for(function()
        local m = metadata(brokers[id], {})
        return #m.brokers == 3 and m
      end, 10000, ("broker %d to see three brokers"):format(id)))
      assert.are.equal(0, md.controller_id)
      local ports = {}
      for _, b in ipairs(md.brokers) do ports[b.node_id] = b.port end
      for j = 0, 2 do assert.are.equal(brokers[j].port, ports[j]) end
    end
  end)

  it("creates a topic through a broker that is not the controller, and deletes it", function()
    local c = open(brokers[2].port)
    local resp = assert(c:request(CREATE_TOPICS, {
      topics = { { name = "spread", num_partitions = 6, replication_factor = 3, assignments = {}, configs = {} } },
      timeout_ms = 10000, validate_only = false,
    }))
    assert.are.equal(0, resp.topics[1].error_code)
    assert.are.equal(6, resp.topics[1].num_partitions)
    assert.are.equal(3, resp.topics[1].replication_factor)

    -- the forwarding broker answered once its own metadata had the topic
    local t2 = topic_of(metadata(brokers[2], { { name = "spread" } }), "spread")
    assert.are.equal(0, t2.error_code)
    assert.are.equal(6, #t2.partitions)

    for id = 0, 2 do
      -- a leader is named once it took its partition (LEADER_NOT_AVAILABLE until then)
      local t = assert(kiq.wait_for(function()
        local t = topic_of(metadata(brokers[id], { { name = "spread" } }), "spread")
        if not t or t.error_code ~= 0 then return false end
        for _, p in ipairs(t.partitions) do if p.error_code ~= 0 then return false end end
        return t
      end, 10000, ("broker %d to know the topic and its leaders"):format(id)))
      local leaders = {}
      for _, p in ipairs(t.partitions) do
        assert.are.equal(0, p.error_code)
        assert.are.equal(3, #p.replica_nodes)
        assert.are.equal(3, #p.isr_nodes)
        leaders[p.leader_id] = (leaders[p.leader_id] or 0) + 1
      end
      -- six partitions over three brokers: two led by each
      for b = 0, 2 do assert.are.equal(2, leaders[b]) end
    end

    -- a second create is refused by the controller
    resp = assert(c:request(CREATE_TOPICS, {
      topics = { { name = "spread", num_partitions = 1, replication_factor = 1, assignments = {}, configs = {} } },
      timeout_ms = 10000, validate_only = false,
    }))
    assert.are.equal(36, resp.topics[1].error_code) -- TOPIC_ALREADY_EXISTS

    resp = assert(c:request(DELETE_TOPICS, { topics = { { name = "spread" } }, topic_names = { "spread" },
      timeout_ms = 10000 }))
    assert.are.equal(0, resp.responses[1].error_code)
    c:close()
    for id = 0, 2 do
      assert(kiq.wait_for(function()
        local t = topic_of(metadata(brokers[id], { { name = "spread" } }), "spread")
        return t and t.error_code == 3
      end, 10000, ("broker %d to forget the topic"):format(id)))
    end
  end)

  it("refuses a replication factor larger than the cluster", function()
    local c = open(brokers[1].port)
    local resp = assert(c:request(CREATE_TOPICS, {
      topics = { { name = "too-wide", num_partitions = 1, replication_factor = 4, assignments = {}, configs = {} } },
      timeout_ms = 5000, validate_only = false,
    }))
    c:close()
    assert.are.equal(38, resp.topics[1].error_code) -- INVALID_REPLICATION_FACTOR
  end)

  it("auto-creates a topic on Metadata, leaderless at first", function()
    local c = open(brokers[1].port)
    local md = assert(c:request(METADATA, { topics = { { name = "auto" } }, allow_auto_topic_creation = true }))
    local t = topic_of(md, "auto")
    assert.is_true(t.error_code == 5 or t.error_code == 0) -- LEADER_NOT_AVAILABLE, or already there
    c:close()
    assert(kiq.wait_for(function()
      local a = topic_of(metadata(brokers[1], { { name = "auto" } }), "auto")
      return a and a.error_code == 0 and a.partitions[1].leader_id >= 0
    end, 10000, "the auto-created topic to get a leader"))
  end)

  it("names the leader of the group's __consumer_offsets partition as its coordinator", function()
    local c = open(brokers[2].port)
    local resp = assert(kiq.wait_for(function()
      local r = assert(c:request(FIND_COORDINATOR, { key = "g1", key_type = 0, coordinator_keys = { "g1" } }))
      local e = r.coordinators and r.coordinators[1] or r
      return e.error_code == 0 and e
    end, 10000, "a coordinator for g1"))
    c:close()
    -- broker 0 hears of the topic with the controller's next UpdateMetadata
    local t = assert(kiq.wait_for(function()
      local o = topic_of(metadata(brokers[0], { { name = "__consumer_offsets" } }), "__consumer_offsets")
      return o and o.error_code == 0 and #o.partitions == 50 and o
    end, 10000, "broker 0 to list __consumer_offsets"))
    assert.is_true(t.is_internal)
    assert.are.equal(50, #t.partitions) -- offsets.topic.num.partitions
    -- Java's "g1".hashCode() is 103 * 31 + 49 = 3242: partition 42 of 50
    local p42
    for _, p in ipairs(t.partitions) do
      if p.partition_index == 42 then p42 = p end
    end
    assert.are.equal(p42.leader_id, resp.node_id)
    assert.are.equal(brokers[resp.node_id].port, resp.port)
  end)
end)
