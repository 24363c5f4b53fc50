-- Consumer protocol (KIP-848) groups through raw ConsumerGroupHeartbeat,
-- OffsetCommit and OffsetDelete requests. Commits: one at the member's
-- epoch counts; one at an older epoch counts for the partitions the member
-- has had since then (Kafka's assignment epochs, KIP-1251: a commit sent
-- while a heartbeat bumped the epoch is not lost), and is
-- STALE_MEMBER_EPOCH for the rest; a newer epoch is always stale.
-- OffsetDelete leaves a subscribed topic's offsets
-- (GROUP_SUBSCRIBED_TO_TOPIC). Regex subscriptions: a regex new to the
-- group is resolved after the heartbeat that brings it, as Kafka resolves
-- it in the background: that heartbeat assigns the named topics, the next
-- one the regex's too.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
kiq.log_level("warn")

local OFFSET_COMMIT, HEARTBEAT = 8, 68
local NONE, STALE_MEMBER_EPOCH = 0, 113

local function beat(c, member, epoch, owned)
  local r = assert(c:request(HEARTBEAT, { group_id = "g", member_id = member, member_epoch = epoch,
    rebalance_timeout_ms = epoch == 0 and 10000 or -1, subscribed_topic_names = epoch == 0 and { "t" } or nil,
    topic_partitions = owned }))
  assert.are.equal(0, r.error_code)
  return r
end

-- The partition numbers of an assignment, sorted; and it as owned partitions.
local function parts(r)
  local out = {}
  for _, tp in ipairs(r.assignment.topic_partitions) do
    for _, p in ipairs(tp.partitions) do out[#out + 1] = p end
  end
  table.sort(out)
  return out
end

local function owning(topic_id, ps)
  return { { topic_id = topic_id, partitions = ps } }
end

local function commit(c, member, epoch, partition)
  local r = assert(c:request(OFFSET_COMMIT, { group_id = "g", generation_id_or_member_epoch = epoch,
    member_id = member, topics = { { name = "t", partitions = {
      { partition_index = partition, committed_offset = 7 } } } } }, { version = 9 })) -- by name
  return r.topics[1].partitions[1].error_code
end

describe("consumer group heartbeats and commits", function()
  local b, c
  before_each(function()
    b = assert(kiq.broker{ ["group.consumer.heartbeat.interval.ms"] = 100 })
    local a = b:admin()
    assert(a:create_topics{ { name = "t", partitions = 2 } })
    a:close()
    c = assert(connection.open("127.0.0.1", b.port, {
      client_id = "spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
  end)
  after_each(function()
    c:close()
    b:stop()
  end)

  it("takes an older epoch's commit for the partitions the member kept", function()
    local m1 = "member-one-000000000001"
    local r = beat(c, m1, 0)
    local e1 = r.member_epoch
    local topic_id = r.assignment.topic_partitions[1].topic_id
    assert.are.same({ 0, 1 }, parts(r))
    assert.are.equal(NONE, commit(c, m1, e1, 0))

    -- m2 joins: m1 gives one partition up under its old epoch, then moves on
    local m2 = "member-two-000000000002"
    local e2 = beat(c, m2, 0).member_epoch
    assert.is_true(e2 > e1)
    r = beat(c, m1, e1, owning(topic_id, { 0, 1 }))
    assert.are.equal(e1, r.member_epoch)
    local kept = parts(r)
    assert.are.equal(1, #kept)
    local gone = 1 - kept[1]
    r = beat(c, m1, e1, owning(topic_id, kept))
    assert.are.equal(e2, r.member_epoch)

    -- a commit m1 sent at e1 while that heartbeat was on its way
    assert.are.equal(NONE, commit(c, m1, e1, kept[1]))
    assert.are.equal(STALE_MEMBER_EPOCH, commit(c, m1, e1, gone), "no longer m1's")
    assert.are.equal(NONE, commit(c, m1, e2, kept[1]))
    assert.are.equal(STALE_MEMBER_EPOCH, commit(c, m1, e2 + 1, kept[1]), "an epoch not given yet")

    -- m2 gets the partition m1 gave up at e2: a commit at e1 is not its
    r = beat(c, m2, e2, owning(topic_id, {}))
    assert.are.same({ gone }, parts(r))
    assert.are.equal(STALE_MEMBER_EPOCH, commit(c, m2, e1, gone))
    assert.are.equal(NONE, commit(c, m2, e2, gone))
  end)

  it("keeps the offsets of topics a member subscribes to from OffsetDelete", function()
    local a = b:admin()
    assert(a:create_topics{ { name = "other", partitions = 1 } })
    a:close()
    local m = "member-delete-000000001"
    local e = beat(c, m, 0).member_epoch
    assert.are.equal(NONE, commit(c, m, e, 0))
    local r = assert(c:request(47, { group_id = "g", topics = {
      { name = "t", partitions = { { partition_index = 0 } } },
      { name = "other", partitions = { { partition_index = 0 } } } } }))
    assert.are.equal(0, r.error_code)
    assert.are.equal(86, r.topics[1].partitions[1].error_code) -- GROUP_SUBSCRIBED_TO_TOPIC
    assert.are.equal(0, r.topics[2].partitions[1].error_code)
  end)

  it("assigns a new regex's topics from the heartbeat after the one that brings it", function()
    local a = b:admin()
    assert(a:create_topics{ { name = "rx-one", partitions = 1 } })
    a:close()
    local m = "member-regex-0000000001"
    local r = assert(c:request(HEARTBEAT, { group_id = "g", member_id = m, member_epoch = 0,
      rebalance_timeout_ms = 10000, subscribed_topic_names = { "t" }, subscribed_topic_regex = "rx-.*" }))
    assert.are.equal(0, r.error_code)
    assert.are.equal(1, #r.assignment.topic_partitions, "the named topic only")
    local t_id = r.assignment.topic_partitions[1].topic_id
    assert.are.same({ 0, 1 }, parts(r))
    local e1 = r.member_epoch
    r = beat(c, m, e1, owning(t_id, { 0, 1 }))
    assert.is_true(r.member_epoch > e1, "a new group epoch for the resolved regex")
    assert.are.equal(2, #r.assignment.topic_partitions, "the regex's topic too")
  end)
end)
