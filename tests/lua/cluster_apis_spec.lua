-- The APIs today's clients use, in an in-process cluster of three: partitions
-- added through the controller (Kafka's placement, manual assignments, its
-- checks), leader elections on request (preferred and unclean), the
-- leader's whereabouts in Produce v10+ and Fetch v16+ answers from a
-- broker that does not lead (KIP-951), and DescribeCluster.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH, METADATA = 0, 1, 3
local CREATE_PARTITIONS, ELECT_LEADERS, DESCRIBE_CLUSTER = 37, 43, 60

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, {
    client_id = "cluster-apis-spec", connect_timeout_ms = 5000, request_timeout_ms = 15000 }))
end

local function create(c, name, partitions, rf)
  rf = rf or 3
  local a = assert(c:admin())
  assert(a:create_topics { { name = name, partitions = partitions, replication_factor = rf } })
  a:close()
  for p = 0, partitions - 1 do
    assert(c:wait_for_isr(name, p, rf, 10000))
    assert(c:wait_for_leader(name, p, 10000))
  end
end

-- A partition of topic led (and preferred) away from broker 0, which
-- hosts the controller and must stay up.
local function away_from_controller(c, topic, partitions)
  for p = 0, partitions - 1 do
    if c:partition(topic, p).replicas[1] ~= 0 and c:partition(topic, p).leader ~= 0 then return p end
  end
  error("every partition of " .. topic .. " is led by broker 0")
end

local function grow(b, topics, validate_only)
  local conn = open(b)
  local r = assert(conn:request(CREATE_PARTITIONS, { topics = topics, timeout_ms = 10000,
    validate_only = validate_only or false }))
  conn:close()
  local out = {}
  for _, res in ipairs(r.results) do out[#out + 1] = { res.error_code, res.error_message } end
  return out
end

local function elect(b, kind, topic_partitions)
  local conn = open(b)
  local r = assert(conn:request(ELECT_LEADERS, { election_type = kind, timeout_ms = 10000,
    topic_partitions = topic_partitions }))
  conn:close()
  return r
end

describe("cluster APIs", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
      ["auto.leader.rebalance.enable"] = "false", ["replica.lag.time.max.ms"] = 1000 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("sizes each broker's threads for its share of the process's cores", function()
    local f = assert(io.popen("nproc"))
    local cores = tonumber(f:read("*l"))
    f:close()
    local share = math.max(1, math.min(8, math.floor(cores / 3)))
    for id = 0, 2 do
      local s = c:broker(id):state()
      assert.are.equal(share, #s.processors)
      assert.are.equal(math.max(2, math.min(16, math.floor(2 * cores / 3))), s.io.threads)
    end
  end)

  it("adds partitions through the controller, placed as Kafka places them", function()
    create(c, "cg", 2)
    -- asked of a broker that does not host the controller: forwarded
    assert.are.same({ { 0, nil } }, grow(c:broker(2), { { name = "cg", count = 5 } }))
    local first = c:partition("cg", 0).replicas[1]
    for p = 2, 4 do
      local info = c:partition("cg", p)
      -- round robin from partition 0's first replica, as if there from the start
      assert.are.equal((first + p) % 3, info.replicas[1])
      assert.are.equal(3, #info.replicas)
      assert(c:wait_for_isr("cg", p, 3, 10000))
      assert(c:wait_for_replicas("cg", p, 10000))
    end
    -- every broker's metadata has them, and a producer writes to one
    local md = open(c:broker(1))
    local r = assert(md:request(METADATA, { topics = { { name = "cg" } }, allow_auto_topic_creation = false }))
    md:close()
    assert.are.equal(5, #r.topics[1].partitions)
    local p = assert(c:producer { acks = -1, linger_ms = 0 })
    assert(p:send("cg", "k", "into p4", { partition = 4 }))
    assert(p:flush(10000))
    p:close()
    assert(kiq.wait_for(function()
      for id = 0, 2 do
        if c:partition("cg", 4).replicas_state[id].high_watermark ~= 1 then return false end
      end
      return true
    end, 10000, "every replica of cg-4 at high watermark 1"))
  end)

  it("takes a manual assignment for new partitions and refuses inconsistent ones", function()
    assert.are.same({ { 39, "The manual partition assignment includes a partition with 2 replica(s), but this is "
      .. "not consistent with previous partitions, which have 3 replica(s)." } },
      grow(c:broker(1), { { name = "cg", count = 6, assignments = { { broker_ids = { 0, 1 } } } } }))
    assert.are.same({ { 39, "The manual partition assignment includes broker 9, but no such broker is registered." } },
      grow(c:broker(1), { { name = "cg", count = 6, assignments = { { broker_ids = { 0, 1, 9 } } } } }))
    assert.are.same({ { 0, nil } },
      grow(c:broker(1), { { name = "cg", count = 6, assignments = { { broker_ids = { 2, 0, 1 } } } } }, true))
    assert.is_nil(c:controller().topics.cg[5]) -- validate_only: no partition 5
    assert.are.same({ { 0, nil } },
      grow(c:broker(1), { { name = "cg", count = 6, assignments = { { broker_ids = { 2, 0, 1 } } } } }))
    assert.are.same({ 2, 0, 1 }, c:partition("cg", 5).replicas)
    assert(c:wait_for_leader("cg", 5, 10000))
    assert.are.equal(2, c:partition("cg", 5).leader)
    assert.are.same({ { 37, "Topic already has 6 partition(s)." } }, grow(c:broker(0), { { name = "cg", count = 6 } }))
  end)

  -- A consumer's Fetch v11+ is served by a follower (KIP-392), so the
  -- Fetch hint is asked of a broker that hosts no replica of the partition.
  local function fetch0(conn, topic_id, version)
    return assert(conn:request(FETCH, { max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, session_epoch = -1,
      topics = { { topic_id = topic_id, topic = "", partitions = { { partition = 0, fetch_offset = 0,
        partition_max_bytes = 1048576 } } } }, forgotten_topics_data = {}, rack_id = "" }, version and { version = version }))
  end

  it("names the leader in a non-leader's Produce v10+ and Fetch v16+ answers", function()
    local leader = c:partition("cg", 0).leader
    local other = (leader + 1) % 3
    local conn = open(c:broker(other))
    local batch = assert(core.build_batch { records = { { key = "k", value = "v" } } })
    local r, v = assert(conn:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
      { name = "cg", partition_data = { { index = 0, records = batch } } } } }))
    assert.are.equal(12, v)
    local pr = r.responses[1].partition_responses[1]
    assert.are.equal(6, pr.error_code)
    assert.are.same({ leader, c:partition("cg", 0).leader_epoch },
      { pr.current_leader.leader_id, pr.current_leader.leader_epoch })
    assert.are.same({ leader, c:broker(leader).port }, { r.node_endpoints[1].node_id, r.node_endpoints[1].port })
    -- below v10 / v16 the answers carry no hints
    r = assert(conn:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
      { name = "cg", partition_data = { { index = 0, records = batch } } } } }, { version = 9 }))
    assert.is_nil(r.node_endpoints)
    conn:close()

    create(c, "solo", 1, 1)
    local solo = c:partition("solo", 0).leader
    conn = open(c:broker((solo + 1) % 3))
    local md = assert(conn:request(METADATA, { topics = { { name = "solo" } }, allow_auto_topic_creation = false }))
    local f = fetch0(conn, md.topics[1].topic_id)
    local fp = f.responses[1].partitions[1]
    assert.are.equal(6, fp.error_code)
    assert.are.equal(solo, fp.current_leader.leader_id)
    assert.are.same({ solo, c:broker(solo).port }, { f.node_endpoints[1].node_id, f.node_endpoints[1].port })
    conn:close()
  end)

  it("serves a consumer's Fetch v11+ from a follower, and not below v11 (KIP-392)", function()
    local leader = c:partition("cg", 0).leader
    local conn = open(c:broker((leader + 1) % 3))
    local md = assert(conn:request(METADATA, { topics = { { name = "cg" } }, allow_auto_topic_creation = false }))
    local f = fetch0(conn, md.topics[1].topic_id)
    assert.are.equal(0, f.responses[1].partitions[1].error_code)
    f = assert(conn:request(FETCH, { max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, topics = { { topic = "cg",
      partitions = { { partition = 0, fetch_offset = 0, partition_max_bytes = 1048576 } } } } }, { version = 10 }))
    assert.are.equal(6, f.responses[1].partitions[1].error_code)
    conn:close()
  end)

  it("lists every broker in DescribeCluster", function()
    local conn = open(c:broker(1))
    local r = assert(conn:request(DESCRIBE_CLUSTER, { include_cluster_authorized_operations = false }))
    conn:close()
    local ids = {}
    for _, br in ipairs(r.brokers) do ids[#ids + 1] = br.broker_id end
    table.sort(ids)
    assert.are.same({ 0, 1, 2 }, ids)
    assert.are.equal(0, r.controller_id)
    assert.are.equal(-2147483648, r.cluster_authorized_operations)
  end)

  it("elects the preferred leader on request, once it is needed", function()
    create(c, "ce", 3)
    local part = away_from_controller(c, "ce", 3)
    local preferred = c:partition("ce", part).replicas[1]
    assert.are.equal(preferred, c:partition("ce", part).leader)
    local r = elect(c:broker(1), 0, { { topic = "ce", partitions = { part } } })
    assert.are.equal(84, r.replica_election_results[1].partition_result[1].error_code)
    -- an unknown topic's partitions come back as asked, as Kafka's controller answers them
    r = elect(c:broker(1), 0, { { topic = "ce-nowhere", partitions = { 2 } } })
    assert.are.same({ 3, "No such topic as ce-nowhere", 2 }, { r.replica_election_results[1].partition_result[1].error_code,
      r.replica_election_results[1].partition_result[1].error_message,
      r.replica_election_results[1].partition_result[1].partition_id })
    -- the preferred replica restarts: leadership moves, and stays away (no auto rebalance)
    c:kill(preferred)
    assert(c:wait_for_leader("ce", part, 10000, preferred))
    assert(c:restart(preferred))
    assert(c:wait_for_isr("ce", part, 3, 15000))
    assert.are_not.equal(preferred, c:partition("ce", part).leader)
    r = elect(c:broker(1), 0, { { topic = "ce", partitions = { part } } })
    assert.are.same({ "ce", part, 0 }, { r.replica_election_results[1].topic,
      r.replica_election_results[1].partition_result[1].partition_id,
      r.replica_election_results[1].partition_result[1].error_code })
    assert(kiq.wait_for(function() return c:partition("ce", part).leader == preferred end, 10000, "the preferred leader"))
    -- every partition asked for: the ones that needed nothing are left out
    r = elect(c:broker(0), 0, nil)
    for _, t in ipairs(r.replica_election_results) do
      for _, p in ipairs(t.partition_result) do assert.are_not.equal(84, p.error_code) end
    end
  end)

  it("elects an out-of-sync replica on an unclean request, only for a partition without a leader", function()
    create(c, "cu", 3)
    local part = away_from_controller(c, "cu", 3)
    local leader = c:partition("cu", part).leader
    local r = elect(c:broker(0), 1, { { topic = "cu", partitions = { part } } })
    assert.are.equal(84, r.replica_election_results[1].partition_result[1].error_code) -- it has a leader
    -- the followers fall out of the ISR, then the leader dies: offline
    for id = 0, 2 do
      if id ~= leader then c:cut(leader, id) end
    end
    assert(c:wait_for_isr("cu", part, 1, 15000))
    c:kill(leader)
    assert(kiq.wait_for(function() return c:controller().topics.cu[part].leader == -1 end, 10000, "offline"))
    r = elect(c:broker(0), 0, { { topic = "cu", partitions = { part } } })
    assert.are.equal(80, r.replica_election_results[1].partition_result[1].error_code) -- PREFERRED_LEADER_NOT_AVAILABLE
    r = elect(c:broker(0), 1, { { topic = "cu", partitions = { part } } })
    assert.are.equal(0, r.replica_election_results[1].partition_result[1].error_code)
    local new = assert(c:wait_for_leader("cu", part, 10000, leader))
    assert.are_not.equal(leader, new)
    assert.are.same({ new }, c:partition("cu", part).isr)
    c:heal(leader, (leader + 1) % 3)
    c:heal(leader, (leader + 2) % 3)
    assert(c:restart(leader))
  end)
end)
