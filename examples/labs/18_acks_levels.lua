-- Lab 18: acks=0, 1 and all on the same stream. A producer chooses how
-- much of the replication an answer waits for: acks=0 waits for nothing (no
-- answer is sent at all), acks=1 for the leader's append, acks=all for every
-- in-sync replica (then the record is committed, below the high watermark).
-- The same stream of records goes to one partition on three brokers at each
-- level: first the latency each costs, then what each guarantees when the
-- leader dies right after answering.
--
--   build/kafkaiq run examples/labs/18_acks_levels.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local ffi = require "ffi"
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } lab18_timespec;
int clock_gettime(int clk, lab18_timespec *ts);
]]
local ts = ffi.new("lab18_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

kiq.log_level("error")
local L = lab.new(18, "acks=0, 1 and all on the same stream")
-- a cut-off follower stays in the ISR (the lab decides what it lacks); a
-- killed broker is fenced after 1.5 s
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["min.insync.replicas"] = 2,
                              ["replica.lag.time.max.ms"] = 600000, ["broker.session.timeout.ms"] = 1500,
                              ["broker.heartbeat.interval.ms"] = 200 })
L:page(c)
local topic = "lab18-stream"
assert(c:admin():create_topics{ { name = topic, partitions = 1, replication_factor = 3 } })
assert(c:wait_for_isr(topic, 0, 3, 10000))
-- broker 0 hosts the controller: the leaders killed here are others
local function lead_away_from_0()
  local leader = assert(c:wait_for_leader(topic, 0, 15000))
  if leader ~= 0 then return leader end
  assert(c:wait_for_isr(topic, 0, 3, 15000))
  assert(c:move_leader(topic, 0, 1))
  return assert(c:wait_for_leader(topic, 0, 10000, 0))
end
local leader = lead_away_from_0()
assert(c:wait_for_replicas(topic, 0, 10000))

local function producer(acks, delivered)
  return assert(c:producer{ acks = acks, linger_ms = 0, retries = 0, log = function() end,
    on_delivery = function(err, r) if not err then delivered[#delivered + 1] = r.value end end })
end
-- a producer's first record through, not counted with its step's: without
-- retries, one sent while its metadata has no leader yet (just moved)
-- fails with LEADER_NOT_AVAILABLE; sent again until the leader is known
local function warm_up(p, delivered)
  -- short tries, many of them: an acks=0 send into a connection the old
  -- leader is closing is lost without an answer, and only the next asks again
  assert(kiq.wait_for(function()
    p:send(topic, nil, "warm-up", { partition = 0 })
    return p:flush(2000)
  end, 40000, "a first record through"))
  for k in pairs(delivered) do delivered[k] = nil end
end
-- the values in the partition now, read from its leader up to its high watermark
local function in_log()
  local l = assert(c:wait_for_leader(topic, 0, 15000))
  local hw
  assert(kiq.wait_for(function()
    local s = c:partition(topic, 0).replicas_state[l]
    hw = s and s.high_watermark
    return hw
  end, 10000, "the leader's high watermark"))
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50, log = function() end })
  assert(cons:assign{ { topic = topic, partition = 0, offset = 0 } })
  local values, last = {}, -1
  assert(kiq.wait_for(function()
    for _, r in ipairs(cons:poll(50) or {}) do
      values[r.value] = true
      last = r.offset
    end
    return last >= hw - 1
  end, 15000, "the partition read to its high watermark"))
  cons:close()
  return values
end
local function lost(delivered, values)
  local n = 0
  for _, v in ipairs(delivered) do if not values[v] then n = n + 1 end end
  return n
end

L:step("latency: 200 records one at a time at each level, leader broker %d, followers in sync", leader)
local n = 200
local shapes = {}
for _, acks in ipairs { 0, 1, "all" } do
  local name = "acks_" .. tostring(acks)
  local p = producer(acks, {})
  local times = {}
  for i = 1, n do
    local t0 = now_us()
    p:send(topic, nil, ("%s #%d"):format(name, i), { partition = 0, headers = { kiq.trace_header(name .. "-" .. i) } })
    assert(p:flush(10000))
    times[i] = now_us() - t0
  end
  p:close()
  table.sort(times)
  -- the broker's side: whether it answered, and when against the commit
  -- (an acks=0 record may still be on its way when the producer is done)
  local j
  assert(kiq.wait_for(function()
    j = c:journey{ trace = name .. "-" .. n }
    return j and (lab.stage(j, "no_response") or lab.stage(j, "acknowledged"))
  end, 10000, "the last record's answer in its journey"))
  local ack, committed = lab.stage(j, "acknowledged"), lab.stage(j, "committed")
  shapes[name] = { no_response = lab.stage(j, "no_response") ~= nil,
                   after_commit = ack ~= nil and committed ~= nil and ack.t_ns >= committed.t_ns }
  L:say("  acks=%-3s median %6.3f ms, p99 %6.3f ms; the broker %s", tostring(acks), times[n / 2] / 1000,
    times[math.floor(n * 0.99)] / 1000, shapes[name].no_response and "sent no answer" or
    shapes[name].after_commit and "answered once both followers had it (committed)" or
    "answered after its own append")
end
L:fact("acks_0_no_response", shapes.acks_0.no_response)
L:fact("acks_all_answered_after_commit", shapes.acks_all.after_commit)

L:step("acks=1: the followers cut off (still in the ISR), 10 records acknowledged, leader %d killed", leader)
local acked1 = {}
local p = producer(1, acked1)
warm_up(p, acked1)
local followers = {}
for _, r in ipairs(c:partition(topic, 0).replicas) do if r ~= leader then followers[#followers + 1] = r end end
for _, f in ipairs(followers) do c:cut(leader, f) end
for i = 1, 10 do p:send(topic, nil, "acks=1 after the cut #" .. i, { partition = 0 }) end
assert(p:flush(10000))
p:close()
c:kill(leader)
local new = assert(c:wait_for_leader(topic, 0, 15000, leader))
for _, f in ipairs(followers) do c:heal(leader, f) end
assert(c:restart(leader))
assert(c:wait_for_isr(topic, 0, 3, 15000))
local lost1 = lost(acked1, in_log())
L:say("%d acknowledged; follower %d elected; %d of them lost: the leader alone had them, and broker %d, back as a",
  #acked1, new, lost1, leader)
L:say("follower, truncated its log to the new leader's")
L:fact("acks_1_acknowledged", #acked1)
L:fact("acks_1_lost", lost1)

leader = lead_away_from_0()
assert(c:wait_for_replicas(topic, 0, 10000))
L:step("acks=all: 10 records acknowledged, leader %d killed", leader)
local acked_all = {}
p = producer("all", acked_all)
warm_up(p, acked_all)
for i = 1, 10 do p:send(topic, nil, "acks=all #" .. i, { partition = 0 }) end
assert(p:flush(10000))
p:close()
c:kill(leader)
new = assert(c:wait_for_leader(topic, 0, 15000, leader))
local lost_all = lost(acked_all, in_log())
L:say("%d acknowledged; follower %d elected; %d lost: each answer waited until every in-sync replica had the record",
  #acked_all, new, lost_all)
L:fact("acks_all_acknowledged", #acked_all)
L:fact("acks_all_lost", lost_all)
assert(c:restart(leader))
assert(c:wait_for_isr(topic, 0, 3, 15000))

leader = lead_away_from_0()
L:step("acks=0: 10 records sent to broker %d, which has just stopped leading the partition", leader)
local sent0 = {}
p = producer(0, sent0)
warm_up(p, sent0)
local other
for _, r in ipairs(c:partition(topic, 0).isr) do if r ~= leader and r ~= 0 then other = r end end
other = other or 0
assert(c:move_leader(topic, 0, other))
assert(c:wait_for_leader(topic, 0, 10000, leader))
assert(kiq.wait_for(function()
  local s = c:broker(leader):state().topics[topic].partitions[0]
  return s.role ~= "leader"
end, 10000, "the old leader to learn it follows"))
for i = 1, 10 do p:send(topic, nil, "acks=0 #" .. i, { partition = 0 }) end
local flushed, flush_err = p:flush(10000)
p:close()
local lost0 = lost(sent0, in_log())
L:say("the producer counted %d of 10 delivered: with no answer to wait for, a write to the socket is all it knows;",
  #sent0)
L:say("%d of those are not in the log: broker %d refused them (NOT_LEADER_OR_FOLLOWER), no answer to carry the error;",
  lost0, leader)
L:say("it closed the connection, as Kafka does: the producer's only sign (%s), after which it asks for metadata again",
  flushed and "not before the last send" or tostring(flush_err):gsub("\n.*", ""))
L:fact("acks_0_reported_delivered", #sent0)
L:fact("acks_0_lost", lost0)
L:finish()
c:stop()
