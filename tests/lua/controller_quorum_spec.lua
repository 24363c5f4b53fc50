-- The controller quorum in an in-process cluster whose three brokers are
-- all voters: one leader elected, and another when it is killed or paused
-- (the paused one fenced when it comes back); a cut voter neither stops
-- the quorum nor disturbs it (PreVote); and a seeded nemesis of leader
-- kills and pauses, a cut voter and broker bounces, checked for one leader
-- per epoch, committed metadata never lost or reordered (read from each
-- voter's __cluster_metadata-0 segment files) and, with kafkaiq.check,
-- no acknowledged record lost.
local kiq = require "kafkaiq"
local check = require "kafkaiq.check"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local OPTS = { brokers = 3, voters = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
               ["controller.quorum.fetch.timeout.ms"] = 600, ["controller.quorum.election.timeout.ms"] = 300 }

-- ---- every voter's view, sampled: one leader per epoch

local Watch = {}
Watch.__index = Watch

local function watch(c) return setmetatable({ c = c, leaders = {} }, Watch) end

-- Records who each voter says leads each epoch; returns the leader's view.
function Watch:sample()
  local leading
  for id, q in pairs(self.c:quorum_views()) do
    local who = q.role == "leader" and id or (q.leader >= 0 and q.leader or nil)
    if who then
      self.leaders[q.epoch] = self.leaders[q.epoch] or {}
      self.leaders[q.epoch][who] = true
    end
    if q.role == "leader" and (not leading or q.epoch > leading.epoch) then leading = q end
  end
  return leading
end

-- A leader other than `not_id` (any when nil), in an epoch above `above`.
function Watch:wait_leader(not_id, above, timeout_ms)
  local got
  assert(kiq.wait_for(function()
    local q = self:sample()
    if q and q.leader ~= not_id and q.epoch > (above or -1) then got = q end
    return got ~= nil
  end, timeout_ms or 10000, "a quorum leader"))
  return got
end

function Watch:check_one_leader_per_epoch()
  local epochs = 0
  for epoch, who in pairs(self.leaders) do
    local ids = {}
    for id in pairs(who) do ids[#ids + 1] = id end
    assert.are.equal(1, #ids, ("epoch %d has leaders %s"):format(epoch, table.concat(ids, ",")))
    epochs = epochs + 1
  end
  return epochs
end

-- ---- the metadata log on disk: the topics created, in log order

local function uvarint(s, pos)
  local n, shift = 0, 0
  while true do
    local b = s:byte(pos)
    pos = pos + 1
    n = n + (b % 128) * 2 ^ shift
    if b < 128 then return n, pos end
    shift = shift + 7
  end
end

local function varint(s, pos)
  local n
  n, pos = uvarint(s, pos)
  return (n % 2 == 0) and n / 2 or -(n + 1) / 2, pos
end

local function int(s, pos, len)
  local n = 0
  for i = pos, pos + len - 1 do n = n * 256 + s:byte(i) end
  return n
end

local TOPIC_RECORD = 2

-- The names of the TopicRecords below offset `upto` in a voter's
-- __cluster_metadata-0, in offset order (uncompressed batches, as the
-- controller writes them; a batch being written is left out).
local function committed_topics(dir, upto)
  local names = {}
  local ls = assert(io.popen("ls " .. dir .. "/__cluster_metadata-0/*.log 2>/dev/null | sort"))
  for path in ls:lines() do
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    local pos = 1
    while pos + 61 <= #s do
      local base, len = int(s, pos, 8), int(s, pos + 8, 4)
      if pos + 12 + len - 1 > #s or base >= upto then break end
      local attributes = int(s, pos + 21, 2)
      local count = int(s, pos + 57, 4)
      local r = pos + 61
      for _ = 1, count do
        local rlen, at = varint(s, r)
        local next_record = at + rlen
        if attributes % 64 < 32 then -- not a control batch
          local delta, klen, vlen
          at = at + 1 -- attributes
          _, at = varint(s, at) -- timestamp delta
          delta, at = varint(s, at)
          klen, at = varint(s, at)
          if klen > 0 then at = at + klen end
          vlen, at = varint(s, at)
          local _, type_at = uvarint(s, at) -- frame version
          local rtype, ver_at = uvarint(s, type_at)
          if base + delta < upto and rtype == TOPIC_RECORD then
            local _, name_at = uvarint(s, ver_at) -- record version
            local nlen, str_at = uvarint(s, name_at)
            names[#names + 1] = s:sub(str_at, str_at + nlen - 2)
          end
          assert(vlen > 0)
        end
        r = next_record
      end
      pos = pos + 12 + len
    end
  end
  ls:close()
  return names
end

local function is_prefix(a, b)
  if #a > #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

-- Creates a topic of one partition on two brokers through the brokers
-- but `exclude` (a paused broker: in-process, it still answers); true once
-- the controller said it was created (or, asked again, that it exists).
local function create_topic(c, name, exclude)
  local done
  kiq.wait_for(function()
    local bs = {}
    for id = 0, c.n - 1 do
      local b = c:broker(id)
      if id ~= exclude and b:running() then bs[#bs + 1] = b.bootstrap end
    end
    local a = c:admin{ bootstrap = table.concat(bs, ","), request_timeout_ms = 3000 }
    local res, _, results = a:create_topics({ { name = name, partitions = 1, replication_factor = 2 } },
      { timeout_ms = 2500 })
    a:close()
    -- a refused topic comes back as nil, err, results: an earlier try
    -- whose answer was lost (its leader lost the quorum as it committed)
    -- shows as TOPIC_ALREADY_EXISTS there
    local r = (res or results or {})[1]
    done = r ~= nil and (r.error == nil or r.error == "TOPIC_ALREADY_EXISTS")
    return done
  end, 15000, "topic " .. name .. " created")
  return done
end

describe("controller quorum", function()
  local c
  after_each(function()
    if c then c:stop() end
    c = nil
  end)

  it("elects one leader, and another when it is killed, keeping every committed record", function()
    c = assert(kiq.cluster(OPTS))
    local w = watch(c)
    local q = w:wait_leader()
    assert.are.equal(3, #q.voters)
    assert(kiq.wait_for(function()
      q = w:sample()
      if not q then return false end
      for _, v in ipairs(q.voters) do
        if v.lag ~= 0 or v.last_fetch_ms_ago < 0 then return false end
      end
      return true
    end, 10000, "every voter caught up"))
    assert.is_true(q.high_watermark > 0)
    assert(create_topic(c, "before"))
    local old = q.leader
    c:kill(old)
    local new = w:wait_leader(old, q.epoch)
    assert.are_not.equal(old, new.leader)
    assert(create_topic(c, "after"))
    assert.is_truthy(c:controller().topics.before)
    -- the old leader comes back a follower of the new one and catches up
    assert(c:restart(old))
    assert(kiq.wait_for(function()
      local views = c:quorum_views()
      local v, l = views[old], views[new.leader]
      return v and l and v.role == "follower" and v.leader == new.leader and v.log_end == l.log_end
    end, 10000, "the old leader following"))
    local names = committed_topics(c:broker(old).dir, c:quorum().high_watermark)
    assert.are.same({ "before", "after" }, names)
    w:check_one_leader_per_epoch()
  end)

  it("fences a paused leader when it comes back, and is not disturbed by a cut voter", function()
    c = assert(kiq.cluster(OPTS))
    local w = watch(c)
    local q = w:wait_leader()
    local old = q.leader
    c:pause(old)
    local new = w:wait_leader(old, q.epoch)
    assert(create_topic(c, "while-paused", old))
    -- still a leader in its own eyes (its clock stopped with it) until it
    -- hears of the higher epoch
    assert.are.equal("leader", c:quorum_views()[old].role)
    c:resume(old)
    assert(kiq.wait_for(function()
      local v = c:quorum_views()[old]
      return v.role == "follower" and v.epoch == new.epoch and v.leader == new.leader
    end, 10000, "the stale leader fenced"))

    -- a voter cut off from both others: the two commit on, the epoch stays
    local cut = (new.leader + 1) % 3
    if cut == old then cut = (cut + 1) % 3 end
    for id = 0, 2 do
      if id ~= cut then c:cut(id, cut, { both = true }) end
    end
    assert(create_topic(c, "while-cut"))
    for _ = 1, 5 do
      w:sample()
      assert.are.equal(new.leader, c:quorum().leader)
    end
    for id = 0, 2 do
      if id ~= cut then c:heal(id, cut, { both = true }) end
    end
    assert(kiq.wait_for(function()
      local views, l = c:quorum_views(), c:quorum()
      return l and views[cut].log_end == l.log_end and views[cut].leader == new.leader
    end, 10000, "the cut voter caught up"))
    assert.are.equal(new.epoch, c:quorum().epoch)
    w:check_one_leader_per_epoch()
  end)

  it("keeps a broker that is no voter with the controller the quorum elects", function()
    local opts = { brokers = 4 }
    for k, v in pairs(OPTS) do if k ~= "brokers" then opts[k] = v end end
    c = assert(kiq.cluster(opts))
    local w = watch(c)
    local q = w:wait_leader()
    local old = q.leader
    c:kill(old)
    local new = w:wait_leader(old, q.epoch)
    -- broker 3 hosts no voter: what it forwards goes where the quorum's
    -- new leader is, not to the first voter it was configured with
    local b3 = c:broker(3)
    assert(kiq.wait_for(function()
      local conn = connection.open(b3.host, b3.port, { client_id = "quorum-spec" })
      if not conn then return false end
      local resp = conn:request(19, { timeout_ms = 3000, topics = { { name = "via-3", num_partitions = 1,
        replication_factor = 2, assignments = {}, configs = {} } } })
      conn:close()
      local e = resp and resp.topics[1].error_code
      return e == 0 or e == 36 -- TOPIC_ALREADY_EXISTS: an earlier try's
    end, 10000, "a CreateTopics forwarded by broker 3"))
    -- and it heartbeats there: when the new controller fences the killed
    -- broker for its missed session, broker 3 stays unfenced
    assert(kiq.wait_for(function()
      local view = c:controller()
      return view and view.brokers[old] and view.brokers[old].fenced
    end, 10000, "the killed broker fenced by controller " .. new.leader))
    assert.is_false(c:controller().brokers[3].fenced)
    w:check_one_leader_per_epoch()
  end)

  it("survives a seeded nemesis with one leader per epoch, no committed metadata lost and no acknowledged record lost",
     function()
    local seed = tonumber(os.getenv("KIQ_NEMESIS_SEED") or "") or 7
    local rounds = tonumber(os.getenv("KIQ_NEMESIS_ROUNDS") or "") or 8
    math.randomseed(seed)
    c = assert(kiq.cluster(OPTS))
    local w = watch(c)
    w:wait_leader()
    assert(create_topic(c, "data"))
    local h = check.history()
    local n, acks = 0, 0
    local function produce(count)
      local p = assert(c:producer{ acks = -1, linger_ms = 0, retries = 3, request_timeout_ms = 2000,
        on_delivery = function(err, r)
          if err then
            h:fail(r.value, tostring(err))
          else
            acks = acks + 1
            h:ack(r.value, "data", 0, r.offset)
          end
        end })
      for _ = 1, count do
        n = n + 1
        local v = ("%d-%d"):format(seed, n)
        h:send(v, "data", 0)
        assert(p:send("data", nil, v, { partition = 0 }))
      end
      p:flush(15000)
      p:close()
    end

    local committed, acked, faults = {}, {}, {}
    for round = 1, rounds do
      local q = w:wait_leader()
      local fault = ({ "kill", "pause", "cut", "bounce" })[math.random(4)]
      faults[#faults + 1] = fault
      local victim = fault == "cut" and (q.leader + math.random(2)) % 3
                  or fault == "bounce" and math.random(0, 2) or q.leader
      if fault == "kill" then c:kill(victim)
      elseif fault == "pause" then c:pause(victim)
      elseif fault == "cut" then
        for id = 0, 2 do if id ~= victim then c:cut(id, victim, { both = true }) end end
      else c:stop_broker(victim) end
      if fault == "kill" or fault == "pause" then w:wait_leader(victim, q.epoch) end
      local name = "n" .. round
      if create_topic(c, name, fault == "pause" and victim or nil) then acked[#acked + 1] = name end
      produce(20)
      if fault == "kill" or fault == "bounce" then assert(c:restart(victim))
      elseif fault == "pause" then c:resume(victim)
      else
        for id = 0, 2 do if id ~= victim then c:heal(id, victim, { both = true }) end end
      end
      -- the committed metadata so far, from the leader's own log
      local l = w:wait_leader()
      committed[#committed + 1] = committed_topics(c:broker(l.leader).dir, l.high_watermark)
    end

    -- all three voters caught up: the committed logs agree, every snapshot
    -- taken during the run is a prefix of the final one, every acknowledged
    -- topic is in it in the order acknowledged
    local final
    assert(kiq.wait_for(function()
      local l = w:sample()
      if not l then return false end
      for _, v in ipairs(l.voters) do
        if v.lag ~= 0 then return false end
      end
      final = l
      return true
    end, 15000, "every voter caught up"))
    local logs = {}
    for id = 0, 2 do logs[id] = committed_topics(c:broker(id).dir, final.high_watermark) end
    assert.are.same(logs[final.leader], logs[(final.leader + 1) % 3])
    assert.are.same(logs[final.leader], logs[(final.leader + 2) % 3])
    for i, snap in ipairs(committed) do
      assert.is_true(is_prefix(snap, logs[final.leader]), "round " .. i .. "'s committed metadata changed")
    end
    local at = {}
    for i, name in ipairs(logs[final.leader]) do at[name] = i end
    for i, name in ipairs(acked) do
      assert.is_truthy(at[name], name .. " acknowledged, not in the log")
      if i > 1 then assert.is_true(at[name] > at[acked[i - 1]], name .. " out of order") end
    end
    local epochs = w:check_one_leader_per_epoch()

    -- every acknowledged record read back
    assert(c:wait_for_isr("data", 0, 2, 15000))
    local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
    assert(cons:assign{ { topic = "data", partition = 0, offset = 0 } })
    local read = 0
    kiq.wait_for(function()
      for _, m in ipairs(assert(cons:poll(200))) do
        h:poll("reader", "data", 0, m.offset, m.value)
        read = read + 1
      end
      return read >= acks
    end, 15000, "every acknowledged record read")
    cons:close()
    local report = h:check()
    assert.is_true(report.ok, check.summary(report))
    print(("nemesis seed %d: %d rounds (%s), %d epochs, %d topics committed, %d records, %s"):format(
      seed, rounds, table.concat(faults, ","), epochs, #logs[final.leader], n, check.summary(report)))
  end)
end)
