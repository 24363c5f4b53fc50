-- The consumer: manual assignment (assign/seek/position) or group
-- subscription (subscribe; kafkaiq/client/group.lua runs the membership),
-- and Fetch-based poll. Fetching works from self.assigned, whoever sets it.

local core = require "kafkaiq.core"
local bit = require "bit"
local options = require "kafkaiq.client.options"
local common = require "kafkaiq.client.common"
local errors = require "kafkaiq.client.errors"
local group = require "kafkaiq.client.group"

local M = {}
local Consumer = {}
Consumer.__index = Consumer

local FETCH, LIST_OFFSETS, OFFSET_COMMIT = 1, 2, 8
local ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA" -- base64 of 16 zero bytes: no topic id known
local OFFSET_OUT_OF_RANGE = 1
local EARLIEST, LATEST = -2, -1

local SPEC = options.with(options.common(), {
  group_id = options.string(),
  auto_offset_reset = options.enum({ "earliest", "latest", "error" }, "latest"),
  fetch_max_wait_ms = options.integer(0, 2 ^ 31 - 1, 500),
  fetch_min_bytes = options.integer(0, 2 ^ 31 - 1, 1),
  fetch_max_bytes = options.integer(1, 2 ^ 31 - 1, 52428800),
  max_partition_fetch_bytes = options.integer(1, 2 ^ 31 - 1, 1048576),
  isolation_level = options.enum({ "read_uncommitted", "read_committed" }, "read_uncommitted"),
  interceptors = options.hooks({ "on_consume", "on_commit" }),
})

-- new(opts) -> consumer. opts: bootstrap (required), group_id (needed by
-- subscribe and commit), auto_offset_reset ("earliest", "latest" (default), "error"),
-- fetch_max_wait_ms (500), fetch_min_bytes (1), fetch_max_bytes,
-- max_partition_fetch_bytes, isolation_level, interceptors {on_consume,
-- on_commit}, client_id, request_timeout_ms, connect_timeout_ms, retries,
-- retry_backoff_ms, log(msg).
function M.new(opts)
  local cfg = options.check(opts, SPEC, "consumer", 2)
  local c = common.setup(setmetatable({}, Consumer), cfg, "consumer", 2)
  c.assigned = {}  -- "topic\0partition" -> { topic, partition, offset, high_watermark }
  c.order = {}     -- the assignment's keys, in the order given
  c.group = nil    -- the membership, while subscribed
  return c
end

local function key(topic, partition) return topic .. "\0" .. partition end

-- Checks an offset argument: an integer >= 0, "earliest" or "latest".
local function check_offset(v, what, level)
  if v == "earliest" or v == "latest" then return v end
  if options.is_integer(v) and v >= 0 then return v end
  error(("%s: offset must be an integer >= 0, \"earliest\" or \"latest\", got %s"):format(what, tostring(v)), level + 1)
end

-- Asks each partition's leader for the earliest or latest offset.
-- wants: list of { topic, partition, which = "earliest"|"latest" }.
-- Returns { [key] = offset } | nil, err.
function Consumer:_list_offsets(wants)
  local out = {}
  local pending = wants
  local err
  for attempt = 0, self.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.cfg.retry_backoff_ms) end
    local retry, by_leader, leaders = {}, {}, {}
    for _, w in ipairs(pending) do
      local leader, lerr = self.cluster:leader(w.topic, w.partition, false)
      if not leader then
        return nil, lerr
      end
      if not by_leader[leader] then
        by_leader[leader] = {}
        leaders[#leaders + 1] = leader
      end
      table.insert(by_leader[leader], w)
    end
    for _, leader in ipairs(leaders) do
      local list = by_leader[leader]
      local topics, by_topic = {}, {}
      for _, w in ipairs(list) do
        local t = by_topic[w.topic]
        if not t then
          t = { name = w.topic, partitions = {} }
          by_topic[w.topic] = t
          topics[#topics + 1] = t
        end
        t.partitions[#t.partitions + 1] = { partition_index = w.partition,
          timestamp = w.which == "earliest" and EARLIEST or LATEST }
      end
      local conn, resp
      conn, err = self.cluster:broker_conn(leader)
      if conn then resp, err = conn:request(LIST_OFFSETS, { replica_id = -1,
        isolation_level = self.cfg.isolation_level == "read_committed" and 1 or 0, topics = topics }) end
      if not resp then
        for _, w in ipairs(list) do retry[#retry + 1] = w end
        err = "list offsets: " .. err
      else
        local answers = {}
        for _, t in ipairs(resp.topics) do
          for _, p in ipairs(t.partitions) do answers[key(t.name, p.partition_index)] = p end
        end
        for _, w in ipairs(list) do
          local p = answers[key(w.topic, w.partition)]
          local where = ("list offsets of %s[%d]"):format(w.topic, w.partition)
          if not p then return nil, where .. ": partition missing from the broker's response" end
          if p.error_code == 0 then
            out[key(w.topic, w.partition)] = p.offset
          elseif errors.retriable[p.error_code] then
            if errors.stale_metadata[p.error_code] then self.cluster:invalidate(w.topic) end
            retry[#retry + 1] = w
            err = errors.format(where, p.error_code)
          else
            return nil, errors.format(where, p.error_code)
          end
        end
      end
    end
    pending = retry
    if #pending == 0 then return out end
  end
  return nil, err
end

-- c:assign({ {topic=, partition=, offset=}, ... }) -> true | nil, err.
-- Replaces the assignment. Entries may also be positional {topic, partition,
-- offset}; offset is an integer, "earliest" or "latest" (resolved here with
-- ListOffsets) or nil (auto_offset_reset decides). Fails, leaving the old
-- assignment, for unknown topics or partitions.
function Consumer:assign(list)
  if getmetatable(self) ~= Consumer then error("assign: call as consumer:assign{...}", 2) end
  if type(list) ~= "table" then error("assign: list of {topic=, partition=, offset=} expected", 2) end
  if self.group then error("assign: the consumer is subscribed; unsubscribe first", 2) end
  local entries = {}
  for i, e in ipairs(list) do
    if type(e) ~= "table" then error(("assign: entry %d: table expected"):format(i), 2) end
    for k in pairs(e) do
      if k ~= "topic" and k ~= "partition" and k ~= "offset" and k ~= 1 and k ~= 2 and k ~= 3 then
        error(("assign: entry %d: unknown field '%s'"):format(i, tostring(k)), 2)
      end
    end
    local topic, partition, offset = e.topic or e[1], e.partition or e[2], e.offset or e[3]
    common.check_name(topic, ("assign: entry %d: topic"):format(i), 2)
    if not options.is_integer(partition) or partition < 0 then
      error(("assign: entry %d: partition must be an integer >= 0"):format(i), 2)
    end
    if offset ~= nil then check_offset(offset, ("assign: entry %d"):format(i), 2) end
    entries[i] = { topic = topic, partition = partition, offset = offset }
  end
  local wants = {}
  for _, e in ipairs(entries) do
    local t, err = self.cluster:topic(e.topic, false)
    if not t then return nil, "assign: " .. err end
    if e.partition >= t.count then
      return nil, "assign: " .. errors.format(("partition %s[%d] (%d partitions)"):format(e.topic, e.partition, t.count), 3)
    end
    local which = e.offset
    if which == nil then
      which = self.cfg.auto_offset_reset ~= "error" and self.cfg.auto_offset_reset or nil
      if not which then
        return nil, ("assign: %s[%d] has no offset and auto_offset_reset is \"error\""):format(e.topic, e.partition)
      end
    end
    if type(which) == "string" then wants[#wants + 1] = { topic = e.topic, partition = e.partition, which = which } end
  end
  local resolved, err = self:_list_offsets(wants)
  if not resolved then return nil, "assign: " .. err end
  self.assigned, self.order = {}, {}
  for _, e in ipairs(entries) do
    local k = key(e.topic, e.partition)
    if not self.assigned[k] then self.order[#self.order + 1] = k end
    self.assigned[k] = { topic = e.topic, partition = e.partition,
      offset = type(e.offset) == "number" and e.offset or resolved[k] }
  end
  return true
end

-- c:assignment() -> list of { topic, partition, offset } (offset = position).
function Consumer:assignment()
  local out = {}
  for i, k in ipairs(self.order) do
    local a = self.assigned[k]
    out[i] = { topic = a.topic, partition = a.partition, offset = a.offset }
  end
  return out
end

-- c:unassign() drops every partition.
function Consumer:unassign()
  if self.group then error("unassign: the consumer is subscribed; use unsubscribe", 2) end
  self:_set_assignment({})
end

-- Replaces the assignment with list = { {topic, partition, offset}, ... }
-- (offsets already resolved).
function Consumer:_set_assignment(list)
  self.assigned, self.order = {}, {}
  for i, e in ipairs(list) do
    local k = key(e.topic, e.partition)
    self.order[i] = k
    self.assigned[k] = { topic = e.topic, partition = e.partition, offset = e.offset }
  end
end

-- c:subscribe(topics[, opts]) -> true. Joins group_id (consumer option)
-- on the next poll, with Kafka's classic consumer protocol: the leader
-- assigns partitions with the first assignor every member supports,
-- positions start at the committed offsets (else auto_offset_reset), and
-- poll heartbeats. opts (Kafka's names): session_timeout_ms (45000),
-- rebalance_timeout_ms or max_poll_interval_ms (300000),
-- heartbeat_interval_ms (3000), partition_assignment_strategy ("range",
-- "roundrobin", an assignor { name =, assign = fn }, or a list of these in
-- preference order; default { "range", "roundrobin" }), group_instance_id
-- (static membership), auto_offset_reset (overrides the consumer's),
-- enable_auto_commit (true) and auto_commit_interval_ms (5000),
-- on_assign(partitions) and on_revoke(partitions) (lists of {topic,
-- partition[, offset]}; on_revoke runs before the partitions go, so it may
-- commit). Subscribing again replaces the topics and options and rejoins.
function Consumer:subscribe(topics, opts)
  if getmetatable(self) ~= Consumer then error("subscribe: call as consumer:subscribe(...)", 2) end
  if not self.cfg.group_id then error("subscribe: the consumer needs the group_id option", 2) end
  if type(topics) ~= "table" or #topics == 0 then error("subscribe: non-empty list of topic names expected", 2) end
  local list, seen = {}, {}
  for i, t in ipairs(topics) do
    common.check_name(t, ("subscribe: topic %d"):format(i), 2)
    if not seen[t] then
      seen[t] = true
      list[#list + 1] = t
    end
  end
  if not self.group and #self.order > 0 then
    error("subscribe: the consumer has a manual assignment; unassign first", 2)
  end
  local cfg = group.check_options(opts, 2)
  if cfg.auto_offset_reset then self.cfg.auto_offset_reset = cfg.auto_offset_reset end
  if self.group then
    self.group:resubscribe(list, cfg)
  else
    self.group = group.new(self, list, cfg)
  end
  return true
end

-- c:unsubscribe() -> true | nil, err. Leaves the group (after auto-commit,
-- when on) and drops the assignment; the consumer may subscribe or assign again.
function Consumer:unsubscribe()
  if not self.group then return true end
  local ok, err = self.group:close()
  self.group = nil
  self:_set_assignment({})
  if not ok then return nil, "unsubscribe: " .. err end
  return true
end

-- c:group_metadata() -> { group_id, generation_id, member_id,
-- group_instance_id } while subscribed (generation -1 before the first
-- join), else nil.
function Consumer:group_metadata()
  return self.group and self.group:metadata()
end

local function assigned_or_raise(self, topic, partition, what)
  common.check_name(topic, what .. ": topic", 3)
  if not options.is_integer(partition) then error(what .. ": partition must be an integer", 3) end
  local a = self.assigned[key(topic, partition)]
  if not a then error(("%s: %s[%d] is not assigned"):format(what, topic, partition), 3) end
  return a
end

-- c:seek(topic, partition, offset) -> true | nil, err. offset: an integer
-- >= 0, "earliest" or "latest". The partition must be assigned.
function Consumer:seek(topic, partition, offset)
  local a = assigned_or_raise(self, topic, partition, "seek")
  check_offset(offset, "seek", 2)
  if type(offset) == "string" then
    local r, err = self:_list_offsets({ { topic = topic, partition = partition, which = offset } })
    if not r then return nil, "seek: " .. err end
    offset = r[key(topic, partition)]
  end
  a.offset = offset
  return true
end

-- c:position(topic, partition) -> the offset of the next record poll returns.
function Consumer:position(topic, partition)
  return assigned_or_raise(self, topic, partition, "position").offset
end

-- c:high_watermark(topic, partition) -> the high watermark the last fetch
-- reported, or nil before any.
function Consumer:high_watermark(topic, partition)
  return assigned_or_raise(self, topic, partition, "high_watermark").high_watermark
end

local function be32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return bit.bor(bit.lshift(a, 24), bit.lshift(b, 16), bit.lshift(c, 8), d)
end

-- The offset after the last complete batch in a Fetch's records: control
-- batches and compacted gaps must move the position even though they yield
-- no records.
local function next_offset(bytes)
  local pos, last = 1, nil
  while pos + 60 <= #bytes do
    local len = be32(bytes, pos + 8)
    if len < 49 or pos + 12 + len - 1 > #bytes then break end
    local base = be32(bytes, pos) * 4294967296 + bit.tobit(be32(bytes, pos + 4)) % 4294967296
    last = base + be32(bytes, pos + 23) + 1
    pos = pos + 12 + len
  end
  return last
end
M._next_offset = next_offset

-- One Fetch to one leader for its partitions; appends records to out.
-- Returns true | nil, err (a fatal error, e.g. OFFSET_OUT_OF_RANGE with
-- auto_offset_reset = "error").
function Consumer:_fetch_from(leader, list, max_wait, out)
  local cfg = self.cfg
  local conn, err = self.cluster:broker_conn(leader)
  if not conn then return true, err end
  -- Fetch v13+ names topics by id (from metadata); the answer names them so
  local topics, by_topic, by_id = {}, {}, {}
  for _, a in ipairs(list) do
    local t = by_topic[a.topic]
    if not t then
      local known = self.cluster.topics[a.topic]
      local id = known and known.id or ZERO_UUID
      t = { topic = a.topic, topic_id = id, partitions = {} }
      by_topic[a.topic] = t
      by_id[id] = a.topic
      topics[#topics + 1] = t
    end
    t.partitions[#t.partitions + 1] = { partition = a.partition, fetch_offset = a.offset,
      partition_max_bytes = cfg.max_partition_fetch_bytes }
  end
  local resp
  resp, err = conn:request(FETCH, {
    replica_id = -1, max_wait_ms = max_wait, min_bytes = cfg.fetch_min_bytes,
    max_bytes = cfg.fetch_max_bytes, isolation_level = cfg.isolation_level == "read_committed" and 1 or 0,
    session_id = 0, session_epoch = -1, topics = topics, forgotten_topics_data = {}, rack_id = "",
  }, { timeout_ms = max_wait + cfg.request_timeout_ms })
  if not resp then return true, "fetch: " .. err end
  if resp.error_code and resp.error_code ~= 0 then
    return true, errors.format("fetch", resp.error_code)
  end
  local resets, soft = {}, nil
  for _, t in ipairs(resp.responses) do
    local name = t.topic or by_id[t.topic_id]
    for _, p in ipairs(t.partitions) do
      local a = name and self.assigned[key(name, p.partition_index)]
      local where = ("fetch %s[%d]"):format(tostring(name), p.partition_index)
      if not a then
        -- unassigned meanwhile (by a hook): drop
      elseif p.error_code == OFFSET_OUT_OF_RANGE then
        if cfg.auto_offset_reset == "error" then
          return nil, errors.format(where .. " at offset " .. a.offset, p.error_code)
        end
        resets[#resets + 1] = { topic = a.topic, partition = a.partition, which = cfg.auto_offset_reset }
      elseif p.error_code ~= 0 then
        if name and errors.stale_metadata[p.error_code] then self.cluster:invalidate(name) end
        if not errors.retriable[p.error_code] then return nil, errors.format(where, p.error_code) end
        soft = errors.format(where, p.error_code)
      else
        a.high_watermark = p.high_watermark
        local bytes = p.records
        if bytes and #bytes > 0 then
          -- read_committed: the records of aborted transactions are left out
          local recs, perr = core.parse_records(bytes,
            cfg.isolation_level == "read_committed" and p.aborted_transactions or nil)
          if not recs then return nil, where .. ": " .. perr end
          for _, r in ipairs(recs) do
            if r.offset >= a.offset then
              out[#out + 1] = {
                topic = a.topic, partition = a.partition, offset = r.offset, key = r.key,
                value = r.value, headers = r.headers, timestamp = r.timestamp, leader_epoch = r.leader_epoch,
              }
            end
          end
          local nxt = next_offset(bytes)
          if nxt and nxt > a.offset then a.offset = nxt end
        end
      end
    end
  end
  if #resets > 0 then
    local r, rerr = self:_list_offsets(resets)
    if not r then return true, rerr end
    for _, w in ipairs(resets) do self.assigned[key(w.topic, w.partition)].offset = r[key(w.topic, w.partition)] end
  end
  return true, soft
end

-- c:poll([timeout_ms]) -> records | nil, err. Fetches from every assigned
-- partition's leader until records arrive or timeout_ms passes (default 0:
-- one round that does not wait); each Fetch waits at most fetch_max_wait_ms.
-- Records: { topic, partition, offset, key, value, headers = {{k, v}},
-- timestamp, leader_epoch }, each partition's in offset order. Retriable
-- broker errors are retried within the timeout and returned as nil, err if
-- the last round still failed and nothing arrived; OFFSET_OUT_OF_RANGE
-- resets per auto_offset_reset (or fails with "error"). The on_consume
-- interceptor sees the records first and may return a replacement list.
function Consumer:poll(timeout_ms)
  if getmetatable(self) ~= Consumer then error("poll: call as consumer:poll(...)", 2) end
  if timeout_ms ~= nil and (not options.is_integer(timeout_ms) or timeout_ms < 0) then
    error("poll: timeout_ms must be a non-negative integer", 2)
  end
  timeout_ms = timeout_ms or 0
  local deadline = core.now_ms() + timeout_ms
  local out, err
  if self.group then
    -- fetches stop short of the next heartbeat or auto-commit
    repeat
      local stable
      stable, err = self.group:step(deadline)
      if stable == nil then return nil, "poll: " .. err end
      out = {}
      if stable then
        out, err = self:_fetch_until(math.min(deadline, self.group:next_due()))
        if not out then return nil, "poll: " .. err end
      end
    until #out > 0 or core.now_ms() >= deadline
  else
    out, err = self:_fetch_until(deadline)
    if not out then return nil, "poll: " .. err end
  end
  if #out == 0 and err then return nil, "poll: " .. err end
  local hook = self.cfg.interceptors.on_consume
  if hook and #out > 0 then
    local ok, replaced = common.call_hook(self, "interceptor on_consume", hook, out)
    if ok and type(replaced) == "table" then out = replaced end
  end
  return out
end

-- Fetch rounds over the assignment until records arrive or deadline passes
-- (at least one round). Returns records[, err: the last round's retriable
-- failure] | nil, err (fatal).
function Consumer:_fetch_until(deadline)
  local out = {}
  local round_err
  repeat
    round_err = nil
    local by_leader, leaders = {}, {}
    for _, k in ipairs(self.order) do
      local a = self.assigned[k]
      local leader, err = self.cluster:leader(a.topic, a.partition, false)
      if leader then
        if not by_leader[leader] then
          by_leader[leader] = {}
          leaders[#leaders + 1] = leader
        end
        table.insert(by_leader[leader], a)
      else
        round_err = err
      end
    end
    if #self.order == 0 then
      local left = deadline - core.now_ms()
      if left > 0 then core.sleep_ms(left) end
    end
    for i, leader in ipairs(leaders) do
      -- Only the last request of a round waits, and only while nothing has
      -- arrived, so an idle broker does not hold up records another has.
      local left = math.max(0, deadline - core.now_ms())
      local wait = (i == #leaders and #out == 0) and math.min(self.cfg.fetch_max_wait_ms, left) or 0
      local ok, err = self:_fetch_from(leader, by_leader[leader], wait, out)
      if not ok then return nil, err end
      if err then round_err = err end
    end
    if round_err and #out == 0 then
      local left = deadline - core.now_ms()
      if left > 0 then core.sleep_ms(math.min(left, self.cfg.retry_backoff_ms)) end
    end
  until #out > 0 or core.now_ms() >= deadline
  return out, #out == 0 and round_err or nil
end

-- Finds the group coordinator for plain commits.
function Consumer:_coordinator()
  local co, err = group.find_coordinator(self.cluster, self.cfg.group_id)
  if not co then return nil, err end
  local conn
  conn, err = self.cluster:broker_conn(co.id, co.host, co.port)
  if not conn then return nil, err end
  if not conn:version(OFFSET_COMMIT) then return nil, ("OffsetCommit not supported by broker %s"):format(conn.addr) end
  return conn
end

-- Commits outside a group: generation -1 and no member id, which Kafka
-- accepts for a group with no members.
function Consumer:_plain_commit(offsets)
  local err, code
  for attempt = 0, self.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.cfg.retry_backoff_ms) end
    local conn
    conn, err = self:_coordinator()
    if not conn then
      if err:find("not supported", 1, true) then return nil, "commit: " .. err end
    else
      local ok
      ok, err, code = group.send_commit(conn, { group_id = self.cfg.group_id,
        generation_id_or_member_epoch = -1, member_id = "" }, offsets)
      if ok then return true end
      if code and not errors.retriable[code] then return nil, err end
    end
  end
  return nil, code and err or ("commit: " .. err)
end

-- c:commit([offsets]) -> true | nil, err. Commits offsets (a list of
-- {topic=, partition=, offset=}, offset = the next record to read; default:
-- every assigned partition's position) for group_id. Subscribed, it
-- commits as the member (generation, member id, group instance id) and
-- fails with REBALANCE_IN_PROGRESS while the group rebalances, or with
-- ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID when the group moved on (the
-- consumer then joins again); otherwise with generation -1, the plain
-- commit of a consumer outside a group. Needs the group_id option. The
-- on_commit interceptor runs only after a successful commit.
function Consumer:commit(offsets)
  if getmetatable(self) ~= Consumer then error("commit: call as consumer:commit(...)", 2) end
  if not self.cfg.group_id then error("commit: the consumer needs the group_id option to commit", 2) end
  if offsets == nil then
    offsets = self:assignment()
  elseif type(offsets) ~= "table" then
    error("commit: list of {topic=, partition=, offset=} expected", 2)
  else
    for i, o in ipairs(offsets) do
      if type(o) ~= "table" then error(("commit: entry %d: table expected"):format(i), 2) end
      common.check_name(o.topic, ("commit: entry %d: topic"):format(i), 2)
      if not options.is_integer(o.partition) or o.partition < 0 then
        error(("commit: entry %d: partition must be an integer >= 0"):format(i), 2)
      end
      if not options.is_integer(o.offset) or o.offset < 0 then
        error(("commit: entry %d: offset must be an integer >= 0"):format(i), 2)
      end
    end
  end
  if #offsets == 0 then return true end
  local ok, err
  if self.group then
    ok, err = self.group:commit(offsets)
  else
    ok, err = self:_plain_commit(offsets)
  end
  if not ok then return nil, err end
  local hook = self.cfg.interceptors.on_commit
  if hook then common.call_hook(self, "interceptor on_commit", hook, offsets) end
  return true
end

-- c:close() -> true | nil, err. Subscribed: auto-commits (when on), calls
-- on_revoke and leaves the group (static members stay). Then closes the
-- connections and drops the assignment; err names a failed commit or leave.
function Consumer:close()
  local ok, err = true, nil
  if self.group then ok, err = self:unsubscribe() end
  self:_set_assignment({})
  self.cluster:close()
  if not ok then return nil, "close: " .. err end
  return true
end

return M
