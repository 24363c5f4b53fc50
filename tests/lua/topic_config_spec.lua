-- Topic configs that shape the log take effect when they are set, not at
-- the next retention check.
local kiq = require "kafkaiq"
kiq.log_level("warn")

local function segments(b, topic)
  return #b:state().topics[topic].partitions[0].segments
end

describe("topic configs applied to live logs", function()
  local b
  before_each(function() b = assert(kiq.broker{}) end)
  after_each(function() b:stop() end)

  local function produce_at(p, topic, ts)
    assert(p:send(topic, "k", "v", { timestamp = ts, partition = 0 }))
    assert(p:flush(5000))
  end

  it("rolls by segment.ms given at creation", function()
    local a = b:admin()
    assert(a:create_topics{ { name = "timed", partitions = 1, configs = { ["segment.ms"] = "60000" } } })
    local p = b:producer{ linger_ms = 0 }
    local t0 = kiq.core.now_ms()
    produce_at(p, "timed", t0)
    produce_at(p, "timed", t0 + 1000)
    assert.are.equal(1, segments(b, "timed"))
    produce_at(p, "timed", t0 + 61000)
    assert.are.equal(2, segments(b, "timed"))
    p:close()
    a:close()
  end)

  it("rolls by segment.ms changed on an existing topic", function()
    local a = b:admin()
    assert(a:create_topics{ { name = "altered", partitions = 1 } })
    local p = b:producer{ linger_ms = 0 }
    local t0 = kiq.core.now_ms()
    produce_at(p, "altered", t0)
    produce_at(p, "altered", t0 + 120000)
    assert.are.equal(1, segments(b, "altered")) -- the 7-day default
    local f = assert(io.popen("timeout 20 /usr/bin/python3 -c \"" ..
      "from confluent_kafka.admin import AdminClient, ConfigResource;" ..
      "a = AdminClient({'bootstrap.servers': '" .. b.bootstrap .. "'});" ..
      "r = ConfigResource('topic', 'altered', set_config={'segment.ms': '60000'});" ..
      "[f.result() for f in a.alter_configs([r]).values()]; print('altered')\" 2>&1"))
    local out = f:read("*a")
    f:close()
    assert.truthy(out:find("altered", 1, true), out)
    produce_at(p, "altered", t0 + 200000)
    assert.are.equal(2, segments(b, "altered"))
    p:close()
    a:close()
  end)
end)
