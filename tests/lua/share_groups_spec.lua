-- Share groups (KIP-932) through raw requests on one broker: a member's
-- heartbeat and its errors, share sessions and their epochs, records
-- acquired with delivery counts, acknowledgements only by the member
-- holding the records, per-offset acknowledge types, an expired lock
-- making records available again and the delivery limit archiving them,
-- a closed session's records released, and the group as ShareGroupDescribe
-- and ListGroups show it, FindCoordinator key type 2. In a cluster of
-- three: group configs at the controller, key type 2 answered with the
-- leader of the key's __share_group_state partition, fetches at the
-- leader, share offsets admin answered for every partition by the
-- coordinator, and share state in __share_group_state surviving a leader
-- failover. share.isolation.level=read_committed (aborted and open
-- transactions' records not handed out) and a max_bytes of 0.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, METADATA, LIST_GROUPS, FIND_COORDINATOR = 0, 3, 16, 10
local HEARTBEAT, DESCRIBE, FETCH, ACK = 76, 77, 78, 79
local INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED = 42, 25, 110, 81
local INVALID_RECORD_STATE, SESSION_NOT_FOUND, INVALID_SESSION_EPOCH = 121, 122, 123
local SESSION_LIMIT_REACHED, NON_EMPTY_GROUP = 133, 68
local DELETE_GROUPS, DESCRIBE_OFFSETS = 42, 90
local DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
local ACCEPT, RELEASE, REJECT = 1, 2, 3

describe("share groups on one broker", function()
  local b, c, tid
  local epochs = {} -- each member's next share session epoch

  -- The member's next epoch: n given (0 opens, -1 closes, or a wrong one) or its own.
  local function epoch_of(member, n)
    local e = n or epochs[member]
    if e == 0 then epochs[member] = 1 elseif e > 0 and e == epochs[member] then epochs[member] = e + 1 end
    return e
  end

  local function open()
    return assert(connection.open("127.0.0.1", b.port, {
      client_id = "share-spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
  end

  local function produce(values)
    local rs = {}
    for i, v in ipairs(values) do rs[i] = { key = "k", value = v } end
    local resp = assert(c:request(PRODUCE, { acks = -1, timeout_ms = 5000, topic_data = {
      { name = "sh", partition_data = { { index = 0, records = assert(core.build_batch { records = rs }) } } } } }))
    assert.are.equal(0, resp.responses[1].partition_responses[1].error_code)
  end

  local function heartbeat(member, epoch, topics)
    return assert(c:request(HEARTBEAT, { group_id = "sg", member_id = member, member_epoch = epoch,
      subscribed_topic_names = topics }))
  end

  -- A ShareFetch of member at epoch (nil: its next; its acknowledgements: { first, last, types }), answered
  -- at once.
  local function fetch(member, epoch, acks)
    local batches = {}
    for i, a in ipairs(acks or {}) do
      batches[i] = { first_offset = a[1], last_offset = a[2], acknowledge_types = a[3] }
    end
    return assert(c:request(FETCH, { group_id = "sg", member_id = member, share_session_epoch = epoch_of(member, epoch),
      max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, max_records = 500, batch_size = 500,
      topics = { { topic_id = tid, partitions = { { partition_index = 0, acknowledgement_batches = batches } } } },
      forgotten_topics_data = {} }))
  end

  local function ack(member, epoch, a)
    return assert(c:request(ACK, { group_id = "sg", member_id = member, share_session_epoch = epoch_of(member, epoch),
      topics = { { topic_id = tid, partitions = { { partition_index = 0, acknowledgement_batches = {
        { first_offset = a[1], last_offset = a[2], acknowledge_types = a[3] } } } } } } }))
  end

  -- The acquired ranges of a fetch's one partition, as { first, last, deliveries }.
  local function acquired(resp)
    assert.are.equal(0, resp.error_code)
    local p = resp.responses[1].partitions[1]
    assert.are.equal(0, p.error_code)
    local out = {}
    for i, r in ipairs(p.acquired_records) do out[i] = { r.first_offset, r.last_offset, r.delivery_count } end
    return out
  end

  setup(function()
    b = assert(kiq.broker { ["group.share.record.lock.duration.ms"] = 1000, ["group.share.delivery.count.limit"] = 2,
      ["kafkaiq.share.auto.offset.reset"] = "earliest", ["group.share.max.share.sessions"] = 2, ["group.share.max.size"] = 2 })
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "sh", partitions = 1 } })
    a:close()
    c = open()
    local md = assert(c:request(METADATA, { topics = { { name = "sh" } }, allow_auto_topic_creation = false }))
    tid = md.topics[1].topic_id
    assert(c:request(FIND_COORDINATOR, { key = "sg", key_type = 0, coordinator_keys = { "sg" } }))
  end)

  teardown(function()
    if c then c:close() end
    if b then b:stop() end
  end)

  it("takes members in with every partition and refuses bad heartbeats as Kafka does", function()
    assert.are.equal(INVALID_REQUEST, heartbeat("", 0, { "sh" }).error_code)
    local hb = heartbeat("m1", 0, { "sh" })
    assert.are.equal(0, hb.error_code)
    assert.are.equal(1, hb.member_epoch)
    assert.are.same({ 0 }, hb.assignment.topic_partitions[1].partitions)
    assert.are.equal(tid, hb.assignment.topic_partitions[1].topic_id)
    -- a second member shares the one partition
    hb = heartbeat("m2", 0, { "sh" })
    assert.are.same({ 0 }, hb.assignment.topic_partitions[1].partitions)
    assert.are.equal(GROUP_MAX_SIZE_REACHED, heartbeat("m9", 0, { "sh" }).error_code) -- group.share.max.size 2
    assert.are.equal(FENCED_MEMBER_EPOCH, heartbeat("m1", 7).error_code)
    assert.are.equal(UNKNOWN_MEMBER_ID, heartbeat("nobody", 1).error_code)
    local d = assert(c:request(DESCRIBE, { group_ids = { "sg" }, include_authorized_operations = false }))
    assert.are.equal("simple", d.groups[1].assignor_name)
    assert.are.equal(2, #d.groups[1].members)
    local l = assert(c:request(LIST_GROUPS, { states_filter = {}, types_filter = { "share" } }))
    assert.are.equal("sg", l.groups[1].group_id)
    assert.are.equal("share", l.groups[1].group_type)
  end)

  it("names itself the share coordinator of a well-formed key (FindCoordinator key type 2)", function()
    local key = "sg:" .. tid .. ":0"
    local r = assert(c:request(FIND_COORDINATOR, { key_type = 2, coordinator_keys = { key, "sg:nope:0", "sg" } }))
    assert.are.equal(key, r.coordinators[1].key)
    assert.are.equal(0, r.coordinators[1].error_code)
    assert.are.equal(b.port, r.coordinators[1].port)
    assert.are.equal(INVALID_REQUEST, r.coordinators[2].error_code)
    assert.are.equal(INVALID_REQUEST, r.coordinators[3].error_code)
  end)

  it("hands each record to one member at a time, acknowledged only by it", function()
    produce({ "a", "b", "c" })
    assert.are.equal(SESSION_NOT_FOUND, fetch("m1", 1).error_code) -- no session yet
    local f = fetch("m1", 0)
    assert.are.same({ { 0, 2, 1 } }, acquired(f))
    assert.is_true(#f.responses[1].partitions[1].records > 0)
    assert.are.equal(1000, f.acquisition_lock_timeout_ms)
    -- m2 gets none of them, and may not acknowledge them
    assert.are.same({}, acquired(fetch("m2", 0)))
    assert.are.equal(INVALID_RECORD_STATE, ack("m2", nil, { 0, 2, { ACCEPT } }).responses[1].partitions[1].error_code)
    assert.are.equal(INVALID_SESSION_EPOCH, fetch("m1", 5).error_code)
    -- one type per offset: 0 released (delivered again), 1 accepted
    assert.are.equal(0, ack("m1", nil, { 0, 1, { RELEASE, ACCEPT } }).responses[1].partitions[1].error_code)
    assert.are.same({ { 0, 0, 2 } }, acquired(fetch("m2")))
  end)

  it("gives expired locks' records back, and archives them at the delivery limit", function()
    -- m1 still holds 2, m2 holds 0 (its second delivery): both locks run out
    local got
    assert.is_true(kiq.wait_for(function()
      got = acquired(fetch("m1"))
      return #got > 0
    end, 10000, 100))
    -- 0 reached the limit of 2 deliveries: archived; 2 comes again
    assert.are.same({ { 2, 2, 2 } }, got)
    -- a reject archives at once; what follows is new
    assert.are.equal(0, ack("m1", nil, { 2, 2, { REJECT } }).responses[1].partitions[1].error_code)
    produce({ "d" })
    assert.are.same({ { 3, 3, 1 } }, acquired(fetch("m1")))
  end)

  it("releases what a member holds when it closes its session", function()
    local closed = ack("m1", -1, { 3, 3, { RELEASE } })
    assert.are.equal(0, closed.error_code)
    assert.are.equal(SESSION_NOT_FOUND, fetch("m1", epochs.m1).error_code)
    assert.are.same({ { 3, 3, 2 } }, acquired(fetch("m2")))
  end)

  it("keeps at most group.share.max.share.sessions sessions", function()
    -- m2's is open, m1's closed: room for one more
    assert.are.equal(0, fetch("m3", 0).error_code)
    assert.are.equal(SESSION_LIMIT_REACHED, fetch("m4", 0).error_code)
    -- a member opening its own session again replaces it
    assert.are.equal(0, fetch("m3", 0).error_code)
  end)

  it("forgets a deleted share group's state", function()
    local function start_offset()
      local d = assert(c:request(DESCRIBE_OFFSETS, { groups = { { group_id = "sg", topics = {
        { topic_name = "sh", partitions = { 0 } } } } } }))
      assert.are.equal(0, d.groups[1].error_code)
      return d.groups[1].topics[1].partitions[1].start_offset
    end
    assert.is_true(start_offset() >= 0)
    local del = assert(c:request(DELETE_GROUPS, { groups_names = { "sg" } }))
    assert.are.equal(NON_EMPTY_GROUP, del.results[1].error_code)
    assert.are.equal(-1, heartbeat("m1", -1).member_epoch)
    assert.are.equal(-1, heartbeat("m2", -1).member_epoch)
    del = assert(c:request(DELETE_GROUPS, { groups_names = { "sg" } }))
    assert.are.equal(0, del.results[1].error_code)
    assert.are.equal(-1, start_offset())
  end)
end)

describe("share groups in a cluster of three", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["auto.leader.rebalance.enable"] = "false",
      ["kafkaiq.share.auto.offset.reset"] = "earliest", ["share.coordinator.state.topic.num.partitions"] = "3",
      ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local a = assert(c:admin())
    assert(a:create_topics { { name = "shc", partitions = 3, replication_factor = 1 } })
    a:close()
    for p = 0, 2 do assert(c:wait_for_leader("shc", p, 10000)) end
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("keeps a group's configs at the controller, pushed to every broker", function()
    local function conn(b)
      return assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
        request_timeout_ms = 10000 }))
    end
    local one, two = conn(c:broker(1)), conn(c:broker(2))
    local r = assert(one:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
      { resource_type = 32, resource_name = "sgc", configs = {
        { name = "share.record.lock.duration.ms", config_operation = 0, value = "20000" } } } } }))
    assert.are.equal(0, r.responses[1].error_code)
    local value
    assert.is_true(kiq.wait_for(function()
      local d = assert(two:request(DESCRIBE_CONFIGS, { include_synonyms = false, include_documentation = false,
        resources = { { resource_type = 32, resource_name = "sgc",
          configuration_keys = { "share.record.lock.duration.ms" } } } }))
      value = d.results[1].configs[1].value
      return value == "20000"
    end, 10000, 50), value)
    one:close()
    two:close()
  end)

  it("answers key type 2 with the leader of the key's __share_group_state partition, on every broker", function()
    local function conn(b)
      return assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
        request_timeout_ms = 10000 }))
    end
    local bit = require "bit"
    -- Kafka's partition of a coordinator key: abs(Java's String.hashCode) % partitions (ASCII keys here)
    local function partition_for(key, n)
      local h = 0
      for i = 1, #key do h = bit.tobit(h * 31 + key:byte(i)) end
      return math.abs(h) % n
    end
    local cx = { conn(c:broker(0)), conn(c:broker(1)), conn(c:broker(2)) }
    local tid = assert(cx[1]:request(METADATA, { topics = { { name = "shc" } },
      allow_auto_topic_creation = false })).topics[1].topic_id
    local keys = {}
    for p = 0, 2 do keys[#keys + 1] = "sgk:" .. tid .. ":" .. p end
    local answers
    -- the first ask creates the topic through the controller; it is COORDINATOR_NOT_AVAILABLE until then
    assert.is_true(kiq.wait_for(function()
      answers = {}
      for i, x in ipairs(cx) do
        answers[i] = assert(x:request(FIND_COORDINATOR, { key_type = 2, coordinator_keys = keys })).coordinators
        for _, e in ipairs(answers[i]) do if e.error_code ~= 0 then return false end end
      end
      return true
    end, 15000, 100))
    for k, key in ipairs(keys) do
      local leader = c:partition("__share_group_state", partition_for(key, 3)).leader
      for i = 1, 3 do
        assert.are.equal(leader, answers[i][k].node_id, key)
        assert.are.equal(c:broker(leader).port, answers[i][k].port)
      end
    end
    for _, x in ipairs(cx) do x:close() end
  end)

  it("acquires at the partition's leader and names it to a broker asked instead", function()
    local p, leader
    for i = 0, 2 do
      if c:partition("shc", i).leader ~= 0 then p, leader = i, c:partition("shc", i).leader end
    end
    assert.is_number(p, "a partition led away from broker 0")
    local function conn(b)
      return assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
        request_timeout_ms = 10000 }))
    end
    local lc = conn(c:broker(leader))
    local md = assert(lc:request(METADATA, { topics = { { name = "shc" } }, allow_auto_topic_creation = false }))
    local tid = md.topics[1].topic_id
    local resp = assert(lc:request(PRODUCE, { acks = -1, timeout_ms = 5000, topic_data = { { name = "shc",
      partition_data = { { index = p, records = assert(core.build_batch { records = { { value = "x" } } }) } } } } }))
    assert.are.equal(0, resp.responses[1].partition_responses[1].error_code)
    local function share_fetch(cx)
      return assert(cx:request(FETCH, { group_id = "sgc", member_id = "mc", share_session_epoch = 0, max_wait_ms = 0,
        min_bytes = 1, max_bytes = 1048576, max_records = 10, batch_size = 10, topics = { { topic_id = tid,
        partitions = { { partition_index = p, acknowledgement_batches = {} } } } }, forgotten_topics_data = {} }))
    end
    local elsewhere = conn(c:broker(0))
    local f = share_fetch(elsewhere)
    local pr = f.responses[1].partitions[1]
    assert.are.equal(6, pr.error_code) -- NOT_LEADER_OR_FOLLOWER
    assert.are.equal(leader, pr.current_leader.leader_id)
    assert.are.equal(leader, f.node_endpoints[1].node_id)
    assert.are.equal(c:broker(leader).port, f.node_endpoints[1].port)
    f = share_fetch(lc)
    pr = f.responses[1].partitions[1]
    assert.are.equal(0, pr.error_code)
    assert.are.same({ 0, 0, 1 }, { pr.acquired_records[1].first_offset, pr.acquired_records[1].last_offset,
      pr.acquired_records[1].delivery_count })
    elsewhere:close()
    lc:close()
  end)
  it("answers a group's share offsets of every partition at its coordinator, each from its leader", function()
    local ALTER_OFFSETS, DELETE_OFFSETS = 91, 92
    local function conn(b)
      return assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
        request_timeout_ms = 10000 }))
    end
    local leaders = {}
    for i = 0, 2 do leaders[c:partition("shc", i).leader] = true end
    local any = conn(c:broker(0))
    local fc = assert(any:request(FIND_COORDINATOR, { key_type = 0, coordinator_keys = { "sgo" } }))
    local coord = fc.coordinators[1].node_id
    any:close()
    local led_elsewhere = false
    for id in pairs(leaders) do led_elsewhere = led_elsewhere or id ~= coord end
    assert.is_true(led_elsewhere, "a partition led away from the coordinator")
    local cc = conn(c:broker(coord))
    local a = assert(cc:request(ALTER_OFFSETS, { group_id = "sgo", topics = { { topic_name = "shc", partitions = {
      { partition_index = 0, start_offset = 3 }, { partition_index = 1, start_offset = 4 },
      { partition_index = 2, start_offset = 5 } } } } }))
    assert.are.equal(0, a.error_code)
    for i = 1, 3 do assert.are.equal(0, a.responses[1].partitions[i].error_code) end
    local function starts(topics)
      local d = assert(cc:request(DESCRIBE_OFFSETS, { groups = { { group_id = "sgo", topics = topics } } }))
      assert.are.equal(0, d.groups[1].error_code)
      local got = {}
      for _, t in ipairs(d.groups[1].topics) do
        for _, pr in ipairs(t.partitions) do
          assert.are.equal(0, pr.error_code)
          got[pr.partition_index] = pr.start_offset
        end
      end
      return got
    end
    assert.are.same({ [0] = 3, [1] = 4, [2] = 5 }, starts({ { topic_name = "shc", partitions = { 0, 1, 2 } } }))
    assert.are.same({ [0] = 3, [1] = 4, [2] = 5 }, starts(nil)) -- every partition the group has state of
    local del = assert(cc:request(DELETE_OFFSETS, { group_id = "sgo", topics = { { topic_name = "shc" } } }))
    assert.are.equal(0, del.error_code)
    assert.are.equal(0, del.responses[1].error_code)
    assert.are.same({ [0] = -1, [1] = -1, [2] = -1 }, starts({ { topic_name = "shc", partitions = { 0, 1, 2 } } }))
    assert.are.same({}, starts(nil))
    cc:close()
  end)
  -- last: it kills a broker
  it("keeps acknowledged records done when a partition's leader fails over", function()
    local LIST_OFFSETS = 2
    local function conn(b)
      return assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
        request_timeout_ms = 10000 }))
    end
    local a = assert(c:admin())
    assert(a:create_topics { { name = "shf", partitions = 3, replication_factor = 3 } })
    a:close()
    -- a partition led away from broker 0 (the controller's), fully replicated
    local p, leader
    for i = 0, 2 do
      assert(c:wait_for_isr("shf", i, 3, 10000))
      local l = assert(c:wait_for_leader("shf", i, 10000))
      if l ~= 0 and not p then p, leader = i, l end
    end
    assert.is_number(p, "a partition led away from broker 0")
    -- a share group in use has the controller create __share_group_state
    local any = conn(c:broker(0))
    assert(any:request(HEARTBEAT, { group_id = "sgf", member_id = "mf", member_epoch = 0,
      subscribed_topic_names = { "shf" } }))
    any:close()
    for i = 0, 2 do assert(c:wait_for_leader("__share_group_state", i, 10000)) end
    for i = 0, 2 do assert(c:wait_for_isr("__share_group_state", i, 3, 10000)) end
    -- snapshots in __share_group_state as far as every replica has them
    local function snapshots()
      local n = 0
      for i = 0, 2 do
        local lc = conn(c:broker(c:partition("__share_group_state", i).leader))
        local r = assert(lc:request(LIST_OFFSETS, { replica_id = -1, isolation_level = 0, topics = {
          { name = "__share_group_state", partitions = { { partition_index = i, timestamp = -1 } } } } }))
        lc:close()
        n = n + r.topics[1].partitions[1].offset
      end
      return n
    end
    local lc = conn(c:broker(leader))
    local md = assert(lc:request(METADATA, { topics = { { name = "shf" } }, allow_auto_topic_creation = false }))
    local tid = md.topics[1].topic_id
    local rs = {}
    for i = 1, 4 do rs[i] = { value = "v" .. i } end
    local resp = assert(lc:request(PRODUCE, { acks = -1, timeout_ms = 5000, topic_data = { { name = "shf",
      partition_data = { { index = p, records = assert(core.build_batch { records = rs }) } } } } }))
    assert.are.equal(0, resp.responses[1].partition_responses[1].error_code)
    local function share_fetch(cx, member)
      local f = assert(cx:request(FETCH, { group_id = "sgf", member_id = member, share_session_epoch = 0,
        max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, max_records = 10, batch_size = 10, topics = {
          { topic_id = tid, partitions = { { partition_index = p, acknowledgement_batches = {} } } } },
        forgotten_topics_data = {} }))
      local pr = f.responses[1].partitions[1]
      assert.are.equal(0, pr.error_code)
      local out = {}
      for i, r in ipairs(pr.acquired_records) do out[i] = { r.first_offset, r.last_offset, r.delivery_count } end
      return out
    end
    -- what earlier cases wrote is in (each went before an answer on the same peer line)
    local base = snapshots()
    assert.are.same({ { 0, 3, 1 } }, share_fetch(lc, "m1"))
    -- the start and the acquisition written
    assert(kiq.wait_for(function() return snapshots() >= base + 2 end, 10000, "the start and acquisition snapshots"))
    local ack = assert(lc:request(ACK, { group_id = "sgf", member_id = "m1", share_session_epoch = 1, topics = {
      { topic_id = tid, partitions = { { partition_index = p, acknowledgement_batches = {
        { first_offset = 0, last_offset = 1, acknowledge_types = { ACCEPT } } } } } } } }))
    assert.are.equal(0, ack.error_code)
    assert.are.equal(0, ack.responses[1].partitions[1].error_code)
    assert(kiq.wait_for(function() return snapshots() >= base + 3 end, 10000, "the acknowledgement's snapshot"))
    for i = 0, 2 do assert(c:wait_for_replicas("__share_group_state", i, 10000)) end
    lc:close()
    c:kill(leader)
    local now = assert(c:wait_for_leader("shf", p, 10000, leader))
    local nc = conn(c:broker(now))
    -- the new leader loads the state: 0..1 stay done, 2..3 come again
    local got
    assert(kiq.wait_for(function()
      local ok, v = pcall(share_fetch, nc, "m2")
      got = ok and v or got
      return ok
    end, 10000, "the new leader to serve share fetches"))
    assert.are.same({ { 2, 3, 2 } }, got)
    nc:close()
  end)
end)

describe("a share group's isolation level and byte bound", function()
  it("reads committed records only with share.isolation.level=read_committed, and none with max_bytes 0", function()
    local client = require "kafkaiq.client"
    local b = assert(kiq.broker { ["kafkaiq.share.auto.offset.reset"] = "earliest" })
    local a = assert(b:admin())
    assert(a:create_topics { { name = "shtx", partitions = 1 } })
    a:close()
    local c = assert(connection.open("127.0.0.1", b.port, { client_id = "share-spec", connect_timeout_ms = 5000,
      request_timeout_ms = 10000 }))
    local function set_isolation(group, value)
      local r = assert(c:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
        { resource_type = 32, resource_name = group, configs = {
          { name = "share.isolation.level", config_operation = 0, value = value } } } } }))
      return r.responses[1].error_code
    end
    assert.are.equal(40, set_isolation("rc", "serializable")) -- INVALID_CONFIG
    assert.are.equal(0, set_isolation("rc", "read_committed"))
    local tid = assert(c:request(METADATA, { topics = { { name = "shtx" } },
      allow_auto_topic_creation = false })).topics[1].topic_id
    local bs = "127.0.0.1:" .. b.port
    -- offsets 0-1 aborted (marker 2), 3 committed (marker 4), 5 in a transaction still open
    local p = client.producer { bootstrap = bs, transactional_id = "shtx-p", linger_ms = 0 }
    assert(p:begin())
    assert(p:send("shtx", "k", "aborted-1", { partition = 0 }))
    assert(p:send("shtx", "k", "aborted-2", { partition = 0 }))
    assert(p:abort())
    assert(p:begin())
    assert(p:send("shtx", "k", "committed", { partition = 0 }))
    assert(p:commit())
    assert.is_true(kiq.wait_for(function() return b:state().topics.shtx.partitions[0].log_end_offset == 5 end,
      10000, 20))
    local open_ = client.producer { bootstrap = bs, transactional_id = "shtx-open", linger_ms = 0 }
    assert(open_:begin())
    assert(open_:send("shtx", "k", "open", { partition = 0 }))
    assert(open_:flush())
    local epochs = {}
    local function fetch(group, max_bytes)
      local e = epochs[group] or 0
      epochs[group] = e + 1
      local f = assert(c:request(FETCH, { group_id = group, member_id = "m-" .. group, share_session_epoch = e,
        max_wait_ms = 0, min_bytes = 1, max_bytes = max_bytes or 1048576, max_records = 500, batch_size = 500,
        topics = { { topic_id = tid, partitions = { { partition_index = 0, acknowledgement_batches = {} } } } },
        forgotten_topics_data = {} }))
      assert.are.equal(0, f.error_code)
      local out = {}
      for i, r in ipairs(f.responses[1].partitions[1].acquired_records) do
        out[i] = { r.first_offset, r.last_offset, r.delivery_count }
      end
      return out
    end
    for _, g in ipairs { "rc", "ru", "zero" } do
      assert.are.equal(0, assert(c:request(HEARTBEAT, { group_id = g, member_id = "m-" .. g, member_epoch = 0,
        subscribed_topic_names = { "shtx" } })).error_code)
    end
    -- the committed record alone: the aborted ones and the markers archived, the open one past the last stable offset
    assert.are.same({ { 3, 3, 1 } }, fetch("rc"))
    -- read_uncommitted (the default) hands out the data records up to the high watermark
    local ru = fetch("ru")
    assert.are.same({ 0, 5 }, { ru[1][1], ru[#ru][2] })
    -- max_bytes 0: nothing, as Kafka answers it
    assert.are.same({}, fetch("zero", 0))
    assert(open_:commit())
    assert.is_true(kiq.wait_for(function()
      local got = fetch("rc")
      return #got == 1 and got[1][1] == 5 and got[1][2] == 5
    end, 10000, 20))
    p:close()
    open_:close()
    c:close()
    b:stop()
  end)
end)
