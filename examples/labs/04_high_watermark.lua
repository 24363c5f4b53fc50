-- Lab 4: fetch handling and high-watermark visibility. A leader appends
-- records at once, but a consumer may read only below the high watermark
-- (HW): the smallest log end offset (LEO) among the in-sync replicas.
-- The lesson's example: the leader has LEO 1010, follower A has fetched up
-- to 1008 and follower B up to 1009, so the HW is 1008 and offsets
-- 1008..1009 are in the leader's segment yet invisible; the journey of the
-- batch at 1008 says it is stuck waiting for A alone, the one at 1009 for
-- both. When A fetches, the HW moves to 1009 (B is now the slowest) and one
-- more record becomes visible.
-- Replication is held back by cutting the followers' fetches.
-- Then the same records are read twice from a standalone broker: with
-- zero copy (sendfile from the segment file to the socket, the bytes never
-- in the broker's memory) and with kafkaiq.fetch.sendfile=false (read into
-- the response buffer and written out), with the bytes and CPU each took.
--
--   build/kafkaiq run examples/labs/04_high_watermark.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"

kiq.log_level("error")
local L = lab.new(4, "fetch handling and high-watermark visibility")
-- followers stay in the ISR however long they lag: the lab holds them back
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0",
                              ["replica.lag.time.max.ms"] = 600000, ["broker.session.timeout.ms"] = 600000 })
L:page(c)
local topic = "lab4-events"
assert(c:admin():create_topics{ { name = topic, partitions = 1, replication_factor = 3 } })
assert(c:wait_for_isr(topic, 0, 3, 10000))
assert(c:wait_for_replicas(topic, 0, 10000))
local leader_id = c:partition(topic, 0).leader
local leader = c:broker(leader_id)
local followers = {}
for _, r in ipairs(c:partition(topic, 0).replicas) do if r ~= leader_id then followers[#followers + 1] = r end end
table.sort(followers)
local A, B = followers[1], followers[2]

local function part() return leader:state().topics[topic].partitions[0] end
local function wait_follower(id, leo)
  assert(kiq.wait_for(function() local f = part().followers[id] return f and f.leo == leo end, 10000,
    ("follower %d to reach LEO %d"):format(id, leo)))
end
local p = assert(c:producer{ acks = 1, linger_ms = 0 })
local function send(n, what)
  for i = 1, n do p:send(topic, nil, what .. " " .. i, { partition = 0 }) end
  assert(p:flush(10000))
end
-- what a consumer can read from offset 1000 now
local function visible()
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
  assert(cons:assign{ { topic = topic, partition = 0, offset = 1000 } })
  local last, polls = nil, 0
  repeat
    polls = polls + 1
    for _, r in ipairs(cons:poll(50) or {}) do last = r.offset end
  until polls >= 6
  cons:close()
  return last and last + 1 or 1000
end

L:step("leader broker %d, followers A = broker %d and B = broker %d; 1000 records replicated", leader_id, A, B)
send(1000, "old")
wait_follower(A, 1000)
wait_follower(B, 1000)
assert(kiq.wait_for(function() return part().high_watermark == 1000 end, 10000, "HW 1000"))

L:step("both followers cut off; 8 records appended; both catch up to 1008")
c:cut(leader_id, A)
c:cut(leader_id, B)
send(8, "a")
c:heal(leader_id, A)
c:heal(leader_id, B)
wait_follower(A, 1008)
wait_follower(B, 1008)
L:say("HW %d", part().high_watermark)

L:step("A cut off; 1 more record reaches B (LEO 1009) only")
c:cut(leader_id, A)
send(1, "b")
wait_follower(B, 1009)
L:step("B cut off too; 1 more record stays on the leader (LEO 1010)")
c:cut(leader_id, B)
send(1, "c")
local s = part()
L:say("leader LEO %d; follower A LEO %d; follower B LEO %d; ISR [%s]", s.log_end_offset, s.followers[A].leo,
  s.followers[B].leo, table.concat(s.isr, ", "))
L:say("HW = the smallest LEO in the ISR = %d", s.high_watermark)
L:fact("leader_leo", s.log_end_offset)
L:fact("follower_a_leo", s.followers[A].leo)
L:fact("follower_b_leo", s.followers[B].leo)
L:fact("hw_stuck", s.high_watermark)
L:fact("isr_size", #s.isr)
local seen = visible()
L:say("a consumer reading from 1000 gets offsets 1000..%d: %d..%d are in the leader's segment but invisible",
  seen - 1, seen, s.log_end_offset - 1)
L:fact("visible_end_before", seen)
-- what the leader says of each invisible batch (kafkaiq journey and the page say the same)
local function waiting(j) return table.concat(j.verdict.waiting_for, ",") end
local j8 = assert(leader:journey(topic, 0, 1008))
L:say("the batch at %d, appended %.3f ms after it arrived: %s", j8.first_offset,
  (lab.stage(j8, "appended").t_ns - lab.stage(j8, "received").t_ns) / 1e6, j8.verdict.text)
local j9 = assert(leader:journey(topic, 0, 1009))
L:say("the batch at %d: %s", j9.first_offset, j9.verdict.text)
L:fact("batch_1008_verdict", j8.verdict.state)
L:fact("batch_1008_waiting_for_a", waiting(j8) == tostring(A))
L:fact("batch_1009_waiting_for_both", #j9.verdict.waiting_for == 2)
L:fact("last_batch_committed_before", lab.stage(j9, "committed") ~= nil)

L:step("A fetches again")
c:heal(leader_id, A)
wait_follower(A, 1010)
assert(kiq.wait_for(function() return part().high_watermark == 1009 end, 10000, "HW 1009"))
s = part()
L:say("follower A LEO %d; B still %d: HW %d (B is now the slowest in the ISR)", s.followers[A].leo,
  s.followers[B].leo, s.high_watermark)
L:fact("hw_after_a", s.high_watermark)
seen = visible()
L:say("a consumer now gets up to offset %d", seen - 1)
L:fact("visible_end_after_a", seen)
j9 = assert(leader:journey(topic, 0, 1009))
L:say("the batch at 1009: %s", j9.verdict.text)
L:fact("batch_1009_waiting_for_b", waiting(j9) == tostring(B))

L:step("B fetches again")
c:heal(leader_id, B)
assert(kiq.wait_for(function() return part().high_watermark == 1010 end, 10000, "HW 1010"))
L:say("HW %d: every record committed", part().high_watermark)
L:fact("hw_final", part().high_watermark)
j9 = assert(leader:journey(topic, 0, 1009))
local committed = lab.stage(j9, "committed")
L:say("the batch at %d..%d committed at last: HW %d -> %d; %s", j9.first_offset, j9.last_offset, committed.before,
  committed.after, j9.verdict.text)
L:fact("last_batch_committed_hw_after", committed.after)
p:close()
c:stop()

L:step("zero copy against copy: one broker, 64 MiB read back by a consumer each way")
local ffi = require "ffi"
local core = require "kafkaiq.core"
ffi.cdef "long clock(void);"
local function cpu_s() return tonumber(ffi.C.clock()) / 1e6 end
local function read_back(sendfile)
  local b = assert(kiq.broker{ ["kafkaiq.fetch.sendfile"] = sendfile })
  assert(b:admin():create_topics{ { name = "lab4-big", partitions = 1 } })
  local prod = assert(b:producer{ acks = 1, linger_ms = 5, batch_size = 1048576 })
  local value = string.rep("v", 1000)
  for i = 1, 65536 do prod:send("lab4-big", nil, value, { partition = 0 }) end
  assert(prod:flush(30000))
  prod:close()
  local cons = assert(b:consumer{ auto_offset_reset = "earliest", fetch_max_bytes = 8388608,
                                  max_partition_fetch_bytes = 8388608 })
  assert(cons:assign{ { topic = "lab4-big", partition = 0, offset = 0 } })
  local before, t0, got = cpu_s(), core.now_ms(), 0
  assert(kiq.wait_for(function()
    got = got + #(cons:poll(100) or {})
    return got >= 65536
  end, 60000, "the records read back"))
  local cpu, ms = cpu_s() - before, core.now_ms() - t0
  cons:close()
  local st = b:state()
  b:stop()
  return { cpu = cpu, ms = ms, sendfile = st.fetch_bytes.sendfile, copied = st.fetch_bytes.copied, records = got }
end
local zc = read_back(true)
local cp = read_back(false)
L:say("sendfile: %d MB sent from the segment file, %d MB copied; the process used %.3f CPU-s (%d ms)",
  math.floor(zc.sendfile / 1e6), math.floor(zc.copied / 1e6), zc.cpu, zc.ms)
L:say("copy:     %d MB sent from the segment file, %d MB copied; the process used %.3f CPU-s (%d ms)",
  math.floor(cp.sendfile / 1e6), math.floor(cp.copied / 1e6), cp.cpu, cp.ms)
L:say("(the process's CPU, the consumer's decoding included: copying %d MB cost the difference, %.3f CPU-s)",
  math.floor(cp.copied / 1e6), cp.cpu - zc.cpu)
L:fact("zero_copy_sendfile_bytes", zc.sendfile)
L:fact("zero_copy_copied_bytes", zc.copied)
L:fact("copy_sendfile_bytes", cp.sendfile)
L:fact("copy_copied_bytes", cp.copied)
L:fact("records_each_way", math.min(zc.records, cp.records))
L:finish()
