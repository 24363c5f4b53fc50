-- Mixed groups (KIP-848's online migration) through raw requests, across
-- restarts: a classic group's member stays when a consumer-protocol member
-- joins (the group upgraded at the classic generation, the member's
-- epoch its generation); the classic member and its protocols come back
-- from __consumer_offsets (ClassicMemberMetadata in its record); when the
-- consumer-protocol member leaves the group is classic again, rebalances,
-- and comes back classic after a restart too. A classic member told to
-- rejoin that does not is removed after its rebalance timeout.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
kiq.log_level("warn")

local JOIN, HEARTBEAT, SYNC, DESCRIBE = 11, 12, 14, 15
local CG_HEARTBEAT, CG_DESCRIBE = 68, 69
local NONE, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION = 0, 27, 22

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, {
    client_id = "spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
end

local function be16(n) return string.char(math.floor(n / 256) % 256, n % 256) end

-- ConsumerProtocolSubscription v0 of topic "t"; its assignment of partitions.
local SUB = "\0\0\0\0\0\1" .. be16(1) .. "t\0\0\0\0"
local function assignment(ps)
  local out = { "\0\0\0\0\0\1", be16(1), "t", "\0\0\0", string.char(#ps) }
  for _, p in ipairs(ps) do out[#out + 1] = "\0\0\0" .. string.char(p) end
  out[#out + 1] = "\255\255\255\255"
  return table.concat(out)
end

local function join(c, member, rebalance_ms)
  return assert(c:request(JOIN, { group_id = "g", session_timeout_ms = 10000, rebalance_timeout_ms = rebalance_ms or 10000,
    member_id = member or "", protocol_type = "consumer", protocols = { { name = "range", metadata = SUB } } }))
end

local function sync(c, member, gen, assignments)
  return assert(c:request(SYNC, { group_id = "g", generation_id = gen, member_id = member,
    protocol_type = "consumer", protocol_name = "range", assignments = assignments or {} }))
end

local function heartbeat(c, member, gen)
  return assert(c:request(HEARTBEAT, { group_id = "g", generation_id = gen, member_id = member })).error_code
end

local function beat(c, member, epoch, owned)
  local r = assert(c:request(CG_HEARTBEAT, { group_id = "g", member_id = member, member_epoch = epoch,
    rebalance_timeout_ms = epoch == 0 and 10000 or -1, subscribed_topic_names = epoch == 0 and { "t" } or nil,
    topic_partitions = owned }))
  assert.are.equal(NONE, r.error_code)
  return r
end

local function described(c)
  local g = assert(c:request(CG_DESCRIBE, { group_ids = { "g" }, include_authorized_operations = false })).groups[1]
  local by = {}
  for _, m in ipairs(g.members) do by[m.member_id] = m end
  return g, by
end

describe("mixed consumer groups", function()
  local b, c
  before_each(function()
    b = assert(kiq.broker{ ["group.initial.rebalance.delay.ms"] = 0, ["group.consumer.heartbeat.interval.ms"] = 100 })
    local a = b:admin()
    assert(a:create_topics{ { name = "t", partitions = 2 } })
    a:close()
    c = open(b)
  end)
  after_each(function()
    c:close()
    b:stop()
  end)

  -- A classic member holding both partitions: its id and generation.
  local function classic_member(rebalance_ms)
    local r = join(c, nil, rebalance_ms)
    if r.error_code == 79 then r = join(c, r.member_id, rebalance_ms) end -- MEMBER_ID_REQUIRED
    assert.are.equal(NONE, r.error_code)
    local classic, gen = r.member_id, r.generation_id
    assert.are.equal(NONE, sync(c, classic, gen, { { member_id = classic, assignment = assignment({ 0, 1 }) } }).error_code)
    return classic, gen
  end

  it("keeps a classic member through an upgrade, a restart, and the downgrade", function()
    local classic, gen = classic_member()
    local r

    -- a consumer-protocol member: the group upgraded, a new epoch, nothing free for it yet
    local cr = beat(c, "m-consumer", 0, {})
    assert.are.equal(gen + 1, cr.member_epoch)
    assert.are.equal(0, #cr.assignment.topic_partitions)
    local _, by0 = described(c)
    local topic_id = by0[classic].assignment.topic_partitions[1].topic_id
    assert.are.equal(REBALANCE_IN_PROGRESS, heartbeat(c, classic, gen))

    -- the classic member rejoins: it is no leader, its generation is its epoch, its half comes from the assignor
    r = join(c, classic)
    assert.are.equal(NONE, r.error_code)
    assert.are.equal(gen + 1, r.generation_id)
    assert.are.equal("", r.leader)
    assert.are.equal(0, #r.members)
    gen = r.generation_id
    local s = sync(c, classic, gen)
    assert.are.equal(NONE, s.error_code)
    assert.are.equal(assignment({ 0 }), s.assignment)
    cr = beat(c, "m-consumer", cr.member_epoch, {})
    assert.are.same({ 1 }, cr.assignment.topic_partitions[1].partitions)

    -- restarted: both members as they were, the classic one with its protocols
    b:restart()
    c:close()
    c = open(b)
    local g, by = described(c)
    assert.are.equal("Stable", g.group_state)
    assert.are.equal(0, by[classic].member_type)
    assert.are.equal(1, by["m-consumer"].member_type)
    assert.are.equal(gen, by[classic].member_epoch)
    assert.are.equal(NONE, heartbeat(c, classic, gen))
    assert.are.equal(ILLEGAL_GENERATION, heartbeat(c, classic, gen + 1))
    assert.are.equal(assignment({ 0 }), sync(c, classic, gen).assignment)

    -- the consumer-protocol member leaves: a classic group again, rebalancing
    r = assert(c:request(CG_HEARTBEAT, { group_id = "g", member_id = "m-consumer", member_epoch = -1,
      topic_partitions = { { topic_id = topic_id, partitions = { 1 } } } }))
    assert.are.equal(NONE, r.error_code)
    assert.are.equal(REBALANCE_IN_PROGRESS, heartbeat(c, classic, gen))
    r = join(c, classic)
    assert.are.equal(NONE, r.error_code)
    assert.are.equal(gen + 1, r.generation_id)
    assert.are.equal(classic, r.leader)
    assert.are.equal(NONE, sync(c, classic, r.generation_id,
      { { member_id = classic, assignment = assignment({ 0, 1 }) } }).error_code)

    b:restart()
    c:close()
    c = open(b)
    local d = assert(c:request(DESCRIBE, { groups = { "g" }, include_authorized_operations = false })).groups[1]
    assert.are.equal("Stable", d.group_state)
    assert.are.equal("range", d.protocol_data)
    assert.are.equal(1, #d.members)
    assert.are.equal(NONE, heartbeat(c, classic, r.generation_id))
    assert.are.equal(69, assert(c:request(CG_DESCRIBE, { group_ids = { "g" },
      include_authorized_operations = false })).groups[1].error_code) -- GROUP_ID_NOT_FOUND: not a consumer group
  end)

  it("takes a classic member into a consumer group that has members", function()
    local cr = beat(c, "m-consumer", 0, {})
    local topic_id = cr.assignment.topic_partitions[1].topic_id
    local r = join(c)
    assert.are.equal(79, r.error_code) -- MEMBER_ID_REQUIRED, with the id to come back with
    assert.are_not.equal("", r.member_id)
    local classic = r.member_id
    r = join(c, classic)
    assert.are.equal(NONE, r.error_code)
    assert.are.equal("", r.leader)
    local gen = r.generation_id
    assert.are.equal(NONE, sync(c, classic, gen).error_code)
    -- the consumer member gives a partition up; the classic member learns of it from its heartbeat
    cr = beat(c, "m-consumer", cr.member_epoch, { { topic_id = topic_id, partitions = { 0, 1 } } })
    local kept = cr.assignment.topic_partitions[1].partitions
    assert.are.equal(1, #kept)
    beat(c, "m-consumer", cr.member_epoch, { { topic_id = topic_id, partitions = kept } })
    assert.are.equal(REBALANCE_IN_PROGRESS, heartbeat(c, classic, gen))
    r = join(c, classic)
    assert.are.equal(NONE, r.error_code)
    assert.are.equal(assignment({ 1 - kept[1] }), sync(c, classic, r.generation_id).assignment)
    assert.are.equal(NONE, heartbeat(c, classic, r.generation_id))
    -- a member whose protocols the classic members do not share is refused
    local other = assert(c:request(JOIN, { group_id = "g", session_timeout_ms = 10000, rebalance_timeout_ms = 10000,
      member_id = "", protocol_type = "consumer", protocols = { { name = "roundrobin", metadata = SUB } } }))
    assert.are.equal(23, other.error_code) -- INCONSISTENT_GROUP_PROTOCOL
  end)

  it("removes a classic member that does not rejoin within its rebalance timeout", function()
    local classic, gen = classic_member(300)
    beat(c, "m-consumer", 0, {})
    assert.are.equal(REBALANCE_IN_PROGRESS, heartbeat(c, classic, gen))
    kiq.wait_for(function()
      local _, by = described(c)
      return by[classic] == nil
    end, 10000, "the classic member to be removed")
    local _, by = described(c)
    assert.is_not_nil(by["m-consumer"])
    assert.are.equal(25, heartbeat(c, classic, gen)) -- UNKNOWN_MEMBER_ID
  end)

  it("upgrades no group with members when group.consumer.migration.policy is disabled", function()
    c:close()
    b:stop()
    b = assert(kiq.broker{ ["group.initial.rebalance.delay.ms"] = 0,
      ["group.consumer.migration.policy"] = "disabled" })
    local a = b:admin()
    assert(a:create_topics{ { name = "t", partitions = 2 } })
    a:close()
    c = open(b)
    local classic, gen = classic_member()
    local r = assert(c:request(CG_HEARTBEAT, { group_id = "g", member_id = "m-consumer", member_epoch = 0,
      rebalance_timeout_ms = 10000, subscribed_topic_names = { "t" }, topic_partitions = {} }))
    assert.are.equal(69, r.error_code) -- GROUP_ID_NOT_FOUND: a classic group
    assert.are.equal(NONE, heartbeat(c, classic, gen))
  end)
end)
