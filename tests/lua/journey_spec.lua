-- Record journeys in an in-process cluster, through Lua (c:journey):
-- every stage of an acks=all batch in order, its segment file and byte
-- position checked against the files, each follower's fetch, append and
-- LEO, the high watermark's crossing, the answer and the consumer fetch;
-- and an acks=1 batch whose followers are cut: appended, not committed,
-- unseen by a consumer, until the link heals.
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
      { name = "jc", partitions = 1, replication_factor = 3 } })
    a:close()
    for _, t in ipairs { "jr", "jc" } do
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
    assert.are.equal("journey-reader", stages_named(j, "records_fetched")[1].client_id)
    -- the same by offset, from the leader alone
    local part = assert(c:broker(leader):journey("jr", 0, 1))
    assert.are.equal("spec-1", part.trace)
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
    assert.are.equal(1, #consume(c, "jc", 0, 1, 10000))
    assert(kiq.wait_for(function()
      return #stages_named(assert(c:journey { trace = "cut-1" }), "records_fetched") == 1
    end, 5000, "the consumer's fetch in the journey"))
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

describe("the journey ring", function()
  it("keeps the newest kafkaiq.journey.max.batches batches, all of one partition if it has them all", function()
    local b = assert(kiq.broker { ["kafkaiq.journey.max.batches"] = 20 })
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
      end
      saw_muted = saw_muted or enq.muted > 0
    end
    assert.is_true(waited >= 1, "some request waited muted for room")
    assert.is_true(saw_muted or waited >= 2, "the muted connections counted")
    b:stop()
  end)
end)
