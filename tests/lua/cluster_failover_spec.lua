-- Failover in an in-process cluster, steered with the cluster controls:
-- a killed leader is replaced from the ISR without losing acknowledged
-- records, a divergent uncommitted tail is truncated, a paused broker is
-- fenced and comes back, a restarted controller replays the same state.
local kiq = require "kafkaiq"
kiq.log_level("error")

local function records(c, topic, partition, n)
  local cons = assert(c:consumer{ auto_offset_reset = "earliest", fetch_max_wait_ms = 50 })
  assert(cons:assign{ { topic = topic, partition = partition, offset = 0 } })
  local got = {}
  kiq.wait_for(function()
    for _, m in ipairs(assert(cons:poll(200))) do got[#got + 1] = m end
    return #got >= n
  end, 15000, ("%d records from %s-%d"):format(n, topic, partition))
  cons:close()
  return got
end

-- A topic of three partitions, replicated on all three brokers; Kafka's
-- placement gives each broker one leadership. Returns a partition led away
-- from broker 0 (which hosts the controller, kept alive) and its leader.
local function create(c, name)
  local a = assert(c:admin())
  assert(a:create_topics{ { name = name, partitions = 3, replication_factor = 3 } })
  a:close()
  for p = 0, 2 do
    assert(c:wait_for_isr(name, p, 3, 10000))
    local leader = assert(c:wait_for_leader(name, p, 10000))
    if leader ~= 0 then return p, leader end
  end
  error("every partition is led by broker 0")
end

local function produce(c, topic, partition, from, to, acks)
  local p = assert(c:producer{ acks = acks or -1, linger_ms = 0, retries = 10 })
  for i = from, to do assert(p:send(topic, "k" .. i, "v" .. i, { partition = partition })) end
  local ok, err = p:flush(15000)
  p:close()
  return ok, err
end

describe("cluster failover", function()
  local c
  after_each(function()
    if c then c:stop() end
    c = nil
  end)

  it("moves a leadership to an in-sync replica on request, which stays the preferred one", function()
    c = assert(kiq.cluster{ brokers = 3 })
    local part, leader = create(c, "m")
    local to = leader % 2 + 1 -- the other of brokers 1 and 2
    assert.is_true(c:move_leader("m", part, to))
    assert.are.equal(to, assert(c:wait_for_leader("m", part, 10000, leader)))
    assert.are.equal(to, c:partition("m", part).replicas[1])
    assert.are.equal(0, c:elect_preferred_leaders())
    assert(produce(c, "m", part, 1, 10))
    local ok, err = c:move_leader("m", 99, to)
    assert.is_nil(ok)
    assert.matches("no partition m%-99", err)
  end)

  it("elects a new leader from the ISR when the leader dies, keeping every acknowledged record", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local part, leader = create(c, "f")
    assert(produce(c, "f", part, 1, 200))
    assert(c:wait_for_replicas("f", part, 10000))
    local epoch = c:partition("f", part).leader_epoch
    c:kill(leader)
    local new = assert(c:wait_for_leader("f", part, 10000, leader))
    assert.are_not.equal(leader, new)
    local info = c:partition("f", part)
    assert.is_true(info.leader_epoch > epoch)
    for _, id in ipairs(info.isr) do assert.are_not.equal(leader, id) end
    assert(produce(c, "f", part, 201, 300))
    local got = records(c, "f", part, 300)
    local seen = {}
    for _, m in ipairs(got) do seen[m.value] = (seen[m.value] or 0) + 1 end
    for i = 1, 300 do assert.is_truthy(seen["v" .. i], "v" .. i .. " lost") end
    -- the old leader comes back as a follower and catches up
    assert(c:restart(leader))
    assert(c:wait_for_isr("f", part, 3, 15000))
    assert(c:wait_for_replicas("f", part, 15000))
    -- preferred-leader election gives the leadership back to its first replica
    local before = c:partition("f", part)
    assert.are.equal(leader, before.replicas[1])
    assert.is_true(c:elect_preferred_leaders() >= 1)
    local after = c:partition("f", part)
    assert.are.equal(leader, after.leader)
    assert.is_true(after.leader_epoch > before.leader_epoch)
    assert(produce(c, "f", part, 301, 310))
  end)

  it("takes the controller's topic id for a log left without partition.metadata, and rejoins the ISR", function()
    -- a SIGKILL right after a topic was created used to leave a partition
    -- directory without its id; the restarted broker made one up and refused
    -- every LeaderAndIsr naming the real one, so it never rejoined
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local part, leader = create(c, "tid")
    assert(produce(c, "tid", part, 1, 50))
    assert(c:wait_for_replicas("tid", part, 10000))
    local dir = c:broker(leader).dir
    c:kill(leader)
    for p = 0, 2 do assert(os.remove(("%s/tid-%d/partition.metadata"):format(dir, p))) end
    assert(c:restart(leader))
    for p = 0, 2 do assert(c:wait_for_isr("tid", p, 3, 15000)) end
    local function id_file(d, p)
      local f = assert(io.open(("%s/tid-%d/partition.metadata"):format(d, p)))
      local text = f:read("*a")
      f:close()
      return text
    end
    assert(kiq.wait_for(function()
      for p = 0, 2 do
        if id_file(c:broker(0).dir, p) ~= id_file(dir, p) then return false end
      end
      return true
    end, 10000, "the restarted broker to write the controller's topic id"))
    assert(produce(c, "tid", part, 51, 60))
    assert(c:wait_for_replicas("tid", part, 10000)) -- it follows again
  end)

  it("moves the leadership of a full log directory to a replica that can write, and takes it back when there is room", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local part, leader = create(c, "full")
    assert(produce(c, "full", part, 1, 100))
    assert(c:wait_for_replicas("full", part, 10000))
    local epoch = c:partition("full", part).leader_epoch
    assert(c:broker(leader):inject_disk_fault{ errno = "ENOSPC" })
    -- the next append fails for want of space: the directory is full, the
    -- controller hears the replica is impaired and elects another leader
    assert(produce(c, "full", part, 101, 200))
    local info = c:partition("full", part)
    assert.are_not.equal(leader, info.leader)
    assert.is_true(info.leader_epoch > epoch)
    for _, id in ipairs(info.isr) do assert.are_not.equal(leader, id) end
    assert.equals("No space left on device", c:broker(leader):state().log_dirs[1].full)
    -- the preferred replica is not elected while it cannot write
    c:elect_preferred_leaders()
    assert.are_not.equal(leader, c:partition("full", part).leader)
    local got = records(c, "full", part, 200)
    assert.equals(200, #got)
    -- room again: it catches up, rejoins the ISR and can lead again
    c:broker(leader):clear_disk_fault()
    assert(c:wait_for_isr("full", part, 3, 15000))
    assert(kiq.wait_for(function()
      c:elect_preferred_leaders()
      return c:partition("full", part).leader == leader
    end, 10000, "the preferred replica to lead again"))
    assert(produce(c, "full", part, 201, 210))
    assert.equals(210, #records(c, "full", part, 210))
  end)

  it("gives up a leadership whose log the scrubber found damaged and fetches the damaged range again", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
                            ["log.segment.bytes"] = 2048, ["kafkaiq.log.scrub.interval.ms"] = 0 })
    local part, leader = create(c, "scrub")
    local p = assert(c:producer{ acks = -1, linger_ms = 0 })
    for i = 1, 40 do
      assert(p:send("scrub", "k" .. i, ("v%d %s"):format(i, ("x"):rep(100)), { partition = part }))
      assert(p:flush(10000))
    end
    p:close()
    assert(c:wait_for_replicas("scrub", part, 10000))
    local b = c:broker(leader)
    local pipe = assert(io.popen(("ls '%s/scrub-%d' | grep '\\.log$' | sort"):format(b.dir, part)))
    local segs = {}
    for line in pipe:lines() do segs[#segs + 1] = ("%s/scrub-%d/%s"):format(b.dir, part, line) end
    pipe:close()
    assert.is_true(#segs >= 3)
    local f = assert(io.open(segs[2], "r+b"))
    f:seek("set", 300)
    local byte = f:read(1)
    f:seek("set", 300)
    f:write(string.char((byte:byte() + 1) % 256))
    f:close()
    assert.are.equal(1, b:scrub())
    -- it stops leading, leaves the ISR, fetches the range again and comes back whole
    local new = assert(c:wait_for_leader("scrub", part, 10000, leader))
    assert.are_not.equal(leader, new)
    assert(c:wait_for_isr("scrub", part, 3, 15000))
    assert(c:wait_for_replicas("scrub", part, 10000))
    assert.is_nil(b:state().topics.scrub.partitions[part].damaged)
    assert.are.equal(0, b:scrub())
    assert(kiq.wait_for(function()
      c:elect_preferred_leaders()
      return c:partition("scrub", part).leader == leader
    end, 10000, "the repaired replica to lead again"))
    local got = records(c, "scrub", part, 40)
    for i = 1, 40 do assert.equals("k" .. i, got[i].key) end
  end)

  it("gives up a leadership whose segment file was cut under it and fetches the lost range again", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
                            ["log.segment.bytes"] = 2048, ["kafkaiq.log.scrub.interval.ms"] = 0 })
    local part, leader = create(c, "cut")
    local p = assert(c:producer{ acks = -1, linger_ms = 0 })
    for i = 1, 40 do
      assert(p:send("cut", "k" .. i, ("v%d %s"):format(i, ("x"):rep(100)), { partition = part }))
      assert(p:flush(10000))
    end
    p:close()
    assert(c:wait_for_replicas("cut", part, 10000))
    local b = c:broker(leader)
    local pipe = assert(io.popen(("ls '%s/cut-%d' | grep '\\.log$' | sort"):format(b.dir, part)))
    local segs = {}
    for line in pipe:lines() do segs[#segs + 1] = ("%s/cut-%d/%s"):format(b.dir, part, line) end
    pipe:close()
    assert.is_true(#segs >= 3)
    os.execute("truncate -s 200 '" .. segs[2] .. "'")
    assert.are.equal(1, b:scrub())
    -- it stops leading, leaves the ISR, fetches the lost range again and
    -- comes back whole; its disk's loss stays on record for an operator
    local new = assert(c:wait_for_leader("cut", part, 10000, leader))
    assert.are_not.equal(leader, new)
    assert(c:wait_for_isr("cut", part, 3, 15000))
    assert(c:wait_for_replicas("cut", part, 10000))
    local st = b:state().topics.cut.partitions[part]
    assert.is_nil(st.damaged)
    assert.is_not_nil(st.data_loss)
    assert(kiq.wait_for(function()
      c:elect_preferred_leaders()
      return c:partition("cut", part).leader == leader
    end, 10000, "the repaired replica to lead again"))
    local got = records(c, "cut", part, 40)
    for i = 1, 40 do assert.equals("k" .. i, got[i].key) end
  end)

  it("moves leaderships back to preferred replicas on its own (auto.leader.rebalance.enable)", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1000, ["broker.heartbeat.interval.ms"] = 200,
      ["leader.imbalance.check.interval.seconds"] = 1 })
    local part, leader = create(c, "pl")
    c:pause(leader)
    assert(c:wait_for_leader("pl", part, 10000, leader))
    c:resume(leader)
    assert(c:wait_for_isr("pl", part, 3, 15000))
    assert(kiq.wait_for(function() return c:partition("pl", part).leader == leader end, 10000,
      "the preferred replica to lead again"))
  end)

  it("truncates a follower's divergent uncommitted tail after a leader change", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200,
      ["replica.lag.time.max.ms"] = 60000 })
    local part, leader = create(c, "d")
    assert(produce(c, "d", part, 1, 10))
    assert(c:wait_for_replicas("d", part, 10000))
    local committed = c:partition("d", part).replicas_state[leader].high_watermark
    -- the followers stop replicating: what the leader takes now is its alone
    for id = 0, 2 do
      if id ~= leader then c:cut(leader, id) end
    end
    assert(produce(c, "d", part, 11, 15, 1))
    local lead_state = c:partition("d", part).replicas_state[leader]
    assert.is_true(lead_state.log_end_offset > committed)
    assert.are.equal(committed, lead_state.high_watermark)
    c:kill(leader)
    local new = assert(c:wait_for_leader("d", part, 10000, leader))
    for id = 0, 2 do
      if id ~= leader then c:heal(leader, id) end
    end
    assert(produce(c, "d", part, 16, 40))
    assert(c:restart(leader))
    assert(c:wait_for_isr("d", part, 3, 15000))
    assert(c:wait_for_replicas("d", part, 15000))
    local info = c:partition("d", part)
    assert.are.equal(info.replicas_state[new].log_end_offset, info.replicas_state[leader].log_end_offset)
    -- the old leader now holds the new leader's records, not its own tail
    local got = records(c, "d", part, 35)
    for _, m in ipairs(got) do
      local i = tonumber(m.value:sub(2))
      assert.is_false(i >= 11 and i <= 15, "the divergent record " .. m.value .. " survived")
    end
  end)

  it("moves a cleanly stopped leader's partitions before it goes (controlled shutdown)", function()
    -- a session timeout far longer than the test: only the controlled
    -- shutdown can have moved the leadership
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 600000 })
    local part, leader = create(c, "cs")
    assert(produce(c, "cs", part, 1, 10))
    c:stop_broker(leader)
    local info = c:partition("cs", part)
    assert.are_not.equal(leader, info.leader)
    assert.is_true(c:controller().brokers[leader].fenced)
    for _, id in ipairs(info.isr) do assert.are_not.equal(leader, id) end
    assert(produce(c, "cs", part, 11, 20))
    assert(c:restart(leader))
    assert(kiq.wait_for(function() return not c:controller().brokers[leader].fenced end, 10000, "the broker back"))
    assert(c:wait_for_isr("cs", part, 3, 15000))
    assert(c:wait_for_replicas("cs", part, 15000))
    assert.are.equal(20, #records(c, "cs", part, 20))
  end)

  it("acknowledges a commit only once the offsets topic's ISR has it", function()
    c = assert(kiq.cluster{ brokers = 3, ["offsets.commit.timeout.ms"] = 500, ["replica.lag.time.max.ms"] = 60000,
      ["offsets.topic.num.partitions"] = 5 })
    local part = create(c, "oc")
    local cons = assert(c:consumer{ group_id = "gw", log = function() end })
    assert(cons:assign{ { topic = "oc", partition = part, offset = 0 } })
    assert(cons:commit{ { topic = "oc", partition = part, offset = 1 } })
    -- "gw": Java hashCode 3312, so partition 3312 % 5 = 2 of __consumer_offsets
    assert(c:wait_for_isr("__consumer_offsets", 2, 3, 10000))
    local leader = c:partition("__consumer_offsets", 2).leader
    for id = 0, 2 do
      if id ~= leader then c:cut(leader, id) end
    end
    local ok, err = cons:commit{ { topic = "oc", partition = part, offset = 2 } }
    assert.is_nil(ok)
    assert.matches("COORDINATOR_NOT_AVAILABLE", err)
    for id = 0, 2 do
      if id ~= leader then c:heal(leader, id) end
    end
    assert(kiq.wait_for(function() return cons:commit{ { topic = "oc", partition = part, offset = 3 } } end, 10000,
      "a commit once the followers replicate again"))
    cons:close()
    -- a KIP-848 member's join writes the group's records: with the
    -- followers cut off it is not acknowledged either
    for id = 0, 2 do
      if id ~= leader then c:cut(leader, id) end
    end
    local conn = assert(require("kafkaiq.client.connection").open("127.0.0.1", c:broker(leader).port,
      { client_id = "spec", connect_timeout_ms = 5000, request_timeout_ms = 10000 }))
    local hb = assert(conn:request(68, { group_id = "gw", member_id = "member-of-gw-000000001", member_epoch = 0,
      rebalance_timeout_ms = 10000, subscribed_topic_names = { "oc" } }))
    conn:close()
    assert.are.equal(15, hb.error_code) -- COORDINATOR_NOT_AVAILABLE
  end)

  for _, unclean in ipairs{ false, true } do
    it(("leaves a partition whose ISR died offline%s"):format(unclean and ", unless unclean election is on" or ""),
      function()
        c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1000, ["broker.heartbeat.interval.ms"] = 200,
          ["replica.lag.time.max.ms"] = 500, ["unclean.leader.election.enable"] = tostring(unclean) })
        local part, leader = create(c, "u")
        -- the followers fall out of the ISR: the leader is its only member
        for id = 0, 2 do
          if id ~= leader then c:cut(leader, id) end
        end
        assert(produce(c, "u", part, 1, 3, 1))
        assert(c:wait_for_isr("u", part, 1, 10000))
        c:kill(leader)
        if unclean then
          local new = assert(c:wait_for_leader("u", part, 10000, leader))
          assert.are_not.equal(leader, new)
          -- the election made the new leader the ISR; the other live
          -- follower may have caught up with it and joined since
          local isr = c:partition("u", part).isr
          local has = {}
          for _, id in ipairs(isr) do has[id] = true end
          assert.is_true(has[new], "the new leader in the ISR")
          assert.is_nil(has[leader], "the dead leader out of it")
        else
          assert(kiq.wait_for(function() return c:controller().brokers[leader].fenced end, 10000, "the fence"))
          local info = c:partition("u", part)
          assert.are.equal(-1, info.leader)
          assert.are.same({ leader }, info.isr) -- the last ISR member is remembered
        end
      end)
  end

  it("applies the controller's orders while its data plane is flooded", function()
    local connection = require "kafkaiq.client.connection"
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1000, ["broker.heartbeat.interval.ms"] = 200,
      ["num.io.threads"] = 1, ["queued.max.requests"] = 1, ["kafkaiq.hook.max.instructions"] = 1e12 })
    local part, leader = create(c, "fl")
    local busy = (leader + 1) % 3
    if busy == 0 then busy = (leader + 2) % 3 end
    local conns = {}
    for i = 1, 20 do
      conns[i] = assert(connection.open("127.0.0.1", c:broker(busy).port,
        { client_id = "flood", connect_timeout_ms = 2000, request_timeout_ms = 60000 }))
    end
    -- every client request to `busy` now burns its one I/O thread until the
    -- interceptor's wall-clock bound (1 s) stops it, and the queue behind
    -- it holds one: 20 requests keep its data plane flooded for 20 s
    assert(c:broker(busy):intercept{ on = "request", api = "Metadata",
      source = "return function() local x = 0 for i = 1, 1e9 do x = x + i end end" })
    for _, conn in ipairs(conns) do assert(conn:send_request(3, { topics = {} })) end
    assert(kiq.wait_for(function() return c:broker(busy):state().request_queue.depth >= 1 end, 5000, "a full request queue"))
    -- the controller moves the leadership; the flooded broker must follow at once
    c:pause(leader)
    local new = assert(c:wait_for_leader("fl", part, 10000, leader))
    assert(kiq.wait_for(function()
      local st = c:broker(busy):state().topics.fl.partitions[part]
      return st.leader == new and st.role == (new == busy and "leader" or "follower")
    end, 5000, "the flooded broker to apply the new leadership"))
    assert.is_true(c:broker(busy):state().request_queue.depth >= 1, "the data plane was still flooded")
    for _, conn in ipairs(conns) do conn:close() end
    c:resume(leader)
  end)

  it("fences a paused broker, moves its leaderships, and takes it back when it resumes", function()
    c = assert(kiq.cluster{ brokers = 3, ["broker.session.timeout.ms"] = 1000, ["broker.heartbeat.interval.ms"] = 200,
      ["replica.lag.time.max.ms"] = 1000 })
    local a = assert(c:admin())
    assert(a:create_topics{ { name = "p", partitions = 6, replication_factor = 3 } })
    a:close()
    for i = 0, 5 do assert(c:wait_for_leader("p", i, 10000)) end
    c:pause(2)
    assert(kiq.wait_for(function() return c:controller().brokers[2].fenced end, 10000, "broker 2 to be fenced"))
    for i = 0, 5 do
      local info = c:partition("p", i)
      assert.are_not.equal(2, info.leader)
      for _, id in ipairs(info.isr) do assert.are_not.equal(2, id) end
    end
    c:resume(2)
    assert(kiq.wait_for(function() return not c:controller().brokers[2].fenced end, 10000, "broker 2 to be back"))
    for i = 0, 5 do assert(c:wait_for_isr("p", i, 3, 15000)) end
  end)

  it("drops a follower whose link is slowed past replica.lag.time.max.ms from the ISR, and takes it back", function()
    c = assert(kiq.cluster{ brokers = 3, ["replica.lag.time.max.ms"] = 1000 })
    local part, leader = create(c, "s")
    local follower = (leader + 1) % 3
    local id = assert(c:slow(leader, follower, 3000))
    assert(produce(c, "s", part, 1, 5, 1))
    assert(kiq.wait_for(function()
      for _, r in ipairs(c:partition("s", part).isr) do
        if r == follower then return false end
      end
      return true
    end, 15000, "the slowed follower to leave the ISR"))
    assert(c:broker(leader):remove_intercept(id))
    assert(c:wait_for_isr("s", part, 3, 15000))
    assert(c:wait_for_replicas("s", part, 15000))
  end)

  it("replays the metadata log when the controller restarts: the cluster state is unchanged", function()
    c = assert(kiq.cluster{ brokers = 3 })
    local a = assert(c:admin())
    assert(a:create_topics{ { name = "m1", partitions = 3, replication_factor = 3 },
      { name = "m2", partitions = 2, replication_factor = 2 } })
    a:close()
    for i = 0, 2 do assert(c:wait_for_isr("m1", i, 3, 10000)) end
    local function view()
      local out = {}
      for name, parts in pairs(c:controller().topics) do
        for p, info in pairs(parts) do
          out[#out + 1] = ("%s-%d leader=%d epoch=%d replicas=%s"):format(name, p, info.leader, info.leader_epoch,
            table.concat(info.replicas, ","))
        end
      end
      table.sort(out)
      return table.concat(out, "\n")
    end
    local before = view()
    local offset = c:controller().metadata_offset
    assert(c:restart(0))
    assert.are.equal(offset, c:controller().metadata_offset)
    assert.are.equal(before, view())
    assert(kiq.wait_for(function()
      local live = 0
      for _, b in pairs(c:controller().brokers) do
        if not b.fenced then live = live + 1 end
      end
      return live == 3
    end, 10000, "the brokers to heartbeat the restarted controller"))
    assert(produce(c, "m1", 0, 1, 20))
  end)
end)
