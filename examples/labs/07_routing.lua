-- Lab 7: partition routing. A client sends each partition's records to its
-- leader, which it learns from Metadata. When the leader moves (here: the
-- leader dies, the controller fences it and elects another ISR member with
-- a new leader epoch), a request sent to the old broker is answered
-- NOT_LEADER_OR_FOLLOWER, with the new leader's id and epoch attached
-- (KIP-951); the client refreshes its metadata and goes on at the new
-- leader without losing an acknowledged record.
--
--   build/kafkaiq run examples/labs/07_routing.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(7, "partition routing")
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0",
                              ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
                              ["min.insync.replicas"] = 2 })
L:page(c)
local topic = "lab7-routes"
assert(c:admin():create_topics{ { name = topic, partitions = 3, replication_factor = 3 } })
-- broker 0 hosts the controller and stays up: follow a partition another leads
local P, before
for q = 0, 2 do
  assert(c:wait_for_isr(topic, q, 3, 10000))
  assert(c:wait_for_replicas(topic, q, 10000))
  local info = c:partition(topic, q)
  if not P and info.leader ~= 0 then P, before = q, info end
end
local old = before.leader
L:step("%s-%d is led by broker %d (leader epoch %d); replicas [%s]", topic, P, old, before.leader_epoch,
  table.concat(before.replicas, ", "))
local acked = 0
local p = assert(c:producer{ acks = "all", linger_ms = 0, retries = 10, retry_backoff_ms = 100,
                             on_delivery = function(err) if not err then acked = acked + 1 end end,
                             log = function() end })
for i = 1, 50 do p:send(topic, nil, "before " .. i, { partition = P }) end
assert(p:flush(10000))
L:say("the producer asked Metadata, found broker %d and sent it 50 records: %d acknowledged", old, acked)
L:fact("old_leader", old)
L:fact("acked_before", acked)

L:step("broker %d dies; the controller fences it and moves the leadership", old)
local killed_at = core.now_ms()
c:kill(old)
local new = assert(c:wait_for_leader(topic, P, 15000, old))
local after = c:partition(topic, P)
L:say("%d ms later broker %d leads, leader epoch %d -> %d; ISR [%s]", core.now_ms() - killed_at, new,
  before.leader_epoch, after.leader_epoch, table.concat(after.isr, ", "))
L:fact("new_leader", new)
L:fact("epoch_before", before.leader_epoch)
L:fact("epoch_after", after.leader_epoch)

L:step("broker %d comes back, now a follower; a Produce sent to it as if it still led", old)
assert(c:restart(old))
assert(kiq.wait_for(function()
  local s = c:partition(topic, P).replicas_state[old]
  return s and s.role == "follower"
end, 15000, "the old leader to follow"))
local b_old = c:broker(old)
local conn = assert(connection.open(b_old.host, b_old.port, { client_id = "stale-client" }))
local batch = assert(core.build_batch{ records = { { value = "to the old leader" } } })
local resp = assert(conn:request(0, { acks = -1, timeout_ms = 5000,
  topic_data = { { name = topic, partition_data = { { index = P, records = batch } } } } }))
conn:close()
local part = resp.responses[1].partition_responses[1]
local hint = part.current_leader or {}
L:say("answered error %d (NOT_LEADER_OR_FOLLOWER); the answer names the leader: broker %s, epoch %s",
  part.error_code, tostring(hint.leader_id), tostring(hint.leader_epoch))
L:fact("stale_error", part.error_code)
L:fact("hint_leader", hint.leader_id or -1)
L:fact("hint_epoch", hint.leader_epoch or -1)

L:step("the producer goes on")
local function metadata_requests()
  local n = 0
  for id = 0, 2 do
    local st = c:broker(id):running() and c:broker(id):request_stats() or {}
    n = n + (st.Metadata and st.Metadata.count or 0)
  end
  return n
end
local asked = metadata_requests()
acked = 0
for i = 1, 50 do p:send(topic, nil, "after " .. i, { partition = P }) end
assert(p:flush(15000))
local refreshed = metadata_requests() - asked
L:say("50 more records: %d acknowledged by broker %d, found with %d Metadata request%s", acked, new, refreshed,
  refreshed == 1 and "" or "s")
L:fact("acked_after", acked)
L:fact("metadata_refreshes", refreshed)
assert(c:wait_for_replicas(topic, P, 15000))
local s = c:partition(topic, P).replicas_state
L:say("every replica holds %d records: %d on broker %d, %d on %d, %d on %d", s[new].log_end_offset,
  s[0].log_end_offset, 0, s[1].log_end_offset, 1, s[2].log_end_offset, 2)
L:fact("leo_new_leader", s[new].log_end_offset)
L:fact("leo_old_leader", s[old].log_end_offset)
L:finish()
p:close()
c:stop()
