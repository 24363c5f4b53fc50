-- Lab 19: the takeaways as a self-check (the lesson's section 13). Each
-- question is asked before the broker is made to show it; then the lab
-- computes the true answer from the live broker and prints it with the
-- broker's evidence. Answer as you go: at a terminal the lab prompts;
-- otherwise give the answers in order, separated by ";":
--
--   build/kafkaiq run examples/labs/19_self_check.lua
--   KAFKAIQ_LAB_ANSWERS="100-104;0-109;A;yes;0-110" build/kafkaiq run examples/labs/19_self_check.lua
--
-- Offset ranges are written first-last ("100-104", "100..104" and
-- "100 to 104" are read the same).
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local connection = require "kafkaiq.client.connection"
local core = require "kafkaiq.core"
local ffi = require "ffi"
ffi.cdef "int isatty(int fd);"

kiq.log_level("error")
local L = lab.new(19, "the takeaways as a self-check")

local given = {}
for a in (os.getenv("KAFKAIQ_LAB_ANSWERS") or ""):gmatch("[^;]+") do given[#given + 1] = a end
local interactive = #given == 0 and ffi.C.isatty(0) == 1
local function normal(s)
  s = s:lower():gsub("%s+to%s+", "-"):gsub("%.%.", "-"):gsub("%s+", "")
  return s
end
local asked, right = 0, 0
local function ask(text)
  asked = asked + 1
  L:step("question %d: %s", asked, text)
  if interactive then
    io.write("your answer: ")
    io.flush()
    return io.read("*l")
  end
  return given[asked]
end
local function answer(learner, expected, evidence)
  L:say("answer: %s", expected)
  for _, line in ipairs(evidence) do L:say("  the broker: %s", line) end
  L:fact(("q%d_answer"):format(asked), expected)
  if learner then
    local ok = normal(learner) == normal(expected)
    if ok then right = right + 1 end
    L:say("you said %q: %s", learner, ok and "right" or "not quite")
    L:fact(("q%d_correct"):format(asked), ok)
  end
end

-- followers stay in the ISR however long they lag: the lab holds one back
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["min.insync.replicas"] = 2,
                              ["replica.lag.time.max.ms"] = 600000 })
L:page(c)
local topic = "lab19-orders"
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
local function send(n, acks)
  local p = assert(c:producer{ acks = acks, linger_ms = 5 })
  for i = 1, n do p:send(topic, nil, "order " .. i, { partition = 0 }) end
  assert(p:flush(10000))
  p:close()
end
-- the last offset a consumer reads from 0, once it has reached the high watermark it was given
local function readable()
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
  assert(cons:assign{ { topic = topic, partition = 0, offset = 0 } })
  local last = -1
  assert(kiq.wait_for(function()
    for _, r in ipairs(cons:poll(50) or {}) do last = r.offset end
    local hw = cons:high_watermark(topic, 0)
    return hw and last >= hw - 1
  end, 10000, "the consumer at the high watermark"))
  cons:close()
  return last
end
send(100, "all")
L:say("%s-0 on three brokers: leader %d, follower A = broker %d, follower B = broker %d; 100 records written",
  topic, leader_id, A, B)

local learner = ask("the partition holds offsets 0..99. A producer sends a batch of 5 records. Which offsets do they get?")
local leo = part().log_end_offset
local expected = ("%d-%d"):format(leo, leo + 4)
local p = assert(c:producer{ acks = "all", linger_ms = 50 })
for i = 1, 5 do p:send(topic, nil, "batch " .. i, { partition = 0 }) end
assert(p:flush(10000))
p:close()
local j = assert(leader:journey(topic, 0, leo))
local appended = lab.stage(j, "appended")
answer(learner, expected, { ("the log end offset was %d: the leader gives the batch %d..%d when it appends it"):format(
  leo, j.first_offset, j.last_offset), ("appended at byte %d of %s; the log end offset is now %d"):format(appended.position,
  appended.file, part().log_end_offset) })
L:fact("q1_evidence", ("%d-%d"):format(j.first_offset, j.last_offset))

learner = ask("follower B stops fetching; 5 more records are written with acks=1. Which offsets can a consumer read now?")
c:cut(leader_id, B)
send(5, 1)
assert(kiq.wait_for(function() return part().followers[A].leo == part().log_end_offset end, 10000, "A to catch up"))
local s = part()
local last = readable()
expected = ("0-%d"):format(s.high_watermark - 1)
answer(learner, expected, {
  ("leader LEO %d, A's LEO %d, B's LEO %d, ISR [%s]: the high watermark, the smallest LEO in the ISR, is %d"):format(
    s.log_end_offset, s.followers[A].leo, s.followers[B].leo, table.concat(s.isr, ", "), s.high_watermark),
  ("a consumer from offset 0 read up to %d; %d..%d are on the leader's disk, not yet committed"):format(last,
    s.high_watermark, s.log_end_offset - 1) })
L:fact("q2_readable_last", last)
L:fact("q2_leo", s.log_end_offset)

learner = ask("which follower holds the high watermark back, A or B?")
expected = s.followers[A].leo <= s.followers[B].leo and "A" or "B"
answer(learner, expected, { ("A is at %d, B at %d; both in the ISR, so the high watermark waits for %s"):format(
  s.followers[A].leo, s.followers[B].leo, expected) })

learner = ask("a producer sends one record with acks=all and a 500 ms timeout while B is away. Is it acknowledged (yes/no)?")
local conn = assert(connection.open(leader.host, leader.port, { client_id = "lab19-acks-all" }))
local batch = assert(core.build_batch{ records = { { value = "acks=all while B is away" } } })
local t0 = core.now_ms()
local resp = assert(conn:request(0, { acks = -1, timeout_ms = 500,
  topic_data = { { name = topic, partition_data = { { index = 0, records = batch } } } } }))
conn:close()
local err = resp.responses[1].partition_responses[1].error_code
s = part()
expected = err == 0 and "yes" or "no"
answer(learner, expected, { ("the answer came after %d ms with error %d (REQUEST_TIMED_OUT): the ISR still counts B"):format(
  core.now_ms() - t0, err), ("yet the record is on the leader: LEO %d, high watermark %d; a retry may write it twice"):format(
  s.log_end_offset, s.high_watermark) })
L:fact("q4_error", err)
L:fact("q4_leo", s.log_end_offset)

learner = ask("B fetches again. Which offsets can a consumer read once it has caught up?")
c:heal(leader_id, B)
assert(kiq.wait_for(function() return part().high_watermark == part().log_end_offset end, 10000, "the HW to catch up"))
s = part()
last = readable()
expected = ("0-%d"):format(s.high_watermark - 1)
answer(learner, expected, { ("B is at %d, the high watermark %d: everything is committed, the timed-out record too"):format(
  s.followers[B].leo, s.high_watermark), ("a consumer from offset 0 read up to %d"):format(last) })
L:fact("q5_readable_last", last)

L:step("score")
if asked > 0 and (interactive or #given > 0) then
  L:say("%d of %d right", right, asked)
  L:fact("right", right)
else
  L:say("no answers given: at a terminal the lab asks; else KAFKAIQ_LAB_ANSWERS=\"a1;a2;...\"")
end
L:fact("questions", asked)
L:finish()
c:stop()
