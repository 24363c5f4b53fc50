-- A producer's transactions (Kafka's TransactionManager, for the Lua
-- producer): its transaction coordinator (FindCoordinator key type 1), its
-- producer id and epoch (InitProducerId with the transactional id), the
-- partitions and groups it adds before writing to them (AddPartitionsToTxn,
-- AddOffsetsToTxn, TxnOffsetCommit at the group's coordinator) and the end
-- (EndTxn). Calls are synchronous; what the coordinator asks to be retried
-- (CONCURRENT_TRANSACTIONS while the last transaction completes, a moving
-- coordinator) is retried until the request timeout. It speaks
-- transactions v1 whatever the cluster finalizes: it adds its partitions
-- itself, so it stays below the versions of transactions v2 (Produce 12,
-- TxnOffsetCommit 5, EndTxn 5), whose epoch bump at each end it does not
-- follow.

local core = require "kafkaiq.core"
local errors = require "kafkaiq.client.errors"
local group = require "kafkaiq.client.group"

local M = {}

local FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT =
  10, 22, 24, 25, 26, 28
local COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS =
  15, 16, 51, 14

-- The last versions of transactions v1.
local TXN_OFFSET_COMMIT_MAX, END_TXN_MAX = 4, 4
M.PRODUCE_MAX = 11

-- Errors after which the same request is tried again, on a coordinator
-- looked up again for the first three.
local AGAIN = {
  [COORDINATOR_NOT_AVAILABLE] = true, [NOT_COORDINATOR] = true, [COORDINATOR_LOAD_IN_PROGRESS] = true,
  [CONCURRENT_TRANSACTIONS] = true,
}

-- new(producer) -> state: the transactional id, no producer id yet.
function M.new(p)
  return { id = p.cfg.transactional_id, pid = -1, epoch = -1, coordinator = nil, open = false,
    partitions = {}, seq = {} }
end

local function coordinator(p, t)
  if t.coordinator and t.coordinator:alive() then return t.coordinator end
  local conn, err = p.cluster:any_conn()
  if not conn then return nil, err end
  local resp
  resp, err = conn:request(FIND_COORDINATOR, { key = t.id, key_type = 1, coordinator_keys = { t.id } })
  if not resp then return nil, err end
  local co = resp.coordinators and resp.coordinators[1] or resp
  if co.error_code ~= 0 then
    return nil, errors.format("find the transaction coordinator of '" .. t.id .. "'", co.error_code,
      co.error_message), co.error_code
  end
  t.coordinator, err = p.cluster:broker_conn(co.node_id, co.host, co.port)
  return t.coordinator, err
end

-- Sends a request to the coordinator until it is answered without an error
-- to retry; code_of(resp) reads the error code; opts go to the request.
-- resp | nil, err, code.
local function call(p, t, what, api, body, code_of, opts)
  local deadline = core.now_ms() + p.cfg.request_timeout_ms
  local err, code
  while true do
    local conn
    conn, err, code = coordinator(p, t)
    if conn then
      local resp
      resp, err = conn:request(api, body, opts)
      if resp then
        code = code_of(resp)
        if code == 0 then return resp end
        err = errors.format(what, code)
        if code == NOT_COORDINATOR or code == COORDINATOR_NOT_AVAILABLE then t.coordinator = nil end
        if not AGAIN[code] then return nil, err, code end
      else
        t.coordinator = nil
      end
    elseif code and not AGAIN[code] then
      return nil, err, code
    end
    if core.now_ms() + p.cfg.retry_backoff_ms >= deadline then return nil, err, code end
    core.sleep_ms(p.cfg.retry_backoff_ms)
  end
end

local function top_error(resp) return resp.error_code end

-- init(p, t) -> true | nil, err: the producer id and epoch (fencing any
-- older producer of the id, whose open transaction the coordinator aborts).
function M.init(p, t)
  local resp, err = call(p, t, "init transactions for '" .. t.id .. "'", INIT_PRODUCER_ID,
    { transactional_id = t.id, transaction_timeout_ms = p.cfg.transaction_timeout_ms,
      producer_id = t.pid, producer_epoch = t.epoch }, top_error)
  if not resp then return nil, err end
  t.pid, t.epoch = resp.producer_id, resp.producer_epoch
  t.seq = {}
  return true
end

-- add_partitions(p, t, batches) -> true | nil, err: the partitions of
-- batches not yet in the transaction join it.
function M.add_partitions(p, t, batches)
  local topics, by_topic, keys = {}, {}, {}
  for _, b in ipairs(batches) do
    local k = b.topic .. "\0" .. b.partition
    if not t.partitions[k] and not keys[k] then
      keys[k] = true
      local e = by_topic[b.topic]
      if not e then
        e = { name = b.topic, partitions = {} }
        by_topic[b.topic] = e
        topics[#topics + 1] = e
      end
      e.partitions[#e.partitions + 1] = b.partition
    end
  end
  if #topics == 0 then return true end
  local resp, err = call(p, t, "add partitions to the transaction of '" .. t.id .. "'", ADD_PARTITIONS,
    { v3_and_below_transactional_id = t.id, v3_and_below_producer_id = t.pid,
      v3_and_below_producer_epoch = t.epoch, v3_and_below_topics = topics },
    function(r)
      for _, rt in ipairs(r.results_by_topic_v3_and_below) do
        for _, rp in ipairs(rt.results_by_partition) do
          if rp.partition_error_code ~= 0 then return rp.partition_error_code end
        end
      end
      return 0
    end, { version = 3 }) -- v4+ is the brokers' form
  if not resp then return nil, err end
  for k in pairs(keys) do t.partitions[k] = true end
  return true
end

-- next_sequence(t, topic, partition, n) -> the first sequence of a batch of
-- n records (each partition counts from 0 per producer epoch).
function M.next_sequence(t, topic, partition, n)
  local k = topic .. "\0" .. partition
  local s = t.seq[k] or 0
  t.seq[k] = (s + n) % 2147483648
  return s
end

-- send_offsets(p, t, group_id, offsets) -> true | nil, err: offsets ({topic,
-- partition, offset} each) committed for group_id inside the transaction.
function M.send_offsets(p, t, group_id, offsets)
  local ok, err = call(p, t, "add the offsets of group '" .. group_id .. "' to the transaction", ADD_OFFSETS,
    { transactional_id = t.id, producer_id = t.pid, producer_epoch = t.epoch, group_id = group_id }, top_error)
  if not ok then return nil, err end
  local co
  co, err = group.find_coordinator(p.cluster, group_id)
  if not co then return nil, err end
  local conn
  conn, err = p.cluster:broker_conn(co.id, co.host, co.port)
  if not conn then return nil, err end
  local topics, by_topic = {}, {}
  for _, o in ipairs(offsets) do
    local e = by_topic[o.topic]
    if not e then
      e = { name = o.topic, partitions = {} }
      by_topic[o.topic] = e
      topics[#topics + 1] = e
    end
    e.partitions[#e.partitions + 1] = { partition_index = o.partition, committed_offset = o.offset,
      committed_metadata = "" }
  end
  local resp
  resp, err = conn:request(TXN_OFFSET_COMMIT, { transactional_id = t.id, group_id = group_id, producer_id = t.pid,
    producer_epoch = t.epoch, topics = topics }, { version = TXN_OFFSET_COMMIT_MAX })
  if not resp then return nil, err end
  for _, rt in ipairs(resp.topics) do
    for _, rp in ipairs(rt.partitions) do
      if rp.error_code ~= 0 then
        return nil, errors.format(("commit %s[%d] in the transaction"):format(rt.name, rp.partition_index),
          rp.error_code), rp.error_code
      end
    end
  end
  return true
end

-- finish(p, t, commit) -> true | nil, err: EndTxn; the transaction's
-- partitions are forgotten whatever the answer.
function M.finish(p, t, commit)
  local resp, err, code = call(p, t, (commit and "commit" or "abort") .. " the transaction of '" .. t.id .. "'",
    END_TXN, { transactional_id = t.id, producer_id = t.pid, producer_epoch = t.epoch, committed = commit },
    top_error, { version = END_TXN_MAX })
  t.partitions = {}
  t.open = false
  if not resp then return nil, err, code end
  return true
end

return M
