-- Scenarios for `kafkaiq run`: a seeded random source, fault injection on
-- brokers, and invariants checked while the script runs. A violated
-- invariant raises an error naming the invariant, the record that shows it
-- and the seed that replays the run.
--
--   local sc = require("kafkaiq.scenario").new{ brokers = { b } }
--   local p = b:producer{ acks = "all", on_delivery = sc:on_delivery() }
--   local c = b:consumer{ interceptors = { on_consume = sc:on_consume() } }
--   sc:run{ duration_ms = 5000, step = function(sc, i) ... end }
--   sc:verify(b.bootstrap)   -- every acknowledged record is still there
--
-- Transactions: tell the scenario how each one ended with
-- sc:transaction_ended(records, committed) (the records its producer's
-- on_delivery reported), and watch read_committed consumers with
-- sc:on_consume(next, { read_committed = true }): they must never get a
-- record of an aborted transaction (Adya's G1a, aborted read) nor part of a
-- committed one they read past (a torn transaction).
local kiq = require "kafkaiq"

local M = {}
local Scenario = {}
Scenario.__index = Scenario

local allowed = { seed = true, brokers = true, cluster = true, log = true }

-- Creates a scenario. opts.seed defaults to the seed `kafkaiq run` was
-- given (printed at start), so a failing run replays with --seed.
function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("scenario.new: options table expected", 2) end
  for k in pairs(opts) do
    if not allowed[k] then error("scenario.new: unknown option '" .. tostring(k) .. "'", 2) end
  end
  local rt = package.loaded["kafkaiq.runtime"]
  local seed = opts.seed or (rt and rt.seed) or os.time()
  local self = setmetatable({
    seed = seed,
    random = kiq.random(seed),
    brokers = opts.brokers or {},
    replica_hw = {}, -- ["topic/partition@broker"] = highest high watermark that replica had
    log = opts.log == nil and io.stderr or opts.log,
    started = kiq.core.now_ms(),
    acked = {},     -- ["topic/partition"] = { [offset] = record }
    consumed = {},  -- ["topic/partition"] = last offset consumed
    txn_of = {},    -- ["topic/partition@offset"] = the ended transaction that wrote it
    txns = {},      -- ended transactions: { committed, parts = { ["topic/partition"] = {offsets} } }
    views = {},     -- read_committed consumers: { seen = { [tp] = { [offset] = true } }, first, last }
    hw = {},        -- ["topic/partition"] = highest high watermark seen
    faults = {},    -- broker -> list of interceptor ids
    counts = { acked = 0, consumed = 0, checks = 0, faults = 0 },
  }, Scenario)
  if opts.cluster then
    for id = 0, opts.cluster.n - 1 do self.brokers[#self.brokers + 1] = opts.cluster:broker(id) end
  end
  self:note("seed %d", seed)
  return self
end

function Scenario:note(fmt, ...)
  if self.log then
    self.log:write(("[scenario +%6.3fs] " .. fmt .. "\n"):format((kiq.core.now_ms() - self.started) / 1000, ...))
  end
end

local function describe_record(r)
  return ("%s/%s offset %s key=%q value=%q"):format(tostring(r.topic), tostring(r.partition),
    tostring(r.offset), tostring(r.key), tostring(r.value))
end

-- Raises: the run fails with the invariant, the evidence and the seed.
function Scenario:violation(invariant, evidence)
  local msg = ("invariant violated: %s: %s (replay with --seed %d)"):format(invariant, evidence, self.seed)
  self:note("%s", msg)
  error(msg, 0)
end

local function tp(topic, partition) return topic .. "/" .. partition end

-- Records an acknowledged record (topic, partition, offset, key, value).
function Scenario:acknowledged(r)
  local key = tp(r.topic, r.partition)
  local part = self.acked[key]
  if not part then
    part = {}
    self.acked[key] = part
  end
  local prev = part[r.offset]
  if prev and (prev.key ~= r.key or prev.value ~= r.value) then
    self:violation("offsets dense and increasing per partition",
      "two acknowledged records at one offset: " .. describe_record(prev) .. " and " .. describe_record(r))
  end
  part[r.offset] = { topic = r.topic, partition = r.partition, offset = r.offset, key = r.key, value = r.value }
  self.counts.acked = self.counts.acked + 1
end

-- A delivery-report callback for a producer; chains to `next` if given.
function Scenario:on_delivery(next)
  return function(err, record)
    if not err then self:acknowledged(record) end
    if next then return next(err, record) end
  end
end

-- The leader's high watermark of a partition as the watched brokers see it.
function Scenario:high_watermark(topic, partition)
  local best
  for _, b in ipairs(self.brokers) do
    if b:running() then
      local t = b:state().topics[topic]
      local p = t and t.partitions[partition]
      if p and (not best or p.high_watermark > best) then best = p.high_watermark end
    end
  end
  return best
end

-- A read_committed consumer got record r: never one of an aborted
-- transaction.
local function committed_read(self, view, key, r)
  local txn = self.txn_of[key .. "@" .. r.offset]
  if txn and not txn.committed then
    self:violation("no aborted read (G1a)", "a read_committed consumer got " .. describe_record(r) ..
      ", written by an aborted transaction")
  end
  view.seen[key] = view.seen[key] or {}
  view.seen[key][r.offset] = true
  if not view.first[key] then view.first[key] = r.offset end
  view.last[key] = r.offset
end

-- Checks records a consumer was served: offsets dense and increasing per
-- partition (increasing only for read_committed consumers: markers and
-- aborted records leave gaps), never at or above the high watermark, and
-- equal to what was acknowledged at that offset; for read_committed ones
-- (view) the transaction invariants too.
function Scenario:consumed_records(records, view)
  for _, r in ipairs(records) do
    local key = tp(r.topic, r.partition)
    local consumed = view and view.last or self.consumed
    local last = consumed[key]
    if last and (view and r.offset <= last or not view and r.offset ~= last + 1) then
      self:violation("offsets dense and increasing per partition",
        ("after offset %d the consumer got %s"):format(last, describe_record(r)))
    end
    if view then committed_read(self, view, key, r) else self.consumed[key] = r.offset end
    -- the high watermark never decreases, so one at or below this offset
    -- now means the record was above it when it was served
    local hw = self:high_watermark(r.topic, r.partition)
    if hw and r.offset >= hw then
      self:violation("consumers never served data above the high watermark",
        ("%s with high watermark %d"):format(describe_record(r), hw))
    end
    local acked = self.acked[key] and self.acked[key][r.offset]
    if acked and (acked.key ~= r.key or acked.value ~= r.value) then
      self:violation("nothing acknowledged lost",
        ("acknowledged %s but consumed %s"):format(describe_record(acked), describe_record(r)))
    end
    self.counts.consumed = self.counts.consumed + 1
  end
end

-- An on_consume interceptor for a consumer; returns the records unchanged.
-- opts.read_committed: the consumer reads committed records only.
function Scenario:on_consume(next, opts)
  local view
  if opts and opts.read_committed then
    view = { seen = {}, first = {}, last = {} }
    self.views[#self.views + 1] = view
  end
  return function(records)
    self:consumed_records(records, view)
    if next then return next(records) end
    return records
  end
end

-- A transaction ended: records (topic, partition, offset each, as its
-- producer's on_delivery reported them) were committed or aborted. A
-- read_committed consumer that already got one of an aborted transaction
-- is a violation now.
function Scenario:transaction_ended(records, committed)
  if type(records) ~= "table" then error("transaction_ended: list of delivered records expected", 2) end
  local txn = { committed = committed and true or false, parts = {} }
  for _, r in ipairs(records) do
    local key = tp(r.topic, r.partition)
    self.txn_of[key .. "@" .. r.offset] = txn
    txn.parts[key] = txn.parts[key] or {}
    table.insert(txn.parts[key], r.offset)
    for _, view in ipairs(self.views) do
      if not committed and view.seen[key] and view.seen[key][r.offset] then
        self:violation("no aborted read (G1a)", "a read_committed consumer got " .. describe_record(r) ..
          ", written by a transaction that then aborted")
      end
    end
  end
  self.txns[#self.txns + 1] = txn
  self.counts.transactions = (self.counts.transactions or 0) + 1
end

-- No torn transaction: a read_committed consumer that read a partition
-- from before a committed transaction's records there to past them got
-- every one of them.
local function check_transactions(self)
  for _, view in ipairs(self.views) do
    for _, txn in ipairs(self.txns) do
      if txn.committed then
        for key, offsets in pairs(txn.parts) do
          local lo, hi = math.huge, -1
          for _, o in ipairs(offsets) do lo, hi = math.min(lo, o), math.max(hi, o) end
          local first, last = view.first[key], view.last[key]
          if first and first <= lo and last > hi then
            for _, o in ipairs(offsets) do
              if not view.seen[key][o] then
                self:violation("no torn transaction", ("a read_committed consumer read %s from %d to %d but not "
                  .. "offset %d of a committed transaction"):format(key, first, last, o))
              end
            end
          end
        end
      end
    end
  end
end

-- Samples every running broker. The high watermark consumers see (the
-- leader's) never decreases, nor does any replica's own; and in a cluster
-- every ISR member has everything below the leader's high watermark.
function Scenario:check()
  self.counts.checks = self.counts.checks + 1
  check_transactions(self)
  local states = {}
  for _, b in ipairs(self.brokers) do
    if b:running() then states[#states + 1] = { b = b, s = b:state() } end
  end
  -- followers are read again after every leader was: their log end only
  -- grows, so a fresh read is never behind what the leader counted
  local by_id, fresh = {}, {}
  for _, st in ipairs(states) do
    if st.s.node_id then by_id[st.s.node_id] = st.b end
  end
  local function follower_state(id)
    if fresh[id] == nil then
      local b = by_id[id]
      fresh[id] = b and b:running() and b:state() or false
    end
    return fresh[id]
  end
  for _, st in ipairs(states) do
    for topic, t in pairs(st.s.topics) do
      for i = 0, t.partition_count - 1 do
        local p = t.partitions[i]
        if p and p.high_watermark then
          local key, hw = tp(topic, i), p.high_watermark
          local rkey = key .. "@" .. tostring(st.s.node_id or st.b)
          local mine = self.replica_hw[rkey]
          if mine and hw < mine then
            self:violation("high watermark never decreasing",
              ("%s went from %d to %d on broker %s"):format(key, mine, hw, tostring(st.b.bootstrap)))
          end
          if not mine or hw > mine then self.replica_hw[rkey] = hw end
          if p.role == nil or p.role == "leader" then
            local seen = self.hw[key]
            if seen and hw < seen then
              self:violation("high watermark never decreasing",
                ("%s went from %d to %d at its leader, broker %s"):format(key, seen, hw, tostring(st.b.bootstrap)))
            end
            if not seen or hw > seen then self.hw[key] = hw end
            for _, id in ipairs(p.isr or {}) do
              local f = follower_state(id)
              local fp = f and f.topics[topic] and f.topics[topic].partitions[i]
              if fp and fp.log_end_offset and fp.role == "follower" and fp.leader_epoch == p.leader_epoch
                and fp.log_end_offset < hw then
                self:violation("every ISR member holds what is below the high watermark",
                  ("%s: leader %s has high watermark %d, ISR member %d ends at %d"):format(key, tostring(st.s.node_id), hw, id,
                    fp.log_end_offset))
              end
            end
          end
        end
      end
    end
  end
end

-- Fault injection ---------------------------------------------------------

function Scenario:kill(b)
  self.counts.faults = self.counts.faults + 1
  self:note("kill broker %s", b.bootstrap)
  b:kill()
end

function Scenario:restart(b)
  self:note("restart broker %s", b.bootstrap)
  local ok, err = b:start()
  if not ok then error("scenario: restart failed: " .. tostring(err), 2) end
  self:check()
end

local function install(self, b, spec, what)
  local id, err = b:intercept(spec)
  if not id then error("scenario: " .. what .. ": " .. tostring(err), 3) end
  self.faults[b] = self.faults[b] or {}
  table.insert(self.faults[b], id)
  self.counts.faults = self.counts.faults + 1
  return id
end

-- Delays requests of an API (optionally of one client) by ms.
function Scenario:delay(b, api, ms, client_id)
  self:note("delay %s on %s by %d ms", api, b.bootstrap, ms)
  return install(self, b, { on = "request", api = api, client_id = client_id,
    source = ("return function() return { delay_ms = %d } end"):format(ms) }, "delay")
end

-- Answers requests of an API with a Kafka error code instead of serving them.
function Scenario:fail_requests(b, api, code, client_id)
  self:note("fail %s on %s with error %d", api, b.bootstrap, code)
  return install(self, b, { on = "request", api = api, client_id = client_id,
    source = ("return function() return { error = %d } end"):format(code) }, "fail")
end

-- Removes every fault this scenario installed on b.
function Scenario:heal(b)
  for _, id in ipairs(self.faults[b] or {}) do b:remove_intercept(id) end
  self.faults[b] = nil
  self:note("healed %s", b.bootstrap)
end

-- Runs step(sc, i) until duration_ms has passed (or steps were done),
-- checking the invariants every check_every steps (default 10).
function Scenario:run(opts)
  if type(opts) ~= "table" or type(opts.step) ~= "function" then
    error("scenario:run: { step = function, duration_ms = n | steps = n } expected", 2)
  end
  local deadline = opts.duration_ms and kiq.core.now_ms() + opts.duration_ms
  local every = opts.check_every or 10
  local i = 0
  while (not deadline or kiq.core.now_ms() < deadline) and (not opts.steps or i < opts.steps) do
    i = i + 1
    opts.step(self, i)
    if i % every == 0 then self:check() end
  end
  self:check()
  return i
end

-- Reads every partition with acknowledged records from the start and checks
-- each acknowledged record is there, unchanged, at its offset.
function Scenario:verify(bootstrap, timeout_ms)
  local c = assert(kiq.consumer{ bootstrap = bootstrap })
  local want, assignments = {}, {}
  for key, part in pairs(self.acked) do
    local topic, partition = key:match("^(.*)/(%d+)$")
    partition = tonumber(partition)
    local max = -1
    for off in pairs(part) do if off > max then max = off end end
    want[key] = max
    table.insert(assignments, { topic = topic, partition = partition, offset = "earliest" })
  end
  if #assignments == 0 then return 0 end
  assert(c:assign(assignments))
  local seen, done = {}, 0
  local total = 0
  for _ in pairs(want) do total = total + 1 end
  local ok, err = kiq.wait_for(function()
    local records = assert(c:poll(200))
    for _, r in ipairs(records) do
      local key = tp(r.topic, r.partition)
      local acked = self.acked[key] and self.acked[key][r.offset]
      if acked then
        if acked.key ~= r.key or acked.value ~= r.value then
          self:violation("nothing acknowledged lost",
            ("acknowledged %s but the log holds %s"):format(describe_record(acked), describe_record(r)))
        end
        seen[key] = seen[key] or {}
        seen[key][r.offset] = true
      end
      if r.offset == want[key] then done = done + 1 end
    end
    return done >= total
  end, timeout_ms or 30000, "the acknowledged records to be read back")
  c:close()
  for key, part in pairs(self.acked) do
    for off, rec in pairs(part) do
      if not (seen[key] and seen[key][off]) then
        self:violation("nothing acknowledged lost", "not in the log: " .. describe_record(rec))
      end
    end
  end
  if not ok then error("scenario: verify: " .. err, 2) end
  self:note("verified %d acknowledged records", self.counts.acked)
  return self.counts.acked
end

return M
