-- Lab 16: transactions v2 (KIP-890 part 2, transaction.version 2). A
-- transactional producer no longer asks the coordinator to add each
-- partition (AddPartitionsToTxn): a Produce v12 carrying its transactional
-- id makes the partition's leader have the coordinator add it, and the
-- first such produce begins the transaction. Every end (EndTxn v5) bumps
-- the producer's epoch, and the answer tells the producer its new one: the
-- COMMIT or ABORT marker written to each partition carries that new epoch,
-- so anything still on its way at the old epoch (a zombie's late batch, a
-- duplicate) is fenced by the log itself.
--
--   build/kafkaiq run examples/labs/16_transactions_v2.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
local bit = require "bit"

kiq.log_level("error")
local L = lab.new(16, "transactions v2: partitions added by the produce, an epoch per transaction")
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0" })
L:page(b)

local topic, txn = "lab16-payments", "lab16-producer"
local PRODUCE, FETCH, FIND_COORDINATOR, INIT_PRODUCER_ID, END_TXN, API_VERSIONS, DESCRIBE_TXNS =
  0, 1, 10, 22, 26, 18, 65
local host, port = b.bootstrap:match("^([^:]+):(%d+)")
local conn = assert(connection.open(host, tonumber(port), { client_id = "lab16" }))
assert(b:admin():create_topics{ { name = topic, partitions = 2 } })

L:step("the cluster runs transaction.version 2")
local av = assert(conn:request(API_VERSIONS, { client_software_name = "lab16", client_software_version = "1" },
  { version = 3 }))
local tv = -1
for _, f in ipairs(av.finalized_features or {}) do
  if f.name == "transaction.version" then tv = f.max_version_level end
end
L:say("ApiVersions' finalized features: transaction.version %d", tv)
L:fact("transaction_version", tv)

L:step("InitProducerId: a producer id, epoch 0")
assert(kiq.wait_for(function()
  local r = conn:request(FIND_COORDINATOR, { key = txn, key_type = 1, coordinator_keys = { txn } }, { version = 4 })
  return r and r.coordinators[1].error_code == 0
end, 10000, "the transaction's coordinator"))
local init = assert(conn:request(INIT_PRODUCER_ID, { transactional_id = txn, transaction_timeout_ms = 60000,
  producer_id = -1, producer_epoch = -1 }, { version = 5 }))
local pid, epoch = init.producer_id, init.producer_epoch
L:say("producer id %d, epoch %d", pid, epoch)
L:fact("init_epoch", epoch)

-- the coordinator's view of the transaction: its state and partitions
local function described()
  local st = assert(conn:request(DESCRIBE_TXNS, { transactional_ids = { txn } })).transaction_states[1]
  local parts = {}
  for _, t in ipairs(st.topics) do
    for _, p in ipairs(t.partitions) do parts[#parts + 1] = p end
  end
  table.sort(parts)
  return st.transaction_state, #parts > 0 and table.concat(parts, ",") or "none"
end

local seqs = {}
-- A transactional Produce of one record to partition p at epoch ep -> error
local function produce(p, ep, value)
  local key = ep .. ":" .. p
  local batch = assert(core.build_batch { producer_id = pid, producer_epoch = ep, base_sequence = seqs[key] or 0,
    transactional = true, records = { { key = "order", value = value } } })
  local r = assert(conn:request(PRODUCE, { transactional_id = txn, acks = -1, timeout_ms = 5000,
    topic_data = { { name = topic, partition_data = { { index = p, records = batch } } } } }, { version = 12 }))
  local err = r.responses[1].partition_responses[1].error_code
  if err == 0 then seqs[key] = (seqs[key] or 0) + 1 end
  return err
end

local function end_txn(ep, commit)
  local r = assert(conn:request(END_TXN, { transactional_id = txn, producer_id = pid, producer_epoch = ep,
    committed = commit }, { version = 5 }))
  return r.error_code, r.producer_epoch
end

local function settled(want)
  assert(kiq.wait_for(function() return (described()) == want end, 10000, "the transaction " .. want))
end

-- The batches of partition p, one line each: data (its producer epoch) or a
-- control batch's marker (COMMIT/ABORT, read from its one record's key).
local function be(s, i, n)
  local v = 0
  for k = 0, n - 1 do v = v * 256 + s:byte(i + k) end
  return v
end
local function batches(p)
  local r = assert(conn:request(FETCH, { replica_id = -1, max_wait_ms = 0, min_bytes = 0, max_bytes = 1048576,
    isolation_level = 0, session_id = 0, session_epoch = -1, topics = { { topic = topic, partitions = {
      { partition = p, fetch_offset = 0, partition_max_bytes = 1048576 } } } } }, { version = 12 }))
  local bytes, pos, out = r.responses[1].partitions[1].records or "", 1, {}
  while pos + 61 <= #bytes do
    local len = be(bytes, pos + 8, 4)
    local attrs = be(bytes, pos + 21, 2)
    local b_epoch = be(bytes, pos + 51, 2)
    local entry = { offset = be(bytes, pos, 8), epoch = b_epoch, kind = "data" }
    if bit.band(attrs, 0x20) ~= 0 then
      -- the record: length, attributes, timestamp and offset deltas, key
      -- length (a byte each here), then the key: version, type (1: commit)
      entry.kind = be(bytes, pos + 61 + 7, 2) == 1 and "COMMIT" or "ABORT"
    end
    out[#out + 1] = entry
    pos = pos + 12 + len
  end
  return out
end
local function say_log(p)
  local list = batches(p)
  L:say("partition %d's log:", p)
  for _, e in ipairs(list) do
    L:say("  offset %d: %s at producer epoch %d", e.offset, e.kind == "data" and "a record" or e.kind .. " marker",
      e.epoch)
  end
  return list
end

L:step("Produce v12 to partition 0, no AddPartitionsToTxn: the produce adds the partition and begins the transaction")
local state, parts = described()
L:say("before: the transaction is %s, partitions %s", state, parts)
local err = produce(0, epoch, "pay-1")
state, parts = described()
L:say("Produce v12 at epoch %d: error %d; the coordinator now: %s, partitions %s", epoch, err, state, parts)
L:fact("first_produce_error", err)
L:fact("state_after_produce", state)
L:fact("partitions_after_produce", parts)
err = produce(1, epoch, "pay-2")
state, parts = described()
L:say("a second Produce v12, to partition 1: error %d; partitions %s", err, parts)
L:fact("partitions_after_second", parts)

L:step("EndTxn v5 commits: the answer is the producer's next epoch, which the markers carry")
local code, new_epoch = end_txn(epoch, true)
L:say("EndTxn v5 (commit) at epoch %d: error %d, the producer's epoch is now %d", epoch, code, new_epoch)
L:fact("commit_error", code)
L:fact("commit_epoch", new_epoch)
settled("CompleteCommit")
local log0 = say_log(0)
L:fact("log0_batches", #log0)
L:fact("log0_marker", log0[#log0].kind)
L:fact("log0_marker_epoch", log0[#log0].epoch)
L:fact("log0_data_epoch", log0[1].epoch)

L:step("the old epoch is fenced: the marker at the new epoch came after it")
err = produce(0, epoch, "late")
L:say("Produce v12 at the old epoch %d: error %d (INVALID_PRODUCER_EPOCH), nothing written", epoch, err)
L:fact("old_epoch_error", err)
L:fact("log0_after_old", #batches(0))
local retry_code, retry_epoch = end_txn(epoch, true)
L:say("EndTxn v5 (commit) at the old epoch again: error %d, epoch %d: read as a retry of the commit, answered the same",
  retry_code, retry_epoch)
L:fact("retry_epoch", retry_epoch)

L:step("the next transaction at epoch %d, aborted: one epoch more, an ABORT marker", new_epoch)
epoch = new_epoch
err = produce(0, epoch, "pay-3")
L:say("Produce v12 at epoch %d: error %d", epoch, err)
code, new_epoch = end_txn(epoch, false)
L:say("EndTxn v5 (abort) at epoch %d: error %d, the producer's epoch is now %d", epoch, code, new_epoch)
L:fact("abort_epoch", new_epoch)
settled("CompleteAbort")
log0 = say_log(0)
L:fact("log0_last_marker", log0[#log0].kind)
L:fact("log0_last_marker_epoch", log0[#log0].epoch)
local aborted = b:state().topics[topic].partitions[0].aborted_transactions
L:say("the partition's aborted transactions (what read_committed consumers skip): %d", aborted)
L:fact("aborted_transactions", aborted)
local fenced_code = end_txn(epoch - 1, false)
L:say("EndTxn v5 at epoch %d, two behind: error %d (PRODUCER_FENCED)", epoch - 1, fenced_code)
L:fact("stale_end_error", fenced_code)

conn:close()
L:finish()
b:stop()
