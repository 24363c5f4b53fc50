-- Replication in an in-process cluster of three brokers: acks=all records
-- land at the same offsets on every replica; a follower that stops
-- fetching leaves the ISR after replica.lag.time.max.ms and rejoins once it
-- caught up; with fewer in-sync replicas than min.insync.replicas acks=all
-- is refused; and consumers only see what the whole ISR has (the high
-- watermark), while an acks=all produce the followers cannot take times
-- out.
local kiq = require "kafkaiq"
kiq.log_level("error")

local LAG_MS = 1000

local function create(c, name, partitions)
  local a = assert(c:admin())
  assert(a:create_topics{ { name = name, partitions = partitions, replication_factor = 3 } })
  a:close()
  for p = 0, partitions - 1 do
    assert(c:wait_for_isr(name, p, 3, 10000))
    assert(c:wait_for_leader(name, p, 10000))
    -- every broker took its role, so its metadata (pushed first) knows the leader too
    assert(kiq.wait_for(function()
      local info = c:partition(name, p)
      for _, id in ipairs(info.replicas) do
        local s = info.replicas_state[id]
        if not s or s.leader ~= info.leader or s.leader_epoch ~= info.leader_epoch then return false end
      end
      return true
    end, 10000, "every replica to know its role"))
  end
end

local function produce(c, topic, partition, from, to, opts)
  opts = opts or {}
  local p = assert(c:producer{ acks = -1, linger_ms = 0, retries = opts.retries or 5,
    request_timeout_ms = opts.request_timeout_ms })
  for i = from, to do assert(p:send(topic, "k" .. i, "v" .. i, { partition = partition })) end
  local ok, err = p:flush(opts.flush_ms or 15000)
  p:close()
  return ok, err
end

local function followers(info)
  local out = {}
  for _, id in ipairs(info.replicas) do
    if id ~= info.leader then out[#out + 1] = id end
  end
  return out
end

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

-- Records a consumer gets from the partition's leader, polling for a while.
local function consume(c, topic, partition, want, wait_ms)
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
  assert(cons:assign{ { topic = topic, partition = partition, offset = 0 } })
  local got = {}
  kiq.wait_for(function()
    for _, m in ipairs(assert(cons:poll(100))) do got[#got + 1] = m.value end
    return #got >= want
  end, wait_ms, "records")
  cons:close()
  return got
end

describe("replication", function()
  local c

  setup(function()
    c = assert(kiq.cluster{ brokers = 3, ["min.insync.replicas"] = 2, ["replica.lag.time.max.ms"] = LAG_MS,
      ["broker.heartbeat.interval.ms"] = 200 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("puts acks=all records at the same offsets on every replica", function()
    create(c, "same", 3)
    for p = 0, 2 do assert(produce(c, "same", p, 1, 50 + p)) end
    for p = 0, 2 do
      assert(c:wait_for_replicas("same", p, 10000))
      local info = c:partition("same", p)
      local lead = info.replicas_state[info.leader]
      assert.are.equal(50 + p, lead.log_end_offset)
      assert.are.equal(50 + p, lead.high_watermark)
      assert.are.equal("leader", lead.role)
      for _, id in ipairs(info.replicas) do
        local s = assert(info.replicas_state[id], "replica " .. id .. " has no state")
        assert.are.equal(lead.log_end_offset, s.log_end_offset)
        assert.are.equal(lead.high_watermark, s.high_watermark)
        assert.are.equal(info.leader, s.leader)
        assert.are.equal(info.leader_epoch, s.leader_epoch)
        -- the same batches: segment by segment, the same offsets and bytes
        assert.are.equal(#lead.segments, #s.segments)
        for i, seg in ipairs(lead.segments) do
          assert.are.equal(seg.base_offset, s.segments[i].base_offset)
          assert.are.equal(seg.next_offset, s.segments[i].next_offset)
          assert.are.equal(seg.size, s.segments[i].size)
        end
        if id ~= info.leader then
          assert.are.equal("follower", s.role)
          assert.are.equal(lead.log_end_offset, lead.followers[id].leo)
        end
      end
    end
    local got = consume(c, "same", 1, 51, 10000)
    assert.are.equal(51, #got)
    for i = 1, 51 do assert.are.equal("v" .. i, got[i]) end
  end)

  it("drops a follower that stops fetching from the ISR, refuses acks=all below min.insync.replicas, and takes them back",
    function()
      create(c, "isr", 1)
      assert(produce(c, "isr", 0, 1, 10))
      local info = c:partition("isr", 0)
      local leader, fs = info.leader, followers(info)

      c:cut(leader, fs[1])
      assert(c:wait_for_isr("isr", 0, 2, LAG_MS * 10))
      info = c:partition("isr", 0)
      assert.is_false(has(info.isr, fs[1]))
      assert(kiq.wait_for(function() -- the leader applies the controller's answer
        return #c:partition("isr", 0).replicas_state[leader].isr == 2
      end, 5000, "the leader's ISR to shrink"))
      -- two in sync of min.insync.replicas 2: still accepted
      assert(produce(c, "isr", 0, 11, 20))

      c:cut(leader, fs[2])
      assert(c:wait_for_isr("isr", 0, 1, LAG_MS * 10))
      local ok, err = produce(c, "isr", 0, 21, 21, { retries = 0 })
      assert.is_falsy(ok)
      assert.matches("NOT_ENOUGH_REPLICAS", tostring(err))
      assert.are.equal(20, c:partition("isr", 0).replicas_state[leader].log_end_offset) -- nothing appended

      c:heal(leader, fs[1])
      c:heal(leader, fs[2])
      assert(c:wait_for_isr("isr", 0, 3, LAG_MS * 10))
      assert(c:wait_for_replicas("isr", 0, 10000))
      assert(produce(c, "isr", 0, 21, 30))
      assert(c:wait_for_replicas("isr", 0, 10000))
      info = c:partition("isr", 0)
      for _, id in ipairs(info.replicas) do assert.are.equal(30, info.replicas_state[id].log_end_offset) end
    end)

end)

describe("replication with followers slow to leave the ISR", function()
  local c

  setup(function()
    c = assert(kiq.cluster{ brokers = 3, ["min.insync.replicas"] = 2, ["replica.lag.time.max.ms"] = 60000,
      ["broker.heartbeat.interval.ms"] = 200 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  it("shows consumers only what the ISR has, and times out an acks=all produce the followers cannot take", function()
    create(c, "hw", 1)
    assert(produce(c, "hw", 0, 1, 5))
    assert(c:wait_for_replicas("hw", 0, 10000))
    local info = c:partition("hw", 0)
    local leader, fs = info.leader, followers(info)
    -- both followers cut, but still in the ISR (for a minute): the high
    -- watermark cannot move, so the produce waits and times out
    c:cut(leader, fs[1])
    c:cut(leader, fs[2])
    local ok, err = produce(c, "hw", 0, 6, 6, { retries = 0, request_timeout_ms = 300, flush_ms = 3000 })
    assert.is_falsy(ok)
    assert.matches("REQUEST_TIMED_OUT", tostring(err))
    local lead = c:partition("hw", 0).replicas_state[leader]
    assert.are.equal(6, lead.log_end_offset)
    assert.are.equal(5, lead.high_watermark)
    local got = consume(c, "hw", 0, 6, 500)
    assert.are.equal(5, #got) -- the uncommitted record is not served
    c:heal(leader, fs[1])
    c:heal(leader, fs[2])
    assert(c:wait_for_replicas("hw", 0, 10000))
    assert.are.equal(6, c:partition("hw", 0).replicas_state[leader].high_watermark)
    got = consume(c, "hw", 0, 6, 10000)
    assert.are.equal(6, #got)
    assert.are.equal("v6", got[6])
  end)
end)

describe("the group coordinator", function()
  local c

  setup(function()
    c = assert(kiq.cluster{ brokers = 3, ["offsets.topic.num.partitions"] = 3, ["broker.session.timeout.ms"] = 1500,
      ["broker.heartbeat.interval.ms"] = 200 })
  end)

  teardown(function()
    if c then c:stop() end
  end)

  -- polls until n records came, tolerating the errors of a coordinator
  -- still moving (the client looks for it again)
  local function poll_values(cons, n)
    local vals = {}
    assert(kiq.wait_for(function()
      local ms = cons:poll(200)
      for _, m in ipairs(ms or {}) do vals[#vals + 1] = m.value end
      return #vals >= n
    end, 20000, n .. " records"))
    return vals
  end

  local function group_session(group, n)
    local cons = assert(c:consumer{ group_id = group, auto_offset_reset = "earliest" })
    assert(cons:subscribe({ "gt" }, { enable_auto_commit = false }))
    local vals = poll_values(cons, n)
    assert(cons:commit())
    cons:close()
    return vals
  end

  -- Kafka's partition for a group: Utils.abs (Math.abs, MIN_VALUE -> 0) of
  -- Java's String.hashCode, modulo the partition count (ASCII ids here).
  local function offsets_partition(group, n)
    local h = 0
    for i = 1, #group do h = (h * 31 + group:byte(i)) % 4294967296 end
    if h >= 2147483648 then h = 4294967296 - h end
    return (h % 2147483648) % n
  end

  -- A coordinator checks committed topics against the cluster's metadata,
  -- not against the replicas it hosts (it once answered
  -- UNKNOWN_TOPIC_OR_PARTITION for a topic it held no replica of).
  it("takes commits for a replication-factor-1 topic whichever broker coordinates the group", function()
    local a = assert(c:admin())
    assert(a:create_topics{ { name = "rf1", partitions = 1, replication_factor = 1 } })
    a:close()
    assert(c:wait_for_leader("rf1", 0, 10000))
    local first = assert(c:consumer{ group_id = "rf1-probe" })
    assert(first:commit{ { topic = "rf1", partition = 0, offset = 0 } }) -- makes __consumer_offsets
    first:close()
    local covered = {}
    for i = 1, 200 do
      local group = "rf1-g" .. i
      local coord = c:wait_for_leader("__consumer_offsets", offsets_partition(group, 3), 10000)
      if coord and not covered[coord] then
        covered[coord] = group
        local cons = assert(c:consumer{ group_id = group })
        assert(cons:commit{ { topic = "rf1", partition = 0, offset = 7 + coord } })
        local _, err = cons:commit{ { topic = "rf1", partition = 1, offset = 1 } }
        assert.matches("UNKNOWN_TOPIC_OR_PARTITION", err)
        cons:close()
        local g
        for _, x in ipairs(c:broker(coord):groups()) do
          if x.id == group then g = x end
        end
        assert.are.equal(7 + coord, g.offsets.rf1[0].offset)
      end
      if covered[0] and covered[1] and covered[2] then break end
    end
    -- two of the three hold no replica of rf1
    for id = 0, 2 do assert.is_not_nil(covered[id], "no group coordinated by broker " .. id) end
  end)

  it("moves with the leadership of the group's __consumer_offsets partition, committed offsets and all", function()
    create(c, "gt", 1)
    assert(produce(c, "gt", 0, 1, 10))
    group_session("probe", 10) -- makes __consumer_offsets
    -- a group coordinated away from broker 0, which hosts the controller
    local group, gp, coord
    for i = 1, 50 do
      local p = offsets_partition("g" .. i, 3)
      local leader = c:wait_for_leader("__consumer_offsets", p, 10000)
      if leader ~= 0 then
        group, gp, coord = "g" .. i, p, leader
        break
      end
    end
    assert.is_not_nil(group)
    assert.are.equal(10, #group_session(group, 10))
    -- only the leader of the group's partition has the group
    for id = 0, 2 do
      local found
      for _, g in ipairs(c:broker(id):groups()) do
        if g.id == group then found = g end
      end
      if id == coord then
        assert.are.equal(gp, found.offsets_partition)
        assert.are.equal(10, found.offsets.gt[0].offset)
      else
        assert.is_nil(found)
      end
    end
    c:kill(coord)
    local new = assert(c:wait_for_leader("__consumer_offsets", gp, 10000, coord))
    local g
    assert(kiq.wait_for(function()
      for _, x in ipairs(c:broker(new):groups()) do
        if x.id == group then g = x end
      end
      return g
    end, 5000, "the group loaded on the new leader"))
    assert.are.equal(10, g.offsets.gt[0].offset)
    -- a new member resumes where the group committed
    assert(produce(c, "gt", 0, 11, 12))
    assert.are.same({ "v11", "v12" }, group_session(group, 2))
  end)
end)
