-- Parked fetches in the keyed purgatory: a fetch waits until what it could
-- return reaches min_bytes (Kafka's DelayedFetch), and an append wakes only
-- the fetches parked on its partition (b:purgatory_stats() counts tries).
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH, METADATA = 0, 1, 3

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, { client_id = "purgatory-spec", connect_timeout_ms = 5000,
    request_timeout_ms = 20000 }))
end

local function produce(b, topic, partition, bytes)
  local c = open(b)
  local batch = assert(core.build_batch { records = { { key = "k", value = string.rep("v", bytes) } } })
  local r = assert(c:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
    { name = topic, partition_data = { { index = partition, records = batch } } } } }))
  c:close()
  assert.are.equal(0, r.responses[1].partition_responses[1].error_code)
  return #batch
end

-- A consumer fetch of one partition from offset 0, sent but not collected.
local function long_poll(b, topic, partition, min_bytes, wait_ms)
  local c = open(b)
  local md = assert(c:request(METADATA, { topics = { { name = topic } } }))
  local pending = assert(c:send_request(FETCH, { replica_id = -1, max_wait_ms = wait_ms, min_bytes = min_bytes,
    max_bytes = 1048576, isolation_level = 0, topics = { { topic = topic, topic_id = md.topics[1].topic_id,
      partitions = { { partition = partition, fetch_offset = 0, partition_max_bytes = 1048576, log_start_offset = -1,
        current_leader_epoch = -1, last_fetched_epoch = -1 } } } } }))
  return c, pending
end

describe("the purgatory", function()
  local b

  setup(function()
    b = assert(kiq.broker {})
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "pg", partitions = 4 } })
    a:close()
  end)

  teardown(function()
    if b then b:stop() end
  end)

  it("holds a fetch until what it could return reaches min_bytes", function()
    local c, pending = long_poll(b, "pg", 0, 2000, 30000)
    assert(kiq.wait_for(function() return b:purgatory_stats().waiting == 1 end, 5000, "the fetch to park"))
    local tried = b:purgatory_stats().tried
    local first = produce(b, "pg", 0, 500)
    -- tried again after the append, and still short of 2000 bytes
    assert(kiq.wait_for(function() return b:purgatory_stats().tried > tried end, 5000, "a try after the append"))
    assert.are.equal(1, b:purgatory_stats().waiting)
    assert.is_false(c:collect(pending, 0))
    local second = produce(b, "pg", 0, 1800)
    local resp = assert(c:collect(pending, 10000))
    c:close()
    local p = resp.responses[1].partitions[1]
    assert.are.equal(0, p.error_code)
    assert.are.equal(first + second, #p.records)
  end)

  it("wakes only the fetches parked on the partition appended to", function()
    local polls = {}
    for p = 1, 3 do polls[p] = { long_poll(b, "pg", p, 1, 30000) } end
    assert(kiq.wait_for(function() return b:purgatory_stats().waiting == 3 end, 5000, "three fetches to park"))
    local before = b:purgatory_stats()
    produce(b, "pg", 2, 10)
    local resp = assert(polls[2][1]:collect(polls[2][2], 10000))
    assert.are.equal(0, resp.responses[1].partitions[1].error_code)
    assert(kiq.wait_for(function() return b:purgatory_stats().waiting == 2 end, 5000, "partition 2's fetch to leave"))
    -- partition 2's fetch alone was tried: once, or twice when the append
    -- found it before the high watermark moved (both notify its key);
    -- partitions 1 and 3 were not woken
    local tries = b:purgatory_stats().tried - before.tried
    assert.is_true(tries == 1 or tries == 2, tries .. " tries")
    for _, p in ipairs { 1, 3 } do
      assert.is_false(polls[p][1]:collect(polls[p][2], 0))
      polls[p][1]:close()
    end
    polls[2][1]:close()
  end)

  it("completes a fetch of several partitions once a produce has appended to all of them", function()
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "pg-all", partitions = 4 } })
    a:close()
    local c = open(b)
    local md = assert(c:request(METADATA, { topics = { { name = "pg-all" } } }))
    local parts = {}
    for p = 1, 3 do
      parts[p] = { partition = p, fetch_offset = 0, partition_max_bytes = 1048576, log_start_offset = -1,
        current_leader_epoch = -1, last_fetched_epoch = -1 }
    end
    local parked = b:purgatory_stats().parked
    local pending = assert(c:send_request(FETCH, { replica_id = -1, max_wait_ms = 30000, min_bytes = 1,
      max_bytes = 1048576, isolation_level = 0, topics = { { topic = "pg-all", topic_id = md.topics[1].topic_id,
        partitions = parts } } }))
    assert(kiq.wait_for(function() return b:purgatory_stats().parked > parked end, 5000, "the fetch to park"))
    -- one produce request to partitions 1, 2 and 3
    local batch = assert(core.build_batch { records = { { key = "k", value = "all-three" } } })
    local data = {}
    for p = 1, 3 do data[p] = { index = p, records = batch } end
    local pc = open(b)
    local r = assert(pc:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
      { name = "pg-all", partition_data = data } } }))
    pc:close()
    for p = 1, 3 do assert.are.equal(0, r.responses[1].partition_responses[p].error_code) end
    -- the one answer holds each partition's new batch, not the first's alone
    local resp = assert(c:collect(pending, 10000))
    c:close()
    local got = {}
    for _, fp in ipairs(resp.responses[1].partitions) do
      assert.are.equal(0, fp.error_code)
      got[fp.partition_index] = fp.records and #fp.records or 0
    end
    for p = 1, 3 do assert.is_true((got[p] or 0) >= #batch, "partition " .. p .. ": " .. tostring(got[p])) end
  end)
end)
