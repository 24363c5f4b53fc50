-- A busted spec that embeds a KafkaIQ broker as a test fixture: each test
-- gets a fresh broker on a free port with its own data directory, so tests
-- need no Docker and no shared Kafka, and run in parallel safely.
--
--   luajit /usr/bin/busted examples/broker_fixture_spec.lua
-- (with kafkaiq installed by luarocks, or LUA_PATH/LUA_CPATH pointing at a build)
local kiq = require "kafkaiq"
kiq.log_level("warn")

describe("an order service against a real broker", function()
  local broker

  before_each(function()
    broker = assert(kiq.broker{ ["num.partitions"] = 3 })
  end)

  after_each(function()
    broker:stop()
    os.execute("rm -rf " .. broker.dir)
  end)

  it("keeps every order of a customer in one partition, in order", function()
    local p = broker:producer{ acks = "all" }
    for i = 1, 20 do assert(p:send("orders", "customer-42", "order-" .. i)) end
    assert(p:flush(5000))

    local c = broker:consumer{ auto_offset_reset = "earliest" }
    local partition = kiq.partitioners.murmur2("customer-42", 3)
    assert(c:assign{ { topic = "orders", partition = partition, offset = "earliest" } })
    local got = {}
    assert(kiq.wait_for(function()
      for _, r in ipairs(assert(c:poll(100))) do got[#got + 1] = r.value end
      return #got == 20
    end, 5000, "20 orders"))
    for i = 1, 20 do assert.are.equal("order-" .. i, got[i]) end
    assert.are.equal(20, broker:state().topics.orders.partitions[partition].high_watermark)
  end)

  it("survives a broker crash with acknowledged orders intact", function()
    local p = broker:producer{ acks = "all" }
    for i = 1, 10 do assert(p:send("orders", "k" .. i, "v" .. i)) end
    assert(p:flush(5000))
    broker:kill()
    assert(broker:start())
    local total = 0
    for _, part in pairs(broker:state().topics.orders.partitions) do total = total + part.log_end_offset end
    assert.are.equal(10, total)
  end)
end)
