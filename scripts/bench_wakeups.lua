-- How many parked fetches an append wakes (the purgatory's tries per
-- append), with consumers long-polling every partition of a topic but the
-- one appended to, then with one waiting on it too. Prints figures; asserts
-- nothing.
--
--   luajit scripts/bench_wakeups.lua [PARTITIONS] [APPENDS]
--   (run from the repository root after make; defaults 32 and 500)
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/lua/?.so;" .. package.cpath
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local partitions = tonumber(arg[1]) or 32
local appends = tonumber(arg[2]) or 500

local b = assert(kiq.broker {})
local a = assert(kiq.admin { bootstrap = b.bootstrap })
assert(a:create_topics { { name = "wake", partitions = partitions } })
a:close()

local function open()
  return assert(connection.open("127.0.0.1", b.port, { client_id = "bench-wakeups", connect_timeout_ms = 5000,
    request_timeout_ms = 60000 }))
end

local md_conn = open()
local topic_id = assert(md_conn:request(3, { topics = { { name = "wake" } } })).topics[1].topic_id
md_conn:close()

-- a consumer fetch of partition p at its end, parked for a minute
local function park(p, offset)
  local c = open()
  assert(c:send_request(1, { replica_id = -1, max_wait_ms = 60000, min_bytes = 1, max_bytes = 1048576,
    isolation_level = 0, topics = { { topic = "wake", topic_id = topic_id, partitions = { { partition = p,
      fetch_offset = offset, partition_max_bytes = 1048576, log_start_offset = -1, current_leader_epoch = -1,
      last_fetched_epoch = -1 } } } } }))
  return c
end

local producer = open()
local batch = assert(core.build_batch { records = { { key = "k", value = "v" } } })
local function append(p)
  local r = assert(producer:request(0, { acks = 1, timeout_ms = 5000, topic_data = {
    { name = "wake", partition_data = { { index = p, records = batch } } } } }))
  assert(r.responses[1].partition_responses[1].error_code == 0)
end

local polls = {}
for p = 1, partitions - 1 do polls[#polls + 1] = park(p, 0) end
assert(kiq.wait_for(function() return b:purgatory_stats().waiting == partitions - 1 end, 10000, "the fetches to park"))

local function measure(label)
  local before = b:purgatory_stats()
  local t0 = kiq.now_ms and kiq.now_ms() or core.now_ms()
  for _ = 1, appends do append(0) end
  -- the purgatory tries what the last append woke before it counts it
  kiq.wait_for(function() return b:purgatory_stats().notified >= before.notified + appends end, 10000)
  local after = b:purgatory_stats()
  local ms = (kiq.now_ms and kiq.now_ms() or core.now_ms()) - t0
  print(("%-52s %8.2f tries per append (%d parked, %d appends, %.0f ms)"):format(label,
    (after.tried - before.tried) / appends, after.waiting, appends, ms))
end

measure(("appends to a partition no fetch waits on (%d waiting elsewhere)"):format(partitions - 1))

producer:close()
for _, c in ipairs(polls) do c:close() end
b:stop()
