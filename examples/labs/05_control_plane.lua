-- Lab 5: the data plane and the control plane. Clients' requests and the
-- controller's share nothing on a broker: the controller's (LeaderAndIsr,
-- UpdateMetadata, StopReplica) come in on their own listener
-- (control.plane.listener.name) with their own processor, request queue
-- and I/O thread. So when the data plane is flooded — its request queue
-- full, its one I/O thread busy, sockets muted — a leadership change is
-- still applied at once. Here every broker's data plane is kept full of
-- slow Produce requests while the leader of a partition dies.
--
--   build/kafkaiq run examples/labs/05_control_plane.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"

kiq.log_level("error")
local L = lab.new(5, "data plane and control plane")
local bound = 2
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["queued.max.requests"] = bound,
                              ["num.io.threads"] = 1, ["broker.session.timeout.ms"] = 1500,
                              ["broker.heartbeat.interval.ms"] = 200 })
L:page(c)
local topic, flood = "lab5-orders", "lab5-flood"
assert(c:admin():create_topics{ { name = topic, partitions = 3, replication_factor = 3 },
                                { name = flood, partitions = 1, replication_factor = 1 } })
local P, info
for p = 0, 2 do
  assert(c:wait_for_replicas(topic, p, 10000))
  local i = c:partition(topic, p)
  if not P and i.leader ~= 0 then P, info = p, i end -- broker 0 hosts the controller and stays
end
local old = info.leader
L:say("%s-%d is led by broker %d; every broker has 1 I/O thread and a request queue of %d", topic, P, old, bound)

-- each broker's one data-plane I/O thread spends a while on every Produce
for id = 0, 2 do
  assert(c:broker(id):intercept{ on = "request", api = "Produce",
    source = "return function() local x = 0 for i = 1, 1500000 do x = x + i end end" })
end
local conns = {}
for id = 0, 2 do
  local b = c:broker(id)
  for k = 1, 8 do
    conns[#conns + 1] = { id = id, conn = assert(connection.open(b.host, b.port,
      { client_id = ("flood-%d-%d"):format(id, k), request_timeout_ms = 60000 })) }
  end
end
local batch = assert(core.build_batch{ records = { { value = string.rep("f", 100) } } })
local function keep_flooding()
  for _, f in ipairs(conns) do
    if f.pending then
      local resp = f.conn:collect(f.pending, 0)
      if resp then f.pending = nil end
    end
    if not f.pending then
      f.pending = assert(f.conn:send_request(0, { acks = 1, timeout_ms = 30000,
        topic_data = { { name = flood, partition_data = { { index = 0, records = batch } } } } }))
    end
  end
end
local deepest = {}
local function sample()
  for id = 0, 2 do
    local b = c:broker(id)
    if b:running() then
      local d = (b:state().request_queue or {}).depth or 0
      if d > (deepest[id] or 0) then deepest[id] = d end
    end
  end
end
local t = core.now_ms()
while core.now_ms() - t < 300 do keep_flooding() sample() core.sleep_ms(1) end
L:step("the data planes flooded: %d connections sending slow Produce requests", #conns)
L:say("request queue depths reached: broker 0 %d, broker 1 %d, broker 2 %d (of %d)", deepest[0] or 0, deepest[1] or 0,
  deepest[2] or 0, bound)
L:fact("queue_full_everywhere", (deepest[0] or 0) >= bound and (deepest[1] or 0) >= bound and (deepest[2] or 0) >= bound)

L:step("broker %d, the leader, dies", old)
for i = #conns, 1, -1 do if conns[i].id == old then table.remove(conns, i) end end
c:kill(old)
local elected_at, applied_at, new, depth_then
while core.now_ms() - t < 20000 and not applied_at do
  keep_flooding()
  sample()
  local cv = c:controller().topics[topic][P]
  if not elected_at and cv.leader >= 0 and cv.leader ~= old then
    elected_at, new = core.now_ms(), cv.leader
  end
  if elected_at then
    local s = c:broker(new):state().topics[topic].partitions[P]
    if s.role == "leader" and s.leader_epoch == cv.leader_epoch then
      applied_at = core.now_ms()
      depth_then = c:broker(new):state().request_queue.depth
    end
  end
  core.sleep_ms(1)
end
assert(applied_at, "the new leader took its role")
L:say("the controller elected broker %d; it applied LeaderAndIsr %d ms later, over its control plane,", new,
  applied_at - elected_at)
L:say("while its data-plane request queue held %d of %d requests", depth_then, bound)
L:fact("new_leader", new)
L:fact("applied", true)
L:fact("data_queue_when_applied", depth_then)
L:fact("queue_bound", bound)
local st = c:broker(new):request_stats()
L:say("broker %d has handled %d LeaderAndIsr and %d UpdateMetadata on the control plane, %d Produce on the data plane",
  new, st.LeaderAndIsr and st.LeaderAndIsr.count or 0, st.UpdateMetadata and st.UpdateMetadata.count or 0,
  st.Produce and st.Produce.count or 0)

L:step("a client's request on the same broker, meanwhile")
local b = c:broker(new)
local conn = assert(connection.open(b.host, b.port, { client_id = "lab5-client", request_timeout_ms = 60000 }))
local asked = core.now_ms()
local pending = assert(conn:send_request(0, { acks = 1, timeout_ms = 30000,
  topic_data = { { name = topic, partition_data = { { index = P, records = batch } } } } }))
local resp
while not resp do
  keep_flooding()
  resp = conn:collect(pending, 1)
end
conn:close()
local answered = core.now_ms() - asked
L:say("a Produce to the new leader waited its turn behind the flood: answered after %d ms (error %d)", answered,
  resp.responses[1].partition_responses[1].error_code)
L:fact("client_error", resp.responses[1].partition_responses[1].error_code)
L:say("the control plane's request was applied in %d ms; the client's took %d ms", applied_at - elected_at, answered)
for _, f in ipairs(conns) do f.conn:close() end
L:finish()
c:stop()
