-- kafkaiq: drive KafkaIQ brokers from LuaJIT (see lua/README.md).
-- Brokers run on their own engine threads; this module runs in the caller's
-- Lua state and talks to them through kafkaiq.core's thread-safe calls.
local core = require "kafkaiq.core"

local kiq = { core = core, version = core.version }

-- Engine log level on stderr: "error", "warn", "info" (default), "debug".
kiq.log_level = core.log_level

-- Moves the process's engine clock ms ahead (a broker started with
-- ["kafkaiq.clock"] = "manual"): retention, rolls, timeouts and
-- LogAppendTime follow it. { ahead_ms, wall_ms } | nil, err.
kiq.advance_clock = core.advance_clock

local function check_opts(opts, allowed, what, level)
  if type(opts) ~= "table" then error(what .. ": options table expected", level + 1) end
  for k in pairs(opts) do
    if type(k) ~= "string" then error(what .. ": option names must be strings", level + 1) end
    if allowed[k] == nil and not k:find("%.") then
      error(what .. ": unknown option '" .. k .. "'", level + 1)
    end
  end
end

local function make_temp_dir()
  local p = io.popen("mktemp -d /tmp/kafkaiq-XXXXXX")
  local dir = p and p:read("*l")
  if p then p:close() end
  return dir
end

-- Polls cond() every few milliseconds until it returns a true value or
-- timeout_ms passes. Returns cond's value, or nil, "timed out ... <what>".
function kiq.wait_for(cond, timeout_ms, what)
  if type(cond) ~= "function" then error("wait_for: function expected", 2) end
  if type(timeout_ms) ~= "number" then error("wait_for: timeout_ms expected", 2) end
  local deadline = core.now_ms() + timeout_ms
  local pause = 1
  while true do
    local v = cond()
    if v then return v end
    if core.now_ms() >= deadline then
      return nil, ("timed out after %d ms waiting for %s"):format(timeout_ms, what or "the condition")
    end
    core.sleep_ms(pause)
    if pause < 20 then pause = pause * 2 end
  end
end

local Broker = {}
Broker.__index = Broker

local broker_opts = { dir = true, host = true, port = true, id = true, start = true, control_port = true,
  controller_only = true, share_cores = true }

-- kiq.broker{ dir=, host="127.0.0.1", port=0, id=0, start=true, control_port=nil,
--   share_cores=1, ["kafka.name"]=value, ... }
-- control_port (0: any free one) adds a control-plane listener (CONTROLLER)
-- for the controller's requests; controller_only = true makes a
-- controller-only node (process.roles=controller: that listener alone).
-- share_cores = n sizes num.network.threads and num.io.threads, where left
-- out, for one of n brokers sharing this process's cores (as serve
-- --brokers n does).
-- Starts an in-process broker (unless start=false). Returns the broker, or
-- nil, err for a bad config value, a taken port or an unusable directory.
function kiq.broker(opts)
  opts = opts or {}
  check_opts(opts, broker_opts, "broker", 2)
  local dir = opts.dir or make_temp_dir()
  if not dir then return nil, "cannot create a data directory" end
  local host = opts.host or "127.0.0.1"
  local cfg = {
    ["listeners"] = ("PLAINTEXT://%s:%d"):format(host, opts.port or 0),
    ["log.dirs"] = dir,
    ["broker.id"] = opts.id or 0,
  }
  if opts.control_port then
    cfg.listeners = cfg.listeners .. (",CONTROLLER://%s:%d"):format(host, opts.control_port)
    cfg["control.plane.listener.name"] = "CONTROLLER"
  end
  if opts.controller_only then
    cfg.listeners = ("CONTROLLER://%s:%d"):format(host, opts.control_port or 0)
    cfg["process.roles"] = "controller"
  end
  for k, v in pairs(opts) do
    if k:find("%.") then cfg[k] = v end
  end
  local handle, err = core.broker_new(cfg, opts.share_cores)
  if not handle then return nil, err end
  local self = setmetatable({ handle = handle, dir = dir, host = host }, Broker)
  if opts.start ~= false then
    local ok, serr = self:start()
    if not ok then return nil, serr end
  end
  return self
end

-- Starts (or restarts, on the same port and directory) the broker.
function Broker:start()
  local ok, err = self.handle:start()
  if not ok then return nil, err end
  self.port = self.handle:port()
  -- a controller-only node serves no client
  self.bootstrap = self.port >= 0 and ("%s:%d"):format(self.host, self.port) or nil
  -- "host:port" of its HTTP listener (kafkaiq.http.listener), nil without one
  local http = self.handle:http_port()
  self.http = http and ("%s:%d"):format(self.host, http) or nil
  return true
end

-- Clean shutdown: in-flight requests answered, logs flushed and marked clean.
function Broker:stop() self.handle:stop() end

-- Unclean: no clean-shutdown marker, so the next start recovers the logs.
function Broker:kill() self.handle:kill() end

function Broker:restart()
  if self.handle:running() then self.handle:stop() end
  return self:start()
end

function Broker:running() return self.handle:running() end

-- The broker's state, the same as /api/state (engine/server/broker_state.h):
-- topics[name].partitions[0..] (log_start_offset, log_end_offset,
-- high_watermark, leader_epoch, offline, segments, damaged (see scrub),
-- data_loss = { from, to, why, findings, at_ms } while a loss of offsets
-- [from, to) is not acknowledged), log_dirs ({ path, offline, error }),
-- offline_log_dirs, request_queue.depth, purgatory.waiting (parked
-- requests), fetch_bytes, processors, controller_view.
function Broker:state() return self.handle:state() end
-- The consumer groups this broker coordinates, with members and committed
-- offsets (see lua/README.md).
function Broker:groups() return self.handle:groups() end

-- Disk faults: writes to a log directory (dir = path, default the first of
-- log.dirs) fail with errno ("ENOSPC", "EIO", "EROFS", "EDQUOT") once
-- after_bytes more bytes went in, fsyncs too with fsync = true; the
-- directory then goes offline until a restart. clear_disk_fault{ dir = }
-- clears one directory's fault, clear_disk_fault() every one.
function Broker:inject_disk_fault(spec) return self.handle:inject_disk_fault(spec) end
function Broker:clear_disk_fault(spec) return self.handle:clear_disk_fault(spec) end
-- A slow disk: slow_disk{ fsync_ms = n, dir = } makes each fsync in that
-- directory take n ms longer (0, or clear_disk_fault, ends it).
function Broker:slow_disk(spec) return self.handle:slow_disk(spec) end
-- scrub() -> n: the scrubber's pass now (kafkaiq.log.scrub.interval.ms
-- runs it in the background): every segment file checked to be there
-- whole, every closed segment read back and its CRCs checked; n newly
-- damaged or changed segments, each logged and shown in
-- state().topics[t].partitions[p].damaged = { segment =, why = }. Fetches
-- stop before a damaged batch and get CORRUPT_MESSAGE at it.
function Broker:scrub() return self.handle:scrub() end

-- Per API: count and milliseconds spent in queue, local, remote,
-- response_queue, send and total.
function Broker:request_stats() return self.handle:request_stats() end
function Broker:event_counts() return self.handle:event_counts() end
-- The broker's metrics, the same families /metrics and /api/metrics serve:
-- { [family] = { type, help, samples = { { labels = {...}, value, suffix? } } } }.
function Broker:metrics() return self.handle:metrics() end
-- This start's phases (config, logs, listeners, controller, registered,
-- metadata, replication, ready) with ms after it began, and what opening
-- the logs found: { clean, recovered_batches, truncated_bytes, phases = {...} }.
function Broker:startup() return self.handle:startup() end
function Broker:purgatory_stats() return self.handle:purgatory_stats() end
-- The metrics clients pushed (KIP-714), the newest push of each client
-- instance (of client_id only, if given), newest first, as /api/clients:
-- { { client_instance_id, client_id, address, last_push_ms, pushes,
-- terminating, resource = {...}, metrics = { { name, kind, value,
-- attributes = {...} } } } }.
function Broker:clients(client_id) return self.handle:clients(client_id) end

-- A partition's records as the live page's topic browser shows them
-- (/api/messages): messages(topic, partition [, offset [, limit]]) ->
-- { topic, partition, log_start_offset, high_watermark, next_offset,
-- messages = { { offset, timestamp, timestamp_type, key | key_base64,
-- value | value_base64, value_bytes, truncated, headers = { { key, value } } } } }
-- read up to the high watermark (the newest limit, 20, without offset), or
-- nil, err when the partition is not on this broker.
function Broker:messages(topic, partition, offset, limit)
  return self.handle:messages(topic, partition, offset, limit)
end

-- A topic's configs (or, without one, this broker's), each { name, value,
-- source, read_only, sensitive } with Kafka's source name, as
-- /api/configs and DescribeConfigs give them; nil, err for an unknown topic.
function Broker:configs(topic) return self.handle:configs(topic) end

-- This broker's part of a batch's journey: journey(topic, partition,
-- offset) or journey{ trace = id } -> { topic, partition, first_offset,
-- last_offset, trace, stages = { { stage, t_ns, broker, text, ... } },
-- verdict = { state, text, high_watermark, isr, waiting_for } (the
-- leader's part) } | nil, err.
function Broker:journey(topic, partition, offset)
  if type(topic) == "table" then
    if type(topic.trace) ~= "string" then error("journey: trace (a string) expected", 2) end
    return self.handle:journey(topic)
  end
  if type(topic) ~= "string" or type(partition) ~= "number" or type(offset) ~= "number" then
    error("journey: topic, partition, offset expected", 2)
  end
  return self.handle:journey(topic, partition, offset)
end

-- Waits until the partition's high watermark reaches offset.
function Broker:wait_for_offset(topic, partition, offset, timeout_ms)
  return kiq.wait_for(function()
    local t = self:state().topics[topic]
    local p = t and t.partitions[partition]
    return p and p.high_watermark >= offset
  end, timeout_ms or 10000, ("%s-%d to reach offset %d"):format(topic, partition, offset))
end

-- Broker interceptors (run on the broker's I/O threads, see DESIGN §6).
function Broker:intercept(spec) return self.handle:intercept(spec) end
function Broker:remove_intercept(id) return self.handle:remove_intercept(id) end
function Broker:intercepts() return self.handle:intercepts() end
-- Fault rules (the control API's /api/faults): picked requests answered
-- with an error, delayed, disconnected or left unanswered.
function Broker:fault(rule) return self.handle:fault(rule) end
function Broker:remove_fault(id) return self.handle:remove_fault(id) end
function Broker:faults() return self.handle:faults() end

local function client_module()
  return require "kafkaiq.client"
end

local function with_bootstrap(self, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.bootstrap = o.bootstrap or self.bootstrap
  return o
end

function Broker:producer(opts) return client_module().producer(with_bootstrap(self, opts)) end
function Broker:consumer(opts) return client_module().consumer(with_bootstrap(self, opts)) end
function Broker:admin(opts) return client_module().admin(with_bootstrap(self, opts)) end

function kiq.producer(opts) return client_module().producer(opts) end
function kiq.consumer(opts) return client_module().consumer(opts) end
function kiq.admin(opts) return client_module().admin(opts) end

-- kiq.cluster{ brokers = 3, voters = 1, ["kafka.name"] = value, ... } ->
-- cluster: a replicated cluster in this process, its first `voters`
-- brokers the controller quorum, or (controllers = N instead of voters) N
-- controller-only nodes after the brokers (kafkaiq/cluster.lua: c:quorum(),
-- c:quorum_views(), kill, pause and cut of brokers and voters).
function kiq.cluster(opts) return require("kafkaiq.cluster").new(kiq, opts) end

-- The record header that makes a record's journey findable by id
-- (b:journey{ trace = id }): a { key, value } pair for a producer's headers.
function kiq.trace_header(id)
  if type(id) ~= "string" or id == "" then error("trace_header: a non-empty string expected", 2) end
  return { "kafkaiq-trace", id }
end

-- The parts of one batch's journey from several brokers, merged: the
-- batch's offsets from the part that has them first (the leader's), every
-- stage in time order (t_ns, one machine's monotonic clock, when the parts
-- come from one process; wall_us when from several: merged_by says which),
-- the leader's verdict.
function kiq.merge_journeys(parts)
  local out
  for _, p in ipairs(parts) do
    if p then
      if not out then
        out = { topic = p.topic, partition = p.partition, first_offset = p.first_offset, last_offset = p.last_offset,
          trace = p.trace, stages = {} }
      end
      if p.stages[1] and p.stages[1].stage == "received" then
        out.first_offset, out.last_offset, out.trace = p.first_offset, p.last_offset, p.trace or out.trace
      end
      out.verdict = p.verdict or out.verdict
      for _, s in ipairs(p.stages) do out.stages[#out.stages + 1] = s end
    end
  end
  if not out then return nil, "no journey kept for it" end
  -- one process's parts share its monotonic clock; parts from several
  -- processes (brokers on other machines) only share the wall clock
  local process, several = nil, false
  for _, p in ipairs(parts) do
    if p then
      several = several or (process ~= nil and p.process ~= process)
      process = process or p.process
    end
  end
  local key = several and "wall_us" or "t_ns"
  out.merged_by = key
  table.sort(out.stages, function(a, b) return a[key] < b[key] end)
  return out
end

-- The controller's view (only on the broker hosting it, else nil); with
-- `any`, this voter's controller's even when it is not the active one
-- (its image as replayed from the quorum's log and snapshots).
function Broker:controller(any) return self.handle:controller(any) end

kiq.partitioners = setmetatable({}, {
  __index = function(t, k)
    local p = require "kafkaiq.partitioner"
    setmetatable(t, { __index = p })
    return p[k]
  end,
})

-- A seeded pseudo-random source (xorshift32), so a scenario replays the
-- same choices for the same seed. r:next() in [0, 1); r:int(lo, hi) inclusive.
function kiq.random(seed)
  if type(seed) ~= "number" then error("random: numeric seed expected", 2) end
  local bit = require "bit"
  local x = bit.tobit(seed)
  if x == 0 then x = 0x2545f491 end
  local r = { seed = seed }
  function r:next()
    x = bit.bxor(x, bit.lshift(x, 13))
    x = bit.bxor(x, bit.rshift(x, 17))
    x = bit.bxor(x, bit.lshift(x, 5))
    return (x % 4294967296) / 4294967296
  end
  -- small seeds start in a low corner of the state space: stir first
  for _ = 1, 16 do r:next() end
  function r:int(lo, hi)
    if hi < lo then error("random:int: empty range", 2) end
    return lo + math.floor(self:next() * (hi - lo + 1))
  end
  function r:pick(list) return list[self:int(1, #list)] end
  return r
end

return kiq
