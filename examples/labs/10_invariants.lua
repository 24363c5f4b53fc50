-- Lab 10: the invariants, and what breaking one costs. Kafka promises:
-- offsets in a partition are dense and only grow; the high watermark (HW)
-- never goes back; every in-sync replica holds everything below the HW;
-- consumers never see past the HW; and a record acknowledged with
-- acks=all survives as long as one in-sync replica does, because only an
-- in-sync replica may become leader. First the lab checks all of them
-- through a leader crash; then it breaks the last one on purpose: the only
-- in-sync replica dies and an unclean election (ElectLeaders, type 1)
-- makes the out-of-sync follower leader, and acknowledged records are gone.
--
--   build/kafkaiq run examples/labs/10_invariants.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local scenario = require "kafkaiq.scenario"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(10, "the invariants, kept and broken")
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["min.insync.replicas"] = 1,
                              ["replica.lag.time.max.ms"] = 1000, ["broker.session.timeout.ms"] = 1500,
                              ["broker.heartbeat.interval.ms"] = 200 })
L:page(c)

-- a partition replicated on brokers 1 and 2 only: broker 0 keeps the controller up
local function pick(topic, rf)
  assert(c:admin():create_topics{ { name = topic, partitions = 3, replication_factor = rf } })
  for p = 0, 2 do assert(c:wait_for_replicas(topic, p, 10000)) end
  for p = 0, 2 do
    local info = c:partition(topic, p)
    local has0 = false
    for _, r in ipairs(info.replicas) do has0 = has0 or r == 0 end
    if not has0 or (rf == 3 and info.leader ~= 0) then return p, info end
  end
end

L:step("the invariants through a leader crash")
local sc = scenario.new{ cluster = c }
local kept = "lab10-kept"
local P, info = pick(kept, 3)
local prod = assert(c:producer{ acks = "all", linger_ms = 0, retries = 10, retry_backoff_ms = 100,
                                on_delivery = sc:on_delivery(), log = function() end })
local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50,
                                interceptors = { on_consume = sc:on_consume() }, log = function() end })
assert(cons:assign{ { topic = kept, partition = P, offset = 0 } })
local sent = 0
sc:run{ steps = 12, check_every = 1, step = function(sc, i)
  if i == 4 then sc:kill(c:broker(info.leader)) end
  if i == 8 then sc:restart(c:broker(info.leader)) end
  for _ = 1, 20 do
    sent = sent + 1
    prod:send(kept, nil, "kept " .. sent, { partition = P })
  end
  prod:flush(5000)
  cons:poll(50)
end }
assert(c:wait_for_replicas(kept, P, 15000))
sc:check()
local verified = sc:verify(c:bootstrap())
L:say("offsets dense and increasing, the HW never back on any replica, every ISR member holding what is below it,")
L:say("nothing consumed past it: %d checks held; leader %d crashed and came back", sc.counts.checks, info.leader)
L:say("%d records sent, %d acknowledged, all %d read back: nothing acknowledged was lost", sent, sc.counts.acked, verified)
L:fact("checks", sc.counts.checks)
L:fact("acked", sc.counts.acked)
L:fact("verified", verified)
prod:close()
cons:close()

L:step("broken on purpose: an unclean election")
local topic = "lab10-unclean"
P, info = pick(topic, 2)
local leader = info.leader
local follower = info.replicas[1] == leader and info.replicas[2] or info.replicas[1]
L:say("%s-%d: replicas [%s], leader %d, min.insync.replicas=1", topic, P, table.concat(info.replicas, ", "), leader)
local sc2 = scenario.new{ cluster = c }
local p2 = assert(c:producer{ acks = "all", linger_ms = 0, on_delivery = sc2:on_delivery(), log = function() end })
for i = 1, 10 do p2:send(topic, nil, "both have it " .. i, { partition = P }) end
assert(p2:flush(5000))
assert(c:wait_for_replicas(topic, P, 10000))
c:cut(leader, follower)
assert(kiq.wait_for(function() return #c:partition(topic, P).isr == 1 end, 10000, "the ISR to shrink"))
L:say("follower %d cut off: it left the ISR, which is [%d] alone", follower, leader)
for i = 1, 20 do p2:send(topic, nil, "only the leader has it " .. i, { partition = P }) end
assert(p2:flush(5000))
p2:close()
L:say("20 more records acknowledged with acks=all: the whole ISR (the leader) has them; %d acknowledged in all",
  sc2.counts.acked)
local leo_old = c:partition(topic, P).replicas_state[leader].log_end_offset
L:fact("acked_unclean", sc2.counts.acked)

c:kill(leader)
assert(kiq.wait_for(function() return c:partition(topic, P).leader < 0 end, 10000, "the partition to go offline"))
L:say("leader %d dies: no in-sync replica is left, so no clean election: the partition is offline", leader)
L:fact("offline", c:partition(topic, P).leader)
c:heal(leader, follower)

local b0 = c:broker(0)
local conn = assert(connection.open(b0.host, b0.port, { client_id = "lab10-admin" }))
local resp = assert(conn:request(43, { election_type = 1, timeout_ms = 10000,
                                       topic_partitions = { { topic = topic, partitions = { P } } } }))
conn:close()
local result = resp.replica_election_results[1].partition_result[1]
local new = assert(c:wait_for_leader(topic, P, 10000, leader))
local s = c:partition(topic, P).replicas_state[new]
L:say("an unclean election (ElectLeaders type 1, error %d) makes follower %d leader: its log ends at %d, the dead",
  result.error_code, new, s.log_end_offset)
L:say("leader's at %d", leo_old)
L:fact("unclean_error", result.error_code)
L:fact("new_leader", new)
L:fact("was_out_of_sync", new == follower)

local ok, err = pcall(sc2.verify, sc2, c:bootstrap(), 5000)
local lost = 0
for _, part in pairs(sc2.acked) do
  for off in pairs(part) do if off >= s.log_end_offset then lost = lost + 1 end end
end
L:say("the check of acknowledged records now fails:")
L:say("  %s", tostring(err):gsub("\n.*", ""))
L:say("%d acknowledged records are gone", lost)
L:fact("verify_failed", not ok)
L:fact("violation", tostring(err):match("nothing acknowledged lost") or "none")
L:fact("lost", lost)

assert(c:restart(leader))
assert(c:wait_for_isr(topic, P, 2, 15000))
assert(c:wait_for_replicas(topic, P, 15000))
local back = c:partition(topic, P).replicas_state[leader].log_end_offset
L:say("broker %d restarts as a follower and truncates its log to the new leader's (%d -> %d): the records are gone for good",
  leader, leo_old, back)
L:fact("old_leader_leo_after", back)
L:fact("new_leader_leo", s.log_end_offset)
L:finish()
c:stop()
