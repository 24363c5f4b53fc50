-- Fault rules (b:fault, the control API's /api/faults): which requests a
-- rule picks (API, versions, client, topic, partition), what it does
-- (error, delay, disconnect, dropped response) and how often (times,
-- after, probability with a seed); raw requests over the Lua client's
-- connection, and its producer, which retries.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
local core = require "kafkaiq.core"
kiq.log_level("error")

local PRODUCE, METADATA = 0, 3

local b
local seq = 0

local function open(client_id)
  local host, port = b.bootstrap:match("^(.-):(%d+)$")
  return assert(connection.open(host, tonumber(port), { client_id = client_id or "spec", request_timeout_ms = 5000 }))
end

local function new_topic(partitions)
  seq = seq + 1
  local name = "faults-" .. seq
  local a = b:admin()
  assert(a:create_topics { { name = name, partitions = partitions or 1 } })
  a:close()
  return name
end

local function produce(conn, topic, partition)
  local body = { acks = 1, timeout_ms = 5000, topic_data = { { name = topic, partition_data = { {
    index = partition or 0, records = assert(core.build_batch { records = { { value = "v" } } }) } } } } }
  local resp, err = conn:request(PRODUCE, body, { version = 8 })
  if not resp then return nil, err end
  return resp.responses[1].partition_responses[1]
end

local function rule(id)
  for _, f in ipairs(b:faults()) do
    if f.id == id then return f end
  end
end

setup(function() b = assert(kiq.broker {}) end)
teardown(function() b:stop() end)
after_each(function()
  for _, f in ipairs(b:faults()) do b:remove_fault(f.id) end
end)

describe("b:fault", function()
  it("answers a picked request with Kafka's error by name, as many times as asked, then lets it through", function()
    local t = new_topic()
    local id = assert(b:fault { api = "Produce", topic = t, error = "NOT_LEADER_OR_FOLLOWER", times = 2 })
    local conn = open()
    assert.are.equal(6, produce(conn, t).error_code)
    assert.are.equal(6, produce(conn, t).error_code)
    local ok = produce(conn, t)
    assert.are.equal(0, ok.error_code)
    assert.are.equal(0, ok.base_offset)
    local f = rule(id)
    assert.are.same({ "Produce", t, "error", "NOT_LEADER_OR_FOLLOWER", 2, 3, 2 },
                    { f.api, f.topic, f.action, f.error, f.times, f.matched, f.fired })
    conn:close()
  end)

  it("lets the producer's retry succeed after one refusal, and nothing is written twice", function()
    local t = new_topic()
    local id = assert(b:fault { api = "Produce", error = "NOT_LEADER_OR_FOLLOWER", times = 1 })
    local p = b:producer { acks = "all" }
    p:send(t, "k", "v")
    assert(p:flush(10000))
    p:close()
    assert.are.equal(1, rule(id).fired)
    assert.are.equal(1, b:state().topics[t].partitions[0].log_end_offset)
  end)

  it("picks only the versions, client, topic and partition it names", function()
    local t = new_topic(2)
    local conn, other = open("picked"), open("other")
    local by_version = assert(b:fault { api = "Produce", min_version = 9, error = "CORRUPT_MESSAGE" })
    local by_client = assert(b:fault { api = 0, client_id = "picked", partition = 1, topic = t, error = 2 })
    assert.are.equal(0, produce(conn, t, 0).error_code)  -- v8: below min_version; partition 0
    assert.are.equal(0, produce(other, t, 1).error_code) -- another client
    assert.are.equal(2, produce(conn, t, 1).error_code)  -- CORRUPT_MESSAGE by code
    assert.are.equal(0, rule(by_version).matched)
    assert.are.same({ 1, 1 }, { rule(by_client).matched, rule(by_client).fired })
    conn:close()
    other:close()
  end)

  it("lets `after` requests through first, and disconnects without answering", function()
    local id = assert(b:fault { api = "Metadata", action = "disconnect", after = 1, times = 1 })
    local conn = open()
    assert(conn:request(METADATA, { topics = {} }, { version = 1 }))
    local resp, err = conn:request(METADATA, { topics = {} }, { version = 1 })
    assert.is_nil(resp)
    assert.truthy(err)
    assert.are.same({ 2, 1 }, { rule(id).matched, rule(id).fired })
    conn:close()
  end)

  it("fires with a probability, the same requests for the same seed", function()
    local function fired(seed)
      local id = assert(b:fault { api = "Metadata", delay_ms = 1, probability = 0.5, seed = seed })
      local conn = open()
      for _ = 1, 40 do assert(conn:request(METADATA, { topics = {} }, { version = 1 })) end
      conn:close()
      local f = rule(id)
      b:remove_fault(id)
      return f.fired, f.matched
    end
    local a, matched = fired(7)
    assert.are.equal(40, matched)
    assert.is_true(a > 5 and a < 35)
    assert.are.equal(a, (fired(7)))
  end)

  it("refuses a rule it cannot read, naming the field", function()
    local cases = {
      { { api = "Produce", colour = "red", error = 6 }, "unknown field 'colour'" },
      { { api = "Produce", error = "NOT_A_KAFKA_ERROR" }, "unknown error 'NOT_A_KAFKA_ERROR'" },
      { { api = "Nope", error = 6 }, "unknown api 'Nope'" },
      { { api = "Produce" }, "says nothing to do" },
      { { error = 6, probability = 2 }, "probability must be a number from 0 to 1" },
      { { error = 6, partition = 0 }, "a partition needs its topic" },
      { { error = 6, action = "disconnect" }, "an error goes with action error" },
    }
    for _, c in ipairs(cases) do
      local id, err = b:fault(c[1])
      assert.is_nil(id)
      assert.matches(c[2], err, 1, true)
    end
    assert.are.same({}, b:faults())
    local _, err = b:remove_fault(999)
    assert.matches("no fault rule 999", err, 1, true)
  end)
end)

-- In a process of its own: the clock moved stays moved for the process.
describe("kiq.advance_clock", function()
  it("moves the engine's clock for a broker on a manual clock, and retention follows", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
kiq.log_level("error")
local m = assert(kiq.broker { ["kafkaiq.clock"] = "manual", ["log.retention.ms"] = 60000 })
local p = m:producer {}
p:send("old", "k", "v")
assert(p:flush(10000))
p:close()
local part = function() return m:state().topics.old.partitions[0] end
assert(part().log_start_offset == 0)
local before = core.now_ms()
local clock = assert(kiq.advance_clock(3600 * 1000))
assert(clock.ahead_ms >= 3600 * 1000 and clock.wall_ms - before >= 3600 * 1000)
assert(core.now_ms() - before < 3600 * 1000, "scripts keep the system's time")
assert(kiq.wait_for(function() return part().log_start_offset == 1 end, 10000, "retention"))
local _, err = kiq.advance_clock(-5)
print(err)
m:stop()
print("retention followed the clock")
-- the controller's own waits (its writes, its activation) keep the
-- system's time: a cluster started an hour ahead comes up
local c = assert(kiq.cluster { brokers = 3 })
assert(c:admin():create_topics { { name = "after-the-jump", partitions = 1, replication_factor = 3 } })
c:stop()
print("a cluster started after the jump")
]])
    f:close()
    local p = assert(io.popen("build/kafkaiq run " .. script .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(script)
    assert.matches("the clock only goes forward", out, 1, true)
    assert.matches("retention followed the clock", out, 1, true)
    assert.matches("a cluster started after the jump", out, 1, true)
  end)
end)
