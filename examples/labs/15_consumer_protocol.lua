-- Lab 15: the new consumer protocol (KIP-848). The group coordinator, not a
-- member, computes the assignment: every heartbeat (ConsumerGroupHeartbeat)
-- says what the member owns, and the answer moves it towards its target.
-- A change to the group (a member joining, leaving, a subscription or a
-- topic changing) bumps the group epoch and the server-side assignor
-- computes every member's target for it. A member reaches the new epoch
-- only once it has given up what its target no longer has: revocation
-- comes before assignment, so no partition ever has two owners, and a
-- member that was promised a partition another still holds waits for it.
-- A member heartbeating with an epoch the group has left behind is fenced.
--
--   build/kafkaiq run examples/labs/15_consumer_protocol.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(15, "the consumer protocol: a group reconciling")
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0" })
L:page(b)

local topic, group = "lab15-orders", "lab15-group"
local HEARTBEAT, FIND_COORDINATOR, OFFSET_COMMIT = 68, 10, 8
local host, port = b.bootstrap:match("^([^:]+):(%d+)")
local conn = assert(connection.open(host, tonumber(port), { client_id = "lab15" }))
assert(b:admin():create_topics{ { name = topic, partitions = 4 } })
assert(kiq.wait_for(function()
  local r = conn:request(FIND_COORDINATOR, { key = group, key_type = 0, coordinator_keys = { group } })
  return r and (r.coordinators and r.coordinators[1] or r).error_code == 0
end, 10000, "the group's coordinator"))

-- the topic's partitions of an assignment, "0,1"
local function parts(assignment)
  local out = {}
  for _, tp in ipairs(assignment and assignment.topic_partitions or {}) do
    for _, p in ipairs(tp.partitions) do out[#out + 1] = p end
  end
  table.sort(out)
  return out
end
local function list(ps) return #ps > 0 and table.concat(ps, ",") or "none" end

-- what a member owns, as the heartbeat says it
local members = {}
local function owned(name)
  local m = members[name]
  if #m.owns == 0 then return {} end
  return { { topic_id = m.topic_id, partitions = m.owns } }
end

-- One heartbeat of member `name` at its epoch (0: joining), saying what
-- it owns; the answer's assignment, when there is one, is what it owns now.
local function heartbeat(name, epoch)
  local m = members[name] or { epoch = 0, owns = {} }
  members[name] = m
  local r = assert(conn:request(HEARTBEAT, { group_id = group, member_id = name, member_epoch = epoch or m.epoch,
    rebalance_timeout_ms = m.epoch == 0 and 30000 or -1, subscribed_topic_names = m.epoch == 0 and { topic } or nil,
    topic_partitions = owned(name) }, { version = 0 }))
  if r.error_code ~= 0 then return r end
  m.epoch = r.member_epoch
  if r.assignment then
    m.owns = parts(r.assignment)
    local tp = r.assignment.topic_partitions[1]
    m.topic_id = tp and tp.topic_id or m.topic_id
  end
  return r
end

-- the coordinator's own view (/api/state's consumer_groups)
local function shown()
  for _, g in ipairs(b:state().consumer_groups or {}) do
    if g.group_id == group then return g end
  end
end
local function member_view(g, name)
  for _, m in ipairs(g.members) do
    if m.member_id == name then
      local function flat(sets)
        local out = {}
        for _, t in ipairs(sets) do for _, p in ipairs(t.partitions) do out[#out + 1] = p end end
        table.sort(out)
        return out
      end
      return { epoch = m.member_epoch, state = m.state, assigned = flat(m.assigned), revoking = flat(m.revoking),
        target = flat(m.target) }
    end
  end
end
local function say_group()
  local g = assert(shown(), "the group in the coordinator's view")
  L:say("the coordinator: %s, group epoch %d, targets computed for epoch %d", g.state, g.group_epoch,
    g.assignment_epoch)
  for _, m in ipairs(g.members) do
    local v = member_view(g, m.member_id)
    L:say("  %s: epoch %d, %s, owns %s, to revoke %s, target %s", m.member_id, v.epoch, v.state:gsub("_", " "),
      list(v.assigned), list(v.revoking), list(v.target))
  end
  return g
end

L:step("member A joins alone (epoch 0): the whole topic is its target, nothing to wait for")
local r = heartbeat("member-A", 0)
L:say("the answer: epoch %d, assigned partitions %s", r.member_epoch, list(members["member-A"].owns))
L:fact("a_join_epoch", r.member_epoch)
L:fact("a_first", list(members["member-A"].owns))
heartbeat("member-A")
local g = say_group()
L:fact("group_epoch_one_member", g.group_epoch)

L:step("member B joins: the group epoch moves on, the assignor splits the topic")
r = heartbeat("member-B", 0)
g = say_group()
local a, bv = member_view(g, "member-A"), member_view(g, "member-B")
L:say("B is at epoch %d with %s: its target %s is still A's, and A has not been told yet", r.member_epoch,
  list(members["member-B"].owns), list(bv.target))
L:fact("group_epoch_two_members", g.group_epoch)
L:fact("b_join_epoch", r.member_epoch)
L:fact("b_owns_at_join", #members["member-B"].owns)
L:fact("b_state_at_join", bv.state)
L:fact("a_target", list(a.target))
L:fact("b_target", list(bv.target))

L:step("A heartbeats: it is told to keep only its target, and keeps its old epoch until it has let go")
local a_epoch = members["member-A"].epoch
r = heartbeat("member-A")
L:say("the answer: epoch %d (still), keep %s", r.member_epoch, list(members["member-A"].owns))
g = say_group()
a = member_view(g, "member-A")
L:fact("a_epoch_revoking", r.member_epoch)
L:fact("a_state_revoking", a.state)
L:fact("a_to_revoke", list(a.revoking))
r = heartbeat("member-B")
L:say("B asks again meanwhile: still %s, the partitions are not released yet", list(members["member-B"].owns))
L:fact("b_owns_before_release", #members["member-B"].owns)

L:step("A's next heartbeat no longer lists them: it reaches the group epoch; then B gets its partitions")
r = heartbeat("member-A")
L:say("A: epoch %d, owns %s", r.member_epoch, list(members["member-A"].owns))
L:fact("a_epoch_after", r.member_epoch)
r = heartbeat("member-B")
L:say("B: epoch %d, owns %s", r.member_epoch, list(members["member-B"].owns))
L:fact("b_owns_after", list(members["member-B"].owns))
heartbeat("member-B")
g = say_group()
L:fact("state_after", g.state)

L:step("epochs A has left behind: a heartbeat is fenced, a commit is stale")
-- (the epoch just before A's own would pass while A owns no more than it
-- was given: Kafka's allowance for an answer lost on its way)
r = heartbeat("member-A", a_epoch - 1)
L:say("ConsumerGroupHeartbeat at epoch %d: error %d (FENCED_MEMBER_EPOCH): A must rejoin at epoch 0", a_epoch - 1,
  r.error_code)
L:fact("fenced_error", r.error_code)
-- KIP-1251 (Kafka 4.4): a commit at an older epoch counts for the
-- partitions the member has held since that epoch, and for no other
local function commit_at(epoch, partition)
  local c = assert(conn:request(OFFSET_COMMIT, { group_id = group, generation_id_or_member_epoch = epoch,
    member_id = "member-A", topics = { { name = topic, partitions = { { partition_index = partition,
      committed_offset = 0 } } } } }, { version = 9 }))
  return c.topics[1].partitions[1].error_code
end
local kept, given = members["member-A"].owns[1], members["member-B"].owns[1]
local err = commit_at(a_epoch, kept)
L:say("OffsetCommit v9 at A's old epoch %d for partition %d, A's since then: error %d", a_epoch, kept, err)
L:fact("old_epoch_commit_error", err)
err = commit_at(a_epoch, given)
L:say("the same for partition %d, B's now: error %d (STALE_MEMBER_EPOCH)", given, err)
L:fact("stale_commit_error", err)

L:step("B leaves (epoch -1): A's target is the whole topic again, nothing to revoke from anyone")
r = heartbeat("member-B", -1)
L:say("B's answer: epoch %d", r.member_epoch)
r = heartbeat("member-A")
L:say("A: epoch %d, owns %s", r.member_epoch, list(members["member-A"].owns))
L:fact("a_epoch_last", r.member_epoch)
L:fact("a_last", list(members["member-A"].owns))
g = say_group()
L:fact("group_epoch_last", g.group_epoch)

conn:close()
L:finish()
b:stop()
