-- Topic configs that shape the log take effect when they are set, not at
-- the next retention check: segment.ms, max.compaction.lag.ms (a compacted
-- topic rolls by it when sooner), segment.jitter.ms; and
-- max.decompressed.message.bytes bounds what a batch may decompress to.
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

  it("rolls a compacted topic by max.compaction.lag.ms when sooner than segment.ms", function()
    local a = b:admin()
    local cfg = { ["max.compaction.lag.ms"] = "60000" }
    assert(a:create_topics{ { name = "lagged", partitions = 1,
      configs = { ["cleanup.policy"] = "compact", ["max.compaction.lag.ms"] = "60000" } } })
    assert(a:create_topics{ { name = "deleting", partitions = 1, configs = cfg } })
    local p = b:producer{ linger_ms = 0 }
    local t0 = kiq.core.now_ms()
    for _, topic in ipairs{ "lagged", "deleting" } do
      produce_at(p, topic, t0)
      produce_at(p, topic, t0 + 1000)
      produce_at(p, topic, t0 + 61000)
    end
    assert.are.equal(2, segments(b, "lagged"))
    assert.are.equal(1, segments(b, "deleting")) -- the lag is for compacted topics
    p:close()
    a:close()
  end)

  it("refuses a batch decompressing past max.decompressed.message.bytes", function()
    local core = require "kafkaiq.core"
    local connection = require "kafkaiq.client.connection"
    local a = b:admin()
    assert(a:create_topics{ { name = "inflate", partitions = 1,
      configs = { ["max.decompressed.message.bytes"] = "2000" } } })
    a:close()
    local c = assert(connection.open("127.0.0.1", b.port, { client_id = "spec" }))
    local function produce(n)
      local rs = {}
      for i = 1, n do rs[i] = { key = "k", value = string.rep("x", 100) } end
      local r = assert(c:request(0, { acks = 1, timeout_ms = 5000, topic_data = { { name = "inflate",
        partition_data = { { index = 0, records = assert(core.build_batch { codec = "gzip", records = rs }) } } } } }))
      return r.responses[1].partition_responses[1]
    end
    assert.are.equal(0, produce(10).error_code) -- ~1.2 KB decompressed
    local refused = produce(40)                 -- ~4.8 KB, a small gzip batch
    assert.are.equal(10, refused.error_code)    -- MESSAGE_TOO_LARGE
    assert.truthy(refused.error_message:find("max.decompressed.message.bytes", 1, true))
    c:close()
  end)

  it("rolls early by segment.jitter.ms", function()
    local a = b:admin()
    assert(a:create_topics{ { name = "jittery", partitions = 1,
      configs = { ["segment.ms"] = "60000", ["segment.jitter.ms"] = "60000" } } })
    assert(a:create_topics{ { name = "steady", partitions = 1, configs = { ["segment.ms"] = "60000" } } })
    local p = b:producer{ linger_ms = 0 }
    local t0 = kiq.core.now_ms()
    -- exactly segment.ms apart: a roll each time with a jitter, every other time without
    for i = 0, 3 do
      produce_at(p, "jittery", t0 + i * 60000)
      produce_at(p, "steady", t0 + i * 60000)
    end
    assert.are.equal(2, segments(b, "steady"))
    assert.is_true(segments(b, "jittery") >= 3) -- 4 unless a jitter of 0 was drawn
    p:close()
    a:close()
  end)
end)
