-- Lab 6: the request pipeline and backpressure. Network threads put each
-- request on one bounded request queue (queued.max.requests); I/O threads
-- take them off. When the I/O threads fall behind the queue fills, and a
-- network thread then stops reading from the connection whose request
-- found no room (its socket muted) until a request leaves the queue. The
-- client simply waits: nothing is refused, nothing is lost.
-- Here one slow I/O thread (an interceptor busy for a moment on each
-- Produce) serves 12 producers through a queue of 2.
--
--   build/kafkaiq run examples/labs/06_backpressure.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(6, "the request pipeline and backpressure")
local bound, producers, rounds = 2, 12, 5
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0", ["queued.max.requests"] = bound,
                             ["num.io.threads"] = 1, ["num.network.threads"] = 2 })
L:page(b)
local topic = "lab6-uploads"
assert(b:admin():create_topics{ { name = topic, partitions = 1 } })
assert(b:intercept{ on = "request", api = "Produce",
  source = "return function() local x = 0 for i = 1, 400000 do x = x + i end end" })
L:say("1 I/O thread, %d network threads, a request queue of %d; %d producers, %d requests each", 2, bound,
  producers, rounds)

local conns = {}
for i = 1, producers do
  conns[i] = assert(connection.open(b.host, b.port, { client_id = "producer-" .. i, request_timeout_ms = 60000 }))
end
local acked, errors, offsets = 0, 0, {}
local started = core.now_ms()
for r = 1, rounds do
  local pending = {}
  for i = 1, producers do
    local batch = assert(core.build_batch{ records = { { value = ("p%d-r%d"):format(i, r) } } })
    pending[i] = assert(conns[i]:send_request(0, { acks = 1, timeout_ms = 30000,
      topic_data = { { name = topic, partition_data = { { index = 0, records = batch } } } } }))
  end
  for i = 1, producers do
    local resp
    assert(kiq.wait_for(function()
      resp = conns[i]:collect(pending[i], 50)
      return resp
    end, 60000, "an answer"))
    local part = resp.responses[1].partition_responses[1]
    if part.error_code == 0 then
      acked = acked + 1
      offsets[#offsets + 1] = part.base_offset
    else
      errors = errors + 1
    end
  end
end
local took = core.now_ms() - started
for i = 1, producers do conns[i]:close() end

local deepest, waited, muted_max = 0, 0, 0
for _, offset in ipairs(offsets) do
  local j = b:journey(topic, 0, offset)
  local enq = j and lab.stage(j, "enqueued")
  if enq then
    if enq.before + 1 > deepest then deepest = enq.before + 1 end
    if enq.waited_muted then waited = waited + 1 end
    if enq.muted > muted_max then muted_max = enq.muted end
  end
end
L:step("what the queue did")
L:say("the queue reached depth %d of %d", deepest, bound)
L:say("%d requests found it full: their connections were muted, and they joined once a request left", waited)
L:say("at most %d connections were muted at one moment", muted_max)
L:fact("queue_bound", bound)
L:fact("deepest", deepest)
L:fact("waited_muted", waited)

L:step("what the clients saw")
L:say("%d requests sent, %d acknowledged, %d errors, in %d ms: they waited, none was refused", producers * rounds,
  acked, errors, took)
L:fact("sent", producers * rounds)
L:fact("acknowledged", acked)
L:fact("errors", errors)

local cons = assert(b:consumer{ auto_offset_reset = "earliest" })
assert(cons:assign{ { topic = topic, partition = 0, offset = 0 } })
local seen = {}
local n = 0
assert(kiq.wait_for(function()
  for _, rec in ipairs(cons:poll(100) or {}) do
    if not seen[rec.value] then n = n + 1 end
    seen[rec.value] = true
  end
  return n >= producers * rounds
end, 10000, "every record read back"))
cons:close()
local leo = b:state().topics[topic].partitions[0].log_end_offset
L:say("the log holds %d records (LEO %d), each value once: nothing lost", n, leo)
L:fact("distinct_read", n)
L:fact("leo", leo)
L:finish()
b:stop()
