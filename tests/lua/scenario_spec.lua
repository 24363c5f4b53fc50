-- Scenarios: each invariant fails the run with the record that shows it and
-- the seed; the shipped examples run to completion.
local kiq = require "kafkaiq"
local scenario = require "kafkaiq.scenario"
kiq.log_level("warn")

-- A stand-in for a broker whose state the test controls.
local function fake_broker(hw)
  local b = { bootstrap = "fake:1", hw = hw }
  function b:running() return true end
  function b:state()
    return { topics = { t = { partition_count = 1, partitions = { [0] = { high_watermark = self.hw } } } } }
  end
  return b
end

local function rec(offset, value) return { topic = "t", partition = 0, offset = offset, key = "k", value = value or "v" } end

local function violation_of(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok)
  return err
end

describe("kafkaiq.scenario invariants", function()
  it("accepts dense offsets below the high watermark", function()
    local sc = scenario.new{ seed = 1, brokers = { fake_broker(10) }, log = false }
    sc:on_delivery()(nil, rec(0))
    sc:on_consume()({ rec(0), rec(1), rec(2) })
    sc:check()
    assert.are.equal(3, sc.counts.consumed)
  end)

  it("fails on a gap in consumed offsets, naming the record and the seed", function()
    local sc = scenario.new{ seed = 77, brokers = { fake_broker(10) }, log = false }
    local err = violation_of(function() sc:consumed_records{ rec(0), rec(2) } end)
    assert.truthy(err:find("offsets dense and increasing", 1, true))
    assert.truthy(err:find("offset 2", 1, true))
    assert.truthy(err:find("--seed 77", 1, true))
  end)

  it("fails when a consumer is served data at or above the high watermark", function()
    local sc = scenario.new{ seed = 2, brokers = { fake_broker(1) }, log = false }
    local err = violation_of(function() sc:consumed_records{ rec(0), rec(1) } end)
    assert.truthy(err:find("above the high watermark", 1, true))
  end)

  it("fails when the high watermark decreases", function()
    local b = fake_broker(5)
    local sc = scenario.new{ seed = 3, brokers = { b }, log = false }
    sc:check()
    b.hw = 4
    local err = violation_of(function() sc:check() end)
    assert.truthy(err:find("high watermark never decreasing", 1, true))
    assert.truthy(err:find("from 5 to 4", 1, true))
  end)

  it("fails when an ISR member lacks what is below the leader's high watermark", function()
    local function replica(id, role, leo, hw)
      local b = { bootstrap = "fake:" .. id }
      function b:running() return true end
      function b:state()
        return { node_id = id, topics = { t = { partition_count = 1, partitions = { [0] = {
          role = role, leader_epoch = 3, isr = { 0, 1 }, log_end_offset = leo, high_watermark = hw } } } } }
      end
      return b
    end
    local sc = scenario.new{ seed = 6, brokers = { replica(0, "leader", 12, 10), replica(1, "follower", 10, 10) },
      log = false }
    sc:check()
    sc.brokers[2] = replica(1, "follower", 7, 7)
    sc.replica_hw = {}
    local err = violation_of(function() sc:check() end)
    assert.truthy(err:find("every ISR member holds what is below the high watermark", 1, true))
    assert.truthy(err:find("ISR member 1 ends at 7", 1, true))
  end)

  it("fails when a consumed record differs from what was acknowledged at its offset", function()
    local sc = scenario.new{ seed = 4, brokers = { fake_broker(10) }, log = false }
    sc:on_delivery()(nil, rec(0, "original"))
    local err = violation_of(function() sc:consumed_records{ rec(0, "changed") } end)
    assert.truthy(err:find("nothing acknowledged lost", 1, true))
  end)

  it("fails verify when an acknowledged record is missing from the log", function()
    local b = assert(kiq.broker{})
    local sc = scenario.new{ seed = 5, brokers = { b }, log = false }
    local p = b:producer{ acks = "all", on_delivery = sc:on_delivery() }
    assert(p:send("v", "k", "real"))
    assert(p:flush(5000))
    -- claim an acknowledgement the broker never gave
    sc:acknowledged{ topic = "v", partition = 0, offset = 1, key = "k", value = "ghost" }
    local err = violation_of(function() sc:verify(b.bootstrap, 2000) end)
    assert.truthy(err:find("nothing acknowledged lost", 1, true))
    assert.truthy(err:find("ghost", 1, true))
    p:close()
    b:stop()
  end)

  it("checks transactions: no aborted read, no torn transaction", function()
    local sc = scenario.new{ seed = 9, brokers = { fake_broker(20) }, log = false }
    local consume = sc:on_consume(nil, { read_committed = true })
    -- committed 0..1 (marker 2), aborted 3..4 (marker 5), committed 6 (marker 7)
    sc:transaction_ended({ rec(0), rec(1) }, true)
    sc:transaction_ended({ rec(3), rec(4) }, false)
    sc:transaction_ended({ rec(6) }, true)
    consume({ rec(0), rec(1), rec(6) })
    sc:check()
    assert.are.equal(3, sc.counts.transactions)
    -- an aborted record served
    local err = violation_of(function() consume({ rec(8), rec(9) }); sc:transaction_ended({ rec(9) }, false) end)
    assert.truthy(err:find("no aborted read (G1a)", 1, true))
    -- part of a committed transaction skipped
    local sc2 = scenario.new{ seed = 10, brokers = { fake_broker(20) }, log = false }
    local c2 = sc2:on_consume(nil, { read_committed = true })
    sc2:transaction_ended({ rec(1), rec(2) }, true)
    c2({ rec(0), rec(2), rec(4) })
    err = violation_of(function() sc2:check() end)
    assert.truthy(err:find("no torn transaction", 1, true))
    assert.truthy(err:find("offset 1", 1, true))
  end)

  it("injects request faults: failed requests, delayed requests, then heals", function()
    local b = assert(kiq.broker{})
    local sc = scenario.new{ seed = 6, brokers = { b }, log = false }
    local p = b:producer{ acks = "all", retries = 0, log = function() end }
    sc:fail_requests(b, "Produce", 19) -- NOT_ENOUGH_REPLICAS
    assert(p:send("f", "k", "v"))
    local ok, err = p:flush(5000)
    assert.is_nil(ok)
    assert.truthy(err:find("NOT_ENOUGH_REPLICAS", 1, true), err)
    sc:heal(b)
    sc:delay(b, "Produce", 150)
    local t0 = kiq.core.now_ms()
    assert(p:send("f", "k", "v"))
    assert(p:flush(5000))
    assert.truthy(kiq.core.now_ms() - t0 >= 150)
    sc:heal(b)
    assert.are.equal(0, #b:intercepts())
    assert.are.equal(1, b:state().topics.f.partitions[0].high_watermark)
    p:close()
    b:stop()
  end)

  it("raises on misuse", function()
    assert.has_error(function() scenario.new{ nope = 1 } end)
    assert.has_error(function() scenario.new{ log = false }:run{} end)
  end)

  it("draws the same choices for the same seed", function()
    local a, b = scenario.new{ seed = 9, log = false }, scenario.new{ seed = 9, log = false }
    for _ = 1, 20 do assert.are.equal(a.random:int(1, 1e6), b.random:int(1, 1e6)) end
  end)
end)

describe("examples", function()
  local function run(cmd)
    local p = assert(io.popen("timeout 120 " .. cmd .. " 2>&1; echo \"<exit:$?>\""))
    local out = p:read("*a")
    p:close()
    return out, tonumber(out:match("<exit:(%d+)>"))
  end

  it("kill_restart_scenario holds its invariants through kills and restarts", function()
    local out, code = run("build/kafkaiq run --seed 11 examples/kill_restart_scenario.lua 40")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("seed 11: %d+ sent, %d+ acknowledged, %d+ consumed, %d+ faults, invariants held"), out)
    assert.truthy(out:find("kill broker", 1, true), out)
  end)

  it("cluster_failover_scenario holds its invariants across replicas through leader kills", function()
    local out, code = run("build/kafkaiq run --seed 1 examples/cluster_failover_scenario.lua 40")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("seed 1: %d+ sent, %d+ acknowledged, %d+ consumed, %d+ faults, invariants held across replicas"),
      out)
    assert.truthy(out:find("kill broker", 1, true), out)
  end)

  it("partitioner_compare reports both spreads and checks placement on a broker", function()
    local out, code = run("build/kafkaiq run examples/partitioner_compare.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("murmur2 +counts"), out)
    assert.truthy(out:find("each landed where by_customer said", 1, true), out)
  end)

  it("require_header_interceptor refuses records without the header and appends nothing", function()
    local out, code = run("build/kafkaiq run examples/require_header_interceptor.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("without one: flush: 1 of 1 records failed", 1, true), out)
    assert.truthy(out:find("INVALID_RECORD", 1, true), out)
    assert.truthy(out:find("records in payments-0: 1", 1, true), out)
  end)

  it("broker_fixture_spec passes under busted", function()
    local out, code = run("luajit /usr/bin/busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' " ..
                          "examples/broker_fixture_spec.lua")
    assert.are.equal(0, code, out)
    assert.truthy(out:find("2 successes / 0 failures", 1, true), out)
  end)
end)
