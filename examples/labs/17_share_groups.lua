-- Lab 17: share groups (KIP-932, queues for Kafka). The members of a share
-- group share a partition instead of dividing partitions: each ShareFetch
-- acquires available records for the member asking, under a lock, and only
-- that member may acknowledge them: accept (done), release (available to be
-- delivered again, one delivery more) or reject (archived, never again). A
-- lock that runs out unacknowledged makes the records available again; a
-- record delivered share.delivery.count.limit times is archived instead.
-- The share-partition start offset moves past what is finished, and each
-- record's journey says who acquired it, when, and with what delivery count.
--
--   build/kafkaiq run examples/labs/17_share_groups.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(17, "share groups: one partition, two members, records acquired, locked and acknowledged")
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0" })
L:page(b)

local topic, group = "lab17-jobs", "lab17-workers"
local PRODUCE, METADATA, FIND_COORDINATOR, INCREMENTAL_ALTER_CONFIGS = 0, 3, 10, 44
local HEARTBEAT, SHARE_FETCH, SHARE_ACK, DESCRIBE_OFFSETS = 76, 78, 79, 90
local ACCEPT, RELEASE, REJECT = 1, 2, 3
local LOCK_MS, LIMIT = 1500, 3
local host, port = b.bootstrap:match("^([^:]+):(%d+)")
assert(b:admin():create_topics{ { name = topic, partitions = 1 } })

local function open(name)
  return assert(connection.open(host, tonumber(port), { client_id = name, request_timeout_ms = 10000 }))
end
local admin = open("lab17")

L:step("the group's configs: a %d ms lock, at most %d deliveries, from the earliest offset", LOCK_MS, LIMIT)
local r = assert(admin:request(INCREMENTAL_ALTER_CONFIGS, { validate_only = false, resources = {
  { resource_type = 32, resource_name = group, configs = {
    { name = "share.record.lock.duration.ms", config_operation = 0, value = tostring(LOCK_MS) },
    { name = "share.delivery.count.limit", config_operation = 0, value = tostring(LIMIT) },
    { name = "share.auto.offset.reset", config_operation = 0, value = "earliest" } } } } }))
L:say("IncrementalAlterConfigs on group %q: error %d", group, r.responses[1].error_code)
L:fact("configs_error", r.responses[1].error_code)

L:step("six jobs, one record a batch, offsets 0..5")
for i = 0, 5 do
  local resp = assert(admin:request(PRODUCE, { acks = -1, timeout_ms = 5000, topic_data = { { name = topic,
    partition_data = { { index = 0, records = assert(core.build_batch { records = { { value = "job-" .. i } } }) } } } } }))
  assert(resp.responses[1].partition_responses[1].error_code == 0)
end
local md = assert(admin:request(METADATA, { topics = { { name = topic } }, allow_auto_topic_creation = false }))
local tid = md.topics[1].topic_id
assert(kiq.wait_for(function()
  local f = admin:request(FIND_COORDINATOR, { key = group, key_type = 0, coordinator_keys = { group } })
  return f and f.coordinators[1].error_code == 0
end, 10000, "the group's coordinator"))

-- A member: its connection, and its share session's next epoch.
local members = {}
local function member(name)
  members[name] = { conn = open(name), epoch = 0 }
  local hb = assert(members[name].conn:request(HEARTBEAT, { group_id = group, member_id = name, member_epoch = 0,
    subscribed_topic_names = { topic } }))
  local parts = hb.assignment and hb.assignment.topic_partitions[1] and hb.assignment.topic_partitions[1].partitions
  return hb.error_code, parts and table.concat(parts, ",") or "none"
end
local function next_epoch(m)
  local e = m.epoch
  m.epoch = e + 1
  return e
end
-- "first-last(delivery)" for each range a ShareFetch of member name acquired (up to max records; acks riding along).
local function fetch(name, max)
  local m = members[name]
  local f = assert(m.conn:request(SHARE_FETCH, { group_id = group, member_id = name, share_session_epoch = next_epoch(m),
    max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, max_records = max or 500, batch_size = max or 500,
    share_acquire_mode = 1, topics = { { topic_id = tid, partitions = { { partition_index = 0,
      acknowledgement_batches = {} } } } }, forgotten_topics_data = {} }))
  assert(f.error_code == 0 and f.responses[1].partitions[1].error_code == 0, "ShareFetch failed")
  local out = {}
  for _, a in ipairs(f.responses[1].partitions[1].acquired_records) do
    out[#out + 1] = ("%d-%d(%d)"):format(a.first_offset, a.last_offset, a.delivery_count)
  end
  return #out > 0 and table.concat(out, " ") or "none"
end
-- ShareAcknowledge by member name of offsets first..last, one type each -> error
local function ack(name, first, last, types)
  local m = members[name]
  local a = assert(m.conn:request(SHARE_ACK, { group_id = group, member_id = name, share_session_epoch = next_epoch(m),
    topics = { { topic_id = tid, partitions = { { partition_index = 0, acknowledgement_batches = {
      { first_offset = first, last_offset = last, acknowledge_types = types } } } } } } }))
  return a.error_code ~= 0 and a.error_code or a.responses[1].partitions[1].error_code
end
local function start_offset()
  local d = assert(admin:request(DESCRIBE_OFFSETS, { groups = { { group_id = group, topics = {
    { topic_name = topic, partitions = { 0 } } } } } }))
  return d.groups[1].topics[1].partitions[1].start_offset
end

L:step("two members join: both are given partition 0, the whole topic")
local e1, p1 = member("worker-1")
local e2, p2 = member("worker-2")
L:say("worker-1: error %d, partitions %s; worker-2: error %d, partitions %s", e1, p1, e2, p2)
L:fact("worker1_partitions", p1)
L:fact("worker2_partitions", p2)

L:step("each ShareFetch (at most 3 records) acquires records the other does not hold")
local got1 = fetch("worker-1", 3)
local got2 = fetch("worker-2", 3)
L:say("worker-1 acquired %s; worker-2 acquired %s (first-last(delivery count)), each locked for %d ms", got1, got2,
  LOCK_MS)
L:fact("worker1_acquired", got1)
L:fact("worker2_acquired", got2)
L:say("the share-partition start offset: %d (nothing finished yet)", start_offset())
L:fact("start_offset_first", start_offset())

L:step("worker-1 releases offset 0: worker-2 gets it, its second delivery")
L:say("ShareAcknowledge RELEASE 0: error %d", ack("worker-1", 0, 0, { RELEASE }))
local again = fetch("worker-2")
L:say("worker-2's next ShareFetch acquires %s", again)
L:fact("released_redelivered", again)

L:step("worker-2 rejects it: archived, and the start offset moves past it")
local rejected = ack("worker-2", 0, 0, { REJECT })
L:say("ShareAcknowledge REJECT 0: error %d", rejected)
L:fact("reject_error", rejected)
local accepted = ack("worker-2", 3, 5, { ACCEPT, ACCEPT, ACCEPT })
L:say("worker-2 accepts 3..5 too (error %d); the start offset: %d (1 and 2 still held by worker-1)", accepted,
  start_offset())
L:fact("accept_error", accepted)
L:fact("start_offset_after_reject", start_offset())

L:step("worker-1 acknowledges nothing more: after %d ms its lock on 1..2 runs out", LOCK_MS)
local after_lock
assert(kiq.wait_for(function()
  after_lock = fetch("worker-2")
  return after_lock ~= "none"
end, 10000, "worker-1's lock to expire"))
L:say("worker-2's ShareFetch then acquires %s: available again, one delivery more", after_lock)
L:fact("after_lock_expiry", after_lock)
local late = ack("worker-1", 1, 2, { ACCEPT, ACCEPT })
L:say("worker-1's late ACCEPT of 1..2: error %d (INVALID_RECORD_STATE: it holds them no more)", late)
L:fact("late_ack_error", late)

L:step("the delivery limit (%d): released again, offset 2 is archived", LIMIT)
L:say("worker-2 releases 1..2: error %d", ack("worker-2", 1, 2, { RELEASE, RELEASE }))
local third = fetch("worker-1")
L:say("worker-1 acquires %s (its third delivery)", third)
L:fact("third_delivery", third)
L:say("worker-1 releases 2: error %d; it was delivered %d times, so it is archived", ack("worker-1", 2, 2, { RELEASE }),
  LIMIT)
local after_limit = fetch("worker-2")
L:say("worker-2's ShareFetch acquires %s: nothing is available", after_limit)
L:fact("after_limit", after_limit)

L:step("worker-1 accepts 1: every record is finished, the start offset moves to the end")
local before = start_offset()
L:say("start offset %d; ShareAcknowledge ACCEPT 1: error %d", before, ack("worker-1", 1, 1, { ACCEPT }))
L:fact("start_offset_before_accept", before)
local after
assert(kiq.wait_for(function()
  after = start_offset()
  return after ~= before
end, 10000, "the start offset to move"))
L:say("the start offset: %d", after)
L:fact("start_offset_after_accept", after)

L:step("offset 2's journey at the leader: who acquired it, the expired lock, the limit")
local j = assert(b:journey(topic, 0, 2))
L:journey(j)
local who, expired, archived = {}, 0, false
for _, s in ipairs(j.stages) do
  local text = s.text or ""
  if s.stage == "share_acquired" then who[#who + 1] = text:match('consumer "(.-)" acquired') end
  if s.stage == "share_lock_expired" then expired = expired + 1 end
  if text:find("archived, at the delivery limit", 1, true) then archived = true end
end
L:fact("journey_acquired_by", table.concat(who, ","))
L:fact("journey_lock_expired", expired)
L:fact("journey_archived_at_limit", archived)

for _, m in pairs(members) do m.conn:close() end
admin:close()
L:finish()
b:stop()
