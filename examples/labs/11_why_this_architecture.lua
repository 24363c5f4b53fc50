-- Lab 11: why this architecture. Each of the lesson's claims for Kafka's
-- design, measured on a live broker:
--   1. network threads apart from I/O threads: an I/O thread stuck in a slow
--      fsync stalls neither the reading of other connections nor their answers;
--   2. a bounded request queue: under load it fills to its bound and mutes
--      sockets (backpressure), it does not grow;
--   3. the purgatory: a thousand fetches waiting for data hold no thread;
--   4. sequential appends and zero copy: each batch written where the last
--      ended, read back by sendfile;
--   5. leader-only writes, followers pulling: followers get no Produce, they
--      fetch, and a Produce sent to one is refused.
--
--   build/kafkaiq run examples/labs/11_why_this_architecture.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
local ffi = require "ffi"
ffi.cdef [[
int getpid(void);
typedef struct { unsigned long cur, max; } lab11_rlimit;
int getrlimit(int resource, lab11_rlimit *r);
int setrlimit(int resource, const lab11_rlimit *r);
]]

kiq.log_level("error")
local L = lab.new(11, "why this architecture")

local function thread_count()
  local n = 0
  local p = assert(io.popen(("ls /proc/%d/task"):format(ffi.C.getpid())))
  for _ in p:lines() do n = n + 1 end
  p:close()
  return n
end
local function produce_body(topic, value)
  local batch = assert(core.build_batch{ records = { { value = value } } })
  return { acks = 1, timeout_ms = 30000,
           topic_data = { { name = topic, partition_data = { { index = 0, records = batch } } } } }
end
local function wait_answer(conn, pending)
  local resp
  assert(kiq.wait_for(function()
    resp = conn:collect(pending, 50)
    return resp
  end, 30000, "an answer"))
  return resp.responses[1].partition_responses[1]
end
local function ms(a, b) return (b.t_ns - a.t_ns) / 1e6 end

local fsync_ms = 600
L:step("1. network threads apart from I/O threads: one I/O thread in a %d ms fsync", fsync_ms)
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0", ["num.io.threads"] = 2,
                             ["num.network.threads"] = 2 })
L:page(b)
local admin = b:admin()
assert(admin:create_topics{ { name = "lab11-audit", partitions = 1, configs = { ["flush.messages"] = "1" } },
                            { name = "lab11-clicks", partitions = 1 } })
assert(b:slow_disk{ fsync_ms = fsync_ms })
local slow = assert(connection.open(b.host, b.port, { client_id = "audit", request_timeout_ms = 30000 }))
local fast = assert(connection.open(b.host, b.port, { client_id = "clicks", request_timeout_ms = 30000 }))
local appends = b:event_counts().appended
local pending = assert(slow:send_request(0, produce_body("lab11-audit", "audit entry")))
-- the fast client sends once the slow one is appended: its fsync has begun
-- (the journey gets the stages when the request is done)
assert(kiq.wait_for(function() return b:event_counts().appended > appends end, 10000, "the audit append"))
assert(wait_answer(fast, assert(fast:send_request(0, produce_body("lab11-clicks", "click")))).error_code == 0)
assert(wait_answer(slow, pending).error_code == 0)
assert(b:slow_disk{ fsync_ms = 0 })
slow:close()
fast:close()
local ja, jb = assert(b:journey("lab11-audit", 0, 0)), assert(b:journey("lab11-clicks", 0, 0))
local a_app, a_fl = lab.stage(ja, "appended"), lab.stage(ja, "flushed")
local b_recv, b_sent = lab.stage(jb, "received"), lab.stage(jb, "sent")
L:say("the audit Produce: its append's fsync held an I/O thread %.1f ms (flush.messages=1, a slow disk)",
  a_fl.fsync_us / 1000)
L:say("the clicks Produce, on another connection, read by a network thread %.1f ms into that fsync,",
  ms(a_app, b_recv))
L:say("handled by the other I/O thread and answered %.1f ms later, %.1f ms before the fsync ended",
  ms(b_recv, b_sent), ms(b_sent, a_fl))
L:fact("slow_fsync_ms", math.floor(a_fl.fsync_us / 1000))
L:fact("other_read_during_fsync", b_recv.t_ns > a_app.t_ns and b_recv.t_ns < a_fl.t_ns)
L:fact("other_answered_during_fsync", b_sent.t_ns < a_fl.t_ns)
admin:close()
b:stop()

L:step("2. a bounded request queue: 8 producers, one I/O thread in 100 ms fsyncs, a queue of 2")
local bound, producers = 2, 8
b = assert(kiq.broker{ ["queued.max.requests"] = bound, ["num.io.threads"] = 1, ["num.network.threads"] = 2 })
admin = b:admin()
assert(admin:create_topics{ { name = "lab11-orders", partitions = 1, configs = { ["flush.messages"] = "1" } } })
admin:close()
assert(b:slow_disk{ fsync_ms = 100 })
local conns, waits = {}, {}
for i = 1, producers do
  conns[i] = assert(connection.open(b.host, b.port, { client_id = "producer-" .. i, request_timeout_ms = 30000 }))
end
for i = 1, producers do waits[i] = assert(conns[i]:send_request(0, produce_body("lab11-orders", "order " .. i))) end
local acked, deepest, muted = 0, 0, 0
for i = 1, producers do
  local part = wait_answer(conns[i], waits[i])
  if part.error_code == 0 then acked = acked + 1 end
  conns[i]:close()
  local enq = lab.stage(assert(b:journey("lab11-orders", 0, part.base_offset)), "enqueued")
  deepest = math.max(deepest, enq.before + 1)
  if enq.waited_muted then muted = muted + 1 end
end
assert(b:slow_disk{ fsync_ms = 0 })
L:say("%d requests outstanding at once; the queue held at most %d (its bound %d); %d waited in their sockets, muted;",
  producers, deepest, bound, muted)
L:say("%d of %d acknowledged: the queue's memory is bounded, the clients wait, nothing is refused", acked, producers)
L:fact("queue_bound", bound)
L:fact("queue_deepest", deepest)
L:fact("queue_waited_muted", muted)
L:fact("queue_acked", acked)
b:stop()

-- each waiting fetch is two descriptors here (client and broker side):
-- the soft limit raised as far as the hard one allows
local function room_for_fetches(want)
  local RLIMIT_NOFILE = 7
  local r = ffi.new("lab11_rlimit")
  assert(ffi.C.getrlimit(RLIMIT_NOFILE, r) == 0)
  local need = want * 2 + 256
  if tonumber(r.cur) < need then
    r.cur = math.min(need, tonumber(r.max))
    ffi.C.setrlimit(RLIMIT_NOFILE, r)
    ffi.C.getrlimit(RLIMIT_NOFILE, r)
  end
  return math.min(want, math.floor((tonumber(r.cur) - 256) / 2))
end
local waiting_fetches = room_for_fetches(1000)
L:step("3. the purgatory: %d consumers' fetches waiting for data", waiting_fetches)
b = assert(kiq.broker{})
admin = b:admin()
assert(admin:create_topics{ { name = "lab11-alerts", partitions = 1 } })
admin:close()
local topic_id = b:state().topics["lab11-alerts"].id
local threads_before = thread_count()
conns, waits = {}, {}
for i = 1, waiting_fetches do
  conns[i] = assert(connection.open(b.host, b.port, { client_id = "consumer-" .. i, request_timeout_ms = 30000 }))
  waits[i] = assert(conns[i]:send_request(1, { replica_id = -1, max_wait_ms = 20000, min_bytes = 1,
    max_bytes = 1048576, isolation_level = 0, session_id = 0, session_epoch = -1, rack_id = "",
    forgotten_topics_data = {}, topics = { { topic = "lab11-alerts", topic_id = topic_id, partitions = {
      { partition = 0, fetch_offset = 0, partition_max_bytes = 1048576 } } } } }))
end
assert(kiq.wait_for(function() return b:state().purgatory.waiting >= waiting_fetches end, 20000,
  "every fetch in the purgatory"))
local parked, threads_during = b:state().purgatory.waiting, thread_count()
local p = assert(b:producer{ acks = 1 })
p:send("lab11-alerts", nil, "disk almost full", { partition = 0 })
assert(p:flush(10000))
p:close()
local t0, answered = core.now_ms(), 0
for i = 1, waiting_fetches do
  local resp = conns[i]:collect(waits[i], 10000)
  local part = resp and resp.responses[1].partitions[1]
  if part and part.error_code == 0 and part.high_watermark == 1 then answered = answered + 1 end
  conns[i]:close()
end
L:say("%d fetches parked in the purgatory, the broker's threads %d before and %d while they wait: none per fetch",
  parked, threads_before, threads_during)
L:say("one record produced: all %d answered with it within %d ms, woken by the append", answered, core.now_ms() - t0)
L:fact("waiting_fetches", waiting_fetches)
L:fact("purgatory_waiting", parked)
L:fact("threads_added_by_waiting_fetches", threads_during - threads_before)
L:fact("fetches_answered", answered)

L:step("4. sequential appends, zero copy: 100 batches, then read back")
admin = b:admin()
assert(admin:create_topics{ { name = "lab11-logs", partitions = 1 } })
admin:close()
p = assert(b:producer{ acks = 1, linger_ms = 0 })
for i = 1, 100 do
  p:send("lab11-logs", nil, ("log line %d"):format(i), { partition = 0 })
  assert(p:flush(5000))
end
p:close()
local contiguous = 0
for off = 1, 99 do
  local a, prev = lab.stage(b:journey("lab11-logs", 0, off), "appended"), lab.stage(b:journey("lab11-logs", 0, off - 1), "appended")
  if a.file == prev.file and prev.position + prev.bytes == a.position then contiguous = contiguous + 1 end
end
local st0 = b:state().fetch_bytes
local cons = assert(b:consumer{ auto_offset_reset = "earliest" })
assert(cons:assign{ { topic = "lab11-logs", partition = 0, offset = 0 } })
local got = 0
assert(kiq.wait_for(function() got = got + #(cons:poll(100) or {}) return got >= 100 end, 10000, "the 100 records"))
cons:close()
local st1 = b:state().fetch_bytes
L:say("%d of 99 batches began exactly where the one before ended: the segment only grows at its end", contiguous)
L:say("%d records read back: %d bytes sent by sendfile from the page cache, %d bytes copied through the broker",
  got, st1.sendfile - st0.sendfile, st1.copied - st0.copied)
L:fact("appends_contiguous", contiguous)
L:fact("zero_copy_sendfile_bytes", st1.sendfile - st0.sendfile)
L:fact("zero_copy_copied_bytes", st1.copied - st0.copied)
b:stop()

L:step("5. leader-only writes, followers pulling: a partition on three brokers")
local c = assert(kiq.cluster{ brokers = 3 })
assert(c:admin():create_topics{ { name = "lab11-payments", partitions = 1, replication_factor = 3 } })
assert(c:wait_for_isr("lab11-payments", 0, 3, 10000))
local info = c:partition("lab11-payments", 0)
p = assert(c:producer{ acks = "all", linger_ms = 0 })
for i = 1, 20 do
  p:send("lab11-payments", nil, "payment " .. i, { partition = 0 })
  assert(p:flush(5000))
end
p:close()
assert(c:wait_for_replicas("lab11-payments", 0, 10000))
local function produces(id) local s = c:broker(id):request_stats().Produce return s and s.count or 0 end
-- a request is counted once its answer is sent, a moment after the producer may have read it
kiq.wait_for(function() return produces(info.leader) >= 20 end, 2000)
local follower_produces, pulled = 0, 0
local j = c:journey("lab11-payments", 0, 19)
for _, r in ipairs(info.replicas) do
  if r ~= info.leader then
    follower_produces = follower_produces + produces(r)
    if lab.stage(j, "follower_fetched", r) then pulled = pulled + 1 end
  end
end
local f = info.replicas[1] == info.leader and info.replicas[2] or info.replicas[1]
local fb = c:broker(f)
local conn = assert(connection.open(fb.host, fb.port, { client_id = "misrouted" }))
local resp = assert(conn:request(0, produce_body("lab11-payments", "to a follower")))
conn:close()
local refused = resp.responses[1].partition_responses[1].error_code
L:say("leader broker %d took %d Produce requests; its two followers %d: nobody pushes to them", info.leader,
  produces(info.leader), follower_produces)
L:say("the last batch's journey: %d followers fetched it from the leader (Fetch with their replica id)", pulled)
L:say("a Produce sent to follower %d: error %d (NOT_LEADER_OR_FOLLOWER): one writer per partition, no conflicts",
  f, refused)
L:fact("leader_produces", produces(info.leader))
L:fact("follower_produces", follower_produces)
L:fact("followers_pulled", pulled)
L:fact("produce_to_follower_error", refused)
L:finish()
c:stop()
