-- Lab 14: moving a replica. A partition's replica set is not fixed: a
-- reassignment (KIP-455, what kafka-reassign-partitions drives) hands the
-- controller a target list. The controller first adds the new replicas:
-- the partition's replicas become the target followed by those leaving,
-- and adding/removing say which is which. A new replica starts as a
-- follower with an empty log and copies the leader's; only once every
-- replica of the target is in the ISR does the controller finish the move:
-- the replicas become the target, and the one leaving is stopped and its
-- log deleted. Until then the old replicas keep the partition as safe as
-- before, and ListPartitionReassignments shows the move in progress.
--
--   build/kafkaiq run examples/labs/14_moving_a_replica.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(14, "moving a replica: partition reassignment")
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0" })
L:page(c)

local topic, P = "lab14-moves", 0
local function ids(list) return table.concat(list, ",") end
local function request(api, body)
  local b0 = c:broker(0)
  local conn = assert(connection.open(b0.host, b0.port, { client_id = "lab14-admin" }))
  local resp = assert(conn:request(api, body))
  conn:close()
  return resp
end
local function in_progress()
  local resp = request(46, { timeout_ms = 10000, topics = { { name = topic, partition_indexes = { P } } } })
  local t = resp.topics[1]
  return t and t.partitions[1]
end

L:step("a partition on two of three brokers, 200 records on it")
assert(c:admin():create_topics{ { name = topic, partitions = 1, replication_factor = 2 } })
assert(c:wait_for_replicas(topic, P, 10000))
local p = assert(c:producer{ acks = "all", linger_ms = 0 })
for i = 1, 200 do p:send(topic, "k" .. i, ("record %d"):format(i), { partition = P }) end
assert(p:flush(10000))
p:close()
local info = c:partition(topic, P)
local leader = info.leader
local leaving, new
for _, id in ipairs(info.replicas) do if id ~= leader then leaving = id end end
for id = 0, 2 do
  local has = false
  for _, r in ipairs(info.replicas) do has = has or r == id end
  if not has then new = id end
end
L:say("replicas %s, leader %d, ISR %s; the log ends at %d", ids(info.replicas), leader, ids(info.isr),
  info.replicas_state[leader].log_end_offset)
L:fact("records", info.replicas_state[leader].log_end_offset)

L:step("broker %d's replica moves to broker %d (replication to %d held back for now)", leaving, new, new)
c:cut(leader, new)
local target = { leader, new }
local resp = request(45, { timeout_ms = 10000,
  topics = { { name = topic, partitions = { { partition_index = P, replicas = target } } } } })
local answer = resp.responses[1].partitions[1]
L:say("AlterPartitionReassignments to [%s]: error %d", ids(target), answer.error_code)
L:fact("alter_error", answer.error_code)
local moving = assert(in_progress(), "the reassignment in progress")
L:say("in progress: replicas %s (the target first, then the one leaving), adding %s, removing %s",
  ids(moving.replicas), ids(moving.adding_replicas), ids(moving.removing_replicas))
L:fact("replicas_while_moving", ids(moving.replicas))
L:fact("adding", ids(moving.adding_replicas))
L:fact("removing", ids(moving.removing_replicas))
info = c:partition(topic, P)
L:say("the ISR is still %s: broker %d has not caught up, so broker %d's replica stays", ids(info.isr), new, leaving)
L:fact("isr_while_moving", #info.isr)

L:step("replication to broker %d runs: it copies the log, joins the ISR, and the move completes", new)
c:heal(leader, new)
assert(kiq.wait_for(function()
  local i = c:partition(topic, P)
  return i and #i.replicas == 2 and ids(i.replicas) == ids(target) and not in_progress()
end, 15000, "the reassignment to complete"))
assert(c:wait_for_replicas(topic, P, 10000))
info = c:partition(topic, P)
local copied = info.replicas_state[new].log_end_offset
L:say("replicas %s, ISR %s; broker %d's copy ends at %d, as the leader's does", ids(info.replicas), ids(info.isr), new,
  copied)
L:fact("replicas_after", ids(info.replicas))
L:fact("copied", copied)
L:fact("listed_after", in_progress() ~= nil)
local dir = ("%s/%s-%d"):format(c:broker(leaving).dir, topic, P)
local gone
assert(kiq.wait_for(function()
  local f = io.open(dir .. "/00000000000000000000.log")
  if f then f:close() end
  gone = f == nil
  return gone
end, 10000, "the leaving replica's log deleted"))
L:say("broker %d was told to stop its replica (StopReplica with delete): %s is gone", leaving, dir)
L:fact("old_log_deleted", gone)

c:stop()
L:finish()
