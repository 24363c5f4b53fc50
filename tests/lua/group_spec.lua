-- Specs for consumer groups in kafkaiq.client: the assignors alone, then
-- subscribe/poll/commit/close against an in-process broker. Run from the
-- repo root:
--   luajit /usr/bin/busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' tests/lua/group_spec.lua

package.cpath = "build/lua/?.so;" .. package.cpath

local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local client = require "kafkaiq.client"
local assignors = require "kafkaiq.client.assignors"
local connection = require "kafkaiq.client.connection"
local group = require "kafkaiq.client.group"

local OFFSET_COMMIT = 8
local ILLEGAL_GENERATION = 22

-- Short sessions and fast heartbeats keep rebalances quick; the broker's
-- minimum session is lowered to allow them.
local GROUP_OPTS = { session_timeout_ms = 3000, heartbeat_interval_ms = 100, rebalance_timeout_ms = 5000 }

local function with(base, extra)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end

describe("assignors.range", function()
  local range = assignors.range.assign

  it("splits a topic in contiguous ranges, the first members taking the remainder", function()
    local m = { { member_id = "b", topics = { "t" } }, { member_id = "a", topics = { "t" } },
      { member_id = "c", topics = { "t" } } }
    assert.same({ a = { t = { 0, 1, 2 } }, b = { t = { 3, 4 } }, c = { t = { 5, 6 } } }, range(m, { t = 7 }))
  end)

  it("ranges each topic separately (Kafka's two-topic example)", function()
    local m = { { member_id = "C0", topics = { "t0", "t1" } }, { member_id = "C1", topics = { "t0", "t1" } } }
    assert.same({ C0 = { t0 = { 0, 1 }, t1 = { 0, 1 } }, C1 = { t0 = { 2 }, t1 = { 2 } } },
      range(m, { t0 = 3, t1 = 3 }))
  end)

  it("leaves members beyond the partition count empty", function()
    local m = { { member_id = "m1", topics = { "t" } }, { member_id = "m2", topics = { "t" } },
      { member_id = "m3", topics = { "t" } } }
    assert.same({ m1 = { t = { 0 } }, m2 = { t = { 1 } }, m3 = {} }, range(m, { t = 2 }))
  end)

  it("counts only the members subscribed to each topic", function()
    local m = { { member_id = "m1", topics = { "t0" } }, { member_id = "m2", topics = { "t0", "t1" } } }
    assert.same({ m1 = { t0 = { 0 } }, m2 = { t0 = { 1 }, t1 = { 0, 1, 2 } } }, range(m, { t0 = 2, t1 = 3 }))
  end)

  it("skips topics that do not exist", function()
    local m = { { member_id = "m1", topics = { "t", "gone" } } }
    assert.same({ m1 = { t = { 0 } } }, range(m, { t = 1 }))
  end)

  it("puts static members first, by instance id (Kafka's member order)", function()
    local m = { { member_id = "a", topics = { "t" } }, { member_id = "z", group_instance_id = "i2", topics = { "t" } },
      { member_id = "y", group_instance_id = "i1", topics = { "t" } } }
    assert.same({ y = { t = { 0 } }, z = { t = { 1 } }, a = { t = { 2 } } }, range(m, { t = 3 }))
  end)
end)

describe("assignors.roundrobin", function()
  local rr = assignors.roundrobin.assign

  it("deals topic-partitions in turn (Kafka's two-topic example)", function()
    local m = { { member_id = "C1", topics = { "t0", "t1" } }, { member_id = "C0", topics = { "t0", "t1" } } }
    assert.same({ C0 = { t0 = { 0, 2 }, t1 = { 1 } }, C1 = { t0 = { 1 }, t1 = { 0, 2 } } },
      rr(m, { t0 = 3, t1 = 3 }))
  end)

  it("skips members not subscribed to a partition's topic (Kafka's three-topic example)", function()
    local m = { { member_id = "C0", topics = { "t0" } }, { member_id = "C1", topics = { "t0", "t1" } },
      { member_id = "C2", topics = { "t0", "t1", "t2" } } }
    assert.same({ C0 = { t0 = { 0 } }, C1 = { t1 = { 0 } }, C2 = { t1 = { 1 }, t2 = { 0, 1, 2 } } },
      rr(m, { t0 = 1, t1 = 2, t2 = 3 }))
  end)

  it("spreads an uneven count with at most one partition of difference", function()
    local m = { { member_id = "a", topics = { "t" } }, { member_id = "b", topics = { "t" } },
      { member_id = "c", topics = { "t" } } }
    assert.same({ a = { t = { 0, 3 } }, b = { t = { 1, 4 } }, c = { t = { 2 } } }, rr(m, { t = 5 }))
  end)
end)

describe("assignors.validate", function()
  local members = { { member_id = "m1", topics = { "t" } }, { member_id = "m2", topics = { "t", "u" } } }
  local counts = { t = 2, u = 1 }

  it("accepts a partial assignment and fills in members given nothing", function()
    local r = assert(assignors.validate({ m2 = { t = { 1, 0 } } }, members, counts))
    assert.same({ m1 = {}, m2 = { t = { 0, 1 } } }, r)
  end)

  it("rejects a partition given twice", function()
    local r, why = assignors.validate({ m1 = { t = { 0 } }, m2 = { t = { 0 } } }, members, counts)
    assert.is_nil(r)
    assert.matches("t%[0%] is given to both", why)
  end)

  it("rejects a topic the member did not subscribe to", function()
    local r, why = assignors.validate({ m1 = { u = { 0 } } }, members, counts)
    assert.is_nil(r)
    assert.matches("did not subscribe", why)
  end)

  it("rejects partitions that do not exist and unknown members", function()
    assert.matches("does not exist", select(2, assignors.validate({ m1 = { t = { 2 } } }, members, counts)))
    assert.matches("does not exist", select(2, assignors.validate({ m1 = { t = { -1 } } }, members, counts)))
    assert.matches("unknown member", select(2, assignors.validate({ m9 = {} }, members, counts)))
    assert.matches("not a table", select(2, assignors.validate(42, members, counts)))
  end)
end)

describe("assignors.resolve", function()
  it("takes names, comma lists, assignor tables and lists of them", function()
    local custom = { name = "mine", assign = function() return {} end }
    assert.same({ assignors.range }, assignors.resolve("range"))
    assert.same({ assignors.roundrobin, assignors.range }, assignors.resolve("roundrobin, range"))
    assert.same({ custom, assignors.range }, assignors.resolve({ custom, "range" }))
    assert.same({ custom }, assignors.resolve(custom))
  end)

  it("refuses unknown names, duplicates and malformed tables", function()
    assert.matches("unknown assignor 'sticky'", select(2, assignors.resolve("sticky")))
    assert.matches("named twice", select(2, assignors.resolve({ "range", "range" })))
    assert.matches("expected", select(2, assignors.resolve({ { name = "x" } })))
    assert.matches("no assignor", select(2, assignors.resolve({})))
  end)
end)

describe("consumer protocol payloads", function()
  it("write the int16 version before the message and read it back", function()
    local bytes = group._encode_assignment({ t = { 0, 3 }, a = { 1 } })
    assert.equal("\0\0", bytes:sub(1, 2))
    assert.same({ { topic = "a", partition = 1 }, { topic = "t", partition = 0 }, { topic = "t", partition = 3 } },
      group._decode_assignment(bytes))
    assert.same({}, group._decode_assignment(""))
  end)

  it("read newer versions as the newest known one", function()
    local body = assert(core.encode_data("ConsumerProtocolAssignment", 1,
      { assigned_partitions = { { topic = "t", partitions = { 2 } } } }))
    -- version 3 with bytes a future version might append
    assert.same({ { topic = "t", partition = 2 } }, group._decode_assignment("\0\3" .. body .. "\0\0\0\7"))
  end)
end)

describe("consumer groups", function()
  local broker, BS
  local seq = 0

  setup(function()
    kiq.log_level("error")
    broker = assert(kiq.broker {
      ["num.partitions"] = 4, ["offsets.topic.num.partitions"] = 3,
      ["group.initial.rebalance.delay.ms"] = 0, ["group.min.session.timeout.ms"] = 1000,
    })
    BS = broker.bootstrap
  end)

  teardown(function()
    if broker then
      broker:stop()
      os.execute("rm -rf '" .. broker.dir .. "'")
    end
  end)

  -- A fresh topic (4 partitions) and group name.
  local function fresh()
    seq = seq + 1
    local topic = ("grp-%d-%d"):format(seq, math.random(1e6))
    local a = client.admin { bootstrap = BS }
    assert(a:create_topics { { name = topic, partitions = 4 } })
    a:close()
    return topic, topic .. "-group"
  end

  local function produce(topic, n, tag)
    local p = client.producer { bootstrap = BS, linger_ms = 0 }
    for i = 1, n do p:send(topic, ("%s-%d"):format(tag, i), ("%s-%d"):format(tag, i)) end
    assert(p:flush(10000))
    p:close()
  end

  local function member(gid, topic, opts, copts)
    local c = client.consumer(with({ bootstrap = BS, group_id = gid, fetch_max_wait_ms = 20,
      auto_offset_reset = "earliest" }, copts))
    assert(c:subscribe({ topic }, with(GROUP_OPTS, opts)))
    return c
  end

  -- Polls every consumer in turn until cond(got) holds (or ms pass);
  -- returns the records each got, by consumer index. poll reports retriable
  -- trouble (a coordinator still loading) as nil, err: the last such error
  -- goes into the timeout message.
  local function poll_until(consumers, cond, ms, what)
    local got = {}
    for i = 1, #consumers do got[i] = {} end
    local deadline, last_err = core.now_ms() + ms, nil
    while not cond(got) do
      assert(core.now_ms() < deadline, ("timed out waiting for %s (last error: %s)"):format(what, tostring(last_err)))
      for i, c in ipairs(consumers) do
        local recs, err = c:poll(20)
        if not recs then last_err = err end
        for _, r in ipairs(recs or {}) do table.insert(got[i], r) end
      end
    end
    return got
  end

  local function owned(c)
    local s = {}
    for _, a in ipairs(c:assignment()) do s[#s + 1] = a.partition end
    table.sort(s)
    return s
  end

  -- Both consumers hold a share and together all 4 partitions, each once.
  local function split(a, b)
    local pa, pb = owned(a), owned(b)
    if #pa == 0 or #pb == 0 or #pa + #pb ~= 4 then return false end
    local seen = {}
    for _, p in ipairs(pa) do seen[p] = true end
    for _, p in ipairs(pb) do
      if seen[p] then return false end
      seen[p] = true
    end
    return true
  end

  local function count(got)
    local n = 0
    for _, list in ipairs(got) do n = n + #list end
    return n
  end

  it("shares a topic between two members, every record consumed once", function()
    local topic, gid = fresh()
    local assigned = { 0, 0 }
    local a = member(gid, topic, { on_assign = function() assigned[1] = assigned[1] + 1 end })
    local b = member(gid, topic, { on_assign = function() assigned[2] = assigned[2] + 1 end })
    poll_until({ a, b }, function() return split(a, b) end, 15000, "both members to own partitions")
    assert.same({ 0, 1, 2, 3 }, (function()
      local all = owned(a)
      for _, p in ipairs(owned(b)) do all[#all + 1] = p end
      table.sort(all)
      return all
    end)())
    assert.is_true(assigned[1] >= 1 and assigned[2] >= 1)
    local ma, mb = a:group_metadata(), b:group_metadata()
    assert.equal(ma.generation_id, mb.generation_id)
    assert.are_not.equal(ma.member_id, mb.member_id)

    produce(topic, 200, "r")
    local got = poll_until({ a, b }, function(g) return count(g) >= 200 end, 15000, "200 records")
    -- a little longer, so duplicates would show
    local deadline = core.now_ms() + 300
    while core.now_ms() < deadline do
      for i, c in ipairs({ a, b }) do
        for _, r in ipairs(assert(c:poll(20))) do table.insert(got[i], r) end
      end
    end
    local seen = {}
    for i, c in ipairs({ a, b }) do
      local mine = {}
      for _, p in ipairs(owned(c)) do mine[p] = true end
      for _, r in ipairs(got[i]) do
        assert.is_true(mine[r.partition], "record from a partition this member does not own")
        assert.is_nil(seen[r.value], "consumed twice: " .. r.value)
        seen[r.value] = true
      end
    end
    assert.equal(200, count(got))
    assert(a:close())
    assert(b:close())
  end)

  it("gives a leaving member's partitions to the one that stays", function()
    local topic, gid = fresh()
    local revoked = 0
    local a = member(gid, topic, { on_revoke = function(ps) revoked = revoked + #ps end })
    local b = member(gid, topic)
    poll_until({ a, b }, function() return split(a, b) end, 15000, "both members to own partitions")
    local had = #owned(a)
    revoked = 0
    assert(a:close())
    assert.equal(had, revoked)
    poll_until({ b }, function() return #owned(b) == 4 end, 15000, "the remaining member to own all 4")
    produce(topic, 40, "after")
    local got = poll_until({ b }, function(g) return #g[1] >= 40 end, 10000, "40 records")
    assert.equal(40, #got[1])
    assert(b:close())
  end)

  it("resumes a new member from the group's committed offsets", function()
    local topic, gid = fresh()
    produce(topic, 20, "first")
    local a = member(gid, topic, { enable_auto_commit = false })
    poll_until({ a }, function(g) return #g[1] >= 20 end, 15000, "20 records")
    local positions = {}
    for _, p in ipairs(a:assignment()) do positions[p.partition] = p.offset end
    assert(a:commit())
    assert(a:close())

    produce(topic, 8, "second")
    local at_assign = {}
    local b = member(gid, topic, { on_assign = function(ps)
      for _, p in ipairs(ps) do at_assign[p.partition] = p.offset end
    end })
    local got = poll_until({ b }, function(g) return #g[1] >= 8 end, 15000, "8 new records")
    assert.same(positions, at_assign)
    for _, r in ipairs(got[1]) do assert.matches("^second%-", r.value) end
    -- auto-commit on close, then a third member starts after everything
    assert(b:close())
    local c = member(gid, topic)
    local ends = {}
    poll_until({ c }, function() return #c:assignment() == 4 end, 15000, "the third member's assignment")
    for _, p in ipairs(c:assignment()) do ends[p.partition] = p.offset end
    local total = 0
    for _, off in pairs(ends) do total = total + off end
    assert.equal(28, total)
    assert(c:close())
  end)

  it("refuses a commit with a forged generation", function()
    local topic, gid = fresh()
    local a = member(gid, topic, { enable_auto_commit = false })
    poll_until({ a }, function() return #a:assignment() == 4 end, 15000, "the assignment")
    local md = a:group_metadata()
    assert.is_true(md.generation_id >= 1)
    -- one broker: it is the coordinator
    local host, port = BS:match("^(.+):(%d+)$")
    local conn = assert(connection.open(host, tonumber(port), { client_id = "forger", connect_timeout_ms = 5000,
      request_timeout_ms = 5000 }))
    local function commit_as(generation)
      local resp = assert(conn:request(OFFSET_COMMIT, { group_id = gid, generation_id_or_member_epoch = generation,
        member_id = md.member_id, topics = { { name = topic, partitions = { { partition_index = 0,
          committed_offset = 0, committed_metadata = "" } } } } }, { version = 9 }))
      return resp.topics[1].partitions[1].error_code
    end
    assert.equal(ILLEGAL_GENERATION, commit_as(md.generation_id + 1))
    assert.equal(0, commit_as(md.generation_id))
    conn:close()
    assert(a:close())
  end)

  it("keeps a static member's partitions across a restart and fences the old instance", function()
    local topic, gid = fresh()
    local b_revoked = 0
    local b = member(gid, topic, { on_revoke = function() b_revoked = b_revoked + 1 end })
    poll_until({ b }, function() return #owned(b) == 4 end, 15000, "the first member to own all 4")
    local a = member(gid, topic, { group_instance_id = "instance-1" })
    poll_until({ a, b }, function() return split(a, b) end, 15000, "both members to own partitions")
    local pa, pb = owned(a), owned(b)
    b_revoked = 0

    -- the same instance id again, while the first still runs: it takes over
    local a2 = member(gid, topic, { group_instance_id = "instance-1" })
    poll_until({ a2, b }, function() return #owned(a2) > 0 end, 15000, "the new instance's assignment")
    assert.same(pa, owned(a2))
    local deadline, err = core.now_ms() + 5000, nil
    while not err and core.now_ms() < deadline do
      local recs
      recs, err = a:poll(20)
      if recs then err = nil end
      assert(b:poll(0))
      assert(a2:poll(0))
    end
    assert.matches("FENCED_INSTANCE_ID %(82%)", err)
    assert.is_nil(a:poll(0))
    assert.same(pb, owned(b))
    assert.equal(0, b_revoked)

    -- a static member leaves no LeaveGroup behind: nothing moves while
    -- its session lasts
    assert(a2:close())
    deadline = core.now_ms() + 500
    while core.now_ms() < deadline do assert(b:poll(20)) end
    assert.same(pb, owned(b))
    assert.equal(0, b_revoked)
    a:close()
    assert(b:close())
  end)

  it("uses a custom assignor the members prefer", function()
    local topic, gid = fresh()
    -- everything to the member with the lowest id
    local greedy = { name = "greedy", assign = function(members, counts)
      local out, first = {}, nil
      for _, m in ipairs(members) do
        out[m.member_id] = {}
        if not first or m.member_id < first then first = m.member_id end
      end
      local all = {}
      for p = 0, counts[topic] - 1 do all[#all + 1] = p end
      out[first][topic] = all
      return out
    end }
    local a = member(gid, topic, { partition_assignment_strategy = { greedy, "range" } })
    local b = member(gid, topic, { partition_assignment_strategy = { greedy, "range" } })
    poll_until({ a, b }, function()
      local na, nb = #owned(a), #owned(b)
      return a:group_metadata().generation_id == b:group_metadata().generation_id
        and na + nb == 4 and (na == 0 or nb == 0)
    end, 15000, "one member to own everything")
    local lowest = a:group_metadata().member_id < b:group_metadata().member_id and a or b
    assert.equal(4, #owned(lowest))
    assert(a:close())
    assert(b:close())
  end)

  it("fails the rebalance on the leader when its assignor returns an invalid assignment", function()
    local topic, gid = fresh()
    local twice = { name = "twice", assign = function(members)
      return { [members[1].member_id] = { [topic] = { 0, 0 } } }
    end }
    local bad = { name = "bad", assign = function(members)
      return { [members[1].member_id] = { [topic] = { 99 } } }
    end }
    for _, assignor in ipairs({ bad, twice }) do
      local c = member(gid .. assignor.name, topic, { partition_assignment_strategy = assignor })
      local deadline, err = core.now_ms() + 10000, nil
      while not err and core.now_ms() < deadline do
        local recs
        recs, err = c:poll(50)
        if recs then err = nil end
      end
      assert.matches("assignor '" .. assignor.name .. "' returned an invalid assignment", err)
      assert.same({}, c:assignment())
      c:close()
    end
  end)

  it("raises on misuse", function()
    local c = client.consumer { bootstrap = BS }
    assert.has_error(function() c:subscribe({ "t" }) end, "subscribe: the consumer needs the group_id option")
    c = client.consumer { bootstrap = BS, group_id = "g" }
    assert.has_error(function() c:subscribe({}) end)
    assert.has_error(function() c:subscribe({ "t" }, { sesion_timeout_ms = 1 }) end,
      "subscribe: unknown option 'sesion_timeout_ms'")
    assert.has_error(function() c:subscribe({ "t" }, { partition_assignment_strategy = "sticky" }) end)
    assert.has_error(function() c:subscribe({ "t" }, { session_timeout_ms = 1000, heartbeat_interval_ms = 1000 }) end)
    assert.has_error(function() c:subscribe({ "t" }, { max_poll_interval_ms = 1, rebalance_timeout_ms = 2 }) end)
    assert(c:subscribe({ "t" }))
    assert.has_error(function() c:assign { { topic = "t", partition = 0 } } end,
      "assign: the consumer is subscribed; unsubscribe first")
    assert.has_error(function() c:unassign() end)
    c:close()
  end)
end)
