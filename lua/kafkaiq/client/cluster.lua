-- What a client knows about the cluster: bootstrap addresses, brokers by
-- node id (one connection each), the controller, and per-topic partition
-- leaders from Metadata, refreshed with bounded retries when stale.

local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
local errors = require "kafkaiq.client.errors"

local M = {}
local Cluster = {}
Cluster.__index = Cluster

local METADATA = 3

-- new(cfg) -> cluster. cfg: bootstrap (list of {host, port}), client_id,
-- connect_timeout_ms, request_timeout_ms, retries, retry_backoff_ms.
function M.new(cfg)
  return setmetatable({
    cfg = cfg,
    brokers = {},   -- node id -> { host, port }
    conns = {},     -- node id -> connection
    boot = nil,     -- a connection to a bootstrap address not yet matched to a node id
    topics = {},    -- name -> { name, id, internal, count, partitions = { [p] = {...} } } | { error = code }
    controller_id = -1,
  }, Cluster)
end

local function adopt_bootstrap(self)
  local b = self.boot
  if not b then return end
  for id, info in pairs(self.brokers) do
    if info.host == b.host and info.port == b.port then
      if not (self.conns[id] and self.conns[id]:alive()) then self.conns[id] = b else b:close() end
      self.boot = nil
      return
    end
  end
end

-- cl:any_conn() -> a live connection to some broker | nil, err.
-- Known brokers are tried first, then the bootstrap list.
function Cluster:any_conn()
  for _, c in pairs(self.conns) do
    if c:alive() then return c end
  end
  if self.boot and self.boot:alive() then return self.boot end
  local failures = {}
  local ids = {}
  for id in pairs(self.brokers) do ids[#ids + 1] = id end
  table.sort(ids)
  for _, id in ipairs(ids) do
    local c, err = self:broker_conn(id)
    if c then return c end
    failures[#failures + 1] = err
  end
  for _, addr in ipairs(self.cfg.bootstrap) do
    local c, err = connection.open(addr.host, addr.port, self.cfg)
    if c then
      self.boot = c
      return c
    end
    failures[#failures + 1] = err
  end
  return nil, "no broker reachable: " .. table.concat(failures, "; ")
end

-- cl:broker_conn(node_id[, host, port]) -> the connection to that broker | nil, err.
-- host and port name a broker metadata has not listed (a coordinator).
function Cluster:broker_conn(id, host, port)
  local c = self.conns[id]
  if c and c:alive() then return c end
  local info = self.brokers[id]
  if not info and host then
    info = { host = host, port = port }
    self.brokers[id] = info
  end
  if not info then return nil, ("unknown broker id %s"):format(tostring(id)) end
  local err
  c, err = connection.open(info.host, info.port, self.cfg)
  if not c then return nil, err end
  self.conns[id] = c
  return c
end

-- cl:refresh(names, auto_create) -> metadata response | nil, err.
-- names: a list of topic names, or nil for every topic. Updates the broker
-- list, the controller and the topic cache for each topic returned.
function Cluster:refresh(names, auto_create)
  local body = { allow_auto_topic_creation = auto_create and true or false }
  if names then
    body.topics = {}
    for i, n in ipairs(names) do body.topics[i] = { name = n } end
  end
  local resp, err
  for _ = 0, self.cfg.retries do
    local c
    c, err = self:any_conn()
    if c then
      -- v0 reads an empty list as "all topics": ask for nothing another way.
      if names and #names == 0 and c:version(METADATA) == 0 then
        body.topics = { { name = "" } }
      end
      resp, err = c:request(METADATA, body)
      if resp then break end
    end
    -- connect failures here are final: any_conn already tried every address
    if not c then return nil, err end
  end
  if not resp then return nil, err end
  local brokers = {}
  for _, b in ipairs(resp.brokers) do brokers[b.node_id] = { host = b.host, port = b.port, rack = b.rack } end
  for id, c in pairs(self.conns) do
    local now = brokers[id]
    if not now or now.host ~= c.host or now.port ~= c.port then
      c:close()
      self.conns[id] = nil
    end
  end
  self.brokers = brokers
  self.controller_id = resp.controller_id or -1
  self.cluster_id = resp.cluster_id
  adopt_bootstrap(self)
  for _, t in ipairs(resp.topics) do
    if t.name then self.topics[t.name] = M.topic_from_metadata(t) end
  end
  return resp
end

-- topic_from_metadata(t) -> the cached description of one Metadata topic entry.
function M.topic_from_metadata(t)
  if t.error_code ~= 0 then return { name = t.name, error = t.error_code } end
  local parts, count = {}, 0
  for _, p in ipairs(t.partitions) do
    parts[p.partition_index] = {
      partition = p.partition_index, leader = p.leader_id, leader_epoch = p.leader_epoch,
      replicas = p.replica_nodes, isr = p.isr_nodes, offline = p.offline_replicas or {},
      error = p.error_code,
    }
    count = count + 1
  end
  return { name = t.name, id = t.topic_id, internal = t.is_internal, count = count, partitions = parts }
end

-- A topic is usable once metadata knows it and its partitions; a partition
-- without a leader is the concern of whoever sends to that partition.
local function usable(t)
  if not t or t.error or t.count == 0 then return false end
  for p = 0, t.count - 1 do
    if not t.partitions[p] then return false end
  end
  return true
end

-- cl:topic(name, auto_create) -> cached topic (all partitions known) | nil, err.
-- Refreshes metadata while the topic is unknown, up to cfg.retries times
-- with cfg.retry_backoff_ms between tries.
function Cluster:topic(name, auto_create)
  local t = self.topics[name]
  if usable(t) then return t end
  local err
  for attempt = 0, self.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.cfg.retry_backoff_ms) end
    local resp
    resp, err = self:refresh({ name }, auto_create)
    if not resp then return nil, err end
    t = self.topics[name]
    if usable(t) then return t end
    local code = t and t.error or 5
    err = errors.format(("topic '%s'"):format(name), code)
    if not errors.retriable[code] then return nil, err end
  end
  return nil, err
end

-- cl:leader(topic, partition, auto_create) -> leader node id | nil, err.
-- A leaderless partition is looked up again (cfg.retries times); other
-- partitions of the topic are not held back by it.
function Cluster:leader(topic, partition, auto_create)
  local err
  for attempt = 0, self.cfg.retries do
    if attempt > 0 then core.sleep_ms(self.cfg.retry_backoff_ms) end
    local t
    t, err = self:topic(topic, auto_create)
    if not t then return nil, err end
    local p = t.partitions[partition]
    if not p then
      return nil, errors.format(("partition %s[%s]"):format(topic, tostring(partition)), 3)
    end
    if p.leader >= 0 then return p.leader end
    local code = p.error and p.error ~= 0 and p.error or 5
    err = errors.format(("partition %s[%s]"):format(topic, tostring(partition)), code)
    -- a leaderless answer is not kept: the next lookup, this loop's retry
    -- or a later call (a producer without retries), asks again
    self:invalidate(topic)
  end
  return nil, err
end

-- cl:invalidate(topic) forgets a topic's leaders, so the next lookup asks again.
function Cluster:invalidate(topic)
  self.topics[topic] = nil
end

-- cl:controller_conn() -> a connection to the controller | nil, err.
function Cluster:controller_conn()
  local resp, err = self:refresh({}, false)
  if not resp then return nil, err end
  if self.controller_id < 0 then return nil, "no controller: metadata names none" end
  if not self.brokers[self.controller_id] then
    return nil, ("controller %d is not among the brokers metadata lists"):format(self.controller_id)
  end
  return self:broker_conn(self.controller_id)
end

-- cl:close() closes every connection.
function Cluster:close()
  for id, c in pairs(self.conns) do
    c:close()
    self.conns[id] = nil
  end
  if self.boot then
    self.boot:close()
    self.boot = nil
  end
end

return M
