-- kafkaiq.check, the history checker: each of Jepsen's anomalies is found
-- in a history made to show it (and only it), a clean history passes, a
-- history read from text checks the same, and misuse raises.
local check = require "kafkaiq.check"
local unpack = table.unpack or unpack

local function history(events)
  local h = check.history()
  for _, e in ipairs(events) do h[e[1]](h, unpack(e, 2)) end
  return h:check()
end

-- three acknowledged writes to t-0 at 0..2
local function base()
  return {
    { "send", "a", "t", 0 }, { "ack", "a", "t", 0, 0 },
    { "send", "b", "t", 0 }, { "ack", "b", "t", 0, 1 },
    { "send", "c", "t", 0 }, { "ack", "c", "t", 0, 2 },
  }
end

local function with(events, more)
  for _, e in ipairs(more) do events[#events + 1] = e end
  return events
end

local function only(report, name, n)
  for _, other in ipairs(check.ANOMALIES) do
    assert.are.equal(other == name and n or 0, report.counts[other], other)
  end
end

describe("kafkaiq.check", function()
  it("passes a history where every acknowledged write is read once, in order", function()
    local r = history(with(base(), {
      { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 1, "b" }, { "poll", "c1", "t", 0, 2, "c" },
    }))
    assert.is_true(r.ok)
    only(r, nil, 0)
    assert.are.same({ 3, 3, 0, 3 }, { r.sent, r.acked, r.failed, r.read })
  end)

  it("finds a lost write: acknowledged, skipped by every consumer that read past it", function()
    local r = history(with(base(), { { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c2", "t", 0, 2, "c" } }))
    assert.is_false(r.ok)
    assert.are.equal(1, r.counts["lost-write"])
    assert.matches("b acknowledged at t%-0@1", r.anomalies["lost-write"][1])
  end)

  it("finds duplicates and inconsistent offsets", function()
    local r = history(with(base(), {
      { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 1, "b" }, { "poll", "c1", "t", 0, 2, "c" },
      { "poll", "c1", "t", 0, 3, "a" },
    }))
    only(r, "duplicate", 1)
    assert.matches("a at t%-0@0, t%-0@3", r.anomalies.duplicate[1])
    r = history(with(base(), {
      { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 1, "c" }, { "poll", "c1", "t", 0, 2, "b" },
    }))
    assert.is_true(r.counts["inconsistent-offsets"] >= 2)
    assert.is_false(r.ok)
  end)

  it("finds nonmonotonic polls and poll skips, but not across a reset", function()
    local r = history(with(base(), {
      { "poll", "c1", "t", 0, 1, "b" }, { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 2, "c" },
    }))
    only(r, "nonmonotonic-poll", 1)
    r = history(with(base(), {
      { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 2, "c" }, { "poll", "c2", "t", 0, 1, "b" },
    }))
    only(r, "poll-skip", 1)
    r = history(with(base(), {
      { "poll", "c1", "t", 0, 1, "b" }, { "reset", "c1" }, { "poll", "c1", "t", 0, 0, "a" },
      { "poll", "c1", "t", 0, 1, "b" }, { "poll", "c1", "t", 0, 2, "c" },
    }))
    assert.is_true(r.ok)
  end)

  it("counts unseen writes apart from lost ones, and failed sends as neither", function()
    local r = history(with(base(), {
      { "send", "d", "t", 0 }, { "fail", "d", "REQUEST_TIMED_OUT" }, { "poll", "c1", "t", 0, 0, "a" },
    }))
    assert.is_true(r.ok) -- a read that stopped early shows nothing lost
    assert.are.same({ 0, 2, 1 }, { r.counts["lost-write"], r.counts.unseen, r.failed })
  end)

  it("finds a read_committed read of an aborted transaction (G1a), and lets it skip them", function()
    local events = with(base(), { { "abort", "b" } })
    local r = history(with(events, { { "poll", "c1", "t", 0, 0, "a" },
      { "poll", "c1", "t", 0, 1, "b", { read_committed = true } }, { "poll", "c1", "t", 0, 2, "c" } }))
    only(r, "aborted-read", 1)
    r = history(with(base(), { { "abort", "b" }, { "poll", "c1", "t", 0, 0, "a" }, { "poll", "c1", "t", 0, 2, "c" } }))
    assert.is_true(r.ok)
  end)

  it("reads a history written as text, and says where one is malformed", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("send a t 0\nack a t 0 0\nsend b t 0\nack b t 0 1\npoll c1 t 0 1 b\nfail z x\n")
    f:close()
    local h, err = check.load(path)
    assert.is_nil(h)
    assert.matches(":6: fail: value z was never sent", err)
    f = assert(io.open(path, "w"))
    f:write("send a t 0\nack a t 0 0\nsend b t 0\nack b t 0 1\npoll c1 t 0 1 b\n")
    f:close()
    local r = assert(check.load(path)):check()
    only(r, "lost-write", 1)
    assert.matches("lost%-write +1", check.summary(r))
    os.remove(path)
  end)

  it("raises on misuse", function()
    local h = check.history()
    h:send("a", "t", 0)
    assert.has_error(function() h:send("a", "t", 0) end, "send: value a was sent before; values must be unique")
    assert.has_error(function() h:ack("nope", "t", 0, 1) end, "ack: value nope was never sent")
    assert.has_error(function() h:poll("c", "t", 0, -1, "a") end, "offset must be a non-negative integer")
    assert.has_error(function() h:poll(nil, "t", 0, 1, "a") end, "consumer is required")
  end)
end)
