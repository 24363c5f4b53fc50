-- A broker interceptor that rejects produced records missing a header: the
-- hook runs on the broker's I/O threads (in their own Lua states), so any
-- client, kcat or Java or librdkafka, gets INVALID_RECORD (87) and nothing
-- is appended.
--
--   build/kafkaiq run examples/require_header_interceptor.lua
local kiq = require "kafkaiq"
kiq.log_level("warn")

local b = assert(kiq.broker{})
assert(b:intercept{
  on = "produce",
  topic = "payments",
  source = [[
    return function(ctx)
      for _, r in ipairs(ctx.records) do
        local found = false
        for _, h in ipairs(r.headers) do
          if h[1] == "trace-id" then found = true end
        end
        if not found then
          return { error = 87, message = "every payment needs a trace-id header" }
        end
      end
    end
  ]],
})

local p = b:producer{ acks = "all", linger_ms = 0 }
assert(p:send("payments", "k1", "with header", { headers = { { "trace-id", "abc" } } }))
assert(p:flush(5000))
print("with a trace-id header: accepted")

assert(p:send("payments", "k2", "without header"))
local ok, err = p:flush(5000)
print("without one: " .. (ok and "accepted (unexpected)" or err))
assert(not ok and err:find("INVALID_RECORD", 1, true))

local hw = b:state().topics.payments.partitions[0].high_watermark
print("records in payments-0: " .. hw)
assert(hw == 1)
p:close()
b:stop()
