-- process.roles in an in-process cluster: two brokers and a quorum of
-- three controller-only nodes. The controllers host no replica and serve
-- no client; the quorum's leader is the active controller; killed, another
-- controller takes over and the brokers go on.
local kiq = require "kafkaiq"
kiq.log_level("error")

local OPTS = { brokers = 2, controllers = 3, ["broker.session.timeout.ms"] = 1500,
               ["broker.heartbeat.interval.ms"] = 200, ["controller.quorum.fetch.timeout.ms"] = 600,
               ["controller.quorum.election.timeout.ms"] = 300 }

local function produce(c, topic, from, to)
  local p = assert(c:producer{ acks = -1, linger_ms = 0, retries = 20 })
  for i = from, to do assert(p:send(topic, "k" .. i, "v" .. i, { partition = 0 })) end
  local ok, err = p:flush(20000)
  p:close()
  return ok, err
end

local function read_all(c, topic, n)
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
  assert(cons:assign{ { topic = topic, partition = 0, offset = 0 } })
  local got = {}
  kiq.wait_for(function()
    for _, m in ipairs(assert(cons:poll(200))) do got[#got + 1] = m.value end
    return #got >= n
  end, 15000, ("%d records from %s"):format(n, topic))
  cons:close()
  return got
end

describe("process.roles", function()
  local c
  after_each(function()
    if c then c:stop() end
    c = nil
  end)

  it("runs the controller quorum on controller-only nodes the brokers register with", function()
    c = assert(kiq.cluster(OPTS))
    assert.are.same({ 2, 3, 4 }, c.voter_ids)
    local q
    assert(kiq.wait_for(function()
      q = c:quorum()
      return q ~= nil
    end, 10000, "a quorum leader"))
    assert.is_true(q.leader >= 2 and q.leader <= 4)
    local view, active = c:controller()
    assert.are.equal(q.leader, active)
    local registered = {}
    for id in pairs(view.brokers) do registered[#registered + 1] = id end
    table.sort(registered)
    assert.are.same({ 0, 1 }, registered)
    for id = 2, 4 do assert.is_nil(c:broker(id).bootstrap) end

    local a = assert(c:admin())
    assert(a:create_topics{ { name = "roles", partitions = 1, replication_factor = 2 } })
    a:close()
    assert(c:wait_for_isr("roles", 0, 2, 10000))
    assert(produce(c, "roles", 1, 20))

    c:kill(q.leader)
    local new
    assert(kiq.wait_for(function()
      new = c:quorum()
      return new ~= nil and new.leader ~= q.leader and new.epoch > q.epoch
    end, 10000, "a new quorum leader"))
    assert(produce(c, "roles", 21, 40))
    a = assert(c:admin())
    assert(a:create_topics{ { name = "after", partitions = 1, replication_factor = 2 } })
    a:close()
    assert(c:restart(q.leader))
    local got = read_all(c, "roles", 40)
    assert.are.equal(40, #got)
    for i = 1, 40 do assert.are.equal("v" .. i, got[i]) end
    for id = 2, 4 do
      assert.is_nil(c:broker(id):state().topics.roles)
    end
  end)

  it("refuses controllers that are no positive integer, or with voters", function()
    assert.has_error(function() kiq.cluster{ brokers = 1, controllers = 0 } end)
    assert.has_error(function() kiq.cluster{ brokers = 1, controllers = 3, voters = 1 } end)
    local b, err = kiq.broker{ ["process.roles"] = "controller" }
    assert.is_nil(b)
    assert.matches("controller.quorum.voters", err)
  end)
end)
