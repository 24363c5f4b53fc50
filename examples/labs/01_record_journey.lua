-- Lab 1: a record's complete journey. One record, produced with acks=all
-- to a partition replicated on three brokers, travels the whole machine:
-- the leader's network thread reads the request, the request queue holds
-- it, an I/O thread validates it, assigns its offset and appends it to the
-- active segment; each follower fetches it, appends it to its own segment
-- and reports its new log end offset; the high watermark passes it (now
-- it is committed, visible to consumers); the producer is answered; a
-- consumer fetches it. The journey is found by the trace header the
-- producer put on the record.
--
--   build/kafkaiq run examples/labs/01_record_journey.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"

kiq.log_level("error")
local L = lab.new(1, "a record's complete journey")
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["min.insync.replicas"] = 2 })
L:page(c)
local topic = "lab1-payments"
assert(c:admin():create_topics{ { name = topic, partitions = 1, replication_factor = 3 } })
assert(c:wait_for_isr(topic, 0, 3, 10000))
assert(c:wait_for_replicas(topic, 0, 10000))
local info = c:partition(topic, 0)
L:say("%s-0: leader broker %d, followers %s, all three in the ISR", topic, info.leader,
  table.concat((function() local f = {} for _, r in ipairs(info.replicas) do if r ~= info.leader then f[#f + 1] = r end end return f end)(), " and "))

L:step("produce one record (acks=all) with the header kafkaiq-trace: lab1")
local p = assert(c:producer{ acks = "all", linger_ms = 0 })
p:send(topic, "customer-42", "payment of 10 EUR", { partition = 0, headers = { kiq.trace_header("lab1") } })
assert(p:flush(10000))
L:step("consume it")
local cons = assert(c:consumer{ auto_offset_reset = "earliest", client_id = "lab1-consumer" })
assert(cons:assign{ { topic = topic, partition = 0, offset = 0 } })
local got = {}
assert(kiq.wait_for(function()
  for _, r in ipairs(cons:poll(100) or {}) do got[#got + 1] = r end
  return #got >= 1
end, 10000, "the consumer to read the record"))
L:say("the consumer read %q at offset %d", got[1].value, got[1].offset)

local j
assert(kiq.wait_for(function()
  j = c:journey{ trace = "lab1" }
  return j and lab.stage(j, "records_fetched") ~= nil
end, 10000, "the journey with its consumer fetch"))
L:step("its journey, from %d brokers (each broker kept its part; merged by time)", 3)
L:journey(j)

local names = {}
for _, s in ipairs(j.stages) do names[#names + 1] = s.stage end
local function at(name, peer) local s = lab.stage(j, name, peer) return s and s.t_ns end
L:fact("stages", table.concat(names, ","))
L:fact("leader", info.leader)
L:fact("offset", j.first_offset)
local followers_done = 0
for _, r in ipairs(info.replicas) do
  if r ~= info.leader and at("follower_leo", r) and at("replicated", r) and at("follower_fetched", r) then
    followers_done = followers_done + 1
  end
end
L:fact("followers_with_the_record", followers_done)
-- the order the lesson teaches, as the clocks saw it
local order = { "received", "enqueued", "dequeued", "validated", "appended", "committed", "acknowledged", "sent",
                "records_fetched" }
local in_order = true
for i = 2, #order do in_order = in_order and at(order[i - 1]) <= at(order[i]) end
L:fact("stages_in_order", in_order)
local last_leo = 0
for _, s in ipairs(j.stages) do if s.stage == "follower_leo" and s.t_ns > last_leo then last_leo = s.t_ns end end
L:fact("committed_after_a_follower_had_it", at("committed") >= last_leo or false)
L:say("")
L:say("%.3f ms from the request's arrival to the commit; %.3f ms to the producer's answer",
  (at("committed") - at("received")) / 1e6, (at("sent") - at("received")) / 1e6)
L:finish()
p:close()
cons:close()
c:stop()
