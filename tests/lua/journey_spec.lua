-- Record journeys in an in-process cluster, through Lua (c:journey):
-- every stage of an acks=all batch in order, its segment file and byte
-- position checked against the files, each follower's fetch, append and
-- LEO, the high watermark's crossing, the answer and the consumer fetch;
-- an acks=1 batch whose followers are cut: appended, not committed,
-- unseen by a consumer, stuck before the high watermark waiting for them,
-- until the link heals; a follower cut until it leaves the ISR and healed
-- until it is back: both are stages of the batches they concern, with the
-- reason; each fsync (after an append, by the flusher, on a follower) timed
-- under flushed, not under appended; and an acks=0 batch, which gets no
-- response and says so. Every stage carries its sentence (text).
local kiq = require "kafkaiq"
kiq.log_level("error")

local function stage_names(j)
  local out = {}
  for _, s in ipairs(j.stages) do out[#out + 1] = s.stage end
  return out
end

local function stages_named(j, name)
  local out = {}
  for _, s in ipairs(j.stages) do
    if s.stage == name then out[#out + 1] = s end
  end
  return out
end

local function index_of(list, name)
  for i, v in ipairs(list) do
    if v == name then return i end
  end
end

-- The base offset and length of the batch at byte position of a broker's
-- segment file of topic-partition.
local function batch_at(c, id, topic, partition, file, position)
  local dir = c:broker(id):state().log_dirs[1].path
  local f = assert(io.open(("%s/%s-%d/%s"):format(dir, topic, partition, file), "rb"))
  f:seek("set", position)
  local head = f:read(12)
  f:close()
  local base, len = 0, 0
  for i = 1, 8 do base = base * 256 + head:byte(i) end
  for i = 9, 12 do len = len * 256 + head:byte(i) end
  return base, len + 12
end

local function consume(c, topic, partition, want, timeout_ms)
  local cons = assert(c:consumer { auto_offset_reset = "earliest", client_id = "journey-reader" })
  cons:assign { { topic = topic, partition = partition, offset = 0 } }
  local got = {}
  kiq.wait_for(function()
    for _, r in ipairs(cons:poll(100)) do got[#got + 1] = r end
    return #got >= want
  end, timeout_ms)
  cons:close()
  return got
end

describe("record journeys in a cluster", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["broker.heartbeat.interval.ms"] = 200,
      ["replica.lag.time.max.ms"] = 60000 })
    local a = assert(c:admin())
    assert(a:create_topics { { name = "jr", partitions = 1, replication_factor = 3 },
      { name = "jc", partitions = 1, replication_factor = 3 },
      { name = "jf", partitions = 1, replication_factor = 3, configs = { ["flush.messages"] = "1" } } })
    a:close()
    for _, t in ipairs { "jr", "jc", "jf" } do
      local leader = assert(c:wait_for_leader(t, 0, 15000))
      assert(c:wait_for_isr(t, 0, 3, 15000))
      assert(kiq.wait_for(function()
        local info = c:partition(t, 0)
        local own = info and info.replicas_state[leader]
        return own and own.role == "leader" and own.leader_epoch == info.leader_epoch
      end, 15000, t .. "'s leader to lead"))
    end
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("shows every stage of an acks=all batch, in order, on every broker", function()
    local p = assert(c:producer { acks = "all", client_id = "journey-writer" })
    p:send("jr", "k1", "first", { partition = 0, headers = { kiq.trace_header("spec-1") } })
    p:send("jr", "k2", "second", { partition = 0 })
    assert(p:flush(10000))
    p:close()
    assert.are.equal(2, #consume(c, "jr", 0, 2, 10000))
    local leader = c:partition("jr", 0).leader
    local j
    assert(kiq.wait_for(function()
      j = c:journey { trace = "spec-1" }
      return j and #stages_named(j, "records_fetched") >= 1 and #stages_named(j, "sent") == 1
    end, 10000, "the journey to be whole"))
    assert.are.same({ "jr", 0, 0, 1, "spec-1" }, { j.topic, j.partition, j.first_offset, j.last_offset, j.trace })
    -- the leader's own stages come in the pipeline's order
    local names = stage_names(j)
    local order = { "received", "enqueued", "dequeued", "validated", "appended", "committed", "acknowledged",
      "response_queued", "sent", "records_fetched" }
    local last = 0
    for _, name in ipairs(order) do
      local i = index_of(names, name)
      assert.is_truthy(i, name .. " missing from " .. table.concat(names, ","))
      assert.is_true(i > last, name .. " out of order in " .. table.concat(names, ","))
      last = i
    end
    for i = 2, #j.stages do assert.is_true(j.stages[i].t_ns >= j.stages[i - 1].t_ns) end
    local recv = stages_named(j, "received")[1]
    assert.are.same({ leader, "journey-writer" }, { recv.broker, recv.client_id })
    local validated = stages_named(j, "validated")[1]
    assert.are.same({ 2, -1 }, { validated.records, validated.acks })
    -- the leader's append: offsets 0..1 assigned, and the file holds them there
    local app = stages_named(j, "appended")[1]
    assert.are.same({ 0, 0, 2 }, { app.first_offset, app.before, app.after })
    local base, len = batch_at(c, leader, "jr", 0, app.file, app.position)
    assert.are.same({ 0, app.bytes }, { base, len })
    -- every stage comes worded by the broker, from its own fields (the one
    -- wording the command, the page and the labs print)
    for _, s in ipairs(j.stages) do assert.is_truthy(s.text and #s.text > #s.stage, s.stage) end
    assert.are.equal(("offsets 0..1 assigned (LEO 0 -> 2); appended to %s at byte %d (%d bytes)"):format(app.file,
      app.position, app.bytes), app.text)
    local enq, deq = stages_named(j, "enqueued")[1], stages_named(j, "dequeued")[1]
    assert.are.equal(("I/O thread %d: took it after %.3f ms in the queue"):format(deq.thread,
      (deq.t_ns - enq.t_ns) / 1e6), deq.text)
    assert.are.equal("validated: 2 records, " .. validated.bytes .. " bytes, CRC ok (acks=all)", validated.text)
    -- each follower fetched it, appended it to its own file, and said so
    local followers = {}
    for _, id in ipairs(c:partition("jr", 0).replicas) do
      if id ~= leader then followers[#followers + 1] = id end
    end
    for _, id in ipairs(followers) do
      local fetched, leo, rep = {}, {}, {}
      for _, s in ipairs(j.stages) do
        if s.stage == "follower_fetched" and s.peer == id then fetched[#fetched + 1] = s end
        if s.stage == "follower_leo" and s.peer == id then leo[#leo + 1] = s end
        if s.stage == "replicated" and s.broker == id then rep[#rep + 1] = s end
      end
      assert.are.same({ 1, 1, 1 }, { #fetched, #leo, #rep }, "follower " .. id)
      assert.is_true(leo[1].after >= 2)
      assert.are.equal(leader, rep[1].peer)
      local fbase, flen = batch_at(c, id, "jr", 0, rep[1].file, rep[1].position)
      assert.are.same({ 0, app.bytes }, { fbase, flen }, "follower " .. id .. "'s file")
    end
    -- committed once both followers had it; acknowledged after that
    local hw = stages_named(j, "committed")[1]
    assert.is_true(hw.before <= 1 and hw.after >= 2)
    assert.are.equal(3, hw.records)
    for _, s in ipairs(stages_named(j, "follower_leo")) do assert.is_true(s.t_ns <= hw.t_ns) end
    local ack = stages_named(j, "acknowledged")[1]
    assert.are.same({ 0, -1 }, { ack.error, ack.acks })
    -- why the commit waited: for the follower whose fetch brought the high
    -- watermark past the batch, the last of them to have it
    local leos = stages_named(j, "follower_leo")
    local last_leo = leos[#leos]
    local waited = ("waited %.3f ms for follower %d, whose next fetch arrived at +"):format((hw.t_ns - app.t_ns) / 1e6,
      last_leo.peer)
    assert.are.equal(waited, hw.why:sub(1, #waited))
    assert.matches(("whose next fetch arrived at %%+%.3f ms after the append %%(fetch offset %d: its LEO %d %%-> %d%%); "
      .. "it had taken the batch at %%+%%d+%%.%%d+ ms$"):format((last_leo.t_ns - app.t_ns) / 1e6, last_leo.after,
      last_leo.before, last_leo.after), hw.why)
    assert.matches("acks=all: held in the purgatory until the high watermark passed it, %d+%.%d+ ms after the append "
      .. "%(waiting for follower " .. last_leo.peer .. "%)", ack.why)
    assert.matches("^queued behind %d+ requests %(depth %d+/500%)$", deq.why)
    -- every stage has its wall-clock time, in the same order as its monotonic one
    for i = 2, #j.stages do
      local a, b = j.stages[i - 1], j.stages[i]
      assert.is_true(b.wall_us - a.wall_us >= (b.t_ns - a.t_ns) / 1e3 - 1000, "wall_us follows t_ns")
    end
    assert.is_true(math.abs(j.stages[1].wall_us / 1e6 - os.time()) < 60, "wall_us is µs since the epoch")
    assert.are.equal("t_ns", j.merged_by) -- one process: one monotonic clock
    -- stages with nothing to explain say nothing
    assert.is_nil(validated.why)
    assert.are.equal("journey-reader", stages_named(j, "records_fetched")[1].client_id)
    -- the same by offset, from the leader alone, which says where it stands
    local part = assert(c:broker(leader):journey("jr", 0, 1))
    assert.are.equal("spec-1", part.trace)
    assert.are.equal("committed", part.verdict.state)
    assert.are.equal("committed", j.verdict.state)
    -- a follower's part has no verdict of its own
    assert.is_nil(assert(c:broker(followers[1]):journey("jr", 0, 1)).verdict)
  end)

  it("shows a batch whose followers are cut appended but not committed, until they heal", function()
    local leader = c:partition("jc", 0).leader
    for id = 0, 2 do
      if id ~= leader then c:cut(leader, id) end
    end
    local p = assert(c:producer { acks = 1 })
    p:send("jc", "k", "cut off", { partition = 0, headers = { kiq.trace_header("cut-1") } })
    assert(p:flush(10000))
    p:close()
    local j = assert(c:journey { trace = "cut-1" })
    assert.are.equal(1, #stages_named(j, "appended"))
    assert.are.equal(1, #stages_named(j, "acknowledged"))
    assert.are.equal(0, #stages_named(j, "committed"))
    assert.are.equal(0, #stages_named(j, "replicated"))
    -- the leader says why: both followers, still in the ISR, lack it
    local followers = {}
    for id = 0, 2 do
      if id ~= leader then followers[#followers + 1] = id end
    end
    for _, v in ipairs { j.verdict, assert(c:broker(leader):journey { trace = "cut-1" }).verdict } do
      assert.are.equal("stuck", v.state)
      table.sort(v.waiting_for)
      assert.are.same(followers, v.waiting_for)
      local a, b = v.text:match("waiting for followers (%d+), (%d+) in the ISR")
      local named = { tonumber(a), tonumber(b) }
      table.sort(named)
      assert.are.same(followers, named, v.text)
      assert.matches("^stuck before the high watermark", v.text)
    end
    -- a consumer reads up to the high watermark only: nothing yet
    assert.are.equal(0, #consume(c, "jc", 0, 1, 500))
    assert.are.equal(0, #stages_named(assert(c:journey { trace = "cut-1" }), "records_fetched"))
    for id = 0, 2 do
      if id ~= leader then c:heal(leader, id) end
    end
    assert(kiq.wait_for(function()
      local now = c:journey { trace = "cut-1" }
      return now and #stages_named(now, "committed") == 1 and #stages_named(now, "replicated") == 2
    end, 15000, "the batch to be committed once healed"))
    assert.are.equal("committed", assert(c:journey { trace = "cut-1" }).verdict.state)
    assert.are.equal(1, #consume(c, "jc", 0, 1, 10000))
    assert(kiq.wait_for(function()
      return #stages_named(assert(c:journey { trace = "cut-1" }), "records_fetched") == 1
    end, 5000, "the consumer's fetch in the journey"))
  end)

  it("times each replica's fsync (flush.messages=1) under its flushed, after its append", function()
    local p = assert(c:producer { acks = "all" })
    p:send("jf", "k", "v", { partition = 0, headers = { kiq.trace_header("jf-1") } })
    assert(p:flush(10000))
    p:close()
    local j
    assert(kiq.wait_for(function()
      j = c:journey { trace = "jf-1" }
      return j and #stages_named(j, "flushed") == 3
    end, 10000, "an fsync on each of the three brokers"))
    local appended = {}
    for _, s in ipairs(j.stages) do
      if s.stage == "appended" or s.stage == "replicated" then appended[s.broker] = s end
    end
    for _, fl in ipairs(stages_named(j, "flushed")) do
      local app = assert(appended[fl.broker], "broker " .. fl.broker .. "'s append")
      assert.are.equal(1, fl.after)
      assert.is_true(fl.t_ns - app.t_ns >= fl.fsync_us * 1000, "broker " .. fl.broker .. ": appended after its fsync")
      assert.matches("^broker " .. fl.broker .. " fsynced the log up to offset 1 after the append", fl.text)
      assert.are.equal("fsync because flush.messages=1", fl.why)
      assert.are.equal(1, fl.flush_messages)
    end
  end)

  it("refuses bad arguments and says when nothing is kept", function()
    assert.has_error(function() c:broker(0):journey("jr") end)
    assert.has_error(function() c:broker(0):journey { trace = 7 } end)
    assert.has_error(function() kiq.trace_header("") end)
    local none, err = c:journey("jr", 0, 999999)
    assert.is_nil(none)
    assert.matches("no journey", err)
  end)
end)

describe("a follower leaving the ISR and coming back", function()
  local lag_ms = 2000
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3, ["broker.heartbeat.interval.ms"] = 200,
      ["replica.lag.time.max.ms"] = lag_ms })
    local a = assert(c:admin())
    assert(a:create_topics { { name = "ji", partitions = 1, replication_factor = 3 } })
    a:close()
    assert(c:wait_for_leader("ji", 0, 15000))
    assert(c:wait_for_isr("ji", 0, 3, 15000))
  end)

  teardown(function()
    if c then c:stop() end
  end)

  local function send(trace)
    local p = assert(c:producer { acks = 1 })
    p:send("ji", "k", trace, { partition = 0, headers = { kiq.trace_header(trace) } })
    assert(p:flush(10000))
    p:close()
  end

  it("is a stage of each batch it concerns, with the reason", function()
    local leader = c:partition("ji", 0).leader
    local f = (leader + 1) % 3
    -- the leader has seen the follower fetch
    assert(kiq.wait_for(function()
      local t = c:broker(leader):state().topics.ji
      local fs = t and t.partitions[0].followers
      return fs and fs[f] and fs[f].leo == 0
    end, 15000, "follower " .. f .. " fetching"))
    c:cut(leader, f)
    send("isr-1")
    -- in the ISR yet without the batch (once the other follower has it):
    -- the leader waits for it
    local j
    assert(kiq.wait_for(function()
      j = assert(c:journey { trace = "isr-1" })
      return #j.verdict.waiting_for == 1
    end, 10000, "the other follower to have the batch"))
    assert.are.equal("stuck", j.verdict.state)
    assert.are.same({ f }, j.verdict.waiting_for)
    assert.matches("waiting for follower " .. f .. " in the ISR", j.verdict.text)
    assert(kiq.wait_for(function()
      j = c:journey { trace = "isr-1" }
      return #stages_named(j, "isr_shrunk") == 1 and #stages_named(j, "committed") == 1
    end, 15000, "the follower out of the ISR and the batch committed without it"))
    local out = stages_named(j, "isr_shrunk")[1]
    assert.are.same({ f, leader, 2 }, { out.peer, out.broker, out.isr_size })
    assert.is_true(out.lag >= 1 and out.follower_leo + out.lag == out.leader_leo, "lag " .. tostring(out.lag))
    assert.is_true(out.since_caught_up_ms > lag_ms, "not caught up for " .. out.since_caught_up_ms .. " ms")
    assert.is_true(out.lagged)
    assert.matches("follower " .. f .. " left the ISR %(now 2 replicas%)", out.text)
    assert.matches(out.lag .. " records behind", out.text)
    -- the commit followed the shrink: the high watermark no longer waited
    assert.is_true(stages_named(j, "committed")[1].t_ns >= out.t_ns)
    assert.are.equal("committed", j.verdict.state)
    -- written while it is out: committed without it
    send("isr-2")
    local j2
    assert(kiq.wait_for(function()
      j2 = assert(c:journey { trace = "isr-2" })
      return #stages_named(j2, "committed") == 1
    end, 10000, "the batch written meanwhile committed"))
    assert.are.equal(2, stages_named(j2, "committed")[1].records)
    assert.are.equal(0, #stages_named(j2, "isr_shrunk"))
    c:heal(leader, f)
    for _, trace in ipairs { "isr-1", "isr-2" } do
      local back
      assert(kiq.wait_for(function()
        back = stages_named(assert(c:journey { trace = trace }), "isr_expanded")[1]
        return back
      end, 15000, "the follower back in the ISR, in " .. trace .. "'s journey"))
      assert.are.same({ f, 3, 0 }, { back.peer, back.isr_size, back.lag })
      assert.matches("follower " .. f .. " is back in the ISR %(now 3 replicas%)", back.text)
      assert.are.equal(1, #stages_named(assert(c:journey { trace = trace }), "isr_expanded"))
    end
  end)
end)

describe("fsyncs in a journey", function()
  it("times an append's fsync (flush.messages=1) under flushed, not appended", function()
    local b = assert(kiq.broker {})
    local a = assert(b:admin())
    assert(a:create_topics { { name = "fs", partitions = 1, configs = { ["flush.messages"] = "1" } } })
    a:close()
    -- a slow disk: each fsync takes 60 ms more
    assert(b:slow_disk { fsync_ms = 60 })
    local p = assert(b:producer { acks = 1 })
    p:send("fs", "k", "v", { partition = 0, headers = { kiq.trace_header("fsync-1") } })
    assert(p:flush(10000))
    p:close()
    local j = assert(b:journey { trace = "fsync-1" })
    local app, fl = stages_named(j, "appended")[1], stages_named(j, "flushed")[1]
    assert.is_truthy(fl, "a flushed stage")
    assert.are.same({ 0, 1 }, { fl.before, fl.after })
    assert.is_nil(fl.flusher)
    assert.is_true(fl.fsync_us >= 60000, "the fsync took " .. fl.fsync_us .. " µs")
    -- appended is stamped before the fsync began, flushed when it ended
    assert.is_true(fl.t_ns - app.t_ns >= fl.fsync_us * 1000, "appended stamped after the fsync")
    assert.matches("fsynced the log up to offset 1 after the append %(flush.messages%): the fsync took %d+%.%d+ ms",
      fl.text)
    assert.is_true(stages_named(j, "acknowledged")[1].t_ns >= fl.t_ns)
    b:stop()
  end)

  it("times the log flusher's fsync (flush.ms) under flushed", function()
    local b = assert(kiq.broker {})
    local a = assert(b:admin())
    assert(a:create_topics { { name = "fm", partitions = 1, configs = { ["flush.ms"] = "50" } } })
    a:close()
    assert(b:slow_disk { fsync_ms = 30 })
    local p = assert(b:producer { acks = 1 })
    p:send("fm", "k", "v", { partition = 0, headers = { kiq.trace_header("flusher-1") } })
    assert(p:flush(10000))
    p:close()
    local j
    assert(kiq.wait_for(function()
      j = assert(b:journey { trace = "flusher-1" })
      return stages_named(j, "flushed")[1]
    end, 10000, "the flusher's fsync in the journey"))
    local app, fl = stages_named(j, "appended")[1], stages_named(j, "flushed")[1]
    assert.is_true(fl.flusher)
    assert.is_true(fl.fsync_us >= 30000, "the fsync took " .. fl.fsync_us .. " µs")
    assert.is_true(fl.t_ns - app.t_ns >= fl.fsync_us * 1000)
    assert.matches("%(the log flusher, flush.ms%)", fl.text)
    assert.are.equal("fsync because flush.ms passed since the oldest unflushed write (the log flusher)", fl.why)
    b:stop()
  end)
end)

describe("an acks=0 journey", function()
  it("has no answer and no response, and says none goes out", function()
    local b = assert(kiq.broker {})
    local a = assert(b:admin())
    assert(a:create_topics { { name = "a0", partitions = 1 } })
    a:close()
    local p = assert(b:producer { acks = 0 })
    p:send("a0", "k", "v", { partition = 0, headers = { kiq.trace_header("acks0-1") } })
    assert(p:flush(10000))
    local j
    assert(kiq.wait_for(function()
      j = b:journey { trace = "acks0-1" }
      local counts = b:event_counts()
      return j and stages_named(j, "no_response")[1] and counts.sent == counts.received
    end, 10000, "the produce handled to its end"))
    p:close()
    local names = table.concat(stage_names(j), ",")
    for _, absent in ipairs { "acknowledged", "response_queued", "sent" } do
      assert.is_nil(index_of(stage_names(j), absent), absent .. " in " .. names)
    end
    assert.are.equal("no response goes out (acks=0): the producer counted it sent when it left",
      stages_named(j, "no_response")[1].text)
    assert.is_true(index_of(stage_names(j), "no_response") > index_of(stage_names(j), "appended"), names)
    b:stop()
  end)
end)

describe("the journey ring", function()
  it("keeps the newest kafkaiq.journey.max.batches batches, all of one partition if it has them all", function()
    -- the ring alone: no journal behind it
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 20, ["kafkaiq.journey.retention.bytes"] = 0 })
    local p = assert(b:producer { acks = 1 })
    for i = 1, 30 do
      p:send("ring", "k", "v" .. i, { partition = 0 })
      assert(p:flush(10000)) -- a batch each
    end
    p:close()
    local kept = 0
    for offset = 0, 29 do
      local j = b:journey("ring", 0, offset)
      if j then
        kept = kept + 1
        assert.are.equal(offset, j.first_offset)
      end
    end
    assert.are.equal(20, kept)
    assert.is_nil(b:journey("ring", 0, 9))
    assert.is_truthy(b:journey("ring", 0, 10))
    b:stop()
  end)
end)

describe("a journey through a full request queue", function()
  it("shows the connections muted and the request that waited for room", function()
    local core = require "kafkaiq.core"
    local connection = require "kafkaiq.client.connection"
    local b = assert(kiq.broker { ["queued.max.requests"] = 1, ["num.io.threads"] = 1,
      ["num.network.threads"] = 1, ["num.partitions"] = 1 })
    local a = assert(b:admin())
    assert(a:create_topics { { name = "full", partitions = 1 } })
    a:close()
    -- the one I/O thread spends a while on each produce: with room for one
    -- request in the queue, the others' connections wait muted
    assert(b:intercept { on = "request", api = "Produce",
      source = "return function() local x = 0 for i = 1, 1500000 do x = x + i end end" })
    local conns, pending = {}, {}
    for i = 1, 4 do
      conns[i] = assert(connection.open(b.host, b.port, { client_id = "full-" .. i, request_timeout_ms = 30000 }))
    end
    for i = 1, 4 do
      pending[i] = assert(conns[i]:send_request(0, { acks = 1, timeout_ms = 10000, topic_data = { { name = "full",
        partition_data = { { index = 0, records = assert(core.build_batch { records = { { value = "r" .. i } } }) } } } } }))
    end
    local offsets = {}
    for i = 1, 4 do
      local resp
      assert(kiq.wait_for(function()
        resp = conns[i]:collect(pending[i], 100)
        return resp
      end, 30000, "produce " .. i .. "'s answer"))
      local part = resp.responses[1].partition_responses[1]
      assert.are.equal(0, part.error_code)
      offsets[#offsets + 1] = part.base_offset
      conns[i]:close()
    end
    local waited, saw_muted = 0, false
    for _, offset in ipairs(offsets) do
      local j = assert(b:journey("full", 0, offset))
      local enq = stages_named(j, "enqueued")[1]
      assert.is_truthy(enq)
      assert.are.equal(1, enq.after) -- the bound
      if enq.waited_muted then
        waited = waited + 1
        -- its wait shows between receipt and the queue
        assert.is_true(enq.t_ns > stages_named(j, "received")[1].t_ns)
        assert.matches("^muted: request queue full %(depth %d+/1%); its connection read nothing for %d+%.%d+ ms$",
          enq.why)
      else
        assert.is_nil(enq.why)
      end
      assert.are.equal(("queued behind %d requests (depth %d/1)"):format(enq.before, enq.before + 1),
        stages_named(j, "dequeued")[1].why)
      saw_muted = saw_muted or enq.muted > 0
    end
    assert.is_true(waited >= 1, "some request waited muted for room")
    assert.is_true(saw_muted or waited >= 2, "the muted connections counted")
    b:stop()
  end)
end)

describe("a consumer's fetch held in the purgatory", function()
  it("says it waited for fetch.min.bytes / fetch.max.wait.ms", function()
    local connection = require "kafkaiq.client.connection"
    local b = assert(kiq.broker {})
    local a = assert(b:admin())
    local created = assert(a:create_topics { { name = "held", partitions = 1 } })
    a:close()
    -- the consumer's fetch comes first, and waits in the purgatory for the batch
    local conn = assert(connection.open(b.host, b.port, { client_id = "held-reader", request_timeout_ms = 30000 }))
    local pending = assert(conn:send_request(1, { replica_id = -1, max_wait_ms = 5000, min_bytes = 1,
      max_bytes = 1048576, isolation_level = 0, session_id = 0, session_epoch = -1, rack_id = "",
      forgotten_topics_data = {}, topics = { { topic = "held", topic_id = created[1].topic_id, partitions = {
        { partition = 0, fetch_offset = 0, partition_max_bytes = 1048576 } } } } }))
    assert.is_false(conn:collect(pending, 200))
    local p = assert(b:producer { acks = 1 })
    p:send("held", "k", "v", { partition = 0, headers = { kiq.trace_header("held-1") } })
    assert(p:flush(10000))
    p:close()
    local resp
    assert(kiq.wait_for(function()
      resp = conn:collect(pending, 100)
      return resp
    end, 10000, "the held fetch's answer"))
    conn:close()
    local fetched
    assert(kiq.wait_for(function()
      local j = assert(b:journey { trace = "held-1" })
      fetched = stages_named(j, "records_fetched")[1]
      return fetched
    end, 10000, "the consumer's fetch in the journey"))
    assert.are.same({ 1, 5000 }, { fetched.min_bytes, fetched.max_wait_ms })
    assert.is_true(fetched.held_us > 0)
    assert.are.equal(("held %.3f ms for fetch.min.bytes=1/fetch.max.wait.ms=5000 until records came"):format(
      fetched.held_us / 1e3), fetched.why)
    b:stop()
  end)
end)

describe("the journey journal", function()
  local function tmpdir()
    local d = os.tmpname()
    os.remove(d)
    assert(os.execute("mkdir -p " .. d) == 0)
    return d
  end

  local function produce(b, topic, n)
    local p = assert(b:producer { acks = 1 })
    for i = 1, n do
      p:send(topic, "k", "v" .. i, { partition = 0, headers = { kiq.trace_header(topic .. "-" .. i) } })
      assert(p:flush(10000)) -- a batch each
    end
    p:close()
  end

  it("keeps a journey after its ring slot was reused, and across a restart", function()
    local dir = tmpdir()
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir })
    produce(b, "kept", 40)
    -- offset 0's slot went to a newer batch long ago: the journal has it
    local j = assert(b:journey("kept", 0, 0))
    assert.are.same({ 0, 0 }, { j.first_offset, j.last_offset })
    assert.are.equal("kept-1", j.trace)
    local names = stage_names(j)
    assert.are.same({ "received", "enqueued", "dequeued", "validated", "appended" }, { unpack(names, 1, 5) })
    assert.is_truthy(index_of(names, "sent"))
    assert.are.equal("kept-2", assert(b:journey { trace = "kept-2" }).trace)
    assert.is_true(assert(b:journey { trace = "kept-2" }).stages[1].wall_us > 0)
    local state = b:state().journeys
    assert.is_true(state.journal_written + 512 >= 40 - 16)
    assert.are.equal(0, state.journal_dropped)
    -- stopped and freed, the broker saves its ring; a new one on the same
    -- directory finds every journey, the newest from that ring
    b:stop()
    b = nil
    collectgarbage()
    collectgarbage()
    local again = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir })
    for _, offset in ipairs { 0, 17, 39 } do
      local k = assert(again:journey("kept", 0, offset), "offset " .. offset .. " after the restart")
      assert.are.equal(offset, k.first_offset)
      assert.are.equal("sent", k.stages[#k.stages].stage)
    end
    assert.are.equal("kept-40", assert(again:journey { trace = "kept-40" }).trace)
    assert.is_nil(again:journey("kept", 0, 40))
    again:stop()
    os.execute("rm -rf " .. dir)
  end)

  it("keeps what the ring let go of through a kill, but not the ring (a crash saves nothing)", function()
    local dir = tmpdir()
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir })
    produce(b, "killed", 20)
    assert(kiq.wait_for(function() return b:state().journeys.journal_written >= 4 end, 10000, "the evicted written"))
    b:kill()
    b = nil
    collectgarbage()
    collectgarbage()
    local again = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir })
    assert.are.equal(3, assert(again:journey("killed", 0, 3)).first_offset)
    assert.is_nil(again:journey("killed", 0, 19))
    again:stop()
    os.execute("rm -rf " .. dir)
  end)

  it("deletes its oldest files past kafkaiq.journey.retention.bytes, and skips a damaged one", function()
    local dir = tmpdir()
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir,
      ["kafkaiq.journey.retention.bytes"] = 40000 })
    produce(b, "small", 120)
    assert(kiq.wait_for(function()
      local js = b:state().journeys
      return js.journal_written >= 120 - 16 and js.journal_bytes <= 40000
    end, 10000, "the journal written, and the retention to delete"))
    assert.is_nil(b:journey("small", 0, 0), "the oldest journeys are gone")
    assert.is_truthy(b:journey("small", 0, 100))
    b:stop()
    b = nil
    collectgarbage()
    collectgarbage()
    -- a file of garbage among the journal's: read past, never a crash
    local f = assert(io.open(dir .. "/.journeys/00000000000000000001.journal", "wb"))
    f:write(("\255"):rep(5000))
    f:close()
    local again = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir })
    assert.is_truthy(again:journey("small", 0, 110))
    assert.is_nil(again:journey("small", 0, 500))
    again:stop()
    os.execute("rm -rf " .. dir)
  end)

  it("is off with kafkaiq.journey.retention.bytes=0", function()
    local dir = tmpdir()
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 16, ["log.dirs"] = dir,
      ["kafkaiq.journey.retention.bytes"] = 0 })
    produce(b, "nojournal", 20)
    assert.is_nil(b:journey("nojournal", 0, 0))
    assert.is_nil(b:state().journeys.journal_written)
    b:stop()
    assert.is_nil(io.open(dir .. "/.journeys"))
    os.execute("rm -rf " .. dir)
  end)
end)

describe("the journey journal's time retention", function()
  -- in a process of its own: the manual clock, once set, is the process's
  -- (this one's other brokers would find their engine's clock moved on)
  it("deletes a file once the one after it began kafkaiq.journey.retention.ms ago", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([=[
local kiq = require "kafkaiq"
kiq.log_level("error")
local d = os.tmpname()
os.remove(d)
assert(os.execute("mkdir -p " .. d) == 0)
local b = assert(kiq.broker { ["kafkaiq.clock"] = "manual", ["kafkaiq.journey.max.batches"] = 16,
  ["log.dirs"] = d, ["kafkaiq.journey.retention.ms"] = 60000 })
local function produce(from, to)
  local p = assert(b:producer { acks = 1 })
  for i = from, to do
    p:send("aged", "k", "v" .. i, { partition = 0 })
    assert(p:flush(10000))
  end
  p:close()
end
produce(0, 39) -- offsets 0..23 go to the journal's first file
assert(kiq.wait_for(function() return b:state().journeys.journal_written >= 24 end, 10000, "the first file"))
assert(kiq.advance_clock(61000))
produce(40, 79) -- a file of their own: the first was older than its tenth of the retention
assert(kiq.wait_for(function() return b:state().journeys.journal_written >= 64 end, 10000, "the second file"))
assert(b:journey("aged", 0, 0), "the first file kept: its newest journey is not a minute old yet")
assert(kiq.advance_clock(61000))
assert(kiq.wait_for(function() return b:journey("aged", 0, 0) == nil end, 10000, "the first file deleted"))
assert(b:journey("aged", 0, 50), "the newest file stays")
b:stop()
os.execute("rm -rf " .. d)
print("time retention followed the clock")
]=])
    f:close()
    local p = assert(io.popen("build/kafkaiq run " .. script .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(script)
    assert.matches("time retention followed the clock", out, 1, true)
  end)
end)

describe("merging journeys", function()
  it("orders by t_ns within a process and by wall_us across processes", function()
    -- broker 1's machine's monotonic clock is far ahead of broker 0's: only
    -- the wall clock orders their stages
    local leader = { process = "10-1", topic = "t", partition = 0, first_offset = 5, last_offset = 5, stages = {
      { stage = "received", t_ns = 1000, wall_us = 1000000 },
      { stage = "appended", t_ns = 2000000, wall_us = 1002000 },
      { stage = "committed", t_ns = 9000000, wall_us = 1009000 } } }
    local follower = { process = "20-2", topic = "t", partition = 0, first_offset = 5, last_offset = 5, stages = {
      { stage = "replicated", t_ns = 500, wall_us = 1005000 } } }
    local m = assert(kiq.merge_journeys { follower, leader })
    assert.are.equal("wall_us", m.merged_by)
    assert.are.same({ "received", "appended", "replicated", "committed" }, stage_names(m))
    follower.process = "10-1"
    m = assert(kiq.merge_journeys { follower, leader })
    assert.are.equal("t_ns", m.merged_by)
    assert.are.same({ "replicated", "received", "appended", "committed" }, stage_names(m))
  end)
end)
