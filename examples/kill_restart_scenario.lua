-- A scenario: a producer writes with acks=all while the broker is killed and
-- restarted at random moments; a consumer reads along. The scenario checks
-- its invariants throughout and, at the end, that every acknowledged record
-- is still in the log.
--
--   build/kafkaiq run --seed 7 examples/kill_restart_scenario.lua [steps]
local kiq = require "kafkaiq"
local scenario = require "kafkaiq.scenario"

kiq.log_level("warn")
local steps = tonumber(arg and arg[1]) or 60
local b = assert(kiq.broker{ ["num.partitions"] = 3 })
local sc = scenario.new{ brokers = { b } }

local topic = "scenario-" .. sc.seed
local p = b:producer{ acks = "all", linger_ms = 0, retries = 2, retry_backoff_ms = 20,
                      log = function() end, on_delivery = sc:on_delivery() }
local c = b:consumer{ auto_offset_reset = "earliest", interceptors = { on_consume = sc:on_consume() },
                      log = function() end }
local admin = b:admin()
assert(admin:create_topics{ { name = topic, partitions = 3 } })
assert(c:assign{ { topic = topic, partition = 0, offset = 0 }, { topic = topic, partition = 1, offset = 0 },
                 { topic = topic, partition = 2, offset = 0 } })

local sent = 0
sc:run{ steps = steps, check_every = 5, step = function(sc, i)
  local roll = sc.random:next()
  if roll < 0.08 and b:running() then
    sc:kill(b)
  elseif not b:running() then
    sc:restart(b)
  end
  for _ = 1, sc.random:int(1, 50) do
    sent = sent + 1
    p:send(topic, "key-" .. sc.random:int(1, 1000), "value-" .. sent)
  end
  p:flush(2000)      -- failures while the broker is down are simply not acknowledged
  if b:running() then c:poll(50) end
end }

if not b:running() then sc:restart(b) end
sc:verify(b.bootstrap)
print(("seed %d: %d sent, %d acknowledged, %d consumed, %d faults, invariants held")
  :format(sc.seed, sent, sc.counts.acked, sc.counts.consumed, sc.counts.faults))
p:close(1000)
c:close()
admin:close()
b:stop()
