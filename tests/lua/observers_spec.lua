-- The observer points (engine/core/observer.h) fire along a record's path,
-- as the broker's own event counter sees them (b:event_counts()): on one
-- broker for a produce, a flush and a consume; in a cluster for the
-- followers' fetches, their LEOs and the high watermark of an acks=all
-- produce.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH = 0, 1

local function produce(port, topic, acks)
  local c = assert(connection.open("127.0.0.1", port, { client_id = "observers-spec", connect_timeout_ms = 5000,
    request_timeout_ms = 15000 }))
  local batch = assert(core.build_batch { records = { { key = "k", value = "v1" }, { key = "k", value = "v2" } } })
  local r = assert(c:request(PRODUCE, { acks = acks, timeout_ms = 10000, topic_data = {
    { name = topic, partition_data = { { index = 0, records = batch } } } } }))
  c:close()
  return r.responses[1].partition_responses[1]
end

-- b's counts once every request it received was answered (a client has an
-- answer a moment before the broker counts it sent).
local function settled(b)
  local counts
  assert(kiq.wait_for(function()
    counts = b:event_counts()
    return counts.sent == counts.received
  end, 5000, "every response to be sent"))
  return counts
end

-- b's counts after minus before, for the points named.
local function grew(b, before, names)
  local now, out = b:event_counts(), {}
  for _, n in ipairs(names) do out[n] = now[n] - before[n] end
  return out
end

describe("observer points on one broker", function()
  local b

  setup(function()
    b = assert(kiq.broker {})
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "obs", partitions = 1, configs = { ["flush.messages"] = "1" } } })
    a:close()
  end)

  teardown(function()
    if b then b:stop() end
  end)

  it("counts every point a produced batch passes, once for its partition", function()
    local before = settled(b)
    assert.are.equal(0, produce(b.port, "obs", 1).error_code)
    -- the response is on its way once the client has it; SENT follows its
    -- last byte (ApiVersions' and then Produce's)
    assert(kiq.wait_for(function() return b:event_counts().sent >= before.sent + 2 end, 5000,
      "the responses to be sent"))
    local d = grew(b, before, { "received", "enqueued", "dequeued", "handled", "validated", "appended", "flushed",
      "hw_advanced", "response_queued", "sent", "follower_fetched" })
    -- ApiVersions, then Produce, on the client's connection
    assert.are.same({ received = 2, enqueued = 2, dequeued = 2, handled = 2, validated = 1, appended = 1,
      flushed = 1, hw_advanced = 1, response_queued = 2, sent = 2, follower_fetched = 0 }, d)
  end)

  it("counts a consumer's fetch that returns records", function()
    local before = settled(b)
    local c = assert(connection.open("127.0.0.1", b.port, { client_id = "observers-spec", connect_timeout_ms = 5000,
      request_timeout_ms = 15000 }))
    local md = assert(c:request(3, { topics = { { name = "obs" } } }))
    local r = assert(c:request(FETCH, { replica_id = -1, max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576,
      isolation_level = 0, topics = { { topic = "obs", topic_id = md.topics[1].topic_id, partitions = {
        { partition = 0, fetch_offset = 0, partition_max_bytes = 1048576, log_start_offset = -1,
          current_leader_epoch = -1, last_fetched_epoch = -1 } } } } }))
    c:close()
    assert.are.equal(0, r.responses[1].partitions[1].error_code)
    assert.are.equal(1, grew(b, before, { "records_fetched" }).records_fetched)
  end)
end)

describe("observer points in a cluster", function()
  local c

  setup(function()
    c = assert(kiq.cluster { brokers = 3 })
    local a = assert(c:admin())
    assert(a:create_topics { { name = "obs3", partitions = 1, replication_factor = 3 } })
    a:close()
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("counts the followers' fetches and LEOs, and the high watermark, for an acks=all produce", function()
    local leader = assert(c:wait_for_leader("obs3", 0, 15000))
    assert(c:wait_for_isr("obs3", 0, 3, 15000))
    -- the controller's word reached the leader itself
    assert(kiq.wait_for(function()
      local info = c:partition("obs3", 0)
      local own = info and info.replicas_state[leader]
      return own and own.role == "leader" and own.leader_epoch == info.leader_epoch
    end, 15000, "broker " .. leader .. " to lead obs3-0"))
    local lb = c:broker(leader)
    local before = lb:event_counts()
    local res = produce(lb.port, "obs3", -1)
    assert.are.equal(0, res.error_code, ("broker %d: %s"):format(leader, tostring(res.error_message)))
    local d = grew(lb, before, { "appended", "follower_fetched", "follower_leo", "hw_advanced" })
    assert.are.equal(1, d.appended)
    -- both followers fetched the batch and told how far they got
    assert.is_true(d.follower_fetched >= 2, "follower_fetched " .. d.follower_fetched)
    assert.is_true(d.follower_leo >= 2, "follower_leo " .. d.follower_leo)
    assert.is_true(d.hw_advanced >= 1, "hw_advanced " .. d.hw_advanced)
  end)
end)
