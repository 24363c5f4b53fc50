-- The APIs and versions today's clients use, on one broker, through raw
-- requests: the answers Kafka gives (codes, messages, fields), and the bad
-- input each refuses with an error code while the broker stays up.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
local OFFSET_COMMIT, FIND_COORDINATOR, JOIN, SYNC, DESCRIBE_GROUPS, LIST_GROUPS = 8, 10, 11, 14, 15, 16
local API_VERSIONS, INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH = 18, 22, 23
local DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, ELECT_LEADERS = 35, 37, 43
local DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS, CONSUMER_GROUP_DESCRIBE = 60, 61, 69
local GET_TELEMETRY, PUSH_TELEMETRY, DESCRIBE_TOPIC_PARTITIONS = 71, 72, 75
local ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, {
    client_id = "apis-spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
end

local function create(b, name, partitions)
  local a = assert(kiq.admin { bootstrap = b.bootstrap })
  assert(a:create_topics { { name = name, partitions = partitions } })
  a:close()
end

local function produce(b, topic, partition, records, opts)
  opts = opts or {}
  local c = open(b)
  local batch = assert(core.build_batch { records = records, producer_id = opts.producer_id,
    producer_epoch = opts.producer_epoch, base_sequence = opts.base_sequence })
  local resp = assert(c:request(PRODUCE, { acks = -1, timeout_ms = 5000, topic_data = {
    { name = topic, partition_data = { { index = partition, records = batch } } } } }))
  c:close()
  return resp.responses[1].partition_responses[1]
end

-- A request encoded at version `at`, sent with its header saying `as`
-- instead (a version the codec refuses to write); true when the broker
-- closes the connection without answering.
local function closes_at(b, key, at, as, body)
  local raw = open(b)
  local frame = assert(core.encode_request(key, at, 1, "spec", body or {}))
  frame = frame:sub(1, 6) .. string.char(math.floor(as / 256), as % 256) .. frame:sub(9)
  assert(raw.sock:send(frame, 2000))
  local got = raw.sock:receive(2000)
  raw:close()
  return got == nil
end

-- The topic's id, from Metadata.
local function topic_id(c, name)
  local md = assert(c:request(METADATA, { topics = { { name = name } }, allow_auto_topic_creation = false }))
  return md.topics[1].topic_id
end

describe("Kafka 3.9 APIs on one broker", function()
  local b, c

  setup(function()
    b = assert(kiq.broker {})
    create(b, "apis", 2)
    create(b, "apis-b", 3)
    c = open(b)
  end)

  teardown(function()
    if c then c:close() end
    if b then b:stop() end
  end)

  it("advertises Produce from 0 (librdkafka before 2.11.1 compresses only then) but closes on v0-2", function()
    local resp = assert(c:request(API_VERSIONS, { client_software_name = "spec", client_software_version = "1" }))
    local by = {}
    for _, k in ipairs(resp.api_keys) do by[k.api_key] = k end
    assert.are.same({ 0, 12 }, { by[PRODUCE].min_version, by[PRODUCE].max_version })
    assert.are.same({ 4, 17 }, { by[FETCH].min_version, by[FETCH].max_version })
    assert.are.same({ 2, 10 }, { by[OFFSET_COMMIT].min_version, by[OFFSET_COMMIT].max_version })
    assert.are.same({ 0, 13 }, { by[METADATA].min_version, by[METADATA].max_version })
    assert.are.same({ 0, 9 }, { by[JOIN].min_version, by[JOIN].max_version })
    for _, key in ipairs { DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS, ELECT_LEADERS, CREATE_PARTITIONS,
      DESCRIBE_LOG_DIRS, DESCRIBE_PRODUCERS, GET_TELEMETRY, PUSH_TELEMETRY, OFFSET_FOR_LEADER_EPOCH } do
      assert.is_table(by[key], "api " .. key)
    end
    assert.is_true(closes_at(b, PRODUCE, 3, 2, { acks = 1, timeout_ms = 1000, topic_data = {} }))
    -- and below OffsetCommit's new floor of 2
    local raw = open(b)
    local ok = raw:request(OFFSET_COMMIT, { group_id = "g", topics = {} }, { version = 1 })
    assert.is_nil(ok)
    assert.is_false(raw:alive())
    assert.is_table(c:request(METADATA, { topics = {} })) -- the broker stays up
  end)

  it("answers Metadata v13 with a top-level error code and, asked for, every authorized operation", function()
    local md, v = assert(c:request(METADATA, { topics = { { name = "apis" } }, allow_auto_topic_creation = false,
      include_topic_authorized_operations = true }))
    assert.are.equal(13, v)
    assert.are.equal(0, md.error_code)
    assert.are.equal(3576, md.topics[1].topic_authorized_operations)
    md = assert(c:request(METADATA, { topics = { { name = "apis" } }, allow_auto_topic_creation = false }))
    assert.are.equal(-2147483648, md.topics[1].topic_authorized_operations)
    md = assert(c:request(METADATA, { topics = {}, include_cluster_authorized_operations = true }, { version = 10 }))
    assert.are.equal(8096, md.cluster_authorized_operations)
  end)

  it("fetches by topic id from v13, and answers an unknown id UNKNOWN_TOPIC_ID", function()
    assert.are.equal(0, produce(b, "apis", 0, { { key = "k", value = "by-id" } }).error_code)
    local id = topic_id(c, "apis")
    local function fetch(tid)
      return assert(c:request(FETCH, { max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, session_epoch = -1,
        topics = { { topic_id = tid, partitions = { { partition = 0, fetch_offset = 0,
          partition_max_bytes = 1048576 } } } }, forgotten_topics_data = {}, rack_id = "" }))
    end
    local resp, v = fetch(id)
    assert.are.equal(17, v)
    assert.are.equal(id, resp.responses[1].topic_id)
    local p = resp.responses[1].partitions[1]
    assert.are.equal(0, p.error_code)
    local recs = assert(core.parse_records(p.records))
    assert.are.equal("by-id", recs[1].value)
    resp = fetch("AAAAAAAAAAAAAAAAAAAAAQ")
    assert.are.equal(100, resp.responses[1].partitions[1].error_code)
  end)

  it("lists offsets with v8/v9's timestamps and refuses the others as Kafka does", function()
    local function list(ts, version, twice)
      local parts = { { partition_index = 0, timestamp = ts } }
      if twice then parts[2] = { partition_index = 0, timestamp = ts } end
      local r = assert(c:request(LIST_OFFSETS, { replica_id = -1, isolation_level = 0,
        topics = { { name = "apis", partitions = parts } } }, { version = version }))
      return r.topics[1].partitions
    end
    assert.are.equal(0, list(-4, 8)[1].offset) -- earliest local: the log start
    local tiered = list(-5, 9)[1]
    assert.are.same({ 0, -1, -1 }, { tiered.error_code, tiered.offset, tiered.timestamp })
    assert.are.equal(35, list(-4, 7)[1].error_code) -- UNSUPPORTED_VERSION below v8
    assert.are.equal(35, list(-3, 6)[1].error_code)
    assert.are.equal(35, list(-9, 9)[1].error_code) -- no such special timestamp
    local dup = list(-1, 9, true)
    assert.are.same({ 42, 42 }, { dup[1].error_code, dup[2].error_code }) -- INVALID_REQUEST
  end)

  it("answers OffsetForLeaderEpoch for clients from the leader-epoch cache", function()
    local r = assert(c:request(OFFSET_FOR_LEADER_EPOCH, { replica_id = -1, topics = {
      { topic = "apis", partitions = { { partition = 0, current_leader_epoch = -1, leader_epoch = 0 },
        { partition = 9, current_leader_epoch = -1, leader_epoch = 0 } } },
      { topic = "nowhere", partitions = { { partition = 0, current_leader_epoch = -1, leader_epoch = 0 } } } } }))
    local p = r.topics[1].partitions[1]
    assert.are.same({ 0, 0 }, { p.error_code, p.leader_epoch })
    assert.are.equal(b:state().topics.apis.partitions[0].log_end_offset, p.end_offset)
    assert.are.equal(3, r.topics[1].partitions[2].error_code)
    assert.are.equal(3, r.topics[2].partitions[1].error_code)
    r = assert(c:request(OFFSET_FOR_LEADER_EPOCH, { replica_id = -1, topics = {
      { topic = "apis", partitions = { { partition = 0, current_leader_epoch = 7, leader_epoch = 0 } } } } }))
    assert.are.equal(75, r.topics[1].partitions[1].error_code) -- UNKNOWN_LEADER_EPOCH: newer than ours
  end)

  it("describes the cluster, and refuses an endpoint type it is not", function()
    local r = assert(c:request(DESCRIBE_CLUSTER, { include_cluster_authorized_operations = true, endpoint_type = 1 }))
    assert.are.equal(0, r.error_code)
    assert.are.equal(1, #r.brokers)
    assert.are.equal(b.port, r.brokers[1].port)
    assert.are.equal(r.brokers[1].broker_id, r.controller_id)
    assert.are.equal(8096, r.cluster_authorized_operations)
    assert.are.equal(22, #r.cluster_id)
    r = assert(c:request(DESCRIBE_CLUSTER, { endpoint_type = 2 }))
    assert.are.equal(114, r.error_code) -- MISMATCHED_ENDPOINT_TYPE
    assert.matches("wanted an endpoint of type CONTROLLER", r.error_message)
    r = assert(c:request(DESCRIBE_CLUSTER, { endpoint_type = 9 }))
    assert.are.equal(115, r.error_code) -- UNSUPPORTED_ENDPOINT_TYPE
  end)

  it("pages DescribeTopicPartitions with a cursor", function()
    local function page(limit, cursor, topics)
      return assert(c:request(DESCRIBE_TOPIC_PARTITIONS, { topics = topics or {}, response_partition_limit = limit,
        cursor = cursor }))
    end
    -- apis (2 partitions), apis-b (3); two at a time
    local seen, cursor = {}, nil
    for _ = 1, 10 do
      local r = page(2, cursor, { { name = "apis" }, { name = "apis-b" } })
      for _, t in ipairs(r.topics) do
        assert.are.equal(3576, t.topic_authorized_operations)
        for _, p in ipairs(t.partitions) do
          seen[#seen + 1] = t.name .. "-" .. p.partition_index
          -- empty, never null: the Java Admin client streams them unchecked
          assert.are.same({}, p.eligible_leader_replicas)
          assert.are.same({}, p.last_known_elr)
        end
      end
      cursor = r.next_cursor
      if not cursor then break end
    end
    assert.are.same({ "apis-0", "apis-1", "apis-b-0", "apis-b-1", "apis-b-2" }, seen)
    local r = page(10, nil, { { name = "nowhere" } })
    assert.are.equal(3, r.topics[1].error_code)
    r = page(10, { topic_name = "nowhere", partition_index = 0 }, { { name = "apis" } })
    assert.are.equal(42, r.topics[1].error_code) -- the cursor's topic is not in the list
    r = page(10) -- every topic
    assert.truthy(#r.topics >= 2)
  end)

  it("describes its log directories, their partitions and sizes", function()
    assert.are.equal(0, produce(b, "apis-b", 1, { { value = string.rep("x", 500) } }).error_code)
    local r = assert(c:request(DESCRIBE_LOG_DIRS, { topics = { { topic = "apis-b", partitions = { 1, 2 } } } }))
    assert.are.equal(1, #r.results)
    local d = r.results[1]
    assert.are.equal(0, d.error_code)
    assert.truthy(d.log_dir:sub(1, 1) == "/")
    assert.truthy(d.total_bytes > 0 and d.usable_bytes > 0)
    assert.are.equal(1, #d.topics)
    local sizes = {}
    for _, p in ipairs(d.topics[1].partitions) do sizes[p.partition_index] = p.partition_size end
    assert.truthy(sizes[1] > 500)
    assert.are.equal(0, sizes[2])
    r = assert(c:request(DESCRIBE_LOG_DIRS, { topics = { { topic = "apis-b", partitions = { 1 } } } }, { version = 3 }))
    assert.is_nil(r.results[1].total_bytes) -- not in v3
  end)

  it("describes an idempotent producer's state on a partition", function()
    local ip = assert(c:request(INIT_PRODUCER_ID, { transaction_timeout_ms = 60000 }))
    assert.are.equal(0, ip.error_code)
    assert.are.equal(0, produce(b, "apis", 1, { { key = "a", value = "1" }, { key = "b", value = "2" } },
      { producer_id = ip.producer_id, producer_epoch = ip.producer_epoch, base_sequence = 0 }).error_code)
    local r = assert(c:request(DESCRIBE_PRODUCERS, { topics = { { name = "apis", partition_indexes = { 1, 7 } } } }))
    local p = r.topics[1].partitions[1]
    assert.are.equal(0, p.error_code)
    assert.are.equal(1, #p.active_producers)
    local a = p.active_producers[1]
    assert.are.same({ ip.producer_id, ip.producer_epoch, 1, -1, -1 },
      { a.producer_id, a.producer_epoch, a.last_sequence, a.coordinator_epoch, a.current_txn_start_offset })
    assert.truthy(a.last_timestamp > 0)
    assert.are.equal(3, r.topics[1].partitions[2].error_code)
  end)

  it("finds nothing to elect on a broker that leads everything", function()
    local r = assert(c:request(ELECT_LEADERS, { election_type = 0, timeout_ms = 5000, topic_partitions = {
      { topic = "apis", partitions = { 0, 5 } }, { topic = "nowhere", partitions = { 0 } } } }))
    assert.are.equal(0, r.error_code)
    local res = r.replica_election_results
    assert.are.same({ 84, "Leader election not needed for topic partition." },
      { res[1].partition_result[1].error_code, res[1].partition_result[1].error_message })
    assert.are.same({ 3, "No such partition as apis-5" },
      { res[1].partition_result[2].error_code, res[1].partition_result[2].error_message })
    -- the partition as asked, even of an unknown topic (the Java Admin client looks it up so)
    assert.are.same({ 3, "No such topic as nowhere", 0 }, { res[2].partition_result[1].error_code,
      res[2].partition_result[1].error_message, res[2].partition_result[1].partition_id })
    -- every partition: those needing nothing are left out
    r = assert(c:request(ELECT_LEADERS, { election_type = 1, timeout_ms = 5000 }))
    for _, t in ipairs(r.replica_election_results) do assert.are.same({}, t.partition_result) end
    r = assert(c:request(ELECT_LEADERS, { election_type = 5, timeout_ms = 5000, topic_partitions = {
      { topic = "apis", partitions = { 0 } } } }))
    assert.are.equal(42, r.error_code)
    assert.are.equal(42, r.replica_election_results[1].partition_result[1].error_code)
  end)

  it("offers every client a telemetry subscription to all its metrics", function()
    local r = assert(c:request(GET_TELEMETRY, { client_instance_id = ZERO_UUID }))
    assert.are.equal(0, r.error_code)
    assert.are_not.equal(ZERO_UUID, r.client_instance_id)
    assert.are.same({ "" }, r.requested_metrics)
    assert.are.same({ 4, 3, 1, 2 }, r.accepted_compression_types)
    assert.are.same({ 60000, 1048576, false }, { r.push_interval_ms, r.telemetry_max_bytes, r.delta_temporality })
    local again = assert(c:request(GET_TELEMETRY, { client_instance_id = r.client_instance_id }))
    assert.are.same({ r.client_instance_id, r.subscription_id }, { again.client_instance_id, again.subscription_id })
    local push = assert(c:request(PUSH_TELEMETRY, { client_instance_id = r.client_instance_id,
      subscription_id = r.subscription_id, compression_type = 0, metrics = "" }))
    assert.are.equal(0, push.error_code)
    push = assert(c:request(PUSH_TELEMETRY, { client_instance_id = r.client_instance_id,
      subscription_id = r.subscription_id + 1, compression_type = 0, metrics = "" }))
    assert.are.equal(117, push.error_code) -- UNKNOWN_SUBSCRIPTION_ID
    push = assert(c:request(PUSH_TELEMETRY, { client_instance_id = ZERO_UUID, subscription_id = 1,
      compression_type = 0, metrics = "" }))
    assert.are.equal(42, push.error_code)
  end)

  it("answers the new group versions as Kafka does", function()
    -- a group nobody made: GROUP_ID_NOT_FOUND, in Kafka's words
    local r = assert(c:request(CONSUMER_GROUP_DESCRIBE, { group_ids = { "g1" } }))
    assert.are.same({ 69, "Group g1 not found." }, { r.groups[1].error_code, r.groups[1].error_message })
    -- DescribeGroups v6: an unknown group is GROUP_ID_NOT_FOUND, Dead
    r = assert(c:request(DESCRIBE_GROUPS, { groups = { "ghost" } }))
    assert.are.same({ 69, "Dead", "Group ghost not found." },
      { r.groups[1].error_code, r.groups[1].group_state, r.groups[1].error_message })
    r = assert(c:request(DESCRIBE_GROUPS, { groups = { "ghost" } }, { version = 5 }))
    assert.are.same({ 0, "Dead" }, { r.groups[1].error_code, r.groups[1].group_state })
    -- OffsetCommit v9 naming a generation of a group that does not exist
    local function commit(group, version)
      local cr = assert(c:request(OFFSET_COMMIT, { group_id = group, generation_id_or_member_epoch = 3,
        member_id = "m", topics = { { name = "apis", partitions = { { partition_index = 0, committed_offset = 1 } } } } },
        { version = version }))
      return cr.topics[1].partitions[1].error_code
    end
    assert.are.equal(69, commit("ghost", 9))
    assert.are.equal(22, commit("ghost", 8)) -- ILLEGAL_GENERATION before v9
    -- FindCoordinator: share-partition keys (key type 2) exist from v6; one not group:topicId:partition is refused
    r = assert(c:request(FIND_COORDINATOR, { key_type = 2, coordinator_keys = { "s" } }))
    assert.are.equal(42, r.coordinators[1].error_code)
    r = assert(c:request(FIND_COORDINATOR, { key_type = 2, coordinator_keys = { "s" } }, { version = 5 }))
    assert.are.equal(42, r.coordinators[1].error_code)
  end)

  it("lists groups by type (v5): every group here is classic", function()
    local r = assert(c:request(JOIN, { group_id = "typed", session_timeout_ms = 10000, rebalance_timeout_ms = 10000,
      member_id = "", protocol_type = "consumer", protocols = { { name = "range", metadata = "" } },
      reason = "spec" }))
    if r.error_code == 79 then
      r = assert(c:request(JOIN, { group_id = "typed", session_timeout_ms = 10000, rebalance_timeout_ms = 10000,
        member_id = r.member_id, protocol_type = "consumer", protocols = { { name = "range", metadata = "" } } }))
    end
    assert.are.equal(0, r.error_code)
    assert.is_false(r.skip_assignment)
    local function listed(types)
      local lr = assert(c:request(LIST_GROUPS, { states_filter = {}, types_filter = types }))
      local found
      for _, g in ipairs(lr.groups) do
        if g.group_id == "typed" then found = g end
      end
      return found
    end
    assert.are.equal("classic", listed({}).group_type)
    assert.is_table(listed { "Classic" })
    assert.is_nil(listed { "consumer" })
    assert.is_nil(listed { "share" })
  end)

  it("grows a topic with CreatePartitions, refusing what Kafka refuses", function()
    create(b, "grow", 1)
    local function grow(topics, validate_only)
      local r = assert(c:request(CREATE_PARTITIONS, { topics = topics, timeout_ms = 5000,
        validate_only = validate_only or false }))
      local out = {}
      for _, res in ipairs(r.results) do out[#out + 1] = { res.error_code, res.error_message } end
      return out
    end
    local node = b:state().node_id
    assert.are.same({ { 37, "Topic already has 1 partition(s)." } }, grow { { name = "grow", count = 1 } })
    assert.are.same({ { 37, "The topic grow currently has 1 partition(s); 0 would not be an increase." } },
      grow { { name = "grow", count = 0 } })
    assert.are.same({ { 3, "The topic 'nope' does not exist." } }, grow { { name = "nope", count = 2 } })
    assert.are.same({ { 39, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified." } },
      grow { { name = "grow", count = 3, assignments = { { broker_ids = { node } } } } })
    assert.are.same({ { 39, "The manual partition assignment includes broker 77, but no such broker is registered." } },
      grow { { name = "grow", count = 2, assignments = { { broker_ids = { 77 } } } } })
    assert.are.same({ { 39, "The manual partition assignment includes the broker " .. node .. " more than once." } },
      grow { { name = "grow", count = 2, assignments = { { broker_ids = { node, node } } } } })
    assert.are.same({ { 39, "The manual partition assignment includes an empty replica list." } },
      grow { { name = "grow", count = 2, assignments = { { broker_ids = {} } } } })
    local dup = grow { { name = "grow", count = 2 }, { name = "grow", count = 3 } }
    assert.are.same({ 42, 42 }, { dup[1][1], dup[2][1] })
    -- validate_only changes nothing; then it grows, its new partitions usable at once
    assert.are.same({ { 0, nil } }, grow({ { name = "grow", count = 3 } }, true))
    assert.are.equal(1, b:state().topics.grow.partition_count)
    assert.are.same({ { 0, nil } }, grow { { name = "grow", count = 2, assignments = { { broker_ids = { node } } } } })
    assert.are.same({ { 0, nil } }, grow { { name = "grow", count = 4 } })
    assert.are.equal(4, b:state().topics.grow.partition_count)
    assert.are.equal(0, produce(b, "grow", 3, { { key = "k", value = "in p3" } }).error_code)
    assert.are.equal(1, b:state().topics.grow.partitions[3].log_end_offset)
  end)

  it("keeps grown partitions across a restart", function()
    c:close()
    assert(b:restart())
    c = open(b)
    local st = b:state().topics.grow
    assert.are.equal(4, st.partition_count)
    assert.are.equal(1, st.partitions[3].log_end_offset)
  end)

  it("refuses versions past the newest with a closed connection, and stays up", function()
    for _, t in ipairs { { DESCRIBE_CLUSTER, 3 }, { DESCRIBE_TOPIC_PARTITIONS, 1 }, { ELECT_LEADERS, 3 },
      { CREATE_PARTITIONS, 4 }, { FETCH, 18 }, { METADATA, 14 }, { DESCRIBE_LOG_DIRS, 0 } } do
      local at = t[2] == 0 and 1 or t[2] - 1
      assert.is_true(closes_at(b, t[1], at, t[2]), "api " .. t[1] .. " v" .. t[2])
    end
    assert.is_table(c:request(METADATA, { topics = {} }))
  end)
end)
