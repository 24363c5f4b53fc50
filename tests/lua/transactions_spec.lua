-- The transaction coordinator as clients reach it: FindCoordinator for a
-- transactional id (key type 1), InitProducerId with one (epoch bumps,
-- fencing an older producer, KIP-360 recovery, the timeout bound, bad
-- ids), AddPartitionsToTxn and AddOffsetsToTxn (Kafka's checks and
-- errors), DescribeTransactions, a new producer aborting the ongoing
-- transaction of its id, the state in __transaction_state surviving a
-- restart; and in a
-- cluster of three, the coordinator is the leader of the id's partition,
-- the others answer NOT_COORDINATOR, a new leader takes the state over,
-- and a leader asks it before taking a transaction's first records.
-- EndTxn, TxnOffsetCommit and WriteTxnMarkers with what Kafka refuses, and
-- the Lua client's transactional producer read back read_committed.
local kiq = require "kafkaiq"
local connection = require "kafkaiq.client.connection"
local core = require "kafkaiq.core"
local client = require "kafkaiq.client"
kiq.log_level(os.getenv("KIQ_LOG") or "error")

local FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, DESCRIBE_TXNS = 10, 22, 24, 25, 65
local ALLOCATE_PRODUCER_IDS, NOT_CONTROLLER, STALE_BROKER_EPOCH, LIST_TXNS = 67, 41, 77, 66
local NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR, INVALID_REQUEST = 0, 3, 16, 42
local INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT = 47, 49, 50
local CONCURRENT_TRANSACTIONS, OPERATION_NOT_ATTEMPTED, PRODUCER_FENCED, TRANSACTIONAL_ID_NOT_FOUND = 51, 55, 90, 105
local END_TXN, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT, OFFSET_FETCH = 26, 27, 28, 9
local INVALID_TXN_STATE, CLUSTER_AUTHORIZATION_FAILED, UNSTABLE_OFFSET_COMMIT = 48, 31, 88
local TRANSACTION_ABORTABLE = 120

local function open(b)
  return assert(connection.open("127.0.0.1", b.port, { client_id = "transactions-spec", request_timeout_ms = 15000 }))
end

-- Polls cond every 10 ms until it holds or timeout_ms passes.
local function wait_for(cond, timeout_ms)
  local deadline = core.now_ms() + (timeout_ms or 5000)
  while core.now_ms() < deadline do
    if cond() then return true end
    core.sleep_ms(10)
  end
  return cond()
end

local function init(conn, id, opts)
  opts = opts or {}
  local r = assert(conn:request(INIT_PRODUCER_ID, { transactional_id = id, transaction_timeout_ms = opts.timeout or 60000,
    producer_id = opts.pid or -1, producer_epoch = opts.epoch or -1 }, { version = opts.version or 4 }))
  return r.error_code, r.producer_id, r.producer_epoch
end

-- AddPartitionsToTxn: { [topic] = { [partition] = error } }
local function add(conn, id, pid, epoch, topics, version)
  local list = {}
  for name, parts in pairs(topics) do list[#list + 1] = { name = name, partitions = parts } end
  local r = assert(conn:request(ADD_PARTITIONS, { v3_and_below_transactional_id = id, v3_and_below_producer_id = pid,
    v3_and_below_producer_epoch = epoch, v3_and_below_topics = list }, { version = version or 3 }))
  local out = {}
  for _, t in ipairs(r.results_by_topic_v3_and_below) do
    out[t.name] = {}
    for _, p in ipairs(t.results_by_partition) do out[t.name][p.partition_index] = p.partition_error_code end
  end
  return out
end

local function describe_txn(conn, id)
  local r = assert(conn:request(DESCRIBE_TXNS, { transactional_ids = { id } }))
  local st = r.transaction_states[1]
  local parts = {}
  for _, t in ipairs(st.topics) do
    for _, p in ipairs(t.partitions) do parts[#parts + 1] = t.topic .. "-" .. p end
  end
  table.sort(parts)
  return st, parts
end

-- Java's String.hashCode, for ids of ASCII characters
local function partition_of(id, n)
  local h = 0
  for i = 1, #id do h = (h * 31 + id:byte(i)) % 4294967296 end
  if h >= 2147483648 then h = h - 4294967296 end
  if h == -2147483648 then return 0 end
  return math.abs(h) % n
end

describe("a transactional id on one broker", function()
  local b, c
  before_each(function()
    b = assert(kiq.broker { ["transaction.state.log.num.partitions"] = 5, ["transaction.max.timeout.ms"] = 120000 })
    c = open(b)
  end)
  after_each(function()
    c:close()
    b:stop()
  end)

  it("finds its coordinator here, creating __transaction_state", function()
    local r = assert(c:request(FIND_COORDINATOR, { key_type = 1, key = "tx-a" }, { version = 1 }))
    assert.are.same({ NONE, 0, b.port }, { r.error_code, r.node_id, r.port })
    assert.are.equal(5, b:state().topics.__transaction_state.partition_count)
    r = assert(c:request(FIND_COORDINATOR, { key_type = 1, coordinator_keys = { "tx-a", "tx-b" } }))
    assert.are.same({ NONE, NONE }, { r.coordinators[1].error_code, r.coordinators[2].error_code })
    assert.are.same({ "tx-a", "tx-b" }, { r.coordinators[1].key, r.coordinators[2].key })
    -- an empty id and an unknown key type are refused
    r = assert(c:request(FIND_COORDINATOR, { key_type = 1, coordinator_keys = { "" } }))
    assert.are.equal(INVALID_REQUEST, r.coordinators[1].error_code)
    r = assert(c:request(FIND_COORDINATOR, { key_type = 7, key = "x" }, { version = 3 }))
    assert.are.equal(INVALID_REQUEST, r.error_code)
  end)

  it("bumps the epoch at each InitProducerId and fences older producers", function()
    local err, pid, epoch = init(c, "tx-a")
    assert.are.same({ NONE, 0 }, { err, epoch })
    assert.is_true(pid >= 0)
    local err2, pid2, epoch2 = init(c, "tx-a")
    assert.are.same({ NONE, pid, 1 }, { err2, pid2, epoch2 })
    -- another id, another producer id
    local _, other = init(c, "tx-b")
    assert.are_not.equal(pid, other)
    -- KIP-360: the producer at the current epoch may ask again; an older one is fenced
    assert.are.same({ NONE, pid, 2 }, { init(c, "tx-a", { pid = pid, epoch = 1 }) })
    -- the same request again (its answer lost): the same answer, not fenced, nothing written
    local leo = b:state().topics.__transaction_state.partitions[partition_of("tx-a", 5)].log_end_offset
    assert.are.same({ NONE, pid, 2 }, { init(c, "tx-a", { pid = pid, epoch = 1 }) })
    assert.are.equal(leo, b:state().topics.__transaction_state.partitions[partition_of("tx-a", 5)].log_end_offset)
    assert.are.same({ PRODUCER_FENCED, -1, -1 }, { init(c, "tx-a", { pid = pid, epoch = 0 }) })
    assert.are.same({ INVALID_PRODUCER_EPOCH, -1, -1 }, { init(c, "tx-a", { pid = pid, epoch = 0, version = 3 }) })
    assert.are.same({ PRODUCER_FENCED, -1, -1 }, { init(c, "tx-a", { pid = pid + 1000, epoch = 2 }) })
    -- the state is in the id's partition of __transaction_state
    local p = b:state().topics.__transaction_state.partitions[partition_of("tx-a", 5)]
    assert.are.equal(3, p.log_end_offset)
  end)

  it("refuses timeouts beyond transaction.max.timeout.ms, empty ids and half a producer", function()
    assert.are.equal(INVALID_TRANSACTION_TIMEOUT, (init(c, "tx-t", { timeout = 120001 })))
    assert.are.equal(INVALID_TRANSACTION_TIMEOUT, (init(c, "tx-t", { timeout = 0 })))
    assert.are.equal(INVALID_REQUEST, (init(c, "")))
    assert.are.equal(INVALID_REQUEST, (init(c, "tx\0nul")))
    -- an idempotent producer naming its old id gets a new one (it cannot fence another)
    local r = assert(c:request(INIT_PRODUCER_ID, { transaction_timeout_ms = 60000, producer_id = 4242,
      producer_epoch = 3 }, { version = 4 }))
    assert.are.same({ NONE, 0 }, { r.error_code, r.producer_epoch })
    assert.are_not.equal(4242, r.producer_id)
    assert.are.equal(INVALID_REQUEST, (init(c, "tx-t", { pid = 5 })))
    assert.are.same({ NONE, 0 }, { (init(c, "tx-t", { timeout = 120000 })), select(3, init(c, "tx-t2")) })
  end)

  it("adds partitions and a group's offsets to a transaction, and describes it", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-out", partitions = 2 } })
    a:close()
    local _, pid, epoch = init(c, "tx-p")
    local st = describe_txn(c, "tx-p")
    assert.are.same({ NONE, "Empty", pid, epoch }, { st.error_code, st.transaction_state, st.producer_id, st.producer_epoch })
    assert.are.same({ ["tx-out"] = { [0] = NONE, [1] = NONE } }, add(c, "tx-p", pid, epoch, { ["tx-out"] = { 0, 1 } }))
    local parts
    st, parts = describe_txn(c, "tx-p")
    assert.are.same({ "Ongoing", 60000 }, { st.transaction_state, st.transaction_timeout_ms })
    assert.is_true(st.transaction_start_time_ms > 0)
    assert.are.same({ "tx-out-0", "tx-out-1" }, parts)
    -- already in: answered without a write
    local tp = partition_of("tx-p", 5)
    local leo = b:state().topics.__transaction_state.partitions[tp].log_end_offset
    assert.are.same({ ["tx-out"] = { [1] = NONE } }, add(c, "tx-p", pid, epoch, { ["tx-out"] = { 1 } }))
    assert.are.equal(leo, b:state().topics.__transaction_state.partitions[tp].log_end_offset)
    -- an unknown partition fails the request, the others not attempted
    assert.are.same({ ["tx-out"] = { [0] = OPERATION_NOT_ATTEMPTED, [7] = UNKNOWN_TOPIC_OR_PARTITION },
      ["nope"] = { [0] = UNKNOWN_TOPIC_OR_PARTITION } },
      add(c, "tx-p", pid, epoch, { ["tx-out"] = { 0, 7 }, nope = { 0 } }))
    -- a stranger, a zombie (v2: PRODUCER_FENCED, v1: INVALID_PRODUCER_EPOCH), an unknown id
    assert.are.same({ ["tx-out"] = { [0] = INVALID_PRODUCER_ID_MAPPING } }, add(c, "tx-p", pid + 1, epoch, { ["tx-out"] = { 0 } }))
    assert.are.same({ ["tx-out"] = { [0] = PRODUCER_FENCED } }, add(c, "tx-p", pid, epoch - 1, { ["tx-out"] = { 0 } }, 2))
    assert.are.same({ ["tx-out"] = { [0] = INVALID_PRODUCER_EPOCH } }, add(c, "tx-p", pid, epoch - 1, { ["tx-out"] = { 0 } }, 1))
    assert.are.same({ ["tx-out"] = { [0] = INVALID_PRODUCER_ID_MAPPING } }, add(c, "tx-none", pid, epoch, { ["tx-out"] = { 0 } }))
    -- the group's offsets partition joins too
    local r = assert(c:request(ADD_OFFSETS, { transactional_id = "tx-p", producer_id = pid, producer_epoch = epoch,
      group_id = "tx-group" }))
    assert.are.equal(NONE, r.error_code)
    st, parts = describe_txn(c, "tx-p")
    local offsets_partitions = b:state().topics.__consumer_offsets and b:state().topics.__consumer_offsets.partition_count
      or 50
    assert.are.same({ "__consumer_offsets-" .. partition_of("tx-group", offsets_partitions), "tx-out-0", "tx-out-1" }, parts)
    r = assert(c:request(ADD_OFFSETS, { transactional_id = "tx-p", producer_id = pid, producer_epoch = epoch,
      group_id = "" }))
    assert.are.equal(INVALID_REQUEST, r.error_code)
    -- unknown ids are not found
    st = describe_txn(c, "tx-unknown")
    assert.are.same({ TRANSACTIONAL_ID_NOT_FOUND, "" }, { st.error_code, st.transaction_state })
    -- a new producer of the id: the ongoing transaction is aborted under a
    -- later epoch (the old producer is fenced), the new one asks again
    assert.are.same({ CONCURRENT_TRANSACTIONS, -1, -1 }, { init(c, "tx-p") })
    -- the markers are written by the coordinator's marker thread, then CompleteAbort
    assert.is_true(wait_for(function() return describe_txn(c, "tx-p").transaction_state == "CompleteAbort" end))
    st = describe_txn(c, "tx-p")
    assert.are.same({ "CompleteAbort", epoch + 1 }, { st.transaction_state, st.producer_epoch })
    assert.are.same({ ["tx-out"] = { [0] = PRODUCER_FENCED } }, add(c, "tx-p", pid, epoch, { ["tx-out"] = { 0 } }))
    assert.are.same({ NONE, pid, epoch + 2 }, { init(c, "tx-p") })
    assert.are.equal("Empty", describe_txn(c, "tx-p").transaction_state)
  end)

  it("ends transactions with EndTxn and refuses what Kafka refuses, appending nothing", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-end", partitions = 1 } })
    a:close()
    local function end_txn(id, pid, epoch, commit, version)
      return assert(c:request(END_TXN, { transactional_id = id, producer_id = pid, producer_epoch = epoch,
        committed = commit }, { version = version or 3 })).error_code
    end
    local _, pid, epoch = init(c, "tx-e")
    local tp = partition_of("tx-e", 5)
    local function state_leo() return b:state().topics.__transaction_state.partitions[tp].log_end_offset end
    local leo = state_leo()
    -- nothing to end, an unknown id, another producer id, an older epoch
    assert.are.equal(INVALID_TXN_STATE, end_txn("tx-e", pid, epoch, true))
    assert.are.equal(INVALID_PRODUCER_ID_MAPPING, end_txn("tx-unknown", pid, epoch, true))
    assert.are.equal(INVALID_PRODUCER_ID_MAPPING, end_txn("tx-e", pid + 1, epoch, false))
    assert.are.equal(INVALID_REQUEST, end_txn("", pid, epoch, false))
    assert.are.equal(leo, state_leo())
    assert.are.same({ ["tx-end"] = { [0] = NONE } }, add(c, "tx-e", pid, epoch, { ["tx-end"] = { 0 } }))
    assert.are.equal(PRODUCER_FENCED, end_txn("tx-e", pid, epoch - 1, true))
    assert.are.equal(INVALID_PRODUCER_EPOCH, end_txn("tx-e", pid, epoch - 1, true, 1))
    -- offsets inside the transaction stay pending: a require_stable fetch is told so
    local r = assert(c:request(ADD_OFFSETS, { transactional_id = "tx-e", producer_id = pid, producer_epoch = epoch,
      group_id = "tx-e-group" }))
    assert.are.equal(NONE, r.error_code)
    local function commit_offsets(partition)
      local rr = assert(c:request(TXN_OFFSET_COMMIT, { transactional_id = "tx-e", group_id = "tx-e-group",
        producer_id = pid, producer_epoch = epoch, topics = { { name = "tx-end", partitions = {
          { partition_index = partition, committed_offset = 42, committed_metadata = "m" } } } } }, { version = 3 }))
      return rr.topics[1].partitions[1].error_code
    end
    assert.are.equal(UNKNOWN_TOPIC_OR_PARTITION, commit_offsets(7))
    assert.are.equal(NONE, commit_offsets(0))
    local function fetched()
      local rr = assert(c:request(OFFSET_FETCH, { group_id = "tx-e-group", topics = { { name = "tx-end",
        partition_indexes = { 0 } } }, require_stable = true }, { version = 7 }))
      local p = rr.topics[1].partitions[1]
      return p.error_code, p.committed_offset
    end
    assert.are.same({ UNSTABLE_OFFSET_COMMIT }, { (fetched()) })
    -- the commit: PrepareCommit, then markers, then CompleteCommit
    assert.are.equal(NONE, end_txn("tx-e", pid, epoch, true))
    assert.is_true(wait_for(function() return describe_txn(c, "tx-e").transaction_state == "CompleteCommit" end))
    -- the retry of a commit that went through is answered as it was; the other end is not
    assert.are.equal(NONE, end_txn("tx-e", pid, epoch, true))
    assert.are.equal(INVALID_TXN_STATE, end_txn("tx-e", pid, epoch, false))
    assert.are.same({ NONE, 42 }, { fetched() })
    -- one marker in the data partition, none read as a record; the LSO is past it
    local p = b:state().topics["tx-end"].partitions[0]
    assert.are.same({ 1, 1, 0 }, { p.log_end_offset, p.last_stable_offset, p.aborted_transactions })
  end)

  it("runs transactions from the Lua client: commit, abort, offsets, and read_committed reads", function()
    local bs = "127.0.0.1:" .. b.port
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-lua", partitions = 2 } })
    a:close()
    local p = client.producer { bootstrap = bs, transactional_id = "tx-lua", linger_ms = 0 }
    assert.has_error(function() p:send("tx-lua", "k", "v") end, "send: no transaction is open: call begin() first")
    assert.has_error(function() p:commit() end, "commit: no transaction is open")
    local committed = {}
    for round = 1, 4 do
      assert(p:begin())
      assert.has_error(function() p:begin() end, "begin: a transaction is open already")
      for i = 1, 5 do
        local v = ("r%d-%d"):format(round, i)
        assert(p:send("tx-lua", v, v, { partition = i % 2 }))
        if round % 2 == 1 then committed[#committed + 1] = v end
      end
      if round % 2 == 1 then
        assert(p:send_offsets("tx-lua-group", { { topic = "tx-lua", partition = 0, offset = round } }))
        assert(p:commit())
      else
        assert(p:flush())
        assert(p:abort())
      end
    end
    p:close()
    local function read(isolation)
      local c = client.consumer { bootstrap = bs, fetch_max_wait_ms = 50, isolation_level = isolation }
      assert(c:assign { { topic = "tx-lua", partition = 0, offset = 0 }, { topic = "tx-lua", partition = 1, offset = 0 } })
      local out = {}
      local deadline = core.now_ms() + 5000
      while core.now_ms() < deadline do
        for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r.value end
        if #out >= 20 then break end
      end
      c:close()
      table.sort(out)
      return out
    end
    table.sort(committed)
    assert.are.same(committed, read("read_committed"))
    assert.are.equal(20, #read("read_uncommitted"))
    -- the offsets of the committed rounds count, the aborted round's not
    local r = assert(c:request(OFFSET_FETCH, { group_id = "tx-lua-group", topics = { { name = "tx-lua",
      partition_indexes = { 0 } } }, require_stable = true }, { version = 7 }))
    assert.are.same({ NONE, 3 }, { r.topics[1].partitions[1].error_code, r.topics[1].partitions[1].committed_offset })
    -- each aborted round wrote to both partitions (the last abort's markers
    -- may still be on their way)
    assert.is_true(wait_for(function()
      local st = b:state().topics["tx-lua"].partitions
      return st[0].aborted_transactions == 2 and st[1].aborted_transactions == 2
    end))
  end)

  it("holds the scenario's transaction invariants for seeded commits and aborts read read_committed", function()
    local scenario = require "kafkaiq.scenario"
    local bs = "127.0.0.1:" .. b.port
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-sc", partitions = 2 } })
    a:close()
    local sc = scenario.new { seed = 4242, brokers = { b }, log = false }
    local delivered = {}
    local p = client.producer { bootstrap = bs, transactional_id = "tx-sc", linger_ms = 0,
      on_delivery = function(err, r) if not err then delivered[#delivered + 1] = r end end }
    local cons = client.consumer { bootstrap = bs, fetch_max_wait_ms = 20, isolation_level = "read_committed",
      interceptors = { on_consume = sc:on_consume(nil, { read_committed = true }) } }
    assert(cons:assign { { topic = "tx-sc", partition = 0, offset = 0 }, { topic = "tx-sc", partition = 1, offset = 0 } })
    local want = 0
    for i = 1, 30 do
      assert(p:begin())
      delivered = {}
      for j = 1, sc.random:int(1, 6) do assert(p:send("tx-sc", "k" .. j, ("t%d-%d"):format(i, j))) end
      assert(p:flush())
      local commit = sc.random:next() < 0.6
      if commit then
        assert(p:commit())
        want = want + #delivered
      else
        assert(p:abort())
      end
      sc:transaction_ended(delivered, commit)
      assert(cons:poll(0))
    end
    p:close()
    -- read until every committed record is in, checking as it goes
    local got = 0
    local deadline = core.now_ms() + 10000
    while got < want and core.now_ms() < deadline do
      assert(cons:poll(50))
      got = 0
      for _, view in ipairs(sc.views) do
        for _, seen in pairs(view.seen) do for _ in pairs(seen) do got = got + 1 end end
      end
    end
    cons:close()
    assert.are.equal(want, got)
    sc:check()
    assert.are.equal(30, sc.counts.transactions)
  end)

  it("shows the transaction's marker in its records' journeys", function()
    local bs = "127.0.0.1:" .. b.port
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-jr", partitions = 1 } })
    a:close()
    local p = client.producer { bootstrap = bs, transactional_id = "tx-jr", linger_ms = 0 }
    assert(p:begin())
    assert(p:send("tx-jr", "k", "kept", { partition = 0 }))
    assert(p:commit())
    -- EndTxn is answered before its markers are written
    assert.is_true(wait_for(function() return b:state().topics["tx-jr"].partitions[0].log_end_offset == 2 end))
    assert(p:begin())
    assert(p:send("tx-jr", "k", "dropped", { partition = 0 }))
    assert(p:flush())
    assert(p:abort())
    p:close()
    local function marker_stage(offset)
      local j = assert(b:journey("tx-jr", 0, offset))
      for _, st in ipairs(j.stages) do
        if st.stage == "txn_committed" or st.stage == "txn_aborted" then return st.stage, st.after end
      end
    end
    -- record 0, COMMIT marker 1, record 2, ABORT marker 3
    assert.is_true(wait_for(function() return marker_stage(2) ~= nil end))
    assert.are.same({ "txn_committed", 1 }, { marker_stage(0) })
    assert.are.same({ "txn_aborted", 3 }, { marker_stage(2) })
  end)

  it("lets an admin abort a hanging transaction (KIP-664) and nothing more", function()
    local bs = "127.0.0.1:" .. b.port
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-hang", partitions = 1 } })
    a:close()
    local p = client.producer { bootstrap = bs, transactional_id = "tx-hang", linger_ms = 0 }
    assert(p:begin())
    assert(p:send("tx-hang", "k", "hanging", { partition = 0 }))
    assert(p:flush())
    -- what kafka-transactions.sh find-hanging / abort read and send
    local r = assert(c:request(61, { topics = { { name = "tx-hang", partition_indexes = { 0 } } } }))
    local ap = r.topics[1].partitions[1].active_producers[1]
    assert.are.equal(0, ap.current_txn_start_offset)
    assert.are.equal(0, b:state().topics["tx-hang"].partitions[0].last_stable_offset)
    local function marker(commit, epoch)
      local rr = assert(c:request(WRITE_TXN_MARKERS, { markers = { { producer_id = ap.producer_id,
        producer_epoch = epoch or ap.producer_epoch, transaction_result = commit, coordinator_epoch = ap.coordinator_epoch,
        topics = { { name = "tx-hang", partition_indexes = { 0 } } } } } }, { version = 1 }))
      return rr.markers[1].topics[1].partitions[1].error_code
    end
    -- a client may not commit it, nor abort at another epoch
    assert.are.equal(CLUSTER_AUTHORIZATION_FAILED, marker(true))
    assert.are.equal(CLUSTER_AUTHORIZATION_FAILED, marker(false, ap.producer_epoch + 1))
    assert.are.equal(1, b:state().topics["tx-hang"].partitions[0].log_end_offset)
    assert.are.equal(NONE, marker(false))
    local st = b:state().topics["tx-hang"].partitions[0]
    assert.are.same({ 2, 2, 1 }, { st.log_end_offset, st.last_stable_offset, st.aborted_transactions })
    -- once aborted there is nothing open to abort
    assert.are.equal(CLUSTER_AUTHORIZATION_FAILED, marker(false))
    assert(p:abort())
    p:close()
  end)

  it("takes a transaction's records only for partitions in it (KIP-890 part 1), and verifies with v4", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-v", partitions = 2 } })
    a:close()
    local _, pid, epoch = init(c, "tx-v")
    assert.are.same({ ["tx-v"] = { [0] = NONE } }, add(c, "tx-v", pid, epoch, { ["tx-v"] = { 0 } }))
    local function produce(partition, seq, version)
      local batch = assert(core.build_batch { producer_id = pid, producer_epoch = epoch, base_sequence = seq,
        transactional = true, records = { { key = "k", value = "v" } } })
      local r = assert(c:request(0, { transactional_id = "tx-v", acks = -1, timeout_ms = 5000,
        topic_data = { { name = "tx-v", partition_data = { { index = partition, records = batch } } } } },
        { version = version or 10 })) -- v12 adds the partition (transactions v2)
      return r.responses[1].partition_responses[1].error_code
    end
    -- partition 1 was never added: refused, nothing written (v11+: abortable, as Kafka answers)
    assert.are.equal(INVALID_TXN_STATE, produce(1, 0))
    assert.are.equal(TRANSACTION_ABORTABLE, produce(1, 0, 11))
    assert.are.equal(0, b:state().topics["tx-v"].partitions[1].log_end_offset)
    assert.are.equal(NONE, produce(0, 0))
    assert.are.equal(1, b:state().topics["tx-v"].partitions[0].log_end_offset)
    -- what a partition leader asks the coordinator (v4, verify_only)
    local r = assert(c:request(ADD_PARTITIONS, { transactions = { { transactional_id = "tx-v", producer_id = pid,
      producer_epoch = epoch, verify_only = true, topics = { { name = "tx-v", partitions = { 0, 1 } } } },
      { transactional_id = "tx-none", producer_id = pid, producer_epoch = epoch, verify_only = true,
        topics = { { name = "tx-v", partitions = { 0 } } } } } }, { version = 4 }))
    local got = {}
    for _, tr in ipairs(r.results_by_transaction) do
      for _, tp in ipairs(tr.topic_results) do
        for _, pr in ipairs(tp.results_by_partition) do
          got[#got + 1] = tr.transactional_id .. ":" .. pr.partition_index .. "=" .. pr.partition_error_code
        end
      end
    end
    assert.are.same({ "tx-v:0=0", "tx-v:1=" .. INVALID_TXN_STATE, "tx-none:0=" .. INVALID_PRODUCER_ID_MAPPING }, got)
    -- v4 without verify_only adds, as v0-3 do
    r = assert(c:request(ADD_PARTITIONS, { transactions = { { transactional_id = "tx-v", producer_id = pid,
      producer_epoch = epoch, verify_only = false, topics = { { name = "tx-v", partitions = { 1 } } } } } },
      { version = 4 }))
    assert.are.equal(NONE, r.results_by_transaction[1].topic_results[1].results_by_partition[1].partition_error_code)
    assert.are.equal(NONE, produce(1, 0))
  end)

  it("runs transactions v2: Produce v12 and TxnOffsetCommit v5 add their partitions, EndTxn v5 bumps the epoch",
    function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-v2", partitions = 2 } })
    a:close()
    local _, pid, epoch = init(c, "tx-v2")
    assert.are.equal(0, epoch)
    local seqs = {}
    local function produce(partition, ep, version)
      local seq = seqs[ep .. ":" .. partition] or 0
      local batch = assert(core.build_batch { producer_id = pid, producer_epoch = ep, base_sequence = seq,
        transactional = true, records = { { key = "k", value = "v" } } })
      local r = assert(c:request(0, { transactional_id = "tx-v2", acks = -1, timeout_ms = 5000,
        topic_data = { { name = "tx-v2", partition_data = { { index = partition, records = batch } } } } },
        { version = version or 12 }))
      local err = r.responses[1].partition_responses[1].error_code
      if err == NONE then seqs[ep .. ":" .. partition] = seq + 1 end
      return err
    end
    local function end_txn(ep, commit, version, id)
      local r = assert(c:request(END_TXN, { transactional_id = "tx-v2", producer_id = id or pid, producer_epoch = ep,
        committed = commit }, { version = version or 5 }))
      return { r.error_code, r.producer_id, r.producer_epoch }
    end
    local function leo(p) return b:state().topics["tx-v2"].partitions[p].log_end_offset end
    local function state() return describe_txn(c, "tx-v2").transaction_state end
    -- partition 1 was never added: a produce v12 adds it and begins the transaction
    assert.are.equal(NONE, produce(1, 0))
    assert.are.equal(1, leo(1))
    local st, parts = describe_txn(c, "tx-v2")
    assert.are.same({ "Ongoing", { "tx-v2-1" } }, { st.transaction_state, parts })
    -- a TxnOffsetCommit v5 adds the group's partition, no AddOffsetsToTxn first
    assert.are.equal(NONE, assert(c:request(FIND_COORDINATOR, { key_type = 0, key = "tx-v2-group" },
      { version = 1 })).error_code)
    local r = assert(c:request(TXN_OFFSET_COMMIT, { transactional_id = "tx-v2", group_id = "tx-v2-group",
      producer_id = pid, producer_epoch = 0, topics = { { name = "tx-v2", partitions = {
        { partition_index = 1, committed_offset = 42, committed_metadata = "" } } } } }, { version = 5 }))
    assert.are.equal(NONE, r.topics[1].partitions[1].error_code)
    local offsets = "__consumer_offsets-" .. partition_of("tx-v2-group", b:state().topics.__consumer_offsets.partition_count)
    assert.are.same({ offsets, "tx-v2-1" }, select(2, describe_txn(c, "tx-v2")))
    -- the commit answers the next epoch; its retry (at the epoch before) the same
    assert.are.same({ NONE, pid, 1 }, end_txn(0, true))
    assert.is_true(wait_for(function() return state() == "CompleteCommit" end))
    assert.are.same({ NONE, pid, 1 }, end_txn(0, true))
    assert.are.same({ INVALID_TXN_STATE, -1, -1 }, end_txn(0, false))
    -- the marker carries epoch 1: a produce at the old epoch is fenced, nothing written
    assert.are.equal(2, leo(1))
    assert.are.equal(INVALID_PRODUCER_EPOCH, produce(1, 0))
    assert.are.equal(2, leo(1))
    local rr = assert(c:request(OFFSET_FETCH, { group_id = "tx-v2-group", topics = { { name = "tx-v2",
      partition_indexes = { 1 } } }, require_stable = true }, { version = 7 }))
    assert.are.same({ NONE, 42 }, { rr.topics[1].partitions[1].error_code, rr.topics[1].partitions[1].committed_offset })
    -- the next transaction at epoch 1, aborted: epoch 2
    assert.are.equal(NONE, produce(0, 1))
    assert.are.same({ NONE, pid, 2 }, end_txn(1, false))
    assert.is_true(wait_for(function() return state() == "CompleteAbort" end))
    assert.are.same({ 2, 1 }, { leo(0), b:state().topics["tx-v2"].partitions[0].aborted_transactions })
    -- committing nothing is refused; aborting nothing bumps the epoch
    assert.are.same({ INVALID_TXN_STATE, -1, -1 }, end_txn(2, true))
    assert.are.same({ NONE, pid, 3 }, end_txn(2, false))
    assert.is_true(wait_for(function() return state() == "CompleteAbort" end))
    assert.are.same({ PRODUCER_FENCED, -1, -1 }, end_txn(1, false))
    -- under v1 rules (EndTxn v4) the same abort at epoch 3 reads as a retry, and bumps nothing
    assert.are.same({ NONE }, end_txn(3, false, 4))
    assert.are.same({ NONE, pid, 4 }, end_txn(3, false))
    -- a produce v11 does not add a partition
    assert.are.equal(TRANSACTION_ABORTABLE, produce(0, 4, 11))
  end)

  it("refuses transaction markers from clients", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-mk", partitions = 1 } })
    a:close()
    local r = assert(c:request(WRITE_TXN_MARKERS, { markers = { { producer_id = 7, producer_epoch = 0,
      transaction_result = false, coordinator_epoch = 0, topics = { { name = "tx-mk", partition_indexes = { 0 } } } } } },
      { version = 1 }))
    assert.are.equal(CLUSTER_AUTHORIZATION_FAILED, r.markers[1].topics[1].partitions[1].error_code)
    -- the same when the client calls itself a broker of a cluster it is not in
    local fake = assert(connection.open("127.0.0.1", b.port, { client_id = "kafkaiq-broker-0" }))
    r = assert(fake:request(WRITE_TXN_MARKERS, { markers = { { producer_id = 7, producer_epoch = 0,
      transaction_result = true, coordinator_epoch = 0, topics = { { name = "tx-mk", partition_indexes = { 0 } } } } } },
      { version = 1 }))
    fake:close()
    assert.are.equal(CLUSTER_AUTHORIZATION_FAILED, r.markers[1].topics[1].partitions[1].error_code)
    assert.are.equal(0, b:state().topics["tx-mk"].partitions[0].log_end_offset)
  end)

  it("lists its transactional ids by state, producer id and duration", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-l", partitions = 1 } })
    a:close()
    local _, p1 = init(c, "tx-l1")
    local _, p2, e2 = init(c, "tx-l2")
    add(c, "tx-l2", p2, e2, { ["tx-l"] = { 0 } })
    local function list(body, version)
      local r = assert(c:request(LIST_TXNS, body, { version = version or 1 }))
      local got = {}
      for _, t in ipairs(r.transaction_states) do got[#got + 1] = t.transactional_id .. "=" .. t.transaction_state end
      table.sort(got)
      return got, r.unknown_state_filters, r.error_code
    end
    assert.are.same({ "tx-l1=Empty", "tx-l2=Ongoing" }, (list {}))
    assert.are.same({ "tx-l2=Ongoing" }, (list { state_filters = { "Ongoing" } }))
    local got, unknown = list { state_filters = { "Empty", "Bogus", "Dead" } }
    assert.are.same({ "tx-l1=Empty" }, got)
    assert.are.same({ "Bogus" }, unknown)
    assert.are.same({ "tx-l1=Empty" }, (list { producer_id_filters = { p1 } }))
    -- v1: running longer than the filter (an hour: none; zero: the ongoing one)
    assert.are.same({}, (list { duration_filter = 3600000 }))
    assert(kiq.wait_for(function() return #list { duration_filter = 0 } == 1 end, 2000, "the transaction to age"))
    assert.are.same({ "tx-l2=Ongoing" }, (list { duration_filter = 0 }))
    assert.are.same({ "tx-l1=Empty", "tx-l2=Ongoing" }, (list({}, 0)))
  end)

  it("keeps the state across a restart", function()
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-kept", partitions = 1 } })
    a:close()
    local _, pid = init(c, "tx-r")
    init(c, "tx-r")
    local long = ("L"):rep(600) -- kept whole in its record, not cut
    local _, lpid = init(c, long)
    local _, pid2, epoch2 = init(c, "tx-o")
    add(c, "tx-o", pid2, epoch2, { ["tx-kept"] = { 0 } })
    c:close()
    b:stop()
    assert(b:start())
    c = open(b)
    assert.are.same({ NONE, pid, 2 }, { init(c, "tx-r") })
    assert.are.same({ NONE, lpid, 1 }, { init(c, long) })
    -- the ongoing transaction came back with its partition
    local st, parts = describe_txn(c, "tx-o")
    assert.are.same({ "Ongoing", pid2, epoch2 }, { st.transaction_state, st.producer_id, st.producer_epoch })
    assert.are.same({ "tx-kept-0" }, parts)
  end)
end)

describe("expiry on one broker", function()
  it("forgets idle transactional ids and producers, not those with an open transaction", function()
    local b = assert(kiq.broker { ["transaction.state.log.num.partitions"] = 5, ["transactional.id.expiration.ms"] = 300,
      ["transaction.remove.expired.transaction.cleanup.interval.ms"] = 50, ["producer.id.expiration.ms"] = 300,
      ["log.retention.check.interval.ms"] = 50 })
    local c = open(b)
    local a = assert(b:admin())
    assert(a:create_topics { { name = "tx-exp", partitions = 1 } })
    a:close()
    local bs = "127.0.0.1:" .. b.port
    -- one producer commits and goes idle, another stays in its transaction
    local idle = client.producer { bootstrap = bs, transactional_id = "tx-idle", linger_ms = 0 }
    assert(idle:begin())
    assert(idle:send("tx-exp", "k", "idle", { partition = 0 }))
    assert(idle:commit())
    -- EndTxn is answered before its markers are written
    assert.is_true(wait_for(function() return b:state().topics["tx-exp"].partitions[0].log_end_offset == 2 end, 5000))
    local open_ = client.producer { bootstrap = bs, transactional_id = "tx-open", linger_ms = 0,
      transaction_timeout_ms = 60000 }
    assert(open_:begin())
    assert(open_:send("tx-exp", "k", "open", { partition = 0 }))
    assert(open_:flush())
    local function producers()
      local r = assert(c:request(61, { topics = { { name = "tx-exp", partition_indexes = { 0 } } } }))
      local out = {}
      for _, ap in ipairs(r.topics[1].partitions[1].active_producers) do
        out[#out + 1] = ap.current_txn_start_offset
      end
      return out
    end
    assert.are.equal(2, #producers())
    assert.is_true(wait_for(function() return describe_txn(c, "tx-idle").error_code == TRANSACTIONAL_ID_NOT_FOUND end,
      10000))
    assert.is_true(wait_for(function() return #producers() == 1 end, 10000))
    -- the one left is the open transaction's, which holds its first offset
    assert.are.same({ 2 }, producers())
    assert.are.equal("Ongoing", describe_txn(c, "tx-open").transaction_state)
    assert(open_:abort())
    idle:close()
    open_:close()
    c:close()
    b:stop()
  end)
end)

describe("producer ids in a cluster of three", function()
  it("come in blocks from the controller: unique across brokers and controller restarts", function()
    local dir = os.tmpname()
    os.remove(dir)
    local cl = assert(kiq.cluster { brokers = 3, dir = dir })
    local function pid_from(id)
      local conn = open(cl:broker(id))
      local r = assert(conn:request(INIT_PRODUCER_ID, { transaction_timeout_ms = 60000 }))
      conn:close()
      assert.are.equal(NONE, r.error_code)
      return r.producer_id
    end
    local seen, blocks = {}, {}
    for round = 1, 2 do
      for id = 0, 2 do
        local pid = pid_from(id)
        assert.is_nil(seen[pid], "producer id " .. pid .. " handed out twice")
        seen[pid] = true
        blocks[math.floor(pid / 1000)] = true
      end
    end
    local n = 0
    for _ in pairs(blocks) do n = n + 1 end
    assert.are.equal(3, n) -- one block each
    -- the controller restarts (its broker with it): the blocks it gave are
    -- in its metadata log, so the next one comes after them
    assert(cl:restart(0))
    local epoch
    assert(kiq.wait_for(function()
      local v = cl:controller()
      local b1 = v and v.brokers[1]
      epoch = b1 and not b1.fenced and b1.epoch
      return epoch
    end, 10000, "broker 1 registered with the restarted controller"))
    local control = assert(connection.open("127.0.0.1", cl:broker(0):state().control_port, { client_id = "spec" }))
    local r = assert(control:request(ALLOCATE_PRODUCER_IDS, { broker_id = 1, broker_epoch = epoch }))
    assert.are.same({ NONE, 1000 }, { r.error_code, r.producer_id_len })
    assert.is_true(r.producer_id_start >= 3000, "a block after the three given, not " .. r.producer_id_start)
    r = assert(control:request(ALLOCATE_PRODUCER_IDS, { broker_id = 1, broker_epoch = epoch + 100 }))
    assert.are.same({ STALE_BROKER_EPOCH, -1 }, { r.error_code, r.producer_id_start })
    control:close()
    -- only the controller allocates
    control = assert(connection.open("127.0.0.1", cl:broker(1):state().control_port, { client_id = "spec" }))
    r = assert(control:request(ALLOCATE_PRODUCER_IDS, { broker_id = 1, broker_epoch = epoch }))
    assert.are.equal(NOT_CONTROLLER, r.error_code)
    control:close()
    cl:stop()
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)

describe("a transactional id in a cluster of three", function()
  it("is coordinated by its partition's leader, and by the next one after a failover", function()
    local cl = assert(kiq.cluster { brokers = 3, ["transaction.state.log.num.partitions"] = 3,
      ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
    local conns = {}
    for id = 0, 2 do conns[id] = open(cl:broker(id)) end
    -- the first lookup creates __transaction_state: COORDINATOR_NOT_AVAILABLE until its leaders are in place
    local r
    assert(kiq.wait_for(function()
      r = assert(conns[1]:request(FIND_COORDINATOR, { key_type = 1, key = "tx-c" }, { version = 2 }))
      return r.error_code == NONE
    end, 10000, "a coordinator for tx-c"))
    local p = partition_of("tx-c", 3)
    assert(cl:wait_for_replicas("__transaction_state", p, 10000))
    local info = cl:partition("__transaction_state", p)
    assert.are.equal(info.leader, r.node_id)
    assert.are.equal(3, #info.replicas) -- transaction.state.log.replication.factor, 3 live brokers
    -- its configs as Kafka sets them
    local cfg = assert(cl:admin():describe_configs { { type = "topic", name = "__transaction_state" } })
    assert.are.equal("compact", cfg[1].configs["cleanup.policy"].value)
    assert.are.equal("2", cfg[1].configs["min.insync.replicas"].value)
    local leader = info.leader
    for id = 0, 2 do
      if id ~= leader then assert.are.equal(NOT_COORDINATOR, (init(conns[id], "tx-c"))) end
    end
    local err, pid, epoch = init(conns[leader], "tx-c")
    assert.are.same({ NONE, 0 }, { err, epoch })
    assert(cl:wait_for_replicas("__transaction_state", p, 10000))
    if leader ~= 0 then -- broker 0 hosts the controller and stays up
      conns[leader]:close()
      cl:kill(leader)
      local new = assert(cl:wait_for_leader("__transaction_state", p, 15000, leader))
      assert(kiq.wait_for(function() return (init(conns[new], "tx-c")) ~= NOT_COORDINATOR end, 10000,
        "the new leader to coordinate"))
      -- it took the state over from its log: the same producer id, a later epoch
      local err3, pid3, epoch3 = init(conns[new], "tx-c")
      assert.are.same({ NONE, pid }, { err3, pid3 })
      assert.is_true(epoch3 >= 2)
    end
    for id = 0, 2 do if id ~= leader then conns[id]:close() end end
    cl:stop()
  end)

  it("has a leader ask the coordinator on another broker before a transaction's first records (KIP-890 part 1)",
    function()
    local cl = assert(kiq.cluster { brokers = 3, ["transaction.state.log.num.partitions"] = 1 })
    local conns = {}
    for id = 0, 2 do conns[id] = open(cl:broker(id)) end
    assert(cl:admin():create_topics { { name = "tx-cv", partitions = 6, replication_factor = 1 } })
    local r = assert(conns[0]:request(FIND_COORDINATOR, { key_type = 1, key = "tx-cv" }, { version = 2 }))
    assert.are.equal(NONE, r.error_code)
    local coord = r.node_id
    assert(cl:wait_for_replicas("__transaction_state", 0, 10000))
    -- a partition led elsewhere than at the coordinator
    local q, leader
    for i = 0, 5 do
      assert(cl:wait_for_leader("tx-cv", i, 10000))
      local l = cl:partition("tx-cv", i).leader
      if l ~= coord and not q then q, leader = i, l end
    end
    assert.is_not_nil(q, "every partition is led by the coordinator")
    local err, pid, epoch = init(conns[coord], "tx-cv")
    assert.are.equal(NONE, err)
    local function leo() return cl:broker(leader):state().topics["tx-cv"].partitions[q].log_end_offset end
    local function produce(seq, ep, version, partition)
      local batch = assert(core.build_batch { producer_id = pid, producer_epoch = ep or epoch, base_sequence = seq,
        transactional = true, records = { { key = "k", value = "v" .. seq } } })
      local resp = assert(conns[leader]:request(0, { transactional_id = "tx-cv", acks = -1, timeout_ms = 5000,
        topic_data = { { name = "tx-cv", partition_data = { { index = partition or q, records = batch } } } } },
        { version = version or 10 }))
      return resp.responses[1].partition_responses[1].error_code
    end
    -- not in the transaction at its coordinator: refused, nothing written
    assert.are.equal(INVALID_TXN_STATE, produce(0))
    assert.are.equal(0, leo())
    -- another epoch than the coordinator's
    assert.are.equal(INVALID_PRODUCER_EPOCH, produce(0, epoch + 1))
    assert.are.equal(0, leo())
    assert.are.same({ ["tx-cv"] = { [q] = NONE } }, add(conns[coord], "tx-cv", pid, epoch, { ["tx-cv"] = { q } }))
    assert.are.equal(NONE, produce(0))
    assert.are.equal(NONE, produce(1))
    assert.are.equal(2, leo())
    r = assert(conns[coord]:request(END_TXN, { transactional_id = "tx-cv", producer_id = pid, producer_epoch = epoch,
      committed = true }, { version = 3 }))
    assert.are.equal(NONE, r.error_code)
    assert(kiq.wait_for(function()
      local st = cl:broker(leader):state().topics["tx-cv"].partitions[q]
      return st.log_end_offset == 3 and st.last_stable_offset == 3
    end, 10000, "the commit marker at the leader"))
    -- a late produce of the ended transaction cannot start another
    assert.are.equal(INVALID_TXN_STATE, produce(2))
    assert.are.equal(3, leo())
    -- transactions v2: the leader has the coordinator add the partition
    -- (AddPartitionsToTxn v4 without verify_only); EndTxn v5 bumps the epoch
    assert.are.equal(NONE, produce(2, epoch, 12))
    assert.are.equal(4, leo())
    assert.are.same({ "tx-cv-" .. q }, select(2, describe_txn(conns[coord], "tx-cv")))
    r = assert(conns[coord]:request(END_TXN, { transactional_id = "tx-cv", producer_id = pid, producer_epoch = epoch,
      committed = false }, { version = 5 }))
    assert.are.same({ NONE, pid, epoch + 1 }, { r.error_code, r.producer_id, r.producer_epoch })
    assert(kiq.wait_for(function() return cl:broker(leader):state().topics["tx-cv"].partitions[q].log_end_offset == 5 end,
      10000, "the abort marker at the leader"))
    -- the old epoch is fenced there by the marker's
    assert.are.equal(INVALID_PRODUCER_EPOCH, produce(3, epoch, 12))
    assert.are.equal(5, leo())
    -- a partition the coordinator leads: it adds the partition itself, answering once its state is replicated
    local own
    for i = 0, 5 do if cl:partition("tx-cv", i).leader == coord then own = i end end
    assert.is_not_nil(own, "the coordinator leads none of the six")
    local batch = assert(core.build_batch { producer_id = pid, producer_epoch = epoch + 1, base_sequence = 0,
      transactional = true, records = { { key = "k", value = "own" } } })
    local resp = assert(conns[coord]:request(0, { transactional_id = "tx-cv", acks = -1, timeout_ms = 5000,
      topic_data = { { name = "tx-cv", partition_data = { { index = own, records = batch } } } } }, { version = 12 }))
    assert.are.equal(NONE, resp.responses[1].partition_responses[1].error_code)
    assert.are.same({ "tx-cv-" .. own }, select(2, describe_txn(conns[coord], "tx-cv")))
    local st = cl:broker(coord):state().topics.__transaction_state.partitions[0]
    assert.are.equal(st.log_end_offset, st.high_watermark)
    for id = 0, 2 do conns[id]:close() end
    cl:stop()
  end)
end)
