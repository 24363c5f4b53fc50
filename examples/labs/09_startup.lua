-- Lab 9: the broker startup sequence. A broker reads its configuration,
-- opens its logs (recovering them when the last stop was not clean: each
-- segment after the recovery point rescanned, torn bytes cut), starts its
-- listeners and threads, registers with the controller, receives the
-- cluster's metadata (only now does it take clients' connections, which
-- wait in the backlog until then, as Kafka's do) and its partitions
-- (LeaderAndIsr), and only then is unfenced: ready for clients. This lab restarts one broker of three
-- cleanly, then after a crash, and prints each phase with its time.
--
--   build/kafkaiq run examples/labs/09_startup.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"

kiq.log_level("error")
local L = lab.new(9, "the broker startup sequence")
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0" })
L:page(c)
local topic = "lab9-logs"
assert(c:admin():create_topics{ { name = topic, partitions = 6, replication_factor = 3 } })
for p = 0, 5 do assert(c:wait_for_replicas(topic, p, 10000)) end
local prod = assert(c:producer{ acks = "all", linger_ms = 5 })
for i = 1, 3000 do prod:send(topic, "k" .. (i % 97), ("record %d of the lab"):format(i)) end
assert(prod:flush(15000))
prod:close()
for p = 0, 5 do assert(c:wait_for_replicas(topic, p, 10000)) end

local words = {
  config = "configuration read",
  logs = "logs opened",
  listeners = "listeners bound, threads up, clients held in the backlog",
  registered = "registered with the controller",
  metadata = "the cluster's metadata received, clients taken",
  replication = "its partitions received (LeaderAndIsr): fetchers started",
  ready = "unfenced: ready for clients",
}
local order = { "config", "logs", "listeners", "registered", "metadata", "replication", "ready" }

local function show(b, how)
  assert(kiq.wait_for(function()
    local s = b:startup()
    return s.phases[#s.phases] and #s.phases >= #order
  end, 15000, "broker " .. how .. " to be ready"))
  local s = b:startup()
  local names = {}
  for _, ph in ipairs(s.phases) do
    names[#names + 1] = ph.phase
    local extra = ""
    if ph.phase == "logs" then
      extra = s.clean and (" (%d partitions; clean shutdown before: only each log's end read, %d batches)"):format(
          ph.detail, s.recovered_batches)
        or (" (%d partitions; no clean-shutdown marker: %d batches rescanned, %d bytes cut)"):format(ph.detail,
          s.recovered_batches, s.truncated_bytes)
    elseif ph.phase == "listeners" then
      extra = (" (port %d)"):format(ph.detail)
    elseif ph.phase == "registered" or ph.phase == "ready" then
      extra = (" (broker epoch %d)"):format(ph.detail)
    elseif ph.phase == "metadata" then
      extra = (" (naming %d live brokers)"):format(ph.detail)
    elseif ph.phase == "replication" then
      extra = (" (%d partitions)"):format(ph.detail)
    end
    L:say("  %8.3f ms  %s%s", ph.ms, words[ph.phase] or ph.phase, extra)
  end
  return s, table.concat(names, ",")
end

-- restarts broker 2 (after a crash: killed first) and prints its phases
local function restart(how, crash)
  L:step("broker 2 %s and started again", how)
  if crash then c:kill(2) else c:stop_broker(2) end
  assert(c:restart(2))
  local s, order = show(c:broker(2), "2 (" .. how .. ")")
  local name = crash and "crash" or "clean"
  L:fact(name .. "_order", order)
  L:fact(name .. "_marker", s.clean)
  L:fact(name .. "_recovered_batches", s.recovered_batches)
  for p = 0, 5 do assert(c:wait_for_replicas(topic, p, 15000)) end
  return s
end
local clean = restart("stopped cleanly", false)
local crash = restart("crashed (no clean shutdown)", true)
local function at(s, name) for _, ph in ipairs(s.phases) do if ph.phase == name then return ph end end end
L:fact("partitions_opened", at(crash, "logs").detail)
L:fact("partitions_assigned", at(crash, "replication").detail)
L:say("")
L:say("recovery rescanned %d batches the clean start did not need to; the broker was ready %.1f ms after it began",
  crash.recovered_batches - clean.recovered_batches, at(crash, "ready").ms)
L:finish()
c:stop()
