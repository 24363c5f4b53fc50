-- The group coordinator seen through raw requests from one connection: the
-- join/sync/heartbeat/leave cycle, the errors stale and unknown members
-- get, committed offsets kept across restarts, expiry, b:groups().
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
kiq.log_level("warn")

local FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 10, 11, 12, 13, 14
local OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE, LIST, DELETE = 8, 9, 15, 16, 42

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, {
    client_id = "spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
end

local function join(c, group, member_id, opts)
  opts = opts or {}
  return assert(c:request(JOIN, {
    group_id = group, session_timeout_ms = opts.session or 10000, rebalance_timeout_ms = 10000,
    member_id = member_id or "", group_instance_id = opts.instance, protocol_type = opts.type or "consumer",
    protocols = opts.protocols or { { name = "range", metadata = "sub-" .. (member_id or "") } },
  }))
end

-- A stable one-member group: the member id and generation.
local function stable_member(c, group, opts)
  local r = join(c, group, "", opts)
  if r.error_code == 79 then r = join(c, group, r.member_id, opts) end
  assert.are.equal(0, r.error_code)
  assert.are.equal(r.member_id, r.leader)
  local s = assert(c:request(SYNC, { group_id = group, generation_id = r.generation_id, member_id = r.member_id,
    group_instance_id = opts and opts.instance,
    assignments = { { member_id = r.member_id, assignment = "assignment-bytes" } } }))
  assert.are.equal(0, s.error_code)
  assert.are.equal("assignment-bytes", s.assignment)
  return r.member_id, r.generation_id
end

local function commit(c, group, gen, member, offset, metadata)
  local r = assert(c:request(OFFSET_COMMIT, { group_id = group, generation_id_or_member_epoch = gen,
    member_id = member, topics = { { name = "t", partitions = {
      { partition_index = 0, committed_offset = offset, committed_metadata = metadata } } } } }, { version = 9 }))
  return r.topics[1].partitions[1].error_code
end

local function fetched(c, group)
  local r = assert(c:request(OFFSET_FETCH, { groups = { { group_id = group,
    topics = { { name = "t", partition_indexes = { 0 } } } } } }, { version = 9 }))
  local p = r.groups[1].topics[1].partitions[1]
  return p.committed_offset, p.metadata, p.error_code
end

-- v9 (by name): offset, metadata, error of one partition
local function fetched_at(c, group, topic, partition)
  local r = assert(c:request(OFFSET_FETCH, { groups = { { group_id = group,
    topics = { { name = topic, partition_indexes = { partition } } } } } }, { version = 9 }))
  local p = r.groups[1].topics[1].partitions[1]
  return p.committed_offset, p.metadata, p.error_code
end

local function group_of(b, id)
  for _, g in ipairs(b:groups()) do
    if g.id == id then return g end
  end
end

describe("group coordinator", function()
  local b, c
  before_each(function()
    b = assert(kiq.broker{ ["group.initial.rebalance.delay.ms"] = 0, ["group.min.session.timeout.ms"] = 500,
      ["offsets.topic.num.partitions"] = 3 })
    local a = b:admin()
    assert(a:create_topics{ { name = "t", partitions = 2 } })
    a:close()
    c = open(b)
  end)
  after_each(function()
    c:close()
    b:stop()
  end)

  it("finds itself as the coordinator and creates __consumer_offsets", function()
    local r = assert(c:request(FIND_COORDINATOR, { key_type = 0, coordinator_keys = { "g" } }))
    assert.are.equal(0, r.coordinators[1].error_code)
    assert.are.equal(b.port, r.coordinators[1].port)
    assert.are.equal(3, b:state().topics.__consumer_offsets.partition_count)
    -- a transactional id's coordinator is here too (transactions_spec.lua)
    local tx = assert(c:request(FIND_COORDINATOR, { key_type = 1, coordinator_keys = { "tx" } }))
    assert.are.same({ 0, b.port }, { tx.coordinators[1].error_code, tx.coordinators[1].port })
  end)

  it("asks a new member to rejoin with its id (MEMBER_ID_REQUIRED), then forms a stable group", function()
    local r = join(c, "g", "")
    assert.are.equal(79, r.error_code)
    assert.is_true(#r.member_id > 0)
    local id, gen = stable_member(c, "g")
    local g = group_of(b, "g")
    assert.are.equal("Stable", g.state)
    assert.are.equal(gen, g.generation)
    assert.are.equal(1, #g.members)
    assert.are.equal(id, g.members[1].id)
    assert.are.equal("assignment-bytes", g.members[1].assignment)
    local d = assert(c:request(DESCRIBE, { groups = { "g", "nobody" } }))
    assert.are.equal("Stable", d.groups[1].group_state)
    assert.are.equal("range", d.groups[1].protocol_data)
    assert.are.equal(id, d.groups[1].members[1].member_id)
    assert.are.equal("spec", d.groups[1].members[1].client_id)
    assert.are.equal("/127.0.0.1", d.groups[1].members[1].client_host)
    assert.are.equal("Dead", d.groups[2].group_state)
    local l = assert(c:request(LIST, { states_filter = { "stable" } }))
    assert.are.equal(1, #l.groups)
    assert.are.equal("g", l.groups[1].group_id)
    assert.are.equal(0, #assert(c:request(LIST, { states_filter = { "Empty" } })).groups)
  end)

  it("refuses bad joins: session timeout out of range, no protocol, protocols in common with none", function()
    assert.are.equal(26, join(c, "g", "", { session = 100 }).error_code)
    assert.are.equal(23, join(c, "g", "", { protocols = {} }).error_code)
    stable_member(c, "g")
    assert.are.equal(23, join(c, "g", "", { protocols = { { name = "other", metadata = "" } } }).error_code)
    assert.are.equal(23, join(c, "g", "", { type = "connect" }).error_code)
    assert.are.equal(25, join(c, "g", "made-up-id").error_code)
  end)

  it("refuses commits and heartbeats from unknown members and stale generations, changing nothing", function()
    local id, gen = stable_member(c, "g")
    assert.are.equal(0, commit(c, "g", gen, id, 42, "meta"))
    assert.are.equal(25, commit(c, "g", gen, "nobody", 7))
    assert.are.equal(22, commit(c, "g", gen - 1, id, 7))
    assert.are.equal(22, commit(c, "g", gen + 1, id, 7))
    assert.are.equal(25, commit(c, "g", -1, "", 7)) -- a plain commit into a group with members
    local off, meta = fetched(c, "g")
    assert.are.equal(42, off)
    assert.are.equal("meta", meta)
    assert.are.equal(22, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen + 1, member_id = id })).error_code)
    assert.are.equal(25, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = "x" })).error_code)
    assert.are.equal(0, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = id })).error_code)
    assert.are.equal(22, assert(c:request(SYNC, { group_id = "g", generation_id = gen + 5, member_id = id,
      assignments = {} })).error_code)
    assert.are.equal(42, (fetched(c, "g")))
  end)

  it("commits and fetches by topic id from v10, an unknown id UNKNOWN_TOPIC_ID", function()
    local id = assert(c:request(3, { topics = { { name = "t" } } })).topics[1].topic_id
    local none = "AAAAAAAAAAAAAAAAAAAAAQ"
    local r = assert(c:request(OFFSET_COMMIT, { group_id = "by-id", generation_id_or_member_epoch = -1,
      member_id = "", topics = {
        { topic_id = id, partitions = { { partition_index = 1, committed_offset = 12, committed_metadata = "x" } } },
        { topic_id = none, partitions = { { partition_index = 0, committed_offset = 1 } } } } }, { version = 10 }))
    -- the unknown id first, as Kafka answers
    assert.are.same({ none, 100, id, 0 }, { r.topics[1].topic_id, r.topics[1].partitions[1].error_code,
      r.topics[2].topic_id, r.topics[2].partitions[1].error_code })
    -- kept by name: v9 finds it
    assert.are.same({ 12, "x", 0 }, { fetched_at(c, "by-id", "t", 1) })
    r = assert(c:request(OFFSET_FETCH, { groups = { { group_id = "by-id", topics = { { topic_id = id,
      partition_indexes = { 1 } }, { topic_id = none, partition_indexes = { 0 } } } } } }, { version = 10 }))
    local t = r.groups[1].topics
    assert.are.same({ id, 12, 0 }, { t[1].topic_id, t[1].partitions[1].committed_offset,
      t[1].partitions[1].error_code })
    assert.are.same({ none, -1, 100 }, { t[2].topic_id, t[2].partitions[1].committed_offset,
      t[2].partitions[1].error_code })
    -- all of the group's offsets, named by id
    r = assert(c:request(OFFSET_FETCH, { groups = { { group_id = "by-id" } } }, { version = 10 }))
    t = r.groups[1].topics
    assert.are.same({ 1, id, 12 }, { #t, t[1].topic_id, t[1].partitions[1].committed_offset })
  end)

  it("answers -1 with no error where nothing was committed, and for unknown groups", function()
    local off, meta, err = fetched(c, "never")
    assert.are.equal(-1, off)
    assert.are.equal("", meta)
    assert.are.equal(0, err)
  end)

  it("deletes only empty groups, and their offsets with them", function()
    local id, gen = stable_member(c, "g")
    assert.are.equal(0, commit(c, "g", gen, id, 9))
    local r = assert(c:request(DELETE, { groups_names = { "g", "missing" } }))
    assert.are.equal(68, r.results[1].error_code)
    assert.are.equal(69, r.results[2].error_code)
    local lv = assert(c:request(LEAVE, { group_id = "g", members = { { member_id = id } } }))
    assert.are.equal(0, lv.error_code)
    assert.are.equal(0, lv.members[1].error_code)
    assert.are.equal("Empty", group_of(b, "g").state)
    assert.are.equal(0, assert(c:request(DELETE, { groups_names = { "g" } })).results[1].error_code)
    assert.is_nil(group_of(b, "g"))
    assert.are.equal(-1, (fetched(c, "g")))
    b:restart()
    c:close()
    c = open(b)
    assert.is_nil(group_of(b, "g"))
    assert.are.equal(-1, (fetched(c, "g")))
  end)

  it("expires a member that stops heartbeating, and the group becomes empty", function()
    stable_member(c, "g", { session = 600 })
    kiq.wait_for(function() return group_of(b, "g").state == "Empty" end, 10000, "the session to time out")
    assert.are.equal(0, #group_of(b, "g").members)
  end)

  it("fences the old id of a static member that rejoined", function()
    local old, gen = stable_member(c, "g", { instance = "box-1" })
    local r = join(c, "g", "", { instance = "box-1" })
    assert.are.equal(0, r.error_code)
    assert.are_not.equal(old, r.member_id)
    assert.are.equal(gen, r.generation_id) -- same metadata: no rebalance
    assert.are.equal(82, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = old,
      group_instance_id = "box-1" })).error_code)
    assert.are.equal(0, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = r.member_id,
      group_instance_id = "box-1" })).error_code)
  end)

  it("keeps committed offsets, metadata and the stable group across a restart", function()
    local id, gen = stable_member(c, "g")
    assert.are.equal(0, commit(c, "g", gen, id, 1234, "resume-here"))
    assert.are.equal(0, commit(c, "plain", -1, "", 77, nil))
    b:restart()
    c:close()
    c = open(b)
    local off, meta = fetched(c, "g")
    assert.are.equal(1234, off)
    assert.are.equal("resume-here", meta)
    assert.are.equal(77, (fetched(c, "plain")))
    local g = group_of(b, "g")
    assert.are.equal("Stable", g.state)
    assert.are.equal(gen, g.generation)
    -- the member carries on with its id and generation
    assert.are.equal(0, assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = id })).error_code)
  end)

  it("waits group.initial.rebalance.delay.ms for more members, and picks a protocol all support", function()
    b:stop()
    b = assert(kiq.broker{ ["group.initial.rebalance.delay.ms"] = 1500, ["offsets.topic.num.partitions"] = 3 })
    c:close()
    c = open(b)
    local c2 = open(b)
    local function member(conn, protocols)
      local r = join(conn, "g", "", { protocols = protocols })
      assert.are.equal(79, r.error_code)
      return assert(conn:send_request(JOIN, { group_id = "g", session_timeout_ms = 10000,
        rebalance_timeout_ms = 10000, member_id = r.member_id, protocol_type = "consumer", protocols = protocols }))
    end
    local p1 = member(c, { { name = "range", metadata = "a" }, { name = "roundrobin", metadata = "b" } })
    local p2 = member(c2, { { name = "roundrobin", metadata = "c" } })
    local function collect(conn, p)
      local r
      kiq.wait_for(function() r = conn:collect(p, 50) return r end, 10000, "the join to complete")
      return r
    end
    local r1, r2 = collect(c, p1), collect(c2, p2)
    assert.are.equal(0, r1.error_code)
    assert.are.equal(0, r2.error_code)
    -- both came within the delay: one rebalance, one generation
    assert.are.equal(1, r1.generation_id)
    assert.are.equal(1, r2.generation_id)
    assert.are.equal("roundrobin", r1.protocol_name)
    local leader = r1.leader == r1.member_id and r1 or r2
    assert.are.equal(2, #leader.members)
    c2:close()
  end)

  it("expires offsets committed with a retention time (OffsetCommit v2-4)", function()
    b:stop()
    b = assert(kiq.broker{ ["group.initial.rebalance.delay.ms"] = 0, ["offsets.retention.check.interval.ms"] = 100,
      ["offsets.topic.num.partitions"] = 3 })
    local a = b:admin()
    assert(a:create_topics{ { name = "t", partitions = 2 } })
    a:close()
    c:close()
    c = open(b)
    c.versions[OFFSET_COMMIT] = 2
    local r = assert(c:request(OFFSET_COMMIT, { group_id = "short", generation_id_or_member_epoch = -1,
      member_id = "", retention_time_ms = 300, topics = { { name = "t", partitions = {
        { partition_index = 0, committed_offset = 5, committed_metadata = "" } } } } }))
    assert.are.equal(0, r.topics[1].partitions[1].error_code)
    assert.are.equal(5, (fetched(c, "short")))
    kiq.wait_for(function() return fetched(c, "short") == -1 end, 10000, "the offset to expire")
    b:restart()
    c:close()
    c = open(b)
    assert.are.equal(-1, (fetched(c, "short")))
  end)
end)
