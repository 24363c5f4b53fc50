-- The producer: records are partitioned when sent, buffered per partition,
-- and go out in one Produce request per leader when a batch fills up, when
-- poll() finds linger_ms passed, or on flush(). Requests are synchronous:
-- delivery reports (on_delivery, on_acknowledgement) run inside the send,
-- poll or flush call that sent the batch. With a transactional_id it is a
-- transactional producer (transaction.lua): records go out inside
-- begin() .. commit() / abort(), idempotent (producer id, epoch and
-- sequence numbers) and with acks=all.

local core = require "kafkaiq.core"
local options = require "kafkaiq.client.options"
local common = require "kafkaiq.client.common"
local errors = require "kafkaiq.client.errors"
local partitioners = require "kafkaiq.partitioner"
local transaction = require "kafkaiq.client.transaction"

local M = {}
local Producer = {}
Producer.__index = Producer

local PRODUCE = 0
local RECORD_OVERHEAD = 24 -- a record's framing, roughly: lengths, attributes, deltas
local BATCH_OVERHEAD = 61

local SPEC = options.with(options.common(), {
  acks = options.enum({ 0, 1, -1 }, -1, { all = -1, ["0"] = 0, ["1"] = 1, ["-1"] = -1 }),
  compression = options.enum({ "none", "gzip", "snappy", "lz4", "zstd" }, "none"),
  linger_ms = options.integer(0, 2 ^ 31 - 1, 5),
  batch_size = options.integer(1, 2 ^ 30, 16384),
  partitioner = options.custom(function(v)
    local f, err = partitioners.get(v)
    if not f then return nil, err end
    return f
  end, partitioners.murmur2),
  on_delivery = options.func(),
  interceptors = options.hooks({ "on_send", "on_acknowledgement" }),
  allow_auto_create_topics = options.boolean(true),
  transactional_id = options.string(),
  transaction_timeout_ms = options.integer(1, 2 ^ 31 - 1, 60000),
})

-- new(opts) -> producer. opts: bootstrap (required), acks (0, 1, -1 or "all";
-- default "all"), compression ("none", "gzip", "snappy", "lz4", "zstd"),
-- linger_ms (5), batch_size (16384 bytes), partitioner ("murmur2" default,
-- "consistent_random", "consistent", "random", or function(key, n, record)),
-- on_delivery(err, record), interceptors {on_send, on_acknowledgement},
-- allow_auto_create_topics (true), transactional_id (a transactional
-- producer; acks must then be "all"), transaction_timeout_ms (60000),
-- client_id, request_timeout_ms, connect_timeout_ms, retries,
-- retry_backoff_ms, log(msg).
function M.new(opts)
  local cfg = options.check(opts, SPEC, "producer", 2)
  if cfg.transactional_id and (cfg.transactional_id == "" or cfg.acks ~= -1) then
    error("producer: a transactional producer needs a non-empty transactional_id and acks = \"all\"", 2)
  end
  local p = common.setup(setmetatable({}, Producer), cfg, "producer", 2)
  if cfg.transactional_id then p.txn = transaction.new(p) end
  p.queues = {}  -- "topic\0partition" -> batch { topic, partition, records, bytes, created }
  p.order = {}   -- keys of queues in creation order, so older batches leave first
  p.stats = { failed = 0, delivered = 0 }
  p.flushed = { failed = 0, delivered = 0 } -- stats at the last flush
  return p
end

local function check_headers(h)
  if type(h) ~= "table" then return nil, "list of {key, value} expected" end
  for i, kv in ipairs(h) do
    if type(kv) ~= "table" or type(kv[1]) ~= "string" or (kv[2] ~= nil and type(kv[2]) ~= "string") then
      return nil, ("header %d: {string key, string or nil value} expected"):format(i)
    end
  end
  return h
end

local SEND_SPEC = {
  headers = options.custom(check_headers),
  timestamp = options.integer(-2 ^ 53, 2 ^ 53),
  partition = options.integer(0, 2 ^ 31 - 1),
}

-- A record an on_send interceptor returned must still be sendable.
local function check_record(r)
  if type(r.topic) ~= "string" or r.topic == "" then return "topic must be a non-empty string" end
  if r.key ~= nil and type(r.key) ~= "string" then return "key must be a string or nil" end
  if r.value ~= nil and type(r.value) ~= "string" then return "value must be a string or nil" end
  if r.headers ~= nil and select(2, check_headers(r.headers)) then return "bad headers" end
  if r.timestamp ~= nil and not options.is_integer(r.timestamp) then return "timestamp must be an integer" end
  return nil
end

local function record_size(r)
  local n = RECORD_OVERHEAD + #(r.key or "") + #(r.value or "")
  for _, h in ipairs(r.headers or {}) do n = n + 8 + #h[1] + #(h[2] or "") end
  return n
end

-- Picks the partition for r among n with the configured partitioner;
-- partition | nil, err naming what the partitioner did.
function Producer:_partition(r, n)
  local ok, p = pcall(self.cfg.partitioner, r.key, n, r)
  local where = ("partitioner for topic '%s' (%d partitions)"):format(r.topic, n)
  if not ok then return nil, ("%s raised: %s"):format(where, tostring(p)) end
  if not options.is_integer(p) or p < 0 or p >= n then
    return nil, ("%s returned %s (%s): expected an integer in [0, %d]")
      :format(where, tostring(p), type(p), n - 1)
  end
  return p
end

-- p:send(topic, key, value[, {headers = {{k, v}, ...}, timestamp = ms, partition = n}])
-- -> true | nil, err. Buffers the record for its partition (chosen here by
-- opts.partition or the partitioner, after the on_send interceptor). The
-- record is delivered later: its report reaches on_delivery. Fails at once
-- for an unknown topic, an invalid partition or a failing partitioner.
function Producer:send(topic, key, value, opts)
  if getmetatable(self) ~= Producer then error("send: call as producer:send(...)", 2) end
  if self.closed then error("send: producer is closed", 2) end
  common.check_name(topic, "send: topic", 2)
  if key ~= nil and type(key) ~= "string" then error("send: key must be a string or nil, got " .. type(key), 2) end
  if value ~= nil and type(value) ~= "string" then error("send: value must be a string or nil, got " .. type(value), 2) end
  local o = options.check(opts, SEND_SPEC, "send", 2)
  if self.txn and not self.txn.open then error("send: no transaction is open: call begin() first", 2) end
  local r = {
    topic = topic, key = key, value = value, headers = o.headers or {},
    timestamp = o.timestamp or core.now_ms(), partition = o.partition,
  }
  local hook = self.cfg.interceptors.on_send
  if hook then
    local ok, replaced = common.call_hook(self, "interceptor on_send", hook, r)
    if ok and type(replaced) == "table" then r = replaced end
    local bad = check_record(r)
    if bad then return nil, "send: record from the on_send interceptor: " .. bad end
    r.headers = r.headers or {}
    r.timestamp = r.timestamp or core.now_ms()
  end
  local t, err = self.cluster:topic(r.topic, self.cfg.allow_auto_create_topics)
  if not t then return nil, "send: " .. err end
  if r.partition ~= nil then
    if not options.is_integer(r.partition) or r.partition < 0 or r.partition >= t.count then
      return nil, "send: " .. errors.format(("partition %s of topic '%s' (%d partitions)")
        :format(tostring(r.partition), r.topic, t.count), 3)
    end
  else
    r.partition, err = self:_partition(r, t.count)
    if not r.partition then return nil, "send: " .. err end
  end
  local qk = r.topic .. "\0" .. r.partition
  local b = self.queues[qk]
  if not b then
    b = { topic = r.topic, partition = r.partition, records = {}, bytes = BATCH_OVERHEAD, created = core.now_ms() }
    self.queues[qk] = b
    self.order[#self.order + 1] = qk
  end
  b.records[#b.records + 1] = r
  b.bytes = b.bytes + record_size(r)
  self:_send_due()
  return true
end

-- p:poll() -> number of records whose delivery was reported. Sends the
-- batches whose linger_ms has passed (or that are full).
function Producer:poll()
  if getmetatable(self) ~= Producer then error("poll: call as producer:poll()", 2) end
  local before = self.stats.delivered + self.stats.failed
  self:_send_due()
  return self.stats.delivered + self.stats.failed - before
end

-- p:flush([timeout_ms]) -> true | nil, err. Sends everything buffered and
-- waits for the answers (retries included, within timeout_ms, default the
-- request timeout). err counts the records that failed since the previous
-- flush (those sent by send or poll included) and names the first failure;
-- each one's own error went to on_delivery.
function Producer:flush(timeout_ms)
  if getmetatable(self) ~= Producer then error("flush: call as producer:flush(...)", 2) end
  if timeout_ms ~= nil and (not options.is_integer(timeout_ms) or timeout_ms < 0) then
    error("flush: timeout_ms must be a non-negative integer", 2)
  end
  self:_send_where(function() return true end, core.now_ms() + (timeout_ms or self.cfg.request_timeout_ms))
  local failed = self.stats.failed - self.flushed.failed
  local delivered = self.stats.delivered - self.flushed.delivered
  local first = self.first_error
  self.flushed.failed, self.flushed.delivered = self.stats.failed, self.stats.delivered
  self.first_error = nil
  if failed > 0 then
    return nil, ("flush: %d of %d records failed, first: %s"):format(failed, failed + delivered, first)
  end
  return true
end

-- ---- transactions (a producer made with a transactional_id) ----

local function transactional(p, what)
  if getmetatable(p) ~= Producer then error(what .. ": call as producer:" .. what .. "(...)", 3) end
  if not p.txn then error(what .. ": not a transactional producer (no transactional_id)", 3) end
  if p.closed then error(what .. ": producer is closed", 3) end
  return p.txn
end

-- p:init_transactions() -> true | nil, err. Gets the producer id and epoch
-- from the transaction coordinator, fencing an older producer of the same
-- transactional id (whose open transaction is aborted). begin() does it
-- the first time when it has not been done.
function Producer:init_transactions()
  local t = transactional(self, "init_transactions")
  if t.open then error("init_transactions: a transaction is open", 2) end
  return transaction.init(self, t)
end

-- p:begin() -> true | nil, err. Opens a transaction: send, send_offsets,
-- then commit or abort.
function Producer:begin()
  local t = transactional(self, "begin")
  if t.open then error("begin: a transaction is open already", 2) end
  if t.pid < 0 then
    local ok, err = transaction.init(self, t)
    if not ok then return nil, "begin: " .. err end
  end
  t.open = true
  return true
end

-- p:send_offsets(group_id, offsets) -> true | nil, err. Commits a consumer
-- group's offsets ({ {topic, partition, offset}, ... }: the next offsets to
-- read) inside the transaction: they count only if it commits.
function Producer:send_offsets(group_id, offsets)
  local t = transactional(self, "send_offsets")
  if not t.open then error("send_offsets: no transaction is open", 2) end
  common.check_name(group_id, "send_offsets: group_id", 2)
  if type(offsets) ~= "table" then error("send_offsets: offsets must be a list of {topic, partition, offset}", 2) end
  for i, o in ipairs(offsets) do
    if type(o) ~= "table" or type(o.topic) ~= "string" or not options.is_integer(o.partition) or
      not options.is_integer(o.offset) then
      error(("send_offsets: offsets[%d] must be {topic = string, partition = integer, offset = integer}"):format(i), 2)
    end
  end
  return transaction.send_offsets(self, t, group_id, offsets)
end

-- p:commit() -> true | nil, err. Sends what is buffered, then commits:
-- read_committed consumers see the records and the offsets count. When a
-- record failed, nothing is committed: abort() is what remains to do.
function Producer:commit()
  local t = transactional(self, "commit")
  if not t.open then error("commit: no transaction is open", 2) end
  local ok, err = self:flush()
  if not ok then return nil, "commit: not committed, abort the transaction: " .. err end
  ok, err = transaction.finish(self, t, true)
  if not ok then return nil, "commit: " .. err end
  return true
end

-- p:abort() -> true | nil, err. Drops what is buffered (each record's
-- on_delivery is told) and aborts: no read_committed consumer sees the
-- transaction's records, its offsets do not count.
function Producer:abort()
  local t = transactional(self, "abort")
  if not t.open then error("abort: no transaction is open", 2) end
  for _, qk in ipairs(self.order) do self:_report(self.queues[qk], "aborted: the transaction was aborted") end
  self.queues, self.order = {}, {}
  -- dropped on purpose: the next flush does not count them as failures
  self.flushed.failed, self.flushed.delivered = self.stats.failed, self.stats.delivered
  self.first_error = nil
  local ok, err = transaction.finish(self, t, false)
  if not ok then return nil, "abort: " .. err end
  return true
end

-- p:buffered() -> number of records waiting in batches.
function Producer:buffered()
  local n = 0
  for _, b in pairs(self.queues) do n = n + #b.records end
  return n
end

-- p:close([timeout_ms]) -> flush's result; then closes the connections.
-- Sending afterwards is an error.
function Producer:close(timeout_ms)
  if self.closed then return true end
  local ok, err = self:flush(timeout_ms)
  self.closed = true
  self.cluster:close()
  return ok, err
end

-- Reports one batch's outcome, record by record: on_acknowledgement first,
-- then on_delivery, as the Java client orders them.
function Producer:_report(b, err, base_offset, append_time)
  local hooks = self.cfg.interceptors
  for i, r in ipairs(b.records) do
    r.partition = b.partition
    if err then
      r.offset = -1
    else
      r.offset = base_offset >= 0 and base_offset + i - 1 or -1
      if append_time and append_time >= 0 then r.timestamp = append_time end
    end
    if err then
      self.stats.failed = self.stats.failed + 1
      self.first_error = self.first_error or err
    else
      self.stats.delivered = self.stats.delivered + 1
    end
    if hooks.on_acknowledgement then
      common.call_hook(self, "interceptor on_acknowledgement", hooks.on_acknowledgement, r, err)
    end
    if self.cfg.on_delivery then
      common.call_hook(self, "on_delivery", self.cfg.on_delivery, err, r)
    end
  end
end

-- Sends the batches that are full or whose linger_ms has passed.
function Producer:_send_due()
  local now = core.now_ms()
  self:_send_where(function(q) return q.bytes >= self.cfg.batch_size or now - q.created >= self.cfg.linger_ms end)
end

-- Takes the queued batches matching pred out of the queues and sends them.
function Producer:_send_where(pred, deadline)
  local ready, keep = {}, {}
  for _, qk in ipairs(self.order) do
    local b = self.queues[qk]
    if pred(b) then
      ready[#ready + 1] = b
      self.queues[qk] = nil
    else
      keep[#keep + 1] = qk
    end
  end
  self.order = keep
  if #ready > 0 then self:_produce(ready, deadline or core.now_ms() + self.cfg.request_timeout_ms) end
end

-- Sends batches, one Produce request per leader; retries retriable
-- failures (refreshing metadata) up to cfg.retries times or the deadline.
function Producer:_produce(batches, deadline)
  local cfg = self.cfg
  local pending = batches
  local txn = self.txn
  if txn then
    local ok, err = transaction.add_partitions(self, txn, batches)
    if not ok then
      for _, b in ipairs(batches) do self:_report(b, err) end
      return
    end
  end
  for attempt = 0, cfg.retries do
    local retry = {}
    local by_leader, leaders = {}, {}
    for _, b in ipairs(pending) do
      if not b.bytes_encoded then
        local recs = {}
        for i, r in ipairs(b.records) do
          recs[i] = { key = r.key, value = r.value, headers = r.headers, timestamp = r.timestamp }
        end
        local bytes, berr = core.build_batch { codec = cfg.compression, records = recs,
          base_timestamp = b.records[1].timestamp, producer_id = txn and txn.pid or nil,
          producer_epoch = txn and txn.epoch or nil, transactional = txn ~= nil,
          base_sequence = txn and transaction.next_sequence(txn, b.topic, b.partition, #recs) or nil }
        if not bytes then
          self:_report(b, ("produce to %s[%d]: cannot build the batch: %s"):format(b.topic, b.partition, berr))
        end
        b.bytes_encoded = bytes
      end
      if b.bytes_encoded then
        local leader, err = self.cluster:leader(b.topic, b.partition, cfg.allow_auto_create_topics)
        if not leader then
          b.err = ("produce to %s[%d]: %s"):format(b.topic, b.partition, err)
          retry[#retry + 1] = b
        else
          if not by_leader[leader] then
            by_leader[leader] = {}
            leaders[#leaders + 1] = leader
          end
          table.insert(by_leader[leader], b)
        end
      end
    end
    for _, leader in ipairs(leaders) do
      self:_produce_to(leader, by_leader[leader], retry, deadline)
    end
    pending = retry
    if #pending == 0 then return end
    if attempt == cfg.retries or core.now_ms() + cfg.retry_backoff_ms >= deadline then break end
    core.sleep_ms(cfg.retry_backoff_ms)
  end
  for _, b in ipairs(pending) do self:_report(b, b.err) end
end

-- One Produce request to one leader; batches to retry go into `retry`.
function Producer:_produce_to(leader, list, retry, deadline)
  local cfg = self.cfg
  local conn, err = self.cluster:broker_conn(leader)
  if not conn then
    -- a leader that cannot be reached may have been replaced: ask again
    for _, b in ipairs(list) do
      b.err = ("produce to %s[%d]: %s"):format(b.topic, b.partition, err)
      self.cluster:invalidate(b.topic)
      retry[#retry + 1] = b
    end
    return
  end
  local topics, by_topic = {}, {}
  for _, b in ipairs(list) do
    local t = by_topic[b.topic]
    if not t then
      t = { name = b.topic, partition_data = {} }
      by_topic[b.topic] = t
      topics[#topics + 1] = t
    end
    t.partition_data[#t.partition_data + 1] = { index = b.partition, records = b.bytes_encoded }
  end
  local timeout = math.max(1, math.min(cfg.request_timeout_ms, deadline - core.now_ms()))
  local resp
  resp, err = conn:request(PRODUCE, { acks = cfg.acks, timeout_ms = timeout, topic_data = topics,
    transactional_id = self.txn and self.txn.id or nil },
    { no_response = cfg.acks == 0, timeout_ms = timeout + 1000, version = self.txn and transaction.PRODUCE_MAX or nil })
  if not resp then
    for _, b in ipairs(list) do
      b.err = ("produce to %s[%d]: %s"):format(b.topic, b.partition, err)
      self.cluster:invalidate(b.topic)
      retry[#retry + 1] = b
    end
    return
  end
  if cfg.acks == 0 then
    for _, b in ipairs(list) do self:_report(b, nil, -1) end
    return
  end
  local answers = {}
  for _, t in ipairs(resp.responses) do
    for _, pr in ipairs(t.partition_responses) do answers[t.name .. "\0" .. pr.index] = pr end
  end
  for _, b in ipairs(list) do
    local pr = answers[b.topic .. "\0" .. b.partition]
    local where = ("produce to %s[%d]"):format(b.topic, b.partition)
    if not pr then
      self:_report(b, where .. ": partition missing from the broker's response")
    elseif pr.error_code == 0 then
      self:_report(b, nil, pr.base_offset, pr.log_append_time_ms)
    else
      local e = errors.format(where, pr.error_code, pr.error_message)
      if errors.stale_metadata[pr.error_code] then self.cluster:invalidate(b.topic) end
      if errors.retriable[pr.error_code] then
        b.err = e
        retry[#retry + 1] = b
      else
        self:_report(b, e)
      end
    end
  end
end

return M
