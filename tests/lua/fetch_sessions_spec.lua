-- Incremental fetch sessions (KIP-227) on a real broker, through raw
-- Fetch requests: a full fetch at epoch 0 opens a session; incremental
-- fetches name only what changed and get only partitions with news, also
-- after waiting in the purgatory; a wrong epoch or an unknown session is
-- refused at the top level; epoch -1 closes; a broker with no session
-- slots declines. In a cluster, followers fetch through sessions.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH, METADATA = 0, 1, 3
local FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 70, 71

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, { client_id = "fetch-sessions-spec", connect_timeout_ms = 5000,
    request_timeout_ms = 20000 }))
end

local function produce(c, topic, partition, value)
  local batch = assert(core.build_batch { records = { { key = "k", value = value } } })
  local r = assert(c:request(PRODUCE, { acks = 1, timeout_ms = 5000, topic_data = {
    { name = topic, partition_data = { { index = partition, records = batch } } } } }))
  assert.are.equal(0, r.responses[1].partition_responses[1].error_code)
end

local function part(p, offset)
  return { partition = p, fetch_offset = offset, partition_max_bytes = 1048576, log_start_offset = -1,
    current_leader_epoch = -1, last_fetched_epoch = -1 }
end

-- A consumer's Fetch with the session fields and partitions given.
local function fetch_body(id, epoch, topic_id, parts, forgotten, wait_ms)
  return { replica_id = -1, max_wait_ms = wait_ms or 0, min_bytes = 1, max_bytes = 1048576, isolation_level = 0,
    session_id = id, session_epoch = epoch,
    topics = parts and #parts > 0 and { { topic_id = topic_id, partitions = parts } } or {},
    forgotten_topics_data = forgotten and { { topic_id = topic_id, partitions = forgotten } } or {} }
end

-- "p:records" for each partition answered, in order ("0:1 1:0").
local function answered(r)
  local out = {}
  for _, t in ipairs(r.responses) do
    for _, p in ipairs(t.partitions) do
      out[#out + 1] = ("%d:%d"):format(p.partition_index, p.records and #p.records > 0 and 1 or 0)
    end
  end
  return table.concat(out, " ")
end

local function gauge(b, name)
  local f = b:metrics()[name]
  return f and f.samples[1] and f.samples[1].value
end

describe("fetch sessions", function()
  local b, c, tid

  setup(function()
    b = assert(kiq.broker {})
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "fs", partitions = 3 } })
    a:close()
    c = open(b)
    local md = assert(c:request(METADATA, { topics = { { name = "fs" } } }))
    tid = md.topics[1].topic_id
  end)

  teardown(function()
    if c then c:close() end
    if b then b:stop() end
  end)

  it("opens a session, then answers only partitions with news", function()
    assert(c:version(FETCH) >= 13, "Fetch by topic id")
    local r = assert(c:request(FETCH, fetch_body(0, 0, tid, { part(0, 0), part(1, 0), part(2, 0) })))
    assert.are.equal(0, r.error_code)
    local id = r.session_id
    assert.is_true(id > 0)
    assert.are.equal("0:0 1:0 2:0", answered(r))
    assert.are.equal(1, gauge(b, "kafka_server_fetchsessioncache_numincrementalfetchsessions"))
    assert.are.equal(3, gauge(b, "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"))
    -- nothing new: an empty answer under the same session
    r = assert(c:request(FETCH, fetch_body(id, 1, tid, {})))
    assert.are.equal(0, r.error_code)
    assert.are.equal(id, r.session_id)
    assert.are.equal("", answered(r))
    -- a record on partition 1: it alone comes back, from the offset the session holds
    produce(c, "fs", 1, "one")
    r = assert(c:request(FETCH, fetch_body(id, 2, tid, {})))
    assert.are.equal("1:1", answered(r))
    -- the client moves past it; nothing else is new
    r = assert(c:request(FETCH, fetch_body(id, 3, tid, { part(1, 1) })))
    assert.are.equal("", answered(r))
    -- a fetch that waits: completed by an append, answered with that partition alone
    local pending = assert(c:send_request(FETCH, fetch_body(id, 4, tid, {}, nil, 20000)))
    assert(kiq.wait_for(function() return b:purgatory_stats().waiting == 1 end, 5000, "the fetch to park"))
    local p2 = open(b)
    produce(p2, "fs", 2, "two")
    p2:close()
    r = assert(c:collect(pending, 10000))
    assert.are.equal(id, r.session_id)
    assert.are.equal("2:1", answered(r))
    -- forgotten: partition 2 is no longer read
    r = assert(c:request(FETCH, fetch_body(id, 5, tid, {}, { 2 })))
    assert.are.equal("", answered(r))
    assert.are.equal(2, gauge(b, "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"))
    -- the wrong epoch, an unknown session: refused, nothing read
    r = assert(c:request(FETCH, fetch_body(id, 5, tid, {})))
    assert.are.equal(INVALID_FETCH_SESSION_EPOCH, r.error_code)
    assert.are.equal(0, #r.responses)
    r = assert(c:request(FETCH, fetch_body(id + 1, 1, tid, {})))
    assert.are.equal(FETCH_SESSION_ID_NOT_FOUND, r.error_code)
    -- epoch -1 closes it: a sessionless full fetch, and the id is gone
    r = assert(c:request(FETCH, fetch_body(id, -1, tid, { part(0, 0) })))
    assert.are.equal(0, r.error_code)
    assert.are.equal(0, r.session_id)
    assert.are.equal("0:0", answered(r))
    r = assert(c:request(FETCH, fetch_body(id, 6, tid, {})))
    assert.are.equal(FETCH_SESSION_ID_NOT_FOUND, r.error_code)
    assert.are.equal(0, gauge(b, "kafka_server_fetchsessioncache_numincrementalfetchsessions"))
  end)

  it("keys sessions by name before Fetch v13", function()
    local r = assert(c:request(FETCH, { replica_id = -1, max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576,
      isolation_level = 0, session_id = 0, session_epoch = 0,
      topics = { { topic = "fs", partitions = { part(0, 0), part(1, 0) } } }, forgotten_topics_data = {} },
      { version = 12 }))
    assert.are.equal(0, r.error_code)
    local id = r.session_id
    assert.is_true(id > 0)
    assert.are.equal("0:0 1:1", answered(r))
    produce(c, "fs", 0, "zero")
    r = assert(c:request(FETCH, { replica_id = -1, max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576,
      isolation_level = 0, session_id = id, session_epoch = 1, topics = {},
      forgotten_topics_data = { { topic = "fs", partitions = { 1 } } } }, { version = 12 }))
    assert.are.equal(0, r.error_code)
    assert.are.equal("0:1", answered(r))
    assert.are.equal("fs", r.responses[1].topic)
  end)
end)

describe("a broker without fetch session slots", function()
  it("answers every fetch as a full one, with no session", function()
    local b = assert(kiq.broker { ["max.incremental.fetch.session.cache.slots"] = "0" })
    local a = assert(kiq.admin { bootstrap = b.bootstrap })
    assert(a:create_topics { { name = "nos", partitions = 1 } })
    a:close()
    local c = open(b)
    local md = assert(c:request(METADATA, { topics = { { name = "nos" } } }))
    local r = assert(c:request(FETCH, fetch_body(0, 0, md.topics[1].topic_id, { part(0, 0) })))
    assert.are.equal(0, r.error_code)
    assert.are.equal(0, r.session_id)
    assert.are.equal("0:0", answered(r))
    c:close()
    b:stop()
  end)
end)

describe("followers", function()
  local cl
  teardown(function()
    if cl then cl:stop() end
  end)

  local function produce(from, to)
    local p = assert(cl:producer { acks = -1, linger_ms = 0, retries = 10 })
    for i = from, to do assert(p:send("rep", "k" .. i, "v" .. i, { partition = i % 3 })) end
    local ok, err = p:flush(15000)
    p:close()
    assert(ok, err)
  end

  it("fetch through sessions, and replicate across a leader's restart", function()
    cl = assert(kiq.cluster { brokers = 3, ["offsets.topic.num.partitions"] = 3,
      ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local a = assert(cl:admin())
    assert(a:create_topics { { name = "rep", partitions = 3, replication_factor = 3 } })
    a:close()
    for q = 0, 2 do assert(cl:wait_for_isr("rep", q, 3, 10000)) end
    produce(1, 30)
    for q = 0, 2 do assert(cl:wait_for_replicas("rep", q, 10000)) end
    -- each broker leads a partition its two followers fetch through a session each
    for id = 0, 2 do
      assert.are.equal(2, gauge(cl:broker(id), "kafka_server_fetchsessioncache_numincrementalfetchsessions"),
        "sessions at broker " .. id)
    end
    -- a leader restarted has none: its followers open new ones and go on
    local leader
    for q = 0, 2 do
      local l = cl:partition("rep", q).leader
      if l ~= 0 then leader = l end
    end
    assert(cl:restart(leader))
    for q = 0, 2 do assert(cl:wait_for_isr("rep", q, 3, 15000)) end
    produce(31, 60)
    for q = 0, 2 do
      assert(cl:wait_for_replicas("rep", q, 15000))
      local info = cl:partition("rep", q)
      assert.are.equal(20, info.replicas_state[info.leader].high_watermark)
      for _, id in ipairs(info.replicas) do
        assert.are.equal(20, info.replicas_state[id].log_end_offset, "replica " .. id .. " of rep-" .. q)
      end
    end
  end)
end)
