-- Metadata snapshots of the controller quorum (KIP-630) in an in-process
-- cluster of three voters: a snapshot written at an offset moves the log
-- start (the segments below it deleted); a restarted voter rebuilds its
-- metadata from its snapshot and the log after it; a voter cut off while
-- the leader's log start passed it catches up by FetchSnapshot; the
-- leader answers bad FetchSnapshot requests with Kafka's errors; a
-- damaged snapshot is passed over, or refused with a clear error.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local OPTS = { brokers = 3, voters = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
               ["controller.quorum.fetch.timeout.ms"] = 600, ["controller.quorum.election.timeout.ms"] = 300,
               -- small segments, so a snapshot leaves whole segments below it
               ["metadata.log.segment.bytes"] = 1024 }

local METADATA = "__cluster_metadata-0"
local FETCH_SNAPSHOT = 59

local function opts(extra)
  local o = {}
  for k, v in pairs(OPTS) do o[k] = v end
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function leader(c)
  local q
  assert(kiq.wait_for(function() q = c:quorum() return q ~= nil end, 10000, "a quorum leader"))
  return q
end

local function create_topic(c, name)
  assert(kiq.wait_for(function()
    local a = c:admin{ bootstrap = c:bootstrap(), request_timeout_ms = 3000 }
    local res, _, results = a:create_topics({ { name = name, partitions = 2, replication_factor = 2 } },
      { timeout_ms = 2500 })
    a:close()
    local r = (res or results or {})[1]
    return r ~= nil and (r.error == nil or r.error == "TOPIC_ALREADY_EXISTS")
  end, 15000, "topic " .. name .. " created"))
end

-- What a controller's image holds: topics with their partitions, brokers.
local function image(view)
  local out = { topics = {}, brokers = {} }
  for name, parts in pairs(view.topics) do
    out.topics[name] = {}
    for p, pr in pairs(parts) do
      out.topics[name][p] = { pr.leader, pr.leader_epoch, pr.partition_epoch, table.concat(pr.replicas, ","),
                              table.concat(pr.isr, ",") }
    end
  end
  for id, b in pairs(view.brokers) do out.brokers[id] = b.epoch end
  return out
end

local function same(a, b)
  local ok = pcall(assert.are.same, a, b)
  return ok
end

-- Waits until voter id's image is the active controller's.
local function wait_same_metadata(c, id)
  local mine, active
  local ok = kiq.wait_for(function()
    local v, a = c:broker(id):controller(true), c:controller()
    if not v or not a then return false end
    mine, active = image(v), image(a)
    return same(mine, active)
  end, 15000, "voter " .. id .. " with the active controller's metadata")
  if not ok then assert.are.same(active, mine) end
  return mine
end

local function wait_caught_up(c, id)
  assert(kiq.wait_for(function()
    local v, l = c:quorum_views()[id], c:quorum()
    return v and l and v.role == "follower" and v.log_end == l.log_end
  end, 15000, "voter " .. id .. " caught up"))
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function segment_bases(dir)
  local bases = {}
  local ls = assert(io.popen("ls " .. dir .. "/" .. METADATA .. " 2>/dev/null"))
  for name in ls:lines() do
    local base = name:match("^(%d+)%.log$")
    if base then bases[#bases + 1] = tonumber(base) end
  end
  ls:close()
  table.sort(bases)
  return bases
end

local function fetch_snapshot(c, id, req)
  local b = c:broker(id)
  local conn = assert(connection.open(b.host, b.control_port, { client_id = "snapshot-spec" }))
  local resp = conn:request(FETCH_SNAPSHOT, req)
  conn:close()
  return assert(resp)
end

local function snapshot_request(epoch, snap, position, max_bytes)
  return { replica_id = 7, max_bytes = max_bytes or 1048576, topics = { { name = "__cluster_metadata",
    partitions = { { partition = 0, current_leader_epoch = epoch,
      snapshot_id = { end_offset = snap.end_offset, epoch = snap.epoch }, position = position } } } } }
end

describe("controller quorum snapshots", function()
  local c
  after_each(function()
    if c then c:stop() end
    c = nil
  end)

  it("writes a snapshot at an offset, moves the log start, and a restarted voter rebuilds from snapshot and log",
     function()
    c = assert(kiq.cluster(opts()))
    local q = leader(c)
    for i = 1, 4 do create_topic(c, "s" .. i) end
    local bases_before = segment_bases(c:broker(q.leader).dir)
    assert.is_true(#bases_before > 1)
    local snap = assert(c:snapshot(q.leader))
    q = c:quorum()
    assert.is_true(snap.end_offset > 0 and snap.end_offset <= q.high_watermark)
    assert.are.equal(("%020d-%010d.checkpoint"):format(snap.end_offset, snap.epoch), snap.file)
    local dir = c:broker(q.leader).dir .. "/" .. METADATA
    assert.is_true(exists(dir .. "/" .. snap.file))
    local v = c:quorum_views()[q.leader]
    assert.are.same({ snap.end_offset, snap.end_offset, snap.epoch }, { v.log_start, v.snapshot_end, v.snapshot_epoch })
    -- the segments wholly below it are gone
    local bases = segment_bases(c:broker(q.leader).dir)
    assert.is_true(bases[1] > 0 and bases[1] <= snap.end_offset)
    -- again with nothing committed since: the same snapshot
    local again = assert(c:snapshot(q.leader))
    assert.is_true(again.end_offset >= snap.end_offset)

    -- a follower's own snapshot, then it is killed and restarted
    local f = (q.leader + 1) % 3
    wait_caught_up(c, f)
    local fsnap = assert(c:snapshot(f))
    assert.is_true(fsnap.end_offset > 0)
    c:kill(f)
    create_topic(c, "after-snapshot")
    assert(c:restart(f))
    wait_caught_up(c, f)
    assert.are.equal(fsnap.end_offset, c:quorum_views()[f].log_start)
    local img = wait_same_metadata(c, f)
    assert.is_truthy(img.topics["s1"])
    assert.is_truthy(img.topics["after-snapshot"])
  end)

  it("catches a voter up by FetchSnapshot once the leader's log start passed it", function()
    c = assert(kiq.cluster(opts()))
    local q = leader(c)
    create_topic(c, "before-cut")
    local f = (q.leader + 1) % 3
    wait_caught_up(c, f)
    for id = 0, 2 do
      if id ~= f then c:cut(id, f, { both = true }) end
    end
    local cut_end = c:quorum_views()[f].log_end
    for i = 1, 3 do create_topic(c, "while-cut-" .. i) end
    q = c:quorum()
    local snap = assert(c:snapshot(q.leader))
    assert.is_true(snap.end_offset > cut_end, "the leader's log start passed the cut voter")
    for id = 0, 2 do
      if id ~= f then c:heal(id, f, { both = true }) end
    end
    assert(kiq.wait_for(function()
      local v = c:quorum_views()[f]
      return v.log_start >= snap.end_offset and v.snapshot_end >= snap.end_offset
    end, 15000, "the cut voter loaded the leader's snapshot"))
    assert.is_true(exists(c:broker(f).dir .. "/" .. METADATA .. "/" .. snap.file))
    wait_caught_up(c, f)
    local img = wait_same_metadata(c, f)
    for i = 1, 3 do assert.is_truthy(img.topics["while-cut-" .. i]) end
    -- its log now starts at the snapshot: nothing below it is left
    assert.is_true(segment_bases(c:broker(f).dir)[1] >= snap.end_offset)
  end)

  it("answers FetchSnapshot in chunks, and bad requests with Kafka's errors", function()
    c = assert(kiq.cluster(opts()))
    local q = leader(c)
    create_topic(c, "fs")
    local snap = assert(c:snapshot(q.leader))
    q = c:quorum()
    local bytes = read_all(c:broker(q.leader).dir .. "/" .. METADATA .. "/" .. snap.file)
    -- in chunks of 100 bytes, the file as it is on disk
    local got, pos = {}, 0
    repeat
      local resp = fetch_snapshot(c, q.leader, snapshot_request(q.epoch, snap, pos, 100))
      local p = resp.topics[1].partitions[1]
      assert.are.same({ 0, 0, #bytes, pos }, { resp.error_code, p.error_code, p.size, p.position })
      assert.are.same({ q.leader, q.epoch }, { p.current_leader.leader_id, p.current_leader.leader_epoch })
      got[#got + 1] = p.unaligned_records
      pos = pos + #p.unaligned_records
    until pos >= #bytes
    assert.are.equal(bytes, table.concat(got))
    local function err(id, req) return fetch_snapshot(c, id, req).topics[1].partitions[1].error_code end
    assert.are.equal(98, err(q.leader, snapshot_request(q.epoch, { end_offset = 12345, epoch = snap.epoch }, 0)))
    assert.are.equal(99, err(q.leader, snapshot_request(q.epoch, snap, #bytes)))
    assert.are.equal(99, err(q.leader, snapshot_request(q.epoch, snap, -1)))
    assert.are.equal(74, err(q.leader, snapshot_request(q.epoch - 1, snap, 0)))
    assert.are.equal(75, err(q.leader, snapshot_request(q.epoch + 1, snap, 0)))
    assert.are.equal(6, err((q.leader + 1) % 3, snapshot_request(q.epoch, snap, 0)))
  end)

  it("passes over a damaged snapshot where the log still covers it, and refuses to start where it does not",
     function()
    c = assert(kiq.cluster(opts{ ["metadata.log.segment.bytes"] = 1073741824 }))
    local q = leader(c)
    create_topic(c, "d1")
    local f = (q.leader + 1) % 3
    wait_caught_up(c, f)
    local fsnap = assert(c:snapshot(f))
    c:stop_broker(f)
    -- cut short: no footer
    local path = c:broker(f).dir .. "/" .. METADATA .. "/" .. fsnap.file
    local bytes = read_all(path)
    local out = assert(io.open(path, "wb"))
    out:write(bytes:sub(1, #bytes - 10))
    out:close()
    create_topic(c, "d2")
    assert(c:restart(f))
    wait_caught_up(c, f)
    assert.are.equal(0, c:quorum_views()[f].log_start) -- the whole log replayed instead
    local img = wait_same_metadata(c, f)
    assert.is_truthy(img.topics["d2"])
  end)

  it("refuses to start a voter whose only snapshot is damaged and whose log starts after it; the others go on",
     function()
    c = assert(kiq.cluster(opts()))
    local q = leader(c)
    for i = 1, 4 do create_topic(c, "r" .. i) end
    local f = (q.leader + 1) % 3
    wait_caught_up(c, f)
    local fsnap = assert(c:snapshot(f))
    assert.is_true(segment_bases(c:broker(f).dir)[1] > 0)
    c:stop_broker(f)
    local path = c:broker(f).dir .. "/" .. METADATA .. "/" .. fsnap.file
    local bytes = read_all(path)
    local out = assert(io.open(path, "wb"))
    out:write(bytes:sub(1, 70) .. ("x"):rep(#bytes - 70)) -- a bad CRC
    out:close()
    local ok, err = c:restart(f)
    assert.is_nil(ok)
    assert.matches("cannot be rebuilt", err)
    create_topic(c, "still-up")
    assert.is_truthy(c:controller().topics["still-up"])
  end)
end)
