-- kafkaiq.cluster: a replicated cluster of in-process brokers, and the
-- controls a test or scenario needs over it: kill, restart or pause a
-- broker, cut or slow the replication link between two, and read every
-- replica's state. Reached as kiq.cluster{...} (lua/kafkaiq.lua).
--
-- The first `voters` brokers (1 unless told) are the controller quorum's
-- voters, on their control-plane listeners (combined nodes); or, with
-- `controllers`, that many controller-only nodes (process.roles=controller,
-- ids brokers .. brokers + controllers - 1) are. The quorum's leader is the
-- active controller, every broker registers with it and takes its orders
-- there.

local M = {}
local Cluster = {}
Cluster.__index = Cluster

local cluster_opts = { brokers = true, controllers = true, dir = true, host = true, voters = true }

-- M.new(kiq, { brokers = 3, voters = 1 | controllers = nil, dir = nil, host = "127.0.0.1",
--   ["kafka.name"] = value, ... })
-- -> cluster | nil, err. Waits (bounded) until every broker registered.
function M.new(kiq, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("cluster: options table expected", 3) end
  for k in pairs(opts) do
    if type(k) ~= "string" or (not cluster_opts[k] and not k:find("%.")) then
      error("cluster: unknown option '" .. tostring(k) .. "'", 3)
    end
  end
  local n = opts.brokers or 3
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then error("cluster: brokers must be a positive integer", 3) end
  local nc = opts.controllers
  if nc ~= nil and (type(nc) ~= "number" or nc < 1 or nc ~= math.floor(nc) or opts.voters) then
    error("cluster: controllers must be a positive integer, instead of voters", 3)
  end
  local nv = nc or opts.voters or 1
  if type(nv) ~= "number" or nv < 1 or (not nc and nv > n) or nv ~= math.floor(nv) then
    error("cluster: voters must be an integer from 1 to brokers", 3)
  end
  local host = opts.host or "127.0.0.1"
  local ports, taken, voters, voter_ids = {}, {}, {}, {}
  for i = 0, nv - 1 do
    local id = nc and n + i or i
    repeat ports[id] = kiq.core.free_port() until not taken[ports[id]]
    taken[ports[id]] = true
    voters[#voters + 1] = ("%d@%s:%d"):format(id, host, ports[id])
    voter_ids[#voter_ids + 1] = id
  end
  local self = setmetatable({ kiq = kiq, n = n, voter_ids = voter_ids, brokers = {}, host = host }, Cluster)
  local rf = tostring(math.min(3, n))
  for id = 0, n + (nc or 0) - 1 do
    local cfg = {
      id = id, host = host,
      control_port = ports[id] or 0,
      controller_only = id >= n or nil,
      dir = opts.dir and (opts.dir .. (id >= n and "/controller-" or "/broker-") .. id) or nil,
      ["controller.quorum.voters"] = table.concat(voters, ","),
      ["default.replication.factor"] = rf,
      ["offsets.topic.replication.factor"] = rf,
    }
    for k, v in pairs(opts) do
      if k:find("%.") then cfg[k] = v end
    end
    if cfg.dir then os.execute("mkdir -p '" .. cfg.dir .. "'") end
    cfg.start = false
    cfg.share_cores = n
    local b, err = kiq.broker(cfg)
    if not b then
      self:stop()
      return nil, ("broker %d: %s"):format(id, err)
    end
    b.control_port = ports[id] -- a voter's control-plane listener
    self.brokers[id] = b
  end
  -- one set for the process's brokers, so each one's HTTP listener can kill,
  -- pause or cut any of them (/api/brokers, /api/links); made after the
  -- brokers, so a collection frees it first
  self.set = assert(kiq.core.broker_set_new())
  for id = 0, n + (nc or 0) - 1 do assert(self.set:add(self.brokers[id].handle)) end
  -- the voters first, so the brokers find a quorum
  local order = {}
  for _, id in ipairs(voter_ids) do order[#order + 1] = id end
  for id = 0, n - 1 do
    if not ports[id] then order[#order + 1] = id end
  end
  for _, id in ipairs(order) do
    local ok, err = self.brokers[id]:start()
    if not ok then
      self:stop()
      return nil, ("broker %d: %s"):format(id, err)
    end
  end
  local ok, err = kiq.wait_for(function()
    local c = self:controller()
    if not c then return false end
    local live = 0
    for _, b in pairs(c.brokers) do
      if not b.fenced then live = live + 1 end
    end
    return live == n
  end, 10000, "every broker to register with the controller")
  if not ok then
    self:stop()
    return nil, err
  end
  return self
end

-- "host:port,..." of every running broker's client listener.
function Cluster:bootstrap()
  local out = {}
  for id = 0, self.n - 1 do
    local b = self.brokers[id]
    if b and b:running() then out[#out + 1] = b.bootstrap end
  end
  return table.concat(out, ",")
end

function Cluster:broker(id)
  local b = self.brokers[id]
  if not b then error("cluster: no broker " .. tostring(id), 2) end
  return b
end

-- A batch's journey across the cluster: each running broker's part
-- (b:journey), merged in time order. journey(topic, partition, offset) or
-- journey{ trace = id }.
function Cluster:journey(topic, partition, offset)
  local running = {}
  for id = 0, self.n - 1 do
    local b = self.brokers[id]
    if b and b:running() then running[#running + 1] = b end
  end
  if type(topic) == "table" then
    -- the leader's part knows the trace; the others the batch's offsets
    local found
    for _, b in ipairs(running) do
      found = found or (b:journey(topic))
    end
    if not found then return nil, "no journey kept for it" end
    topic, partition, offset = found.topic, found.partition, found.first_offset
  end
  local parts = {}
  for _, b in ipairs(running) do parts[#parts + 1] = (b:journey(topic, partition, offset)) end
  return self.kiq.merge_journeys(parts)
end

-- The active controller's view: brokers (epoch, fenced) and every
-- partition's leader, leader epoch, replicas and ISR; and its broker id.
-- nil while no voter leads.
function Cluster:controller()
  for _, id in ipairs(self.voter_ids) do
    local b = self.brokers[id]
    local view = b and b:running() and b:controller()
    if view then return view, id end
  end
end

-- The quorum as its leader sees it (b:state().quorum: role, epoch,
-- leader, high watermark, log end, each voter's log end, lag and last
-- fetch), or nil while none leads. Of two voters that think they lead
-- (one cut off or paused, not yet fenced), the one of the higher epoch.
function Cluster:quorum()
  local best
  for _, id in ipairs(self.voter_ids) do
    local b = self.brokers[id]
    local q = b and b:running() and b:state().quorum
    if q and q.role == "leader" and (not best or q.epoch > best.epoch) then best = q end
  end
  return best
end

-- Each running voter's own view of the quorum, by broker id.
function Cluster:quorum_views()
  local out = {}
  for _, id in ipairs(self.voter_ids) do
    local b = self.brokers[id]
    if b and b:running() then out[id] = b:state().quorum end
  end
  return out
end

local function active_handle(self)
  local _, id = self:controller()
  if not id then return nil end
  return self.brokers[id].handle
end

-- One partition across the cluster: the controller's leader, epochs,
-- replicas and ISR, and each replica's own state (role, leader epoch,
-- log end offset, high watermark) under replicas_state[id].
function Cluster:partition(topic, p)
  local c = self:controller()
  local t = c and c.topics[topic]
  local info = t and t[p]
  if not info then return nil, ("%s-%d is unknown to the controller"):format(topic, p) end
  local out = { leader = info.leader, leader_epoch = info.leader_epoch, partition_epoch = info.partition_epoch,
    replicas = info.replicas, isr = info.isr, replicas_state = {} }
  for _, id in ipairs(info.replicas) do
    local b = self.brokers[id]
    if b and b:running() then
      local st = b:state().topics[topic]
      local ps = st and st.partitions[p]
      if ps and ps.log_end_offset then out.replicas_state[id] = ps end
    end
  end
  return out
end

-- Waits until the partition has a leader (other than `not_id`) and
-- returns it.
function Cluster:wait_for_leader(topic, p, timeout_ms, not_id)
  local leader
  local ok, err = self.kiq.wait_for(function()
    local info = self:partition(topic, p)
    leader = info and info.leader
    return leader and leader >= 0 and leader ~= not_id
  end, timeout_ms or 10000, ("a leader for %s-%d"):format(topic, p))
  if not ok then return nil, err end
  return leader
end

-- Waits until the partition's ISR has n members.
function Cluster:wait_for_isr(topic, p, n, timeout_ms)
  return self.kiq.wait_for(function()
    local info = self:partition(topic, p)
    return info and #info.isr == n
  end, timeout_ms or 10000, ("%s-%d's ISR to have %d members"):format(topic, p, n))
end

-- Waits until the leader and every ISR member took their roles, everything
-- the leader has is committed and every ISR member has the leader's log
-- end offset and high watermark: replication caught up.
function Cluster:wait_for_replicas(topic, p, timeout_ms)
  return self.kiq.wait_for(function()
    local info = self:partition(topic, p)
    if not info or info.leader < 0 then return false end
    local lead = info.replicas_state[info.leader]
    if not lead or lead.role ~= "leader" or lead.high_watermark ~= lead.log_end_offset then return false end
    for _, id in ipairs(info.isr) do
      local s = info.replicas_state[id]
      if not s or (id ~= info.leader and s.role ~= "follower") or s.log_end_offset ~= lead.log_end_offset
        or s.high_watermark ~= lead.high_watermark then
        return false
      end
    end
    return true
  end, timeout_ms or 10000, ("%s-%d's replicas to catch up"):format(topic, p))
end

-- Unclean stop of one broker (its process would have died): the
-- controller fences it after broker.session.timeout.ms.
function Cluster:kill(id) self:broker(id):kill() end
function Cluster:stop_broker(id) self:broker(id):stop() end
function Cluster:restart(id) return self:broker(id):restart() end

-- A paused broker keeps serving its clients but stops heartbeating,
-- replicating and, a voter, its Raft traffic and clock, as a process
-- stopped with SIGSTOP would look to the others (its requests still being
-- answered is the difference).
function Cluster:pause(id)
  self:broker(id)
  assert(self.set:pause(id, true))
end

function Cluster:resume(id)
  self:broker(id)
  assert(self.set:pause(id, false))
end

-- Cuts replication from leader `from` to follower `to` (both = true: also
-- the other way). The follower stops fetching; it leaves the ISR after
-- replica.lag.time.max.ms. Two voters cut either way lose their Raft
-- traffic both ways.
function Cluster:cut(from, to, opts)
  self:broker(from)
  self:broker(to)
  assert(self.set:cut(from, to, true))
  if opts and opts.both then self:cut(to, from) end
end

function Cluster:heal(from, to, opts)
  assert(self.set:cut(from, to, false))
  if opts and opts.both then self:heal(to, from) end
end

-- Slows replication from `from` to `to`: the leader holds each of the
-- follower's fetches ms milliseconds (a broker interceptor). Returns the
-- interceptor id; remove it with cluster:broker(from):remove_intercept(id).
function Cluster:slow(from, to, ms)
  return self:broker(from):intercept{ on = "request", api = "Fetch",
    client_id = "kafkaiq-replica-fetcher-" .. to,
    source = ("return function() return { delay_ms = %d } end"):format(ms) }
end

-- Preferred-leader election now: partitions led away from their first
-- replica (after a failover) go back to it when it is in the ISR; what
-- auto.leader.rebalance.enable does every leader.imbalance.check.interval.seconds.
function Cluster:elect_preferred_leaders()
  local h = active_handle(self)
  if not h then return nil, "no active controller" end
  return h:elect_preferred_leaders()
end

-- Voter `id`'s controller writes a metadata snapshot of what it holds now
-- (KIP-630): { end_offset, epoch, file }, its quorum log then starting
-- at end_offset; nil, err on a broker that hosts no voter.
function Cluster:snapshot(id)
  local b = self:broker(id)
  if not b:running() then return nil, "broker " .. id .. " is not running" end
  return b.handle:snapshot_metadata()
end

function Cluster:move_leader(topic, partition, to)
  local h = active_handle(self)
  if not h then return nil, "no active controller" end
  return h:move_leader(topic, partition, to)
end

function Cluster:stop()
  -- no operation from HTTP meanwhile
  if self.set then self.set:free() end
  self.set = nil
  -- the brokers first, then the voters (the first of them last of all),
  -- so the others still reach a controller
  local voter = {}
  for _, id in ipairs(self.voter_ids) do voter[id] = true end
  for id = self.n - 1, 0, -1 do
    local b = self.brokers[id]
    if b and not voter[id] and b:running() then b:stop() end
  end
  for i = #self.voter_ids, 1, -1 do
    local b = self.brokers[self.voter_ids[i]]
    if b and b:running() then b:stop() end
  end
end

function Cluster:producer(opts)
  opts = opts or {}
  opts.bootstrap = opts.bootstrap or self:bootstrap()
  return self.kiq.producer(opts)
end

function Cluster:consumer(opts)
  opts = opts or {}
  opts.bootstrap = opts.bootstrap or self:bootstrap()
  return self.kiq.consumer(opts)
end

function Cluster:admin(opts)
  opts = opts or {}
  opts.bootstrap = opts.bootstrap or self:bootstrap()
  return self.kiq.admin(opts)
end

return M
