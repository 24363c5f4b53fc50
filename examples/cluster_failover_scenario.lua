-- A failover scenario in one process: three brokers, a topic replicated on
-- all of them with min.insync.replicas=2, a producer writing with acks=all
-- while the leaders of its partitions (never broker 0, which hosts the
-- controller) are killed and restarted at random moments, and a consumer
-- reading along. The scenario checks its invariants across the replicas
-- throughout — the high watermark never decreasing on any replica or at
-- the leader, every ISR member holding what is below the leader's high
-- watermark, nothing served above it — and at the end that every
-- acknowledged record is still there.
--
--   build/kafkaiq run --seed 7 examples/cluster_failover_scenario.lua [steps]
local kiq = require "kafkaiq"
local scenario = require "kafkaiq.scenario"

kiq.log_level("error")
local steps = tonumber(arg and arg[1]) or 40
local c = assert(kiq.cluster{ brokers = 3, ["min.insync.replicas"] = 2, ["broker.session.timeout.ms"] = 1500,
                              ["broker.heartbeat.interval.ms"] = 200 })
local sc = scenario.new{ cluster = c }

local topic = "failover-" .. sc.seed
local admin = assert(c:admin())
assert(admin:create_topics{ { name = topic, partitions = 3, replication_factor = 3 } })
for p = 0, 2 do assert(c:wait_for_isr(topic, p, 3, 10000)) end
local prod = assert(c:producer{ acks = "all", linger_ms = 0, retries = 5, retry_backoff_ms = 50,
                                log = function() end, on_delivery = sc:on_delivery() })
local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50,
                                interceptors = { on_consume = sc:on_consume() }, log = function() end })
assert(cons:assign{ { topic = topic, partition = 0, offset = 0 }, { topic = topic, partition = 1, offset = 0 },
                    { topic = topic, partition = 2, offset = 0 } })

local sent, down = 0, nil
sc:run{ steps = steps, check_every = 3, step = function(sc)
  if down then
    sc:restart(c:broker(down))
    down = nil
  elseif sc.random:next() < 0.15 then
    local p = sc.random:int(0, 2)
    local info = c:partition(topic, p)
    if info and info.leader > 0 then
      down = info.leader
      sc:kill(c:broker(down))
    end
  end
  for _ = 1, sc.random:int(1, 30) do
    sent = sent + 1
    prod:send(topic, "key-" .. sc.random:int(1, 1000), "value-" .. sent)
  end
  prod:flush(3000)   -- what fails during a failover is simply not acknowledged
  cons:poll(50)
end }

if down then sc:restart(c:broker(down)) end
for p = 0, 2 do assert(c:wait_for_replicas(topic, p, 15000)) end
sc:check()
sc:verify(c:bootstrap())
print(("seed %d: %d sent, %d acknowledged, %d consumed, %d faults, invariants held across replicas")
  :format(sc.seed, sent, sc.counts.acked, sc.counts.consumed, sc.counts.faults))
prod:close(1000)
cons:close()
admin:close()
c:stop()
