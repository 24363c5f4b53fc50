-- Consumer group membership (Kafka's classic "consumer" protocol with eager
-- rebalancing), driven from consumer:poll: find the coordinator, JoinGroup,
-- assign as leader, SyncGroup, fetch committed offsets, then heartbeat.
--
-- The client is single-threaded and a script may run several members of one
-- group side by side, so JoinGroup and SyncGroup (which the coordinator holds
-- until every member has joined, or until the leader has synced) are sent
-- and their answers collected on later polls instead of waited for: a
-- blocking join would stall the very members it waits for.
--
-- States: "unjoined" (JoinGroup to send) -> "joining" (its answer pending)
-- -> "syncing" (SyncGroup's answer pending) -> "assigned" (partitions known,
-- positions not yet) -> "stable" (fetching, heartbeating).

local core = require "kafkaiq.core"
local bit = require "bit"
local connection = require "kafkaiq.client.connection"
local options = require "kafkaiq.client.options"
local common = require "kafkaiq.client.common"
local errors = require "kafkaiq.client.errors"
local assignors = require "kafkaiq.client.assignors"

local M = {}
local Group = {}
Group.__index = Group

local OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
local JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14

local COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
local ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
local MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID, UNSTABLE_OFFSET_COMMIT = 79, 82, 88

-- This client names topics; OffsetCommit and OffsetFetch v10 take ids only.
local BY_NAME_MAX = 9

-- Eager members own nothing while they join, so version 0 (no owned
-- partitions) says all there is to say.
local SUBSCRIPTION_VERSION, ASSIGNMENT_VERSION = 0, 0

-- subscribe() options, with Kafka's consumer names and defaults.
M.SPEC = {
  session_timeout_ms = options.integer(1, 2 ^ 31 - 1, 45000),
  rebalance_timeout_ms = options.integer(1, 2 ^ 31 - 1),
  max_poll_interval_ms = options.integer(1, 2 ^ 31 - 1),
  heartbeat_interval_ms = options.integer(1, 2 ^ 31 - 1, 3000),
  partition_assignment_strategy = options.custom(assignors.resolve, assignors.resolve({ "range", "roundrobin" })),
  group_instance_id = options.custom(function(v)
    if type(v) ~= "string" or v == "" then return nil, "non-empty string expected" end
    return v
  end),
  auto_offset_reset = options.enum({ "earliest", "latest", "error" }),
  enable_auto_commit = options.boolean(true),
  auto_commit_interval_ms = options.integer(1, 2 ^ 31 - 1, 5000),
  on_assign = options.func(),
  on_revoke = options.func(),
}

-- check_options(opts, level) -> checked subscribe options; raises at level.
function M.check_options(opts, level)
  level = level + 1
  local cfg = options.check(opts, M.SPEC, "subscribe", level)
  if cfg.rebalance_timeout_ms and cfg.max_poll_interval_ms and cfg.rebalance_timeout_ms ~= cfg.max_poll_interval_ms then
    error("subscribe: rebalance_timeout_ms and max_poll_interval_ms name one setting; give one", level)
  end
  cfg.rebalance_timeout_ms = cfg.rebalance_timeout_ms or cfg.max_poll_interval_ms or 300000
  cfg.max_poll_interval_ms = nil
  if cfg.heartbeat_interval_ms >= cfg.session_timeout_ms then
    error("subscribe: heartbeat_interval_ms must be lower than session_timeout_ms", level)
  end
  return cfg
end

-- ---- consumer protocol payloads: an int16 version, then the message ----

local function with_version(version, body)
  return string.char(bit.band(bit.rshift(version, 8), 255), bit.band(version, 255)) .. body
end

-- Decodes a versioned payload. Newer versions only append fields, so they
-- are read as the newest we know, ignoring what follows.
local function decode_versioned(name, bytes)
  if #bytes < 2 then return nil, ("%s: %d bytes, too short for its version"):format(name, #bytes) end
  local hi, lo = bytes:byte(1, 2)
  local version = hi * 256 + lo
  if version >= 32768 then return nil, ("%s: negative version %d"):format(name, version - 65536) end
  local t, err = core.decode_data(name, math.min(version, 1), bytes:sub(3), version > 1)
  return t, err
end

local function encode_subscription(topics)
  return with_version(SUBSCRIPTION_VERSION,
    assert(core.encode_data("ConsumerProtocolSubscription", SUBSCRIPTION_VERSION, { topics = topics })))
end

-- assignment: { [topic] = {partitions...} } -> bytes, topics in name order.
local function encode_assignment(assignment)
  local names = {}
  for topic in pairs(assignment) do names[#names + 1] = topic end
  table.sort(names)
  local list = {}
  for i, topic in ipairs(names) do list[i] = { topic = topic, partitions = assignment[topic] } end
  return with_version(ASSIGNMENT_VERSION,
    assert(core.encode_data("ConsumerProtocolAssignment", ASSIGNMENT_VERSION, { assigned_partitions = list })))
end

-- bytes -> list of { topic, partition } sorted | nil, err. Kafka sends
-- empty bytes to a member given nothing.
local function decode_assignment(bytes)
  local out = {}
  if bytes == nil or #bytes == 0 then return out end
  local t, err = decode_versioned("ConsumerProtocolAssignment", bytes)
  if not t then return nil, err end
  for _, a in ipairs(t.assigned_partitions) do
    for _, p in ipairs(a.partitions) do out[#out + 1] = { topic = a.topic, partition = p } end
  end
  table.sort(out, function(x, y)
    if x.topic ~= y.topic then return x.topic < y.topic end
    return x.partition < y.partition
  end)
  return out
end

M._decode_assignment = decode_assignment
M._encode_assignment = encode_assignment

-- ---- coordinator lookup and offset commits, shared with plain commits ----

-- find_coordinator(cluster, group_id) -> { id, host, port } | nil, err, code.
function M.find_coordinator(cluster, group_id)
  local conn, err = cluster:any_conn()
  if not conn then return nil, err end
  if not conn:version(FIND_COORDINATOR) then
    return nil, ("FindCoordinator not supported by broker %s"):format(conn.addr)
  end
  local resp
  resp, err = conn:request(FIND_COORDINATOR, { key = group_id, key_type = 0, coordinator_keys = { group_id } })
  if not resp then return nil, err end
  local co = resp.coordinators and resp.coordinators[1] or resp
  if co.error_code ~= 0 then
    return nil, errors.format("find coordinator for group '" .. group_id .. "'", co.error_code, co.error_message),
      co.error_code
  end
  return { id = co.node_id, host = co.host, port = co.port }
end

-- send_commit(conn, header, offsets) -> true | nil, err, code. header:
-- group_id, generation_id_or_member_epoch, member_id, group_instance_id;
-- offsets: list of { topic, partition, offset }. code is the first failed
-- partition's error code (nil when the request itself failed).
function M.send_commit(conn, header, offsets)
  local topics, by_topic = {}, {}
  for _, o in ipairs(offsets) do
    local t = by_topic[o.topic]
    if not t then
      t = { name = o.topic, partitions = {} }
      by_topic[o.topic] = t
      topics[#topics + 1] = t
    end
    t.partitions[#t.partitions + 1] = { partition_index = o.partition, committed_offset = o.offset,
      committed_metadata = "" }
  end
  local body = { topics = topics }
  for k, v in pairs(header) do body[k] = v end
  local resp, rerr = conn:request(OFFSET_COMMIT, body, { version = BY_NAME_MAX })
  if not resp then return nil, rerr end
  local err, code
  for _, t in ipairs(resp.topics) do
    for _, p in ipairs(t.partitions) do
      if p.error_code ~= 0 then
        local e = errors.format(("commit %s[%d]"):format(t.name, p.partition_index), p.error_code)
        err = err and (err .. "; " .. e) or e
        code = code or p.error_code
      end
    end
  end
  if err then return nil, err, code end
  return true
end

-- ---- the member ----

-- new(consumer, topics, cfg) -> group. cfg: checked subscribe options.
function M.new(consumer, topics, cfg)
  return setmetatable({
    consumer = consumer,
    group_id = consumer.cfg.group_id,
    topics = topics,
    cfg = cfg,
    member_id = "",
    generation_id = -1,
    protocol = nil,      -- the assignor the coordinator chose
    state = "unjoined",
    coordinator = nil,   -- { id, host, port } once found
    conn = nil,          -- our own connection to the coordinator
    pending = nil,       -- { api, version, corr, deadline }: a JoinGroup or SyncGroup in flight
    owned = {},          -- list of { topic, partition } from the last SyncGroup
    next_heartbeat = 0,
    next_auto_commit = 0,
    fatal = nil,         -- an error that ends membership (FENCED_INSTANCE_ID)
  }, Group)
end

-- g:metadata() -> { group_id, generation_id, member_id, group_instance_id }
-- (Java's groupMetadata()).
function Group:metadata()
  return { group_id = self.group_id, generation_id = self.generation_id, member_id = self.member_id,
    group_instance_id = self.cfg.group_instance_id }
end

-- g:next_due() -> when poll must come back to heartbeat or auto-commit.
function Group:next_due()
  local t = self.next_heartbeat
  if self.cfg.enable_auto_commit and self.state == "stable" then t = math.min(t, self.next_auto_commit) end
  return t
end

-- Forgets the coordinator (it moved or went away); the next request looks it up again.
function Group:_lose_coordinator()
  if self.conn then self.conn:close() end
  self.conn, self.coordinator, self.pending = nil, nil, nil
end

-- A connection to the coordinator, looked up first when unknown.
function Group:_conn()
  if self.conn and self.conn:alive() then return self.conn end
  if not self.coordinator then
    local co, err = M.find_coordinator(self.consumer.cluster, self.group_id)
    if not co then return nil, err end
    self.coordinator = co
  end
  local c, err = connection.open(self.coordinator.host, self.coordinator.port, self.consumer.cfg)
  if not c then
    self.coordinator = nil
    return nil, err
  end
  self.conn = c
  return c
end

-- A request answered at once (Heartbeat, OffsetFetch, OffsetCommit,
-- LeaveGroup) -> response, version | nil, err. opts as conn:request's.
function Group:_request(api, body, opts)
  local conn, err = self:_conn()
  if not conn then return nil, err end
  if not conn:version(api) then
    return nil, ("broker %s does not support %s"):format(conn.addr, connection.api_name(api))
  end
  local resp, v = conn:request(api, body, opts)
  if not resp then
    self:_lose_coordinator()
    return nil, v
  end
  return resp, v
end

-- Sends a request whose answer the coordinator may hold back; _collect
-- picks it up later. timeout_ms bounds how long the answer may take.
function Group:_send(api, body, timeout_ms)
  local conn, err = self:_conn()
  if not conn then return nil, err end
  local pending
  pending, err = conn:send_request(api, body)
  if not pending then
    self:_lose_coordinator()
    return nil, err
  end
  pending.deadline = core.now_ms() + timeout_ms
  self.pending = pending
  return pending.version
end

-- _collect(wait_ms) -> response | false (not yet) | nil, err.
function Group:_collect(wait_ms)
  local p, conn = self.pending, self.conn
  if not (conn and conn:alive()) then
    self.pending = nil
    return nil, "connection to the coordinator lost"
  end
  local resp, err = conn:collect(p, wait_ms)
  if resp == false then
    if core.now_ms() < p.deadline then return false end
    err = "timed out"
  end
  if not resp then
    self.pending = nil
    self:_lose_coordinator()
    return nil, ("%s waiting for %s"):format(err, connection.api_name(p.api_key))
  end
  self.pending = nil
  return resp
end

local function list_copy(parts)
  local out = {}
  for i, p in ipairs(parts) do out[i] = { topic = p.topic, partition = p.partition } end
  return out
end

-- Gives the assignment up before joining again, as the eager protocol
-- does. commit_first: still a member of the generation, so auto-commit
-- saves the positions; after UNKNOWN_MEMBER_ID and the like they are lost
-- and a commit would fail. on_revoke runs while the partitions are still
-- assigned, so it may commit.
function Group:_revoke(commit_first)
  local c = self.consumer
  local owned = self.owned
  -- cleared first: a failing commit below rejoins, which revokes again
  self.owned = {}
  if #owned > 0 then
    if commit_first and self.cfg.enable_auto_commit and self.state == "stable" then
      local ok, err = c:commit()
      if not ok then c.log("auto-commit before rebalance failed: " .. err) end
    end
    if self.cfg.on_revoke then common.call_hook(c, "on_revoke", self.cfg.on_revoke, list_copy(owned)) end
  end
  c:_set_assignment({})
end

function Group:_rejoin(commit_first)
  self:_revoke(commit_first)
  self.state = "unjoined"
end

function Group:_reset_member()
  self.member_id, self.generation_id = "", -1
end

-- What a group error code asks of the member; returns step's (ok, err).
function Group:_on_error(what, code)
  local err = errors.format(("%s for group '%s'"):format(what, self.group_id), code)
  if code == REBALANCE_IN_PROGRESS then
    self:_rejoin(false)
    return true
  elseif code == UNKNOWN_MEMBER_ID or code == ILLEGAL_GENERATION then
    self:_reset_member()
    self:_rejoin(false)
    return true
  elseif code == FENCED_INSTANCE_ID then
    -- another process took our static identity: Kafka's clients stop here
    self:_rejoin(false)
    self.fatal = err
    return nil, err
  elseif code == NOT_COORDINATOR or code == COORDINATOR_NOT_AVAILABLE then
    self:_lose_coordinator()
    if self.state ~= "stable" and self.state ~= "assigned" then self.state = "unjoined" end
    return false, err
  elseif code == COORDINATOR_LOAD_IN_PROGRESS then
    if self.state ~= "stable" and self.state ~= "assigned" then self.state = "unjoined" end
    return false, err
  end
  self:_rejoin(false)
  return nil, err
end

function Group:_join()
  local conn, err = self:_conn()
  if not conn then return false, err end
  local v = conn:version(JOIN_GROUP)
  if not v then return nil, ("broker %s does not support JoinGroup"):format(conn.addr) end
  if self.cfg.group_instance_id and v < 5 then
    self.fatal = ("broker %s speaks JoinGroup up to v%d; static membership needs v5"):format(conn.addr, v)
    return nil, self.fatal
  end
  local meta = encode_subscription(self.topics)
  local protocols = {}
  for i, a in ipairs(self.cfg.partition_assignment_strategy) do protocols[i] = { name = a.name, metadata = meta } end
  -- Java waits rebalance timeout + 5 s for the answer: the coordinator
  -- holds it for up to the rebalance timeout.
  local ok
  ok, err = self:_send(JOIN_GROUP, {
    group_id = self.group_id, session_timeout_ms = self.cfg.session_timeout_ms,
    rebalance_timeout_ms = self.cfg.rebalance_timeout_ms, member_id = self.member_id,
    group_instance_id = self.cfg.group_instance_id, protocol_type = "consumer", protocols = protocols,
  }, self.cfg.rebalance_timeout_ms + 5000)
  if not ok then return false, err end
  self.state = "joining"
  return true
end

-- The leader's part: decode every member's subscription, learn partition
-- counts, run the chosen assignor and check what it returns.
-- Returns SyncGroup assignments | nil, err.
function Group:_assign(members)
  local assignor
  for _, a in ipairs(self.cfg.partition_assignment_strategy) do
    if a.name == self.protocol then assignor = a end
  end
  if not assignor then return nil, ("the coordinator chose assignor '%s', which we did not offer"):format(tostring(self.protocol)) end
  local list, wanted, names = {}, {}, {}
  for i, m in ipairs(members) do
    local sub, err = decode_versioned("ConsumerProtocolSubscription", m.metadata or "")
    if not sub then return nil, ("member '%s' sent unreadable metadata: %s"):format(m.member_id, err) end
    list[i] = { member_id = m.member_id, group_instance_id = m.group_instance_id, topics = sub.topics }
    for _, t in ipairs(sub.topics) do
      if not wanted[t] then
        wanted[t] = true
        names[#names + 1] = t
      end
    end
  end
  local cluster = self.consumer.cluster
  local resp, err = cluster:refresh(names, false)
  if not resp then return nil, "metadata for the assignment: " .. err end
  local counts = {}
  for _, t in ipairs(names) do
    local info = cluster.topics[t]
    if info and not info.error and info.count > 0 then counts[t] = info.count end
  end
  local ok, raw = pcall(assignor.assign, list, counts)
  if not ok then return nil, ("assignor '%s' raised: %s"):format(assignor.name, tostring(raw)) end
  local result, why = assignors.validate(raw, list, counts)
  if not result then return nil, ("assignor '%s' returned an invalid assignment: %s"):format(assignor.name, why) end
  local out = {}
  for i, m in ipairs(list) do
    out[i] = { member_id = m.member_id, assignment = encode_assignment(result[m.member_id]) }
  end
  return out
end

function Group:_on_join(resp)
  local code = resp.error_code
  if code == MEMBER_ID_REQUIRED then
    -- JoinGroup v4+: the coordinator names our member id; join again with it
    self.member_id = resp.member_id
    self.state = "unjoined"
    return true
  elseif code ~= 0 then
    return self:_on_error("join", code)
  end
  self.generation_id, self.member_id, self.protocol = resp.generation_id, resp.member_id, resp.protocol_name
  local assignments = {}
  -- JoinGroup v9: a static leader coming back keeps the group's assignment
  if resp.leader == resp.member_id and not resp.skip_assignment then
    local err
    assignments, err = self:_assign(resp.members)
    if not assignments then
      self.state = "unjoined"
      return nil, ("group '%s': %s"):format(self.group_id, err)
    end
  end
  local ok, err = self:_send(SYNC_GROUP, {
    group_id = self.group_id, generation_id = self.generation_id, member_id = self.member_id,
    group_instance_id = self.cfg.group_instance_id, protocol_type = "consumer", protocol_name = self.protocol,
    assignments = assignments,
  }, self.cfg.rebalance_timeout_ms + 5000)
  if not ok then
    self.state = "unjoined"
    return false, err
  end
  self.state = "syncing"
  return true
end

function Group:_on_sync(resp)
  if resp.error_code ~= 0 then return self:_on_error("sync", resp.error_code) end
  local parts, err = decode_assignment(resp.assignment)
  if not parts then
    self.state = "unjoined"
    return nil, ("group '%s': %s"):format(self.group_id, err)
  end
  local now = core.now_ms()
  self.owned = parts
  self.state = "assigned"
  self.next_heartbeat = now + self.cfg.heartbeat_interval_ms
  self.next_auto_commit = now + self.cfg.auto_commit_interval_ms
  return true
end

-- Waits (until deadline) for the pending JoinGroup or SyncGroup answer.
function Group:_await(deadline)
  local resp, err = self:_collect(math.max(1, deadline - core.now_ms()))
  if resp == false then return false end
  if not resp then
    self.state = "unjoined"
    return false, err
  end
  if self.state == "joining" then return self:_on_join(resp) end
  return self:_on_sync(resp)
end

-- OffsetFetch for the owned partitions -> { ["topic\0p"] = offset } (only
-- those with a committed offset) | nil, err, code.
function Group:_committed()
  if #self.owned == 0 then return {} end
  local topics, by_topic = {}, {}
  for _, p in ipairs(self.owned) do
    local t = by_topic[p.topic]
    if not t then
      t = { name = p.topic, partition_indexes = {} }
      by_topic[p.topic] = t
      topics[#topics + 1] = t
    end
    table.insert(t.partition_indexes, p.partition)
  end
  -- the layout changed at v8 (several groups per request): fill in both
  local body = { group_id = self.group_id, topics = topics,
    require_stable = self.consumer.cfg.isolation_level == "read_committed",
    groups = { { group_id = self.group_id, topics = topics } } }
  local resp, err = self:_request(OFFSET_FETCH, body, { version = BY_NAME_MAX })
  if not resp then return nil, err end
  local g = resp.groups and resp.groups[1] or resp
  if g.error_code and g.error_code ~= 0 then
    return nil, errors.format("fetch committed offsets", g.error_code), g.error_code
  end
  local out = {}
  for _, t in ipairs(g.topics) do
    for _, p in ipairs(t.partitions) do
      if p.error_code ~= 0 then
        return nil, errors.format(("fetch committed offset of %s[%d]"):format(t.name, p.partition_index), p.error_code),
          p.error_code
      end
      if p.committed_offset >= 0 then out[t.name .. "\0" .. p.partition_index] = p.committed_offset end
    end
  end
  return out
end

-- Positions for the new assignment: committed offsets, else auto_offset_reset.
function Group:_take_assignment()
  local c = self.consumer
  local committed, err, code = self:_committed()
  if not committed then
    -- UNSTABLE_OFFSET_COMMIT: a transaction's offsets are pending; ask again
    if code and code ~= UNSTABLE_OFFSET_COMMIT then return self:_on_error("fetch offsets", code) end
    return false, err
  end
  local list, wants = {}, {}
  for i, p in ipairs(self.owned) do
    local off = committed[p.topic .. "\0" .. p.partition]
    list[i] = { topic = p.topic, partition = p.partition, offset = off }
    if not off then
      if c.cfg.auto_offset_reset == "error" then
        return nil, ("%s[%d] has no committed offset in group '%s' and auto_offset_reset is \"error\""):format(
          p.topic, p.partition, self.group_id)
      end
      wants[#wants + 1] = { topic = p.topic, partition = p.partition, which = c.cfg.auto_offset_reset }
    end
  end
  local resolved
  resolved, err = c:_list_offsets(wants)
  if not resolved then return false, err end
  for _, e in ipairs(list) do e.offset = e.offset or resolved[e.topic .. "\0" .. e.partition] end
  c:_set_assignment(list)
  self.state = "stable"
  if self.cfg.on_assign then common.call_hook(c, "on_assign", self.cfg.on_assign, c:assignment()) end
  return true
end

-- Heartbeat and auto-commit when due. Trouble reaching the coordinator does
-- not stop fetching: the next heartbeat tries again, and a session that
-- lapsed meanwhile shows as UNKNOWN_MEMBER_ID.
function Group:_maintain()
  local now = core.now_ms()
  if self.state == "stable" and self.cfg.enable_auto_commit and now >= self.next_auto_commit then
    self.next_auto_commit = now + self.cfg.auto_commit_interval_ms
    local ok, err = self.consumer:commit()
    if not ok then self.consumer.log("auto-commit failed: " .. err) end
    if self.state ~= "stable" then return true end
  end
  if now < self.next_heartbeat then return true end
  self.next_heartbeat = now + self.cfg.heartbeat_interval_ms
  local resp, err = self:_request(HEARTBEAT, { group_id = self.group_id, generation_id = self.generation_id,
    member_id = self.member_id, group_instance_id = self.cfg.group_instance_id })
  if not resp then
    self.next_heartbeat = now + self.consumer.cfg.retry_backoff_ms
    return true
  end
  local code = resp.error_code
  if code == 0 then return true end
  if code == REBALANCE_IN_PROGRESS then
    self:_rejoin(true)
    return true
  end
  local ok, eerr = self:_on_error("heartbeat", code)
  if ok == false then
    self.next_heartbeat = now + self.consumer.cfg.retry_backoff_ms
    return true
  end
  return ok, eerr
end

-- g:step(deadline) -> true (assignment current: fetch) | false[, err] (still
-- rebalancing at deadline; err: the last retriable failure) | nil, err.
function Group:step(deadline)
  local last_err
  while true do
    if self.fatal then return nil, self.fatal end
    local ok, err
    local st = self.state
    if st == "unjoined" then
      ok, err = self:_join()
    elseif st == "joining" or st == "syncing" then
      ok, err = self:_await(deadline)
    else
      ok, err = self:_maintain()
      if ok and self.state == "assigned" then ok, err = self:_take_assignment() end
      if ok and self.state == "stable" then return true end
    end
    if ok == nil then return nil, err end
    if ok == false and err then
      last_err = err
      local left = deadline - core.now_ms()
      if left > 0 then core.sleep_ms(math.min(left, self.consumer.cfg.retry_backoff_ms)) end
    end
    if core.now_ms() >= deadline then return false, last_err end
  end
end

-- g:commit(offsets) -> true | nil, err. Commits as this generation's member;
-- a commit the coordinator refuses because the group moved on makes the
-- member join again, as Kafka's clients do.
function Group:commit(offsets)
  if self.state ~= "stable" and self.state ~= "assigned" then
    return nil, errors.format(("commit: group '%s' is rebalancing"):format(self.group_id), REBALANCE_IN_PROGRESS)
  end
  local header = { group_id = self.group_id, generation_id_or_member_epoch = self.generation_id,
    member_id = self.member_id, group_instance_id = self.cfg.group_instance_id }
  local err, code
  for attempt = 0, self.consumer.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.consumer.cfg.retry_backoff_ms) end
    local conn
    conn, err = self:_conn()
    if conn then
      local ok
      ok, err, code = M.send_commit(conn, header, offsets)
      if ok then return true end
      if not code then
        self:_lose_coordinator()
      elseif code == NOT_COORDINATOR or code == COORDINATOR_NOT_AVAILABLE then
        self:_lose_coordinator()
      elseif not errors.retriable[code] then
        break
      end
    end
  end
  if code == REBALANCE_IN_PROGRESS or code == UNKNOWN_MEMBER_ID or code == ILLEGAL_GENERATION
      or code == FENCED_INSTANCE_ID then
    self:_on_error("commit", code)
  end
  return nil, code and err or ("commit: " .. err)
end

-- g:resubscribe(topics, cfg): new topics or options; the member keeps its
-- id and joins again.
function Group:resubscribe(topics, cfg)
  self:_rejoin(true)
  if self.pending then self:_lose_coordinator() end
  self.topics, self.cfg = topics, cfg
end

-- LeaveGroup, so the group rebalances now rather than after our session.
function Group:_leave()
  local conn, err = self:_conn()
  if not conn then return nil, err end
  local v = conn:version(LEAVE_GROUP) or 0
  local resp
  resp, err = self:_request(LEAVE_GROUP, v >= 3
    and { group_id = self.group_id, members = { { member_id = self.member_id } } }
    or { group_id = self.group_id, member_id = self.member_id })
  if not resp then return nil, "leave group: " .. err end
  local code = resp.error_code
  for _, m in ipairs(resp.members or {}) do
    if code == 0 then code = m.error_code end
  end
  -- already gone is what we wanted
  if code ~= 0 and code ~= UNKNOWN_MEMBER_ID then
    return nil, errors.format("leave group '" .. self.group_id .. "'", code)
  end
  return true
end

-- g:close() -> true | nil, err. Auto-commits (when on), revokes, and leaves
-- the group; static members stay, as in Java: their session timeout or
-- their return decides.
function Group:close()
  local ok, err = true, nil
  if self.state == "stable" and self.cfg.enable_auto_commit and #self.owned > 0 then
    ok, err = self.consumer:commit()
  end
  self:_revoke(false)
  -- the answer to a JoinGroup or SyncGroup in flight would come first
  if self.pending then self:_lose_coordinator() end
  if self.member_id ~= "" and not self.cfg.group_instance_id then
    local lok, lerr = self:_leave()
    if ok and not lok then ok, err = nil, lerr end
  end
  self:_reset_member()
  self.state = "unjoined"
  if self.conn then self.conn:close() end
  self.conn = nil
  if not ok then return nil, err end
  return true
end

return M
