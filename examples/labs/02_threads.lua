-- Lab 2: the broker's three subsystems and their threads. Kafka's broker
-- is a network layer (one acceptor thread per listener, num.network.threads
-- processor threads, each with its own event loop), a request-handling
-- layer (the request queue, num.io.threads I/O threads, the purgatory for
-- requests that wait) and the log manager (the logs, and the background
-- threads for retention, flushing and compaction). KafkaIQ names its
-- threads as it runs them; this lab lists the live ones from
-- /proc/PID/task and sorts them into the three subsystems.
--
--   build/kafkaiq run examples/labs/02_threads.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local ffi = require "ffi"
ffi.cdef "int getpid(void);"

kiq.log_level("error")
local L = lab.new(2, "the broker's three subsystems and their threads")

local function threads()
  local names = {}
  local p = assert(io.popen(("cat /proc/%d/task/*/comm 2>/dev/null"):format(ffi.C.getpid())))
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  return names
end

local subsystems = {
  { "network layer", { "^acceptor$", "^processor%-" } },
  { "request handling", { "^io%-", "^purgatory$", "^group%-coordinat" } },
  { "log manager", { "^log%-" } },
  { "replication and the controller", { "^fetcher%-", "^lifecycle%-", "^control", "^metadata" } },
  { "the HTTP listener", { "^MHD" } },
}
local function sort(names)
  local by, count = {}, {}
  for _, s in ipairs(subsystems) do by[s[1]] = {} end
  for _, n in ipairs(names) do
    for _, s in ipairs(subsystems) do
      local hit = false
      for _, pat in ipairs(s[2]) do hit = hit or n:match(pat) ~= nil end
      if hit then
        table.insert(by[s[1]], n)
        break
      end
    end
  end
  for _, list in pairs(by) do table.sort(list) end
  for _, n in ipairs(names) do
    local kind = n:match("^(%a+)") or n
    count[kind] = (count[kind] or 0) + 1
  end
  return by, count
end

local before = #threads()
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0", ["num.network.threads"] = 3,
                             ["num.io.threads"] = 8 })
L:page(b)
-- a thread names itself once it runs: read until every one has
local names, by, count
assert(kiq.wait_for(function()
  names = threads()
  by, count = sort(names)
  return (count.acceptor or 0) >= 1 and (count.processor or 0) >= 3 and (count.io or 0) >= 8 and
    (count.purgatory or 0) >= 1
end, 10000, "the broker's threads to name themselves"))
L:step("one broker, num.network.threads=3, num.io.threads=8: %d threads more than the bare process",
  #names - before)
for _, s in ipairs(subsystems) do
  if #by[s[1]] > 0 then L:say("  %-32s %s", s[1] .. ":", table.concat(by[s[1]], ", ")) end
end
L:fact("acceptors", count.acceptor or 0)
L:fact("processors", count.processor or 0)
L:fact("io_threads", count.io or 0)
L:fact("purgatory", count.purgatory or 0)
L:fact("log_threads", #by["log manager"])
L:say("")
L:say("a request goes acceptor -> a processor (reads and frames it) -> the request queue -> an I/O thread")
L:say("(decodes, handles, appends to the log) -> back to the same processor, which writes the response")
b:stop()

L:step("a cluster of 3 in one process adds replication and the controller")
local c = assert(kiq.cluster{ brokers = 3 })
assert(c:admin():create_topics{ { name = "lab2", partitions = 3, replication_factor = 3 } })
for p = 0, 2 do assert(c:wait_for_replicas("lab2", p, 10000)) end
by, count = sort(threads())
L:say("  %-32s %s", "replication and the controller:", table.concat(by["replication and the controller"], ", "))
L:say("each broker has a lifecycle thread (registration, heartbeats) and a replica fetcher per leader it follows;")
L:say("the control plane (its own listener, processor and I/O thread) carries the controller's requests, apart")
L:say("from the data plane's queue")
L:fact("cluster_fetchers", count.fetcher or 0)
L:fact("cluster_lifecycles", count.lifecycle or 0)
L:fact("cluster_controllers", count.controller or 0)
c:stop()
L:finish()
