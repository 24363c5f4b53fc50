-- The differential scenarios (run.lua): each a sequence of requests sent
-- alike to Apache Kafka and to KafkaIQ. `api` is the API whose lowest and
-- highest common versions the scenario runs at (its other steps use their
-- newest); a step's body is a table, or a function(saved) of what earlier
-- steps saved on that broker (saved.name: a name of the case's own);
-- `save(saved, resp)` keeps values for later steps; `until(resp)` repeats
-- a step (bounded, each broker on its own) until it holds, for what the
-- brokers reach at their own pace (a coordinator loading); `ignore` sends a
-- step without comparing its answer (setting up); `pick(resp, saved)`
-- returns the part of an answer to compare (ListGroups lists every group
-- of the broker: the case's own).
local core = require "kafkaiq.core"

local TS = 1700000000000 -- fixed record timestamps: the batches' bytes match

local function topic(s) return s.name end

-- Creates the case's topic and waits until every partition has a leader
-- (Kafka's brokers take a created topic's leadership a moment after the
-- controller answers).
local function create(partitions, configs)
  return {
    { api = "CreateTopics", ignore = true,
      body = function(s)
        return { topics = { { name = topic(s), num_partitions = partitions or 1, replication_factor = 1,
          configs = configs or {} } }, timeout_ms = 30000 }
      end },
    { api = "Metadata", ignore = true,
      body = function(s) return { topics = { { name = topic(s) } }, allow_auto_topic_creation = false } end,
      ["until"] = function(r)
        local t = r.topics[1]
        if not t or t.error_code ~= 0 or #t.partitions == 0 then return false end
        for _, p in ipairs(t.partitions) do if p.leader_id < 0 then return false end end
        return true
      end },
    -- Kafka's Metadata names a leader a moment before that broker serves as
    -- one (a Produce then answered NOT_LEADER_OR_FOLLOWER): until each
    -- partition's ListOffsets is answered
    { api = "ListOffsets", ignore = true,
      body = function(s)
        local ps = {}
        for i = 0, (partitions or 1) - 1 do ps[#ps + 1] = { partition_index = i, timestamp = -1 } end
        return { replica_id = -1, isolation_level = 0, topics = { { name = topic(s), partitions = ps } } }
      end,
      ["until"] = function(r)
        local t = r.topics[1]
        if not t then return false end
        for _, p in ipairs(t.partitions) do if p.error_code ~= 0 then return false end end
        return true
      end },
  }
end

local function records(n, tag, opts)
  local rs = {}
  for i = 1, n do
    rs[i] = { key = ("k%d"):format(i), value = ("%s-%d"):format(tag, i), timestamp = TS + i,
      headers = { { "h", "v" } } }
  end
  opts = opts or {}
  opts.records = rs
  opts.base_timestamp = TS
  return assert(core.build_batch(opts))
end

local function produce(partition, batch, acks)
  return {
    api = "Produce",
    body = function(s)
      return { acks = acks or -1, timeout_ms = 10000, topic_data = {
        { name = topic(s), partition_data = { { index = partition or 0, records = batch } } } } }
    end,
  }
end

local function fetch(partition, offset, max_bytes, isolation)
  return {
    api = "Fetch",
    body = function(s)
      return { replica_id = -1, max_wait_ms = 0, min_bytes = 0, max_bytes = max_bytes or 1048576,
        isolation_level = isolation or 0, session_id = 0, session_epoch = -1, topics = { { topic = topic(s),
          topic_id = s.topic_id, partitions = { { partition = partition or 0, fetch_offset = offset,
            partition_max_bytes = max_bytes or 1048576 } } } } }
    end,
  }
end

-- Metadata of the case's topic, keeping its id (Fetch v13+ names topics by id).
local function metadata(auto)
  return {
    api = "Metadata",
    body = function(s) return { topics = { { name = topic(s) } }, allow_auto_topic_creation = auto or false } end,
    save = function(s, r) s.topic_id = r.topics[1] and r.topics[1].topic_id end,
  }
end

local function list_offsets(partition, ts)
  return {
    api = "ListOffsets",
    body = function(s)
      return { replica_id = -1, isolation_level = 0, topics = { { name = topic(s), partitions = {
        { partition_index = partition or 0, timestamp = ts } } } } }
    end,
  }
end

-- FindCoordinator until it names one, then (a group's) until the
-- coordinator has loaded its partition: Kafka's answers NOT_COORDINATOR a
-- while after naming itself, when __consumer_offsets was just created.
local function find_coordinator(key_type)
  local steps = { {
    api = "FindCoordinator",
    body = function(s) return { key = s.name, key_type = key_type or 0, coordinator_keys = { s.name } } end,
    ["until"] = function(r)
      local e = r.coordinators and r.coordinators[1] or r
      return e.error_code == 0
    end,
  } }
  if (key_type or 0) == 0 then
    steps[2] = { api = "DescribeGroups", ignore = true, body = function(s) return { groups = { s.name } } end,
      ["until"] = function(r) return r.groups[1].error_code ~= 16 and r.groups[1].error_code ~= 14 end }
  end
  return steps
end

local function describe_topic_configs(keys)
  return {
    api = "DescribeConfigs",
    body = function(s)
      return { resources = { { resource_type = 2, resource_name = topic(s), configuration_keys = keys } },
        include_synonyms = true, include_documentation = false }
    end,
  }
end

local function incremental_alter(name, value, op)
  return {
    api = "IncrementalAlterConfigs",
    body = function(s)
      return { resources = { { resource_type = 2, resource_name = topic(s), configs = {
        { name = name, config_operation = op or 0, value = value } } } }, validate_only = false }
    end,
  }
end

local function corrupt(batch)
  -- flip a byte of the last record's value: the CRC no longer holds
  local at = #batch - 2
  return batch:sub(1, at - 1) .. string.char((batch:byte(at) + 1) % 256) .. batch:sub(at + 1)
end

local S = {}
local function scenario(t) S[#S + 1] = t end

-- ---------------------------------------------------------------- topics

scenario { name = "Metadata of an unknown topic, no auto-creation", api = "Metadata", steps = { metadata(false) } }

scenario { name = "Metadata auto-creates a topic", api = "Metadata", steps = {
  { api = "Metadata", body = function(s) return { topics = { { name = s.name } }, allow_auto_topic_creation = true } end,
    ["until"] = function(r) return r.topics[1].error_code == 0 and r.topics[1].partitions[1].leader_id >= 0 end },
} }

scenario { name = "CreateTopics, then the same name again", api = "CreateTopics", steps = {
  { api = "CreateTopics", body = function(s) return { topics = { { name = s.name, num_partitions = 3,
    replication_factor = 1, configs = { { name = "retention.ms", value = "3600000" } } } }, timeout_ms = 30000 } end },
  { api = "CreateTopics", body = function(s) return { topics = { { name = s.name, num_partitions = 3,
    replication_factor = 1, configs = {} } }, timeout_ms = 30000 } end },
  metadata(false),
} }

scenario { name = "CreateTopics refusals", api = "CreateTopics", steps = {
  { api = "CreateTopics", body = function(s) return { timeout_ms = 30000, topics = {
    { name = s.name .. "-zero", num_partitions = 0, replication_factor = 1, configs = {} },
    { name = s.name .. "-rf", num_partitions = 1, replication_factor = 5, configs = {} },
    { name = s.name .. "-cfg", num_partitions = 1, replication_factor = 1,
      configs = { { name = "no.such.config", value = "1" } } },
    { name = s.name .. "-bad", num_partitions = 1, replication_factor = 1,
      configs = { { name = "retention.ms", value = "soon" } } },
    { name = "bad/name", num_partitions = 1, replication_factor = 1, configs = {} },
    { name = s.name .. "-dry", num_partitions = 2, replication_factor = 1, configs = {} },
  }, validate_only = false } end },
} }

scenario { name = "CreateTopics validate_only", api = "CreateTopics", min_version = 1, steps = {
  { api = "CreateTopics", body = function(s) return { timeout_ms = 30000, validate_only = true, topics = {
    { name = s.name, num_partitions = 4, replication_factor = 1, configs = {} } } } end },
  metadata(false),
} }

scenario { name = "CreatePartitions: more, fewer, unknown topic", api = "CreatePartitions", steps = {
  create(1),
  { api = "CreatePartitions", body = function(s) return { topics = { { name = s.name, count = 3 } },
    timeout_ms = 30000, validate_only = false } end },
  { api = "CreatePartitions", body = function(s) return { topics = { { name = s.name, count = 2 },
    { name = s.name .. "-none", count = 2 } }, timeout_ms = 30000, validate_only = false } end },
} }

scenario { name = "DeleteTopics: a topic, then again, and an unknown one", api = "DeleteTopics", steps = {
  create(1),
  { api = "DeleteTopics", body = function(s) return { topic_names = { s.name }, topics = { { name = s.name } },
    timeout_ms = 30000 } end },
  { api = "DeleteTopics", body = function(s) return { topic_names = { s.name, s.name .. "-none" },
    topics = { { name = s.name }, { name = s.name .. "-none" } }, timeout_ms = 30000 } end },
} }

-- ---------------------------------------------------------------- data

local plain = records(5, "plain")

scenario { name = "Produce then Fetch", api = "Produce", steps = {
  create(1), metadata(false),
  produce(0, plain), produce(0, records(3, "more")),
  fetch(0, 0), fetch(0, 5), fetch(0, 8),
} }

scenario { name = "Fetch at each version", api = "Fetch", steps = {
  create(1), metadata(false), produce(0, plain),
  fetch(0, 0), fetch(0, 5), fetch(0, 99), fetch(0, 2, 10),
} }

scenario { name = "Fetch read_committed: a read, past the end, an unknown partition", api = "Fetch",
  min_version = 4, steps = {
  create(1), metadata(false), produce(0, plain),
  fetch(0, 0, nil, 1), fetch(0, 99, nil, 1), fetch(6, 0, nil, 1),
} }

-- An incremental fetch session (KIP-227): opened by a full fetch at epoch 0,
-- then fetches naming only what changed, answered with partitions that
-- have news; a wrong epoch, an unknown session, epoch -1 closing it.
local function session_fetch(epoch, parts, forgotten, id)
  return {
    api = "Fetch",
    body = function(s)
      local ps = {}
      for _, p in ipairs(parts) do
        ps[#ps + 1] = { partition = p[1], fetch_offset = p[2], partition_max_bytes = 1048576 }
      end
      return { replica_id = -1, max_wait_ms = 0, min_bytes = 0, max_bytes = 1048576, isolation_level = 0,
        session_id = id and id(s) or epoch == 0 and 0 or s.session_id, session_epoch = epoch,
        topics = #ps > 0 and { { topic = topic(s), topic_id = s.topic_id, partitions = ps } } or {},
        forgotten_topics_data = forgotten and { { topic = topic(s), topic_id = s.topic_id, partitions = forgotten } }
          or {} }
    end,
    save = epoch == 0 and function(s, r) s.session_id = r.session_id end or nil,
  }
end

scenario { name = "Fetch sessions: full, incremental, refused, closed", api = "Fetch", min_version = 7, steps = {
  create(2), metadata(false), produce(0, plain),
  session_fetch(0, { { 0, 0 }, { 1, 0 } }),
  session_fetch(1, {}),
  produce(1, records(2, "late")),
  session_fetch(2, {}),
  session_fetch(3, { { 0, 5 }, { 1, 2 } }),
  session_fetch(4, {}, { 1 }),
  produce(1, records(1, "forgotten")),
  session_fetch(5, {}),
  session_fetch(5, {}),
  session_fetch(6, {}, nil, function(s) return s.session_id + 1 end),
  session_fetch(-1, { { 0, 0 } }),
  session_fetch(7, {}),
} }

scenario { name = "Produce refusals", api = "Produce", steps = {
  create(2, { { name = "max.message.bytes", value = "100" } }),
  produce(5, plain),
  produce(0, plain),
  produce(0, corrupt(plain)),
  { api = "Produce", body = function(s) return { acks = 2, timeout_ms = 1000, topic_data = {
    { name = s.name, partition_data = { { index = 1, records = records(1, "acks") } } } } } end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 1000, topic_data = {
    { name = s.name .. "-none", partition_data = { { index = 0, records = plain } } } } } end },
} }

scenario { name = "ListOffsets: earliest, latest, by time, max timestamp", api = "ListOffsets", steps = {
  create(1), produce(0, plain), produce(0, records(3, "later", { base_timestamp = TS + 100 })),
  list_offsets(0, -2), list_offsets(0, -1), list_offsets(0, TS + 3), list_offsets(0, TS + 1000000),
  list_offsets(0, -3), list_offsets(7, -1),
} }

scenario { name = "DeleteRecords: within the log, past its end", api = "DeleteRecords", steps = {
  create(1), produce(0, plain),
  { api = "DeleteRecords", body = function(s) return { topics = { { name = s.name, partitions = {
    { partition_index = 0, offset = 2 } } } }, timeout_ms = 10000 } end },
  { api = "DeleteRecords", body = function(s) return { topics = { { name = s.name, partitions = {
    { partition_index = 0, offset = 50 }, { partition_index = 3, offset = 1 } } } }, timeout_ms = 10000 } end },
  list_offsets(0, -2), fetch(0, 0),
} }

scenario { name = "OffsetForLeaderEpoch", api = "OffsetForLeaderEpoch", steps = {
  create(1), produce(0, plain),
  { api = "OffsetForLeaderEpoch", body = function(s) return { replica_id = -1, topics = { { topic = s.name,
    partitions = { { partition = 0, current_leader_epoch = -1, leader_epoch = 0 },
      { partition = 4, current_leader_epoch = -1, leader_epoch = 0 } } } } } end },
} }

-- ---------------------------------------------------------------- configs

scenario { name = "DescribeConfigs of a topic, with synonyms", api = "DescribeConfigs", steps = {
  create(1, { { name = "cleanup.policy", value = "compact" }, { name = "retention.ms", value = "7200000" } }),
  describe_topic_configs(nil),
  describe_topic_configs({ "cleanup.policy", "segment.bytes", "max.message.bytes" }),
} }

scenario { name = "IncrementalAlterConfigs of a topic", api = "IncrementalAlterConfigs", steps = {
  create(1),
  incremental_alter("retention.ms", "1000"),
  incremental_alter("retention.ms", "soon"),
  incremental_alter("no.such.config", "1"),
  incremental_alter("retention.ms", nil, 1),
  describe_topic_configs({ "retention.ms" }),
} }

scenario { name = "AlterConfigs of a topic", api = "AlterConfigs", steps = {
  create(1),
  { api = "AlterConfigs", body = function(s) return { resources = { { resource_type = 2, resource_name = s.name,
    configs = { { name = "segment.ms", value = "600000" } } } }, validate_only = false } end },
  describe_topic_configs({ "segment.ms", "retention.ms" }),
} }

-- ---------------------------------------------------------------- groups

local SUB = "\0\0\0\0\0\1\0\1t\0\0\0\0" -- ConsumerProtocolSubscription v0: topic "t"

scenario { name = "A group's life: join, sync, heartbeat, commit, describe, leave", api = "JoinGroup", steps = {
  create(1), find_coordinator(0),
  { api = "JoinGroup", body = function(s) return { group_id = s.name, session_timeout_ms = 10000,
    rebalance_timeout_ms = 10000, member_id = "", protocol_type = "consumer",
    protocols = { { name = "range", metadata = SUB } } } end,
    save = function(s, r) s.member_id = r.member_id end },
  { api = "JoinGroup", body = function(s) return { group_id = s.name, session_timeout_ms = 10000,
    rebalance_timeout_ms = 10000, member_id = s.member_id or "", protocol_type = "consumer",
    protocols = { { name = "range", metadata = SUB } } } end,
    save = function(s, r) s.member_id, s.generation = r.member_id, r.generation_id end },
  { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.member_id, protocol_type = "consumer", protocol_name = "range",
    assignments = { { member_id = s.member_id, assignment = "\0\0\0\0\0\0\0\0\0\0" } } } end },
  { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.member_id } end },
  { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = 99,
    member_id = s.member_id } end },
  { api = "OffsetCommit", version = 9, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = s.generation, member_id = s.member_id, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 0, committed_metadata = "m" } } } } } end },
  { api = "DescribeGroups", body = function(s) return { groups = { s.name } } end },
  { api = "LeaveGroup", body = function(s) return { group_id = s.name, member_id = s.member_id,
    members = { { member_id = s.member_id } } } end },
  { api = "DescribeGroups", body = function(s) return { groups = { s.name, s.name .. "-none" } } end },
} }

-- (v10 names topics by id: these by name stop at v9; the by-id scenario
-- below is v10's)
scenario { name = "OffsetCommit and OffsetFetch outside a group's generation", api = "OffsetCommit",
  max_version = 9, steps = {
  create(2), find_coordinator(0),
  { api = "OffsetCommit", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = -1,
    member_id = "", topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 5, committed_metadata = "five" },
      { partition_index = 1, committed_offset = 7, committed_metadata = nil } } } } } end },
  { api = "OffsetCommit", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = 3,
    member_id = "nobody", topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 6, committed_metadata = "" } } } } } end },
  { api = "OffsetFetch", version = 7, body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 0, 1, 2 } } }, require_stable = false } end },
} }

scenario { name = "OffsetFetch", api = "OffsetFetch", max_version = 9, steps = {
  create(1), find_coordinator(0),
  { api = "OffsetCommit", version = 9, body = function(s) return { group_id = s.name, generation_id_or_member_epoch = -1,
    member_id = "", topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 3, committed_metadata = "three" } } } } } end, ignore = true },
  { api = "OffsetFetch", body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 0, 1 } } }, groups = { { group_id = s.name, topics = { { name = s.name,
      partition_indexes = { 0, 1 } } } } }, require_stable = false } end },
} }

scenario { name = "DeleteGroups", api = "DeleteGroups", steps = {
  find_coordinator(0),
  { api = "OffsetCommit", ignore = true, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = -1, member_id = "", topics = {} } end },
  { api = "DeleteGroups", body = function(s) return { groups_names = { s.name, s.name .. "-none" } } end },
} }

-- ---------------------------------------------------------------- producers

-- Kafka's broker answers COORDINATOR_LOAD_IN_PROGRESS until its first block
-- of producer ids came from the controller
scenario { name = "InitProducerId without a transactional id", api = "InitProducerId", steps = {
  { api = "InitProducerId", body = { transactional_id = nil, transaction_timeout_ms = 60000,
    producer_id = -1, producer_epoch = -1 }, ["until"] = function(r) return r.error_code ~= 14 end },
} }

scenario { name = "Idempotent produce: duplicate, gap, stale epoch", api = "Produce", min_version = 3, steps = {
  create(1),
  { api = "InitProducerId", body = { transaction_timeout_ms = 60000, producer_id = -1, producer_epoch = -1 },
    ["until"] = function(r) return r.error_code ~= 14 end, save = function(s, r) s.pid = r.producer_id end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = { { name = s.name,
    partition_data = { { index = 0, records = records(2, "idem", { producer_id = s.pid, producer_epoch = 0,
      base_sequence = 0 }) } } } } } end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = { { name = s.name,
    partition_data = { { index = 0, records = records(2, "idem", { producer_id = s.pid, producer_epoch = 0,
      base_sequence = 0 }) } } } } } end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = { { name = s.name,
    partition_data = { { index = 0, records = records(2, "gap", { producer_id = s.pid, producer_epoch = 0,
      base_sequence = 5 }) } } } } } end },
  list_offsets(0, -1),
} }

scenario { name = "A transaction: coordinator, partitions, commit", api = "EndTxn", steps = {
  create(1),
  find_coordinator(1),
  { api = "InitProducerId", body = function(s) return { transactional_id = s.name, transaction_timeout_ms = 60000,
    producer_id = -1, producer_epoch = -1 } end,
    ["until"] = function(r) return r.error_code == 0 end,
    save = function(s, r) s.pid, s.epoch = r.producer_id, r.producer_epoch end },
  { api = "AddPartitionsToTxn", version = 3, body = function(s) return { v3_and_below_transactional_id = s.name,
    v3_and_below_producer_id = s.pid, v3_and_below_producer_epoch = s.epoch,
    v3_and_below_topics = { { name = s.name, partitions = { 0 } } } } end },
  { api = "Produce", body = function(s) return { transactional_id = s.name, acks = -1, timeout_ms = 10000,
    topic_data = { { name = s.name, partition_data = { { index = 0, records = records(2, "txn", {
      producer_id = s.pid, producer_epoch = s.epoch, base_sequence = 0, transactional = true }) } } } } } end },
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, committed = true } end },
  -- each coordinator writes its markers at its own pace
  { api = "DescribeTransactions", ignore = true, body = function(s) return { transactional_ids = { s.name } } end,
    ["until"] = function(r) return r.transaction_states[1].transaction_state == "CompleteCommit" end },
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, committed = false } end },
  { api = "ListOffsets", body = function(s) return { replica_id = -1, isolation_level = 1, topics = { { name = s.name,
    partitions = { { partition_index = 0, timestamp = -1 } } } } } end,
    ["until"] = function(r) return r.topics[1].partitions[1].offset == 3 end },
} }

-- ---------------------------------------------------------------- cluster

scenario { name = "DescribeCluster", api = "DescribeCluster", steps = {
  { api = "DescribeCluster", body = { include_cluster_authorized_operations = false, endpoint_type = 1 } },
} }

scenario { name = "DescribeLogDirs of a topic", api = "DescribeLogDirs", steps = {
  create(2),
  -- Kafka makes a new topic's logs a moment after its metadata names the
  -- leader: asked until both partitions are in a log dir
  { api = "DescribeLogDirs", body = function(s) return { topics = { { topic = s.name, partitions = { 0, 1, 9 } } } } end,
    ["until"] = function(r)
      local n = 0
      for _, d in ipairs(r.results or {}) do
        for _, t in ipairs(d.topics or {}) do n = n + #(t.partitions or {}) end
      end
      return n >= 2
    end },
} }

scenario { name = "AlterReplicaLogDirs: no such directory, its own, unknown partitions", api = "AlterReplicaLogDirs",
  steps = {
  create(2),
  { api = "DescribeLogDirs", ignore = true, body = function(s) return { topics = { { topic = s.name,
    partitions = { 0, 1 } } } } end,
    ["until"] = function(r) return r.results[1] and #r.results[1].topics > 0 end,
    save = function(s, r) s.dir = r.results[1].log_dir end },
  { api = "AlterReplicaLogDirs", body = function(s) return { dirs = { { path = "/no/such/dir", topics = {
    { name = s.name, partitions = { 0, 1 } } } } } } end },
  { api = "AlterReplicaLogDirs", body = function(s) return { dirs = { { path = s.dir, topics = {
    { name = s.name, partitions = { 0, 7 } }, { name = s.name .. "-none", partitions = { 0 } } } } } } end },
  { api = "DescribeLogDirs", body = function(s) return { topics = { { topic = s.name, partitions = { 0, 1 } } } } end },
} }

scenario { name = "DescribeProducers", api = "DescribeProducers", steps = {
  create(1), produce(0, plain),
  { api = "DescribeProducers", body = function(s) return { topics = { { name = s.name,
    partition_indexes = { 0, 3 } } } } end },
} }

scenario { name = "DescribeTopicPartitions", api = "DescribeTopicPartitions", steps = {
  create(3),
  { api = "DescribeTopicPartitions", body = function(s) return { topics = { { name = s.name },
    { name = s.name .. "-none" } }, response_partition_limit = 2 } end },
} }

scenario { name = "ElectLeaders on one node", api = "ElectLeaders", steps = {
  create(1),
  { api = "ElectLeaders", body = function(s) return { election_type = 0, topic_partitions = { { topic = s.name,
    partitions = { 0, 5 } } }, timeout_ms = 10000 } end },
} }

-- ---------------------------------------------------------------- more groups

local function join(s, extra)
  local b = { group_id = s.name, session_timeout_ms = 10000, rebalance_timeout_ms = 10000,
    member_id = s.member_id or "", protocol_type = "consumer", protocols = { { name = "range", metadata = SUB } } }
  for k, v in pairs(extra or {}) do b[k] = v end
  return b
end

-- A member that joined (twice: the first answer may ask for a member id)
-- and synced; saved: member_id, generation.
local function member()
  return {
    create(1), find_coordinator(0),
    { api = "JoinGroup", ignore = true, body = function(s) return join(s) end,
      save = function(s, r) s.member_id = r.member_id end },
    { api = "JoinGroup", ignore = true, body = function(s) return join(s) end,
      save = function(s, r) s.member_id, s.generation = r.member_id, r.generation_id end },
    { api = "SyncGroup", ignore = true, body = function(s) return { group_id = s.name, generation_id = s.generation,
      member_id = s.member_id, protocol_type = "consumer", protocol_name = "range",
      assignments = { { member_id = s.member_id, assignment = "\0\0\0\0\0\0\0\0\0\0" } } } end },
  }
end

scenario { name = "FindCoordinator of a group and of a transactional id", api = "FindCoordinator", steps = {
  find_coordinator(0), find_coordinator(1),
} }

scenario { name = "JoinGroup refusals", api = "JoinGroup", steps = {
  find_coordinator(0),
  { api = "JoinGroup", body = function(s) return join(s, { session_timeout_ms = 1 }) end },
  { api = "JoinGroup", body = function(s) return join(s, { session_timeout_ms = 999999999 }) end },
  { api = "JoinGroup", body = function(s) return join(s, { member_id = "stranger" }) end },
  { api = "JoinGroup", body = function(s) return join(s, { protocol_type = "" }) end },
} }

scenario { name = "SyncGroup: stale generation, stranger", api = "SyncGroup", steps = {
  member(),
  { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation + 5,
    member_id = s.member_id, protocol_type = "consumer", protocol_name = "range", assignments = {} } end },
  { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = "stranger", protocol_type = "consumer", protocol_name = "range", assignments = {} } end },
  { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.member_id, protocol_type = "consumer", protocol_name = "range", assignments = {} } end },
} }

scenario { name = "Heartbeat: member, stale generation, stranger, no group", api = "Heartbeat", steps = {
  member(),
  { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.member_id } end },
  { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = s.generation - 1,
    member_id = s.member_id } end },
  { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = "stranger" } end },
  { api = "Heartbeat", body = function(s) return { group_id = s.name .. "-none", generation_id = 1,
    member_id = "stranger" } end },
} }

scenario { name = "LeaveGroup: member, then again, stranger", api = "LeaveGroup", steps = {
  member(),
  { api = "LeaveGroup", body = function(s) return { group_id = s.name, member_id = s.member_id,
    members = { { member_id = s.member_id } } } end },
  { api = "LeaveGroup", body = function(s) return { group_id = s.name, member_id = s.member_id,
    members = { { member_id = s.member_id } } } end },
  { api = "LeaveGroup", body = function(s) return { group_id = s.name .. "-none", member_id = "x",
    members = { { member_id = "x" } } } end },
} }

scenario { name = "DescribeGroups: stable, unknown", api = "DescribeGroups", steps = {
  member(),
  { api = "DescribeGroups", body = function(s) return { groups = { s.name, s.name .. "-none" },
    include_authorized_operations = false } end },
} }

scenario { name = "ListGroups filtered by a state no group is in", api = "ListGroups", steps = {
  { api = "ListGroups", body = { states_filter = { "CompletingRebalance" }, types_filter = {} } },
} }

scenario { name = "OffsetDelete: a partition, a subscribed topic, no group", api = "OffsetDelete", steps = {
  create(2), find_coordinator(0),
  { api = "OffsetCommit", version = 9, ignore = true, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = -1, member_id = "", topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 1 }, { partition_index = 1, committed_offset = 2 } } } } } end },
  { api = "OffsetDelete", body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partitions = { { partition_index = 0 }, { partition_index = 7 } } } } } end },
  { api = "OffsetFetch", version = 7, body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 0, 1 } } }, require_stable = false } end },
  { api = "OffsetDelete", body = function(s) return { group_id = s.name .. "-none", topics = { { name = s.name,
    partitions = { { partition_index = 0 } } } } } end },
} }

scenario { name = "ConsumerGroupDescribe of a classic group and of none", api = "ConsumerGroupDescribe", steps = {
  member(),
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name, s.name .. "-none" },
    include_authorized_operations = false } end },
} }

-- ---------------------------------------------------------------- consumer groups (KIP-848)

-- A ConsumerGroupHeartbeat body: the case's group, its member (v1 wants
-- the id made by the client; v0 takes one too) at `epoch`, subscribed to
-- the case's topic; `extra` overrides (NULL: a null field).
local NULL = {}
local function cgh(s, epoch, extra)
  local b = { group_id = s.name, member_id = s.member_id or (s.name .. "-member"), member_epoch = epoch,
    rebalance_timeout_ms = epoch == 0 and 10000 or -1, subscribed_topic_names = epoch == 0 and { s.name } or nil,
    topic_partitions = epoch == 0 and {} or s.owned }
  for k, v in pairs(extra or {}) do
    if v == NULL then b[k] = nil else b[k] = v end
  end
  return b
end

-- The member's assignment as ConsumerGroupHeartbeat's topic_partitions.
local function owned_of(r)
  local out = {}
  for _, tp in ipairs(r.assignment and r.assignment.topic_partitions or {}) do
    out[#out + 1] = { topic_id = tp.topic_id, partitions = tp.partitions }
  end
  return out
end

-- A consumer-protocol member of the case's group holding its whole
-- assignment (the topic's `partitions`); saved: member_id, epoch, owned.
local function consumer_member(partitions)
  return {
    create(partitions or 2), find_coordinator(0),
    { api = "ConsumerGroupHeartbeat", ignore = true, body = function(s) return cgh(s, 0) end,
      save = function(s, r) s.member_id, s.epoch, s.owned = r.member_id, r.member_epoch, owned_of(r) end },
  }
end

scenario { name = "ConsumerGroupHeartbeat: join, heartbeat, fenced, unknown, leave", api = "ConsumerGroupHeartbeat",
  steps = {
  create(2), find_coordinator(0),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0) end,
    save = function(s, r) s.member_id, s.epoch, s.owned = r.member_id, r.member_epoch, owned_of(r) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch + 5) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 1, { member_id = s.name .. "-stranger" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 1, { group_id = s.name .. "-none" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, -1) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch) end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end },
} }

scenario { name = "ConsumerGroupHeartbeat refusals", api = "ConsumerGroupHeartbeat", steps = {
  find_coordinator(0),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { group_id = "" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { subscribed_topic_names = NULL }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { rebalance_timeout_ms = -1 }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { server_assignor = "sticky" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 3, { member_id = "" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, -3) end },
} }

-- v1 (KIP-1082): the client makes its member id; KIP-848's regex
scenario { name = "ConsumerGroupHeartbeat v1: no member id, a regex, an invalid regex", api = "ConsumerGroupHeartbeat",
  min_version = 1, steps = {
  create(1), find_coordinator(0),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { member_id = "" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { subscribed_topic_names = NULL,
    subscribed_topic_regex = "(unclosed" }) end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0, { subscribed_topic_names = NULL,
    subscribed_topic_regex = s.name:gsub("%-", "[-]") .. "|nothing-else" }) end,
    save = function(s, r) s.epoch = r.member_epoch end },
  -- the coordinator resolves the regex after answering: until it assigns
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch, { topic_partitions = {} }) end,
    ["until"] = function(r) return r.assignment ~= nil and #r.assignment.topic_partitions > 0 end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end },
} }

scenario { name = "ConsumerGroupDescribe of a member's group and of none", api = "ConsumerGroupDescribe", steps = {
  consumer_member(3),
  { api = "ConsumerGroupHeartbeat", ignore = true, body = function(s) return cgh(s, s.epoch) end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name, s.name .. "-none" },
    include_authorized_operations = true } end },
} }

-- ---------------------------------------------------------------- mixed groups (KIP-848's online migration)

local function be16(n) return string.char(math.floor(n / 256) % 256, n % 256) end

-- ConsumerProtocolSubscription v0 of the case's topic.
local function sub_of(s) return "\0\0\0\0\0\1" .. be16(#s.name) .. s.name .. "\0\0\0\0" end

-- ConsumerProtocolAssignment v0: the case's topic, partitions 0 and 1.
local function both_partitions(s)
  return "\0\0\0\0\0\1" .. be16(#s.name) .. s.name .. "\0\0\0\2\0\0\0\0\0\0\0\1\255\255\255\255"
end

-- The classic member: JoinGroup (s.classic: its id), SyncGroup at
-- s.generation, Heartbeat at the generation `gen(s)`.
local function classic_join(extra)
  local step = { api = "JoinGroup", body = function(s)
    return join(s, { member_id = s.classic or "", protocols = { { name = "range", metadata = sub_of(s) } } })
  end, save = function(s, r) s.classic, s.generation = r.member_id, r.generation_id end }
  for k, v in pairs(extra or {}) do step[k] = v end
  return step
end

local function classic_sync(assignments)
  return { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.classic, protocol_type = "consumer", protocol_name = "range",
    assignments = assignments and assignments(s) or {} } end }
end

local function classic_heartbeat(gen)
  return { api = "Heartbeat", body = function(s) return { group_id = s.name, generation_id = gen(s),
    member_id = s.classic } end }
end

-- ConsumerGroupDescribe's members come in each coordinator's own order
-- (Kafka's: a hash map's of random member ids): the classic member first.
local function classic_first(r, s)
  for _, g in ipairs(r.groups) do
    table.sort(g.members, function(a, b) return a.member_id == s.classic and b.member_id ~= s.classic end)
  end
  return r
end

-- A classic group with one member holding both partitions; a member of the
-- consumer protocol joins (the group becomes a consumer group at the
-- classic generation plus one); the classic member learns it from its
-- heartbeat, rejoins and syncs its half, the other half goes to the new
-- member; its commits count at its member epoch (at the one before too,
-- for a partition it held then: KIP-1251); the consumer member
-- leaves and the group is classic again, rebalancing.
scenario { name = "Mixed group: classic member, consumer member joins and leaves", api = "ConsumerGroupDescribe",
  steps = {
  create(2), find_coordinator(0),
  classic_join({ ignore = true }), classic_join(),
  classic_sync(function(s) return { { member_id = s.classic, assignment = both_partitions(s) } } end),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0) end,
    save = function(s, r) s.member_id, s.epoch, s.owned = r.member_id, r.member_epoch, owned_of(r) end },
  classic_heartbeat(function(s) return s.generation end),
  classic_join(),
  classic_sync(),
  classic_heartbeat(function(s) return s.generation end),
  classic_heartbeat(function(s) return s.generation - 1 end),
  { api = "OffsetCommit", version = 8, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = s.generation, member_id = s.classic, topics = { { name = s.name,
      partitions = { { partition_index = 0, committed_offset = 3 } } } } } end },
  { api = "OffsetCommit", version = 8, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = s.generation - 1, member_id = s.classic, topics = { { name = s.name,
      partitions = { { partition_index = 0, committed_offset = 4 } } } } } end },
  { api = "OffsetCommit", version = 8, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = s.generation + 1, member_id = s.classic, topics = { { name = s.name,
      partitions = { { partition_index = 0, committed_offset = 5 } } } } } end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch) end,
    save = function(s, r) s.epoch = r.member_epoch end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end, pick = classic_first },
  { api = "DescribeGroups", body = function(s) return { groups = { s.name }, include_authorized_operations = false } end },
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, -1) end },
  classic_heartbeat(function(s) return s.generation end),
  classic_join(),
  classic_sync(function(s) return { { member_id = s.classic, assignment = both_partitions(s) } } end),
  { api = "DescribeGroups", body = function(s) return { groups = { s.name }, include_authorized_operations = false } end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end },
} }

-- ConsumerProtocolSubscription v1 of the case's topic, owning `owned`
-- partitions of it (a cooperative classic member's).
local function sub_owning(s, owned)
  local out = { "\0\1\0\0\0\1", be16(#s.name), s.name, "\255\255\255\255" }
  if #owned == 0 then
    out[#out + 1] = "\0\0\0\0"
  else
    out[#out + 1] = "\0\0\0\1" .. be16(#s.name) .. s.name .. "\0\0\0" .. string.char(#owned)
    for _, p in ipairs(owned) do out[#out + 1] = "\0\0\0" .. string.char(p) end
  end
  return table.concat(out)
end

local function cooperative_join(owned)
  return { api = "JoinGroup", body = function(s)
    return join(s, { member_id = s.classic or "", protocols = { { name = "cooperative-sticky",
      metadata = sub_owning(s, owned) } } })
  end, save = function(s, r) s.classic, s.generation = r.member_id, r.generation_id end }
end

local function cooperative_sync()
  return { api = "SyncGroup", body = function(s) return { group_id = s.name, generation_id = s.generation,
    member_id = s.classic, protocol_type = "consumer", protocol_name = "cooperative-sticky",
    assignments = { { member_id = s.classic, assignment = both_partitions(s) } } } end }
end

-- A cooperative classic member rejoins still owning both partitions: it
-- keeps its generation (the member epoch) and is given what it keeps,
-- told to rejoin again, and rejoins owning only that, at the new epoch.
scenario { name = "Mixed group: a cooperative classic member revokes before its new generation",
  api = "ConsumerGroupDescribe", min_version = 1, steps = {
  create(2), find_coordinator(0),
  { api = "JoinGroup", ignore = true, body = function(s) return join(s, { protocols = { { name = "cooperative-sticky",
    metadata = sub_owning(s, {}) } } }) end, save = function(s, r) s.classic = r.member_id end },
  cooperative_join({}), cooperative_sync(),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, 0) end,
    save = function(s, r) s.member_id, s.epoch, s.owned = r.member_id, r.member_epoch, owned_of(r) end },
  classic_heartbeat(function(s) return s.generation end),
  cooperative_join({ 0, 1 }), cooperative_sync(),
  classic_heartbeat(function(s) return s.generation end),
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end, pick = classic_first },
  cooperative_join({ 0 }), cooperative_sync(),
  classic_heartbeat(function(s) return s.generation end),
  { api = "ConsumerGroupHeartbeat", body = function(s) return cgh(s, s.epoch) end },
  { api = "ConsumerGroupDescribe", body = function(s) return { group_ids = { s.name },
    include_authorized_operations = false } end, pick = classic_first },
} }

-- ListGroups answers every group of the broker: only the case's compared
local function own_groups(r, s)
  local keep = {}
  for _, g in ipairs(r.groups) do
    if g.group_id:sub(1, #s.name) == s.name then keep[#keep + 1] = g end
  end
  r.groups = keep
  return r
end

scenario { name = "ListGroups by type and state", api = "ListGroups", min_version = 5, steps = {
  consumer_member(1),
  { api = "JoinGroup", ignore = true, body = function(s) return join(s, { group_id = s.name .. "-classic" }) end,
    ["until"] = function(r) return r.error_code ~= 14 and r.error_code ~= 15 end },
  { api = "ListGroups", body = { states_filter = {}, types_filter = { "consumer" } }, pick = own_groups },
  { api = "ListGroups", body = { states_filter = {}, types_filter = { "classic" } }, pick = own_groups },
  { api = "ListGroups", body = { states_filter = { "Stable" }, types_filter = { "Consumer", "CLASSIC" } },
    pick = own_groups },
  { api = "ListGroups", body = { states_filter = {}, types_filter = { "share" } }, pick = own_groups },
  { api = "ListGroups", body = { states_filter = {}, types_filter = {} }, pick = own_groups },
} }

-- OffsetCommit and OffsetFetch v9 from a consumer-protocol member name it
-- and its epoch; v10 names the topic by id (metadata() saves it)
local function commit848(epoch, member)
  return { api = "OffsetCommit", body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = epoch(s), member_id = member and member(s) or s.member_id,
    topics = { { name = s.name, topic_id = s.topic_id, partitions = { { partition_index = 0, committed_offset = 4,
      committed_metadata = "m" } } } } } end }
end

local function fetch848(epoch, member)
  return { api = "OffsetFetch", body = function(s) return { require_stable = true, groups = { { group_id = s.name,
    member_id = member and member(s) or s.member_id, member_epoch = epoch(s),
    topics = { { name = s.name, topic_id = s.topic_id, partition_indexes = { 0 } } } } } } end }
end

-- an id no topic has
local NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

scenario { name = "OffsetCommit and OffsetFetch with member epochs", api = "OffsetCommit", min_version = 9, steps = {
  consumer_member(1), metadata(),
  commit848(function(s) return s.epoch end),
  commit848(function(s) return s.epoch + 1 end),
  commit848(function(s) return s.epoch - 1 end),
  commit848(function() return 1 end, function(s) return s.name .. "-stranger" end),
  commit848(function() return -1 end, function() return "" end),
  fetch848(function(s) return s.epoch end),
  fetch848(function(s) return s.epoch + 1 end),
  fetch848(function() return 1 end, function(s) return s.name .. "-stranger" end),
  fetch848(function() return -1 end, function() return nil end),
} }

scenario { name = "OffsetFetch with member epochs", api = "OffsetFetch", min_version = 9, steps = {
  consumer_member(1), metadata(),
  commit848(function(s) return s.epoch end),
  fetch848(function(s) return s.epoch end),
  fetch848(function(s) return s.epoch + 1 end),
  fetch848(function(s) return s.epoch - 1 end),
} }

-- A share group (KIP-932): a member joins subscribed to a two-partition
-- topic, is described, heartbeats at its epoch and at a wrong one, leaves;
-- a member unknown to the group and a group of none.
local SHARE_MEMBER = "c2hhcmUtbWVtYmVyLWlkAA"
scenario { name = "ShareGroupHeartbeat: join, describe, fenced, leave", api = "ShareGroupHeartbeat", steps = {
  create(2), find_coordinator(0),
  { api = "ShareGroupHeartbeat", body = function(s) return { group_id = s.name, member_id = SHARE_MEMBER,
    member_epoch = 0, subscribed_topic_names = { s.name } } end,
    save = function(s, r) s.share_epoch = r.member_epoch end },
  { api = "ShareGroupDescribe", body = function(s) return { group_ids = { s.name, s.name .. "-none" },
    include_authorized_operations = false } end },
  { api = "ShareGroupHeartbeat", body = function(s) return { group_id = s.name, member_id = SHARE_MEMBER,
    member_epoch = s.share_epoch } end },
  { api = "ShareGroupHeartbeat", body = function(s) return { group_id = s.name, member_id = SHARE_MEMBER,
    member_epoch = s.share_epoch + 5 } end },
  { api = "ShareGroupHeartbeat", body = function(s) return { group_id = s.name, member_id = "bm90LWEtbWVtYmVyAAAAAA",
    member_epoch = 1 } end },
  { api = "ShareGroupHeartbeat", body = function(s) return { group_id = s.name, member_id = SHARE_MEMBER,
    member_epoch = -1 } end },
} }

-- ShareFetch and ShareAcknowledge: a member (reading from the earliest)
-- acquires a batch of three, releases its first record and accepts the
-- rest; the release comes again at delivery count 2 and is rejected; an
-- acknowledgement of a record already done changes nothing; a session
-- epoch out of turn is refused. An epoch is counted from the session's
-- start: a fetch repeated until it acquires takes the next epoch each time
-- one was taken (s.share_extra of them), as a share consumer's would.
local function share_body(s, epoch, acks)
  return { group_id = s.name, member_id = SHARE_MEMBER,
    share_session_epoch = epoch > 0 and epoch + (s.share_extra or 0) or epoch,
    topics = { { topic_id = s.topic_id, partitions = { { partition_index = 0, acknowledgement_batches = acks } } } } }
end

local function share_fetch(epoch, acks, acquired)
  return { api = "ShareFetch", body = function(s)
    local b = share_body(s, epoch, acks or {})
    b.max_wait_ms, b.min_bytes, b.max_bytes, b.max_records, b.batch_size = 1000, 1, 1048576, 500, 500
    b.share_acquire_mode, b.is_renew_ack, b.forgotten_topics_data = 0, false, {}
    return b
  end, ["until"] = acquired and function(r, s)
    local t = r.responses[1]
    if t ~= nil and #t.partitions[1].acquired_records > 0 then return true end
    if epoch > 0 and r.error_code == 0 then s.share_extra = (s.share_extra or 0) + 1 end
    return false
  end or nil }
end

local function share_ack(epoch, acks)
  return { api = "ShareAcknowledge", body = function(s)
    local b = share_body(s, epoch, acks)
    b.is_renew_ack = false
    return b
  end }
end

scenario { name = "ShareFetch and ShareAcknowledge: acquire, release, reject, accept", api = "ShareFetch", steps = {
  create(1), metadata(), find_coordinator(0),
  { api = "IncrementalAlterConfigs", ignore = true, body = function(s) return { validate_only = false, resources = {
    { resource_type = 32, resource_name = s.name, configs = {
      { name = "share.auto.offset.reset", config_operation = 0, value = "earliest" } } } } } end },
  { api = "ShareGroupHeartbeat", ignore = true, body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = 0, subscribed_topic_names = { s.name } } end,
    save = function(s, r) s.share_epoch = r.member_epoch end },
  { api = "ShareGroupHeartbeat", ignore = true, body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = s.share_epoch } end,
    save = function(s, r) s.share_epoch = r.member_epoch end,
    ["until"] = function(r) return r.assignment ~= nil and #r.assignment.topic_partitions > 0 end },
  produce(0, records(3, "share")),
  share_fetch(0, nil, true),
  share_ack(1, { { first_offset = 0, last_offset = 0, acknowledge_types = { 2 } },
    { first_offset = 1, last_offset = 2, acknowledge_types = { 1 } } }),
  share_fetch(2, nil, true),
  share_ack(3, { { first_offset = 0, last_offset = 0, acknowledge_types = { 3 } } }),
  share_ack(4, { { first_offset = 1, last_offset = 1, acknowledge_types = { 1 } } }),
  share_fetch(9),
} }

-- FindCoordinator key type 2 (KIP-932's share coordinator, v6 on): a
-- "group:topicId:partition" key's coordinator (the first ask may find the
-- state topic being created), then keys not of that form.
scenario { name = "FindCoordinator of a share-partition key", api = "FindCoordinator", steps = {
  create(1), metadata(),
  { api = "FindCoordinator", body = function(s)
    local k = s.name .. ":" .. s.topic_id .. ":0"
    return { key = k, key_type = 2, coordinator_keys = { k } }
  end, ["until"] = function(r)
    local e = r.coordinators and r.coordinators[1] or r
    return e.error_code ~= 15
  end },
  { api = "FindCoordinator", body = function(s)
    return { key = s.name, key_type = 2, coordinator_keys = { s.name, s.name .. ":x:0", s.name .. ":" .. s.topic_id } }
  end },
} }

-- A share group's offsets before any fetch (no state yet), of a group
-- of none, and their reset refused while the group has a member.
scenario { name = "DescribeShareGroupOffsets of a new share group and of none", api = "DescribeShareGroupOffsets",
  steps = {
  create(2), find_coordinator(0),
  { api = "ShareGroupHeartbeat", ignore = true, body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = 0, subscribed_topic_names = { s.name } } end },
  { api = "DescribeShareGroupOffsets", body = function(s) return { groups = {
    { group_id = s.name, topics = { { topic_name = s.name, partitions = { 0, 1 } } } },
    { group_id = s.name .. "-none", topics = { { topic_name = s.name, partitions = { 0 } } } } } } end },
  { api = "AlterShareGroupOffsets", body = function(s) return { group_id = s.name, topics = {
    { topic_name = s.name, partitions = { { partition_index = 0, start_offset = 0 } } } } } end },
  { api = "DeleteShareGroupOffsets", body = function(s) return { group_id = s.name,
    topics = { { topic_name = s.name } } } end },
} }

-- A share group's configs (KIP-932's group configs): set, a bad value and
-- an unknown name refused, described by name.
scenario { name = "IncrementalAlterConfigs of a share group's configs", api = "IncrementalAlterConfigs", steps = {
  { api = "IncrementalAlterConfigs", body = function(s) return { validate_only = false, resources = {
    { resource_type = 32, resource_name = s.name, configs = {
      { name = "share.auto.offset.reset", config_operation = 0, value = "earliest" },
      { name = "share.record.lock.duration.ms", config_operation = 0, value = "20000" } } } } } end },
  { api = "IncrementalAlterConfigs", body = function(s) return { validate_only = false, resources = {
    { resource_type = 32, resource_name = s.name, configs = {
      { name = "share.auto.offset.reset", config_operation = 0, value = "sometimes" } } },
    { resource_type = 32, resource_name = s.name .. "-b", configs = {
      { name = "share.no.such.config", config_operation = 0, value = "1" } } } } } end },
  -- Kafka's broker describes from its metadata image, which may lag the controller's commit a moment
  { api = "DescribeConfigs", body = function(s) return { include_synonyms = false, include_documentation = false,
    resources = { { resource_type = 32, resource_name = s.name, configuration_keys = {
      "share.auto.offset.reset", "share.record.lock.duration.ms" } } } } end,
    ["until"] = function(r)
      for _, c in ipairs(r.results[1] and r.results[1].configs or {}) do
        if c.name == "share.record.lock.duration.ms" then return c.value == "20000" end
      end
      return false
    end },
} }

-- v10 by topic id: an unknown id beside a known one, and all of a group's
-- offsets answered by id
scenario { name = "OffsetCommit and OffsetFetch by topic id", api = "OffsetCommit", min_version = 10, steps = {
  consumer_member(1), metadata(),
  { api = "OffsetCommit", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = s.epoch,
    member_id = s.member_id, topics = {
      { topic_id = s.topic_id, partitions = { { partition_index = 0, committed_offset = 7, committed_metadata = "k" } } },
      { topic_id = NO_TOPIC_ID, partitions = { { partition_index = 0, committed_offset = 1, committed_metadata = "" },
        { partition_index = 1, committed_offset = 2, committed_metadata = "" } } } } } end },
  { api = "OffsetCommit", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = s.epoch,
    member_id = s.member_id, topics = { { topic_id = NO_TOPIC_ID, partitions = { { partition_index = 0,
      committed_offset = 1, committed_metadata = "" } } } } } end },
  { api = "OffsetCommit", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = s.epoch,
    member_id = s.member_id, topics = { { topic_id = s.topic_id, partitions = { { partition_index = 5,
      committed_offset = 1, committed_metadata = "" } } } } } end },
  { api = "OffsetFetch", version = 10, body = function(s) return { require_stable = true, groups = {
    { group_id = s.name, member_id = s.member_id, member_epoch = s.epoch, topics = {
      { topic_id = s.topic_id, partition_indexes = { 0, 3 } }, { topic_id = NO_TOPIC_ID, partition_indexes = { 0 } } } },
    { group_id = s.name .. "-none", member_epoch = -1, topics = {
      { topic_id = s.topic_id, partition_indexes = { 0 } } } } } } end },
  { api = "OffsetFetch", version = 10, body = function(s) return { require_stable = true, groups = {
    { group_id = s.name, member_id = s.member_id, member_epoch = s.epoch } } } end },
} }

-- ---------------------------------------------------------------- more transactions

-- A transactional producer whose coordinator is ready; saved: pid, epoch.
local function txn_producer()
  return {
    find_coordinator(1),
    { api = "InitProducerId", ignore = true, body = function(s) return { transactional_id = s.name,
      transaction_timeout_ms = 60000, producer_id = -1, producer_epoch = -1 } end,
      ["until"] = function(r) return r.error_code == 0 end,
      save = function(s, r) s.pid, s.epoch = r.producer_id, r.producer_epoch end },
  }
end

scenario { name = "InitProducerId refusals", api = "InitProducerId", steps = {
  find_coordinator(1),
  { api = "InitProducerId", body = function(s) return { transactional_id = s.name, transaction_timeout_ms = 0,
    producer_id = -1, producer_epoch = -1 } end, ["until"] = function(r) return r.error_code ~= 51 end },
  { api = "InitProducerId", body = function(s) return { transactional_id = s.name,
    transaction_timeout_ms = 999999999, producer_id = -1, producer_epoch = -1 } end },
} }

scenario { name = "AddPartitionsToTxn: partitions, unknown ones, a stale epoch", api = "AddPartitionsToTxn",
  max_version = 3, steps = {
  create(2), txn_producer(),
  { api = "AddPartitionsToTxn", body = function(s) return { v3_and_below_transactional_id = s.name,
    v3_and_below_producer_id = s.pid, v3_and_below_producer_epoch = s.epoch,
    v3_and_below_topics = { { name = s.name, partitions = { 0, 1 } } } } end },
  { api = "AddPartitionsToTxn", body = function(s) return { v3_and_below_transactional_id = s.name,
    v3_and_below_producer_id = s.pid, v3_and_below_producer_epoch = s.epoch + 1,
    v3_and_below_topics = { { name = s.name, partitions = { 0 } } } } end },
  { api = "AddPartitionsToTxn", body = function(s) return { v3_and_below_transactional_id = s.name,
    v3_and_below_producer_id = s.pid, v3_and_below_producer_epoch = s.epoch,
    v3_and_below_topics = { { name = s.name .. "-none", partitions = { 0 } } } } end },
} }

scenario { name = "Offsets in a transaction: AddOffsetsToTxn, TxnOffsetCommit, abort", api = "TxnOffsetCommit",
  steps = {
  create(1), txn_producer(), find_coordinator(0),
  { api = "AddOffsetsToTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, group_id = s.name } end },
  { api = "TxnOffsetCommit", body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 9, committed_metadata = "txn" } } } } } end },
  { api = "TxnOffsetCommit", body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch + 3, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 10 } } } } } end },
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, committed = false } end },
  { api = "DescribeTransactions", ignore = true, body = function(s) return { transactional_ids = { s.name } } end,
    ["until"] = function(r) return r.transaction_states[1].transaction_state == "CompleteAbort" end },
  { api = "OffsetFetch", version = 7, body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 0 } } }, require_stable = true } end },
} }

scenario { name = "AddOffsetsToTxn outside a transaction", api = "AddOffsetsToTxn", steps = {
  txn_producer(),
  { api = "AddOffsetsToTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch + 1, group_id = s.name } end },
  { api = "AddOffsetsToTxn", body = function(s) return { transactional_id = s.name .. "-none", producer_id = s.pid,
    producer_epoch = s.epoch, group_id = s.name } end },
} }

scenario { name = "EndTxn without a transaction", api = "EndTxn", steps = {
  txn_producer(),
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, committed = true } end },
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch + 1, committed = false } end },
} }

-- Transactions v2 (KIP-890 part 2), transaction.version 2 on both: a
-- produce v12 adds its partition (no AddPartitionsToTxn), TxnOffsetCommit
-- v5 the group's (no AddOffsetsToTxn); EndTxn v5 bumps the epoch and says
-- so, takes its retry at the epoch before, and the commit marker fences the
-- old epoch; aborting nothing bumps again.
local function txn_produce(partition, version, epoch_delta, seq)
  return { api = "Produce", version = version, body = function(s) return { transactional_id = s.name, acks = -1,
    timeout_ms = 10000, topic_data = { { name = s.name, partition_data = { { index = partition,
      records = records(1, "v2", { producer_id = s.pid, producer_epoch = s.epoch + epoch_delta, base_sequence = seq,
        transactional = true }) } } } } } end }
end

local function end_txn(epoch_delta, commit)
  return { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch + epoch_delta, committed = commit } end }
end

local function txn_state(state)
  return { api = "DescribeTransactions", ignore = true,
    body = function(s) return { transactional_ids = { s.name } } end,
    ["until"] = function(r) return r.transaction_states[1].transaction_state == state end }
end

scenario { name = "Transactions v2: Produce v12 and TxnOffsetCommit v5 add, EndTxn v5 bumps the epoch", api = "EndTxn",
  min_version = 5, steps = {
  create(2), txn_producer(), find_coordinator(0),
  txn_produce(1, 12, 0, 0),
  { api = "DescribeTransactions", body = function(s) return { transactional_ids = { s.name } } end },
  { api = "TxnOffsetCommit", version = 5, body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch, topics = { { name = s.name, partitions = {
      { partition_index = 1, committed_offset = 1, committed_metadata = "v2" } } } } } end },
  { api = "DescribeTransactions", body = function(s) return { transactional_ids = { s.name } } end },
  end_txn(0, true),
  txn_state("CompleteCommit"),
  end_txn(0, true), end_txn(0, false), end_txn(1, true),
  txn_produce(1, 12, 0, 1),
  { api = "OffsetFetch", version = 7, body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 1 } } }, require_stable = true } end },
  txn_produce(0, 11, 1, 0),
  end_txn(1, false),
  txn_state("CompleteAbort"),
  { api = "ListOffsets", body = function(s) return { replica_id = -1, isolation_level = 1, topics = { { name = s.name,
    partitions = { { partition_index = 0, timestamp = -1 }, { partition_index = 1, timestamp = -1 } } } } } end },
  -- below v5 a commit's offsets are only verified: no transaction holds the group here
  { api = "TxnOffsetCommit", version = 4, body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch + 2, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 1, committed_metadata = "" } } } } } end },
  { api = "TxnOffsetCommit", version = 3, body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch + 2, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 1, committed_metadata = "" } } } } } end },
  txn_produce(0, 10, 2, 0),
} }

scenario { name = "DescribeTransactions and ListTransactions", api = "DescribeTransactions", steps = {
  create(1), txn_producer(),
  { api = "AddPartitionsToTxn", version = 3, ignore = true, body = function(s) return {
    v3_and_below_transactional_id = s.name, v3_and_below_producer_id = s.pid, v3_and_below_producer_epoch = s.epoch,
    v3_and_below_topics = { { name = s.name, partitions = { 0 } } } } end },
  { api = "DescribeTransactions", body = function(s) return { transactional_ids = { s.name, s.name .. "-none" } } end },
  { api = "ListTransactions", body = function(s) return { state_filters = { "Ongoing" }, producer_id_filters = { s.pid },
    duration_filter = -1 } end },
} }

scenario { name = "ListTransactions by state", api = "ListTransactions", steps = {
  { api = "ListTransactions", body = { state_filters = { "PrepareEpochFence" }, producer_id_filters = {},
    duration_filter = -1 } },
} }

-- ---------------------------------------------------------------- epochs

scenario { name = "Fetch and ListOffsets with a fenced or unknown leader epoch", api = "Fetch", min_version = 9,
  steps = {
  create(1), metadata(false), produce(0, plain),
  { api = "Fetch", body = function(s) return { replica_id = -1, max_wait_ms = 0, min_bytes = 0, max_bytes = 1048576,
    isolation_level = 0, session_id = 0, session_epoch = -1, topics = { { topic = s.name, topic_id = s.topic_id,
      partitions = { { partition = 0, current_leader_epoch = 7, fetch_offset = 0, partition_max_bytes = 1048576 } } } } }
    end },
  { api = "ListOffsets", body = function(s) return { replica_id = -1, isolation_level = 0, topics = { { name = s.name,
    partitions = { { partition_index = 0, current_leader_epoch = 7, timestamp = -1 } } } } } end },
} }

scenario { name = "Produce with a stale producer epoch", api = "Produce", min_version = 3, steps = {
  create(1),
  { api = "InitProducerId", body = { transaction_timeout_ms = 60000, producer_id = -1, producer_epoch = -1 },
    ignore = true, ["until"] = function(r) return r.error_code ~= 14 end,
    save = function(s, r) s.pid = r.producer_id end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = { { name = s.name,
    partition_data = { { index = 0, records = records(1, "e1", { producer_id = s.pid, producer_epoch = 1,
      base_sequence = 0 }) } } } } } end },
  { api = "Produce", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = { { name = s.name,
    partition_data = { { index = 0, records = records(1, "e0", { producer_id = s.pid, producer_epoch = 0,
      base_sequence = 1 }) } } } } } end },
} }

-- ---------------------------------------------------------------- telemetry and versions

scenario { name = "GetTelemetrySubscriptions without client metrics", api = "GetTelemetrySubscriptions", steps = {
  { api = "GetTelemetrySubscriptions", body = { client_instance_id = "AAAAAAAAAAAAAAAAAAAAAA" } },
} }

scenario { name = "PushTelemetry for an unknown subscription", api = "PushTelemetry", steps = {
  { api = "PushTelemetry", body = { client_instance_id = "AAAAAAAAAAAAAAAAAAAAAA", subscription_id = 5,
    terminating = false, compression_type = 0, metrics = "" } },
} }

-- KIP-714's client-metrics resources: none on a fresh cluster, so both
-- list none (v0 as ListClientMetricsResources, v1 asking for that type).
scenario { name = "ListConfigResources of client metrics, none made", api = "ListConfigResources", steps = {
  { api = "ListConfigResources", body = { resource_types = { 16 } } },
} }

scenario { name = "ApiVersions", api = "ApiVersions", steps = {
  { api = "ApiVersions", body = { client_software_name = "differential", client_software_version = "1" } },
} }

-- UpdateFeatures (KIP-584), all validate_only or refused, so neither
-- cluster's levels change: an upgrade to a level both finalize already,
-- an unknown feature, a level beyond what either supports, a
-- metadata.version downgrade (refused by both), an unknown upgrade type.
local function update_features(feature, level, upgrade_type)
  return { api = "UpdateFeatures", body = { timeout_ms = 10000, validate_only = true, feature_updates = {
    { feature = feature, max_version_level = level, upgrade_type = upgrade_type or 1 } } } }
end

scenario { name = "UpdateFeatures validate_only and refusals", api = "UpdateFeatures", min_version = 1, steps = {
  update_features("group.version", 1),
  update_features("no.such.version", 1),
  update_features("group.version", 7),
  update_features("metadata.version", 21, 2),
  update_features("metadata.version", 21, 1),
  update_features("group.version", 1, 9),
} }

-- Changes Kafka refuses, not validate_only: a metadata.version downgrade
-- (safe and unsafe), group.version beyond what is supported, and a
-- feature nobody knows removed
local function update_features_for_real(feature, level, upgrade_type)
  local step = update_features(feature, level, upgrade_type)
  step.body.validate_only = false
  return step
end

scenario { name = "UpdateFeatures refused for real", api = "UpdateFeatures", steps = {
  update_features_for_real("metadata.version", 21, 1),
  update_features_for_real("metadata.version", 21, 2),
  update_features_for_real("group.version", 9, 1),
  update_features_for_real("no.such.version", 0, 2),
  -- nothing changed: group.version, which both finalize (the others: ApiVersions' allowances)
  { api = "ApiVersions", body = { client_software_name = "differential", client_software_version = "1" },
    pick = function(r)
      for _, f in ipairs(r.finalized_features) do if f.name == "group.version" then return f end end
      return {}
    end },
} }

scenario { name = "DescribeConfigs of the broker", api = "DescribeConfigs", steps = {
  { api = "DescribeConfigs", body = { resources = { { resource_type = 4, resource_name = "1", configuration_keys = {
    "num.partitions", "message.max.bytes", "log.retention.hours", "log.retention.ms", "log.segment.bytes",
    "auto.create.topics.enable", "unclean.leader.election.enable", "compression.type", "log.cleanup.policy",
    "default.replication.factor" } }, { resource_type = 4, resource_name = "", configuration_keys = nil },
    { resource_type = 4, resource_name = "99", configuration_keys = nil } },
    include_synonyms = true, include_documentation = false } },
} }

-- Kafka 4.1+ keeps a cluster-wide min.insync.replicas (KIP-966: written at
-- the controller's activation from its static value) and refuses its removal.
scenario { name = "The cluster-wide min.insync.replicas", api = "IncrementalAlterConfigs", steps = {
  { api = "IncrementalAlterConfigs", body = { resources = { { resource_type = 4, resource_name = "", configs = {
    { name = "min.insync.replicas", config_operation = 1 } } } }, validate_only = false } },
  { api = "IncrementalAlterConfigs", body = { resources = { { resource_type = 4, resource_name = "", configs = {
    { name = "min.insync.replicas", config_operation = 0, value = "1" } } } }, validate_only = false } },
  { api = "AlterConfigs", body = { resources = { { resource_type = 4, resource_name = "", configs = {} } },
    validate_only = false } },
  { api = "AlterConfigs", body = { resources = { { resource_type = 4, resource_name = "", configs = {
    { name = "min.insync.replicas", value = "1" } } } }, validate_only = false } },
  { api = "DescribeConfigs", body = { resources = { { resource_type = 4, resource_name = "", configuration_keys = nil } },
    include_synonyms = true, include_documentation = false } },
} }

-- ---------------------------------------------------------------- a cluster
-- Three KRaft nodes beside serve --brokers 3 (node ids normalised); `to`
-- sends a step to the node a saved value names.

-- Creates the case's topic with replication factor rf (3 when not given)
-- and saves partition 0's leader, a follower (RF > 1) and a broker hosting
-- none of it (RF < 3) once every partition has a leader and a full ISR.
local function create_rf3(partitions, rf)
  rf = rf or 3
  local function described(s) return { topics = { { name = s.name } }, allow_auto_topic_creation = false } end
  local function settled(r)
    local t = r.topics[1]
    if not t or t.error_code ~= 0 or #t.partitions == 0 then return false end
    for _, p in ipairs(t.partitions) do if p.leader_id < 0 or #p.isr_nodes ~= rf then return false end end
    return true
  end
  return {
    { api = "CreateTopics", ignore = true, body = function(s) return { topics = { { name = s.name,
      num_partitions = partitions or 1, replication_factor = rf, configs = {} } }, timeout_ms = 30000 } end },
    { api = "Metadata", ignore = true, body = described, ["until"] = settled,
      save = function(s, r)
        local p0
        for _, p in ipairs(r.topics[1].partitions) do if p.partition_index == 0 then p0 = p end end
        s.leader, s.topic_id = p0.leader_id, r.topics[1].topic_id
        local hosts = {}
        for _, n in ipairs(p0.replica_nodes) do
          hosts[n] = true
          if n ~= p0.leader_id then s.follower = n end
        end
        for _, b in ipairs(r.brokers) do if not hosts[b.node_id] then s.outsider = b.node_id end end
      end },
    -- the leader's own metadata too: a broker learns of a new topic a
    -- little after the one that answered above, Kafka's as well
    { api = "Metadata", ignore = true, to = function(s) return s.leader end, body = described,
      ["until"] = function(r, s)
        if not settled(r) then return false end
        for _, p in ipairs(r.topics[1].partitions) do
          if p.partition_index == 0 and p.leader_id ~= s.leader then return false end
        end
        return true
      end },
  }
end

local function leader(s) return s.leader end
local function follower(s) return s.follower end
local function outsider(s) return s.outsider end

scenario { name = "Cluster: an RF 3 topic's metadata", api = "Metadata", cluster = true, steps = {
  create_rf3(3), metadata(false),
} }

scenario { name = "Cluster: produce to a follower, then to the leader", api = "Produce", cluster = true, steps = {
  create_rf3(1),
  { api = "Produce", to = follower, body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = {
    { name = s.name, partition_data = { { index = 0, records = plain } } } } } end },
  { api = "Produce", to = leader, body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = {
    { name = s.name, partition_data = { { index = 0, records = plain } } } } } end },
} }

scenario { name = "Cluster: consumer fetch and ListOffsets at a follower", api = "Fetch", cluster = true, steps = {
  create_rf3(1),
  { api = "Produce", to = leader, body = produce(0, plain).body },
  { api = "Fetch", to = follower, body = fetch(0, 0).body },
  { api = "ListOffsets", to = follower, body = list_offsets(0, -1).body },
} }

scenario { name = "Cluster: produce and fetch at a broker hosting no replica", api = "Fetch", cluster = true,
  steps = {
  create_rf3(1, 1),
  { api = "Produce", to = outsider, body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = {
    { name = s.name, partition_data = { { index = 0, records = plain } } } } } end },
  { api = "Fetch", to = outsider, body = fetch(0, 0).body },
  { api = "Fetch", to = outsider, body = fetch(0, 0, nil, 1).body },
} }

scenario { name = "Cluster: a group request where its coordinator is not", api = "JoinGroup", cluster = true, steps = {
  { api = "FindCoordinator", body = function(s) return { key = s.name, key_type = 0, coordinator_keys = { s.name } } end,
    ["until"] = function(r) return (r.coordinators and r.coordinators[1] or r).error_code == 0 end,
    save = function(s, r) s.coordinator = (r.coordinators and r.coordinators[1] or r).node_id end },
  { api = "Metadata", ignore = true, body = { topics = {}, allow_auto_topic_creation = false },
    save = function(s, r)
      for _, b in ipairs(r.brokers) do if b.node_id ~= s.coordinator then s.elsewhere = b.node_id end end
    end },
  { api = "JoinGroup", to = function(s) return s.elsewhere end, body = function(s) return join(s) end },
  { api = "OffsetFetch", to = function(s) return s.elsewhere end, version = 7, body = function(s) return {
    group_id = s.name, topics = {}, require_stable = false } end },
} }

scenario { name = "Cluster: ElectLeaders where the preferred replicas lead", api = "ElectLeaders", cluster = true,
  steps = {
  create_rf3(2),
  { api = "ElectLeaders", body = function(s) return { election_type = 0, topic_partitions = { { topic = s.name,
    partitions = { 0, 1 } } }, timeout_ms = 10000 } end },
} }

-- refusals only: a reassignment that starts completes at each cluster's own pace
local function reassign(s, partitions, name)
  return { timeout_ms = 10000, allow_replication_factor_change = true,
    topics = { { name = name or s.name, partitions = partitions } } }
end

scenario { name = "Cluster: AlterPartitionReassignments refused", api = "AlterPartitionReassignments",
  cluster = true, steps = {
  create_rf3(2, 2),
  { api = "AlterPartitionReassignments", body = function(s) return reassign(s, {
    { partition_index = 0, replicas = { s.leader, 9 } }, { partition_index = 1, replicas = {} },
    { partition_index = 5, replicas = { s.leader } } }) end },
  { api = "AlterPartitionReassignments", body = function(s) return reassign(s, {
    { partition_index = 0, replicas = { s.leader, s.leader } } }) end },
  { api = "AlterPartitionReassignments", body = function(s) return reassign(s, {
    { partition_index = 0, replicas = { s.leader } } }, s.name .. "-none") end },
  -- a cancel with nothing in progress (null replicas)
  { api = "AlterPartitionReassignments", body = function(s) return reassign(s, {
    { partition_index = 0 } }) end },
  { api = "ListPartitionReassignments", body = { timeout_ms = 10000 } },
  { api = "ListPartitionReassignments", body = function(s) return { timeout_ms = 10000,
    topics = { { name = s.name, partition_indexes = { 0, 1 } } } } end },
} }

scenario { name = "Cluster: more replicas than brokers", api = "CreateTopics", cluster = true, steps = {
  { api = "CreateTopics", body = function(s) return { topics = { { name = s.name, num_partitions = 1,
    replication_factor = 4, configs = {} } }, timeout_ms = 30000 } end },
} }

scenario { name = "Cluster: DescribeQuorum through a broker", api = "DescribeQuorum", cluster = true, steps = {
  { api = "DescribeQuorum", body = { topics = { { topic_name = "__cluster_metadata",
    partitions = { { partition_index = 0 } } } } } },
  { api = "DescribeQuorum", body = { topics = { { topic_name = "__cluster_metadata",
    partitions = { { partition_index = 3 } } } } } },
} }

scenario { name = "Cluster: DescribeCluster", api = "DescribeCluster", cluster = true, steps = {
  { api = "DescribeCluster", body = { include_cluster_authorized_operations = false, endpoint_type = 1 } },
} }

-- ---------------------------------------------------------------- ACLs
-- acl scenarios run against a node of each with StandardAuthorizer and
-- SASL PLAIN users admin (a super user), alice and bob; steps sign in as
-- admin unless they say `as`. Bindings name the case's own resources, so
-- the filters find those only.

local ALLOW, DENY = 3, 2
local R_TOPIC, R_GROUP = 2, 3
local LITERAL, PREFIXED, MATCH, ANY = 3, 4, 2, 1
local OP = { ANY = 1, ALL = 2, READ = 3, WRITE = 4 }

local function creation(rtype, name, pattern, principal, op, perm)
  return { resource_type = rtype, resource_name = name, resource_pattern_type = pattern, principal = principal,
    host = "*", operation = op, permission_type = perm or ALLOW }
end

local function acl_filter(rtype, name, pattern, principal, op, perm)
  return { resource_type_filter = rtype, resource_name_filter = name, pattern_type_filter = pattern,
    principal_filter = principal, host_filter = nil, operation = op or OP.ANY, permission_type = perm or 1 }
end

scenario { name = "ACLs: create, describe, delete", api = "CreateAcls", acl = true, steps = {
  { api = "CreateAcls", body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.READ),
    creation(R_TOPIC, s.name .. "-", PREFIXED, "User:alice", OP.WRITE),
    creation(R_GROUP, s.name, LITERAL, "User:bob", OP.READ, DENY),
    -- the same again: no change, no error
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.READ),
  } } end },
  -- MATCH is no pattern a binding has: Kafka fails the whole request
  { api = "CreateAcls", body = function(s) return { creations = {
    creation(R_TOPIC, s.name .. "-m", LITERAL, "User:alice", OP.READ),
    creation(R_TOPIC, s.name .. "-m", MATCH, "User:alice", OP.READ),
  } } end },
  -- a principal that is not Type:name
  { api = "CreateAcls", body = function(s) return { creations = {
    creation(R_TOPIC, s.name .. "-p", LITERAL, "alice", OP.READ),
  } } end },
  { api = "DescribeAcls", body = function(s) return acl_filter(R_TOPIC, s.name, LITERAL, "User:alice") end },
  { api = "DescribeAcls", body = function(s) return acl_filter(R_TOPIC, s.name .. "-", PREFIXED) end },
  { api = "DescribeAcls", body = function(s) return acl_filter(R_GROUP, s.name, ANY, nil, OP.ANY, DENY) end },
  -- what applies to a topic under the prefix
  { api = "DescribeAcls", body = function(s) return acl_filter(R_TOPIC, s.name .. "-x", MATCH) end },
  { api = "DescribeAcls", body = function(s) return acl_filter(R_TOPIC, s.name .. "-none", LITERAL) end },
  { api = "DeleteAcls", body = function(s) return { filters = {
    acl_filter(R_TOPIC, s.name .. "-", PREFIXED, "User:alice", OP.WRITE, ALLOW),
    acl_filter(R_TOPIC, s.name .. "-nothing", LITERAL),
  } } end },
  { api = "DescribeAcls", body = function(s) return acl_filter(R_TOPIC, s.name .. "-", PREFIXED) end },
  -- each filter matching one binding (the order of several is each broker's own)
  { api = "DeleteAcls", body = function(s) return { filters = {
    acl_filter(R_TOPIC, s.name, ANY), acl_filter(R_GROUP, s.name, ANY) } } end },
} }

scenario { name = "ACLs: alice allowed, bob refused", api = "Produce", acl = true, steps = {
  create(1),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.WRITE),
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.READ),
    creation(R_GROUP, s.name, LITERAL, "User:alice", OP.READ),
  } } end },
  { api = "Produce", as = "alice", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = {
    { name = s.name, partition_data = { { index = 0, records = records(2, "alice") } } } } } end },
  { api = "Produce", as = "bob", body = function(s) return { acks = -1, timeout_ms = 10000, topic_data = {
    { name = s.name, partition_data = { { index = 0, records = records(1, "bob") } } } } } end },
} }

scenario { name = "ACLs: Metadata refused", api = "Metadata", acl = true, steps = {
  create(1),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.READ),
  } } end },
  -- alice may describe it (READ implies DESCRIBE); bob may not, asked by name
  { api = "Metadata", as = "alice", body = function(s) return { topics = { { name = s.name } },
    allow_auto_topic_creation = false } end },
  { api = "Metadata", as = "bob", body = function(s) return { topics = { { name = s.name } },
    allow_auto_topic_creation = false } end },
  -- an unknown topic bob may not create
  { api = "Metadata", as = "bob", body = function(s) return { topics = { { name = s.name .. "-new" } },
    allow_auto_topic_creation = true } end },
} }

scenario { name = "ACLs: Fetch refused", api = "Fetch", acl = true, min_version = 4, max_version = 12, steps = {
  create(1),
  { api = "Fetch", as = "bob", body = function(s)
    return { replica_id = -1, max_wait_ms = 0, min_bytes = 0, max_bytes = 1048576, isolation_level = 0,
      session_id = 0, session_epoch = -1, topics = { { topic = s.name, partitions = { { partition = 0,
        fetch_offset = 0, partition_max_bytes = 1048576 } } } } }
  end },
} }

scenario { name = "ACLs: JoinGroup refused", api = "JoinGroup", acl = true, steps = {
  { api = "JoinGroup", as = "bob", body = function(s) return { group_id = s.name, session_timeout_ms = 10000,
    rebalance_timeout_ms = 10000, member_id = "", protocol_type = "consumer",
    protocols = { { name = "range", metadata = SUB } } } end },
} }

scenario { name = "ACLs: ACL APIs refused to bob", api = "DescribeAcls", acl = true, steps = {
  { api = "DescribeAcls", as = "bob", body = function(s) return acl_filter(1, nil, ANY) end },
  { api = "CreateAcls", as = "bob", body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:bob", OP.ALL) } } end },
  { api = "DeleteAcls", as = "bob", body = function(s) return { filters = { acl_filter(1, s.name, ANY) } } end },
} }

scenario { name = "ACLs: bob may not change the cluster", api = "IncrementalAlterConfigs", acl = true, steps = {
  create(1),
  -- message.max.bytes=100 on the broker would refuse every produce
  { api = "IncrementalAlterConfigs", as = "bob", body = { validate_only = false, resources = {
    { resource_type = 4, resource_name = "1", configs = {
      { name = "message.max.bytes", config_operation = 0, value = "100" } } } } } },
  { api = "IncrementalAlterConfigs", as = "bob", body = function(s) return { validate_only = false, resources = {
    { resource_type = 2, resource_name = s.name, configs = {
      { name = "retention.ms", config_operation = 0, value = "1000" } } } } } end },
  { api = "DeleteTopics", as = "bob", body = function(s) return { topic_names = { s.name }, timeout_ms = 10000 } end },
  { api = "DescribeUserScramCredentials", as = "bob", body = { users = { { name = "alice" } } } },
  { api = "AlterUserScramCredentials", as = "bob", body = { deletions = { { name = "alice", mechanism = 1 } },
    upsertions = {} } },
} }

scenario { name = "ACLs: groups and transactions refused", api = "OffsetCommit", acl = true, max_version = 9,
  steps = {
  create(1),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:bob", OP.READ) } } end },
  { api = "FindCoordinator", as = "bob", body = function(s) return { key = s.name, key_type = 0,
    coordinator_keys = { s.name } } end },
  { api = "OffsetCommit", as = "bob", body = function(s) return { group_id = s.name, generation_id_or_member_epoch = -1,
    member_id = "", retention_time_ms = -1, topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 1, committed_metadata = "" } } } } } end },
  { api = "OffsetFetch", as = "bob", version = 7, body = function(s) return { group_id = s.name,
    topics = { { name = s.name, partition_indexes = { 0 } } } } end },
  { api = "DescribeGroups", as = "bob", body = function(s) return { groups = { s.name },
    include_authorized_operations = true } end },
  { api = "InitProducerId", as = "bob", body = function(s) return { transactional_id = s.name,
    transaction_timeout_ms = 60000 } end },
  { api = "ListOffsets", as = "alice", body = function(s) return { replica_id = -1, isolation_level = 0,
    topics = { { name = s.name, partitions = { { partition_index = 0, timestamp = -1 } } } } } end },
  { api = "DescribeConfigs", as = "alice", body = function(s) return { resources = { { resource_type = 2,
    resource_name = s.name } }, include_synonyms = false, include_documentation = false } end },
} }

scenario { name = "ACLs: authorized operations", api = "Metadata", acl = true, min_version = 8, max_version = 10, steps = {
  create(1),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.READ),
    creation(R_TOPIC, s.name, LITERAL, "User:alice", 11), -- ALTER_CONFIGS
  } } end },
  { api = "Metadata", as = "alice", body = function(s) return { topics = { { name = s.name } },
    allow_auto_topic_creation = false, include_cluster_authorized_operations = true,
    include_topic_authorized_operations = true } end },
  { api = "Metadata", body = function(s) return { topics = { { name = s.name } },
    allow_auto_topic_creation = false, include_cluster_authorized_operations = true,
    include_topic_authorized_operations = true } end },
  { api = "DescribeCluster", as = "alice", body = { include_cluster_authorized_operations = true, endpoint_type = 1 } },
  { api = "DescribeTopicPartitions", as = "alice", body = function(s) return { topics = { { name = s.name } },
    response_partition_limit = 10 } end },
  { api = "DescribeTopicPartitions", as = "bob", body = function(s) return { topics = { { name = s.name } },
    response_partition_limit = 10 } end },
} }

scenario { name = "ACLs: WriteTxnMarkers needs ClusterAction", api = "WriteTxnMarkers", acl = true, steps = {
  create(1),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_TOPIC, s.name, LITERAL, "User:alice", OP.ALL) } } end },
  { api = "WriteTxnMarkers", as = "alice", body = function(s) return { markers = { { producer_id = 1000,
    producer_epoch = 0, transaction_result = false, coordinator_epoch = 0,
    topics = { { name = s.name, partition_indexes = { 0 } } } } } } end },
} }

-- Offsets per topic: bob may READ the group and the case's topic, not the
-- "-b" topic (which no binding names, so it is refused whether it exists or
-- not): what Kafka commits or deletes of the first, the second answered
-- TOPIC_AUTHORIZATION_FAILED per partition.
local function bob_reads(extra)
  return { api = "CreateAcls", ignore = true, body = function(s)
    local cs = { creation(R_TOPIC, s.name, LITERAL, "User:bob", OP.READ),
      creation(R_GROUP, s.name, LITERAL, "User:bob", OP.READ) }
    for _, c in ipairs(extra and extra(s) or {}) do cs[#cs + 1] = c end
    return { creations = cs }
  end }
end

scenario { name = "ACLs: OffsetDelete per topic", api = "OffsetDelete", acl = true, steps = {
  create(1), find_coordinator(0),
  bob_reads(function(s) return { creation(R_GROUP, s.name, LITERAL, "User:bob", 6) } end), -- DELETE
  { api = "OffsetCommit", version = 9, ignore = true, body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = -1, member_id = "", topics = { { name = s.name, partitions = {
      { partition_index = 0, committed_offset = 1 } } } } } end },
  { api = "OffsetDelete", as = "bob", body = function(s) return { group_id = s.name, topics = {
    { name = s.name .. "-b", partitions = { { partition_index = 0 } } },
    { name = s.name, partitions = { { partition_index = 0 } } } } } end },
  -- alice may not DELETE the group
  { api = "OffsetDelete", as = "alice", body = function(s) return { group_id = s.name, topics = {
    { name = s.name, partitions = { { partition_index = 0 } } } } } end },
} }

scenario { name = "ACLs: OffsetCommit v10 per topic id", api = "OffsetCommit", acl = true, min_version = 10, steps = {
  create(1), metadata(), find_coordinator(0),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_GROUP, s.name, LITERAL, "User:bob", OP.READ) } } end },
  { api = "OffsetCommit", as = "bob", body = function(s) return { group_id = s.name,
    generation_id_or_member_epoch = -1, member_id = "", topics = {
      { topic_id = s.topic_id, partitions = { { partition_index = 0, committed_offset = 1 } } },
      { topic_id = NO_TOPIC_ID, partitions = { { partition_index = 0, committed_offset = 1 } } } } } end },
} }

scenario { name = "ACLs: TxnOffsetCommit commits the authorized topics", api = "TxnOffsetCommit", acl = true,
  max_version = 4, steps = {
  create(1), txn_producer(), find_coordinator(0),
  bob_reads(function(s) return { creation(4, s.name, LITERAL, "User:bob", OP.WRITE) } end), -- TRANSACTIONAL_ID
  { api = "AddOffsetsToTxn", ignore = true, body = function(s) return { transactional_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch, group_id = s.name } end },
  { api = "TxnOffsetCommit", as = "bob", body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch, topics = {
      { name = s.name .. "-b", partitions = { { partition_index = 0, committed_offset = 3 } } },
      { name = s.name, partitions = { { partition_index = 0, committed_offset = 9 } } } } } end },
  -- no topic bob may read: nothing committed, nobody asked
  { api = "TxnOffsetCommit", as = "bob", body = function(s) return { transactional_id = s.name, group_id = s.name,
    producer_id = s.pid, producer_epoch = s.epoch, topics = {
      { name = s.name .. "-b", partitions = { { partition_index = 0, committed_offset = 3 } } } } } end },
  { api = "EndTxn", body = function(s) return { transactional_id = s.name, producer_id = s.pid,
    producer_epoch = s.epoch, committed = true } end },
  { api = "DescribeTransactions", ignore = true, body = function(s) return { transactional_ids = { s.name } } end,
    ["until"] = function(r) return r.transaction_states[1].transaction_state == "CompleteCommit" end },
  { api = "OffsetFetch", version = 7, body = function(s) return { group_id = s.name, topics = { { name = s.name,
    partition_indexes = { 0 } } }, require_stable = true } end },
} }

scenario { name = "ACLs: a consumer group member must describe its topics", api = "ConsumerGroupHeartbeat",
  acl = true, steps = {
  create(1), find_coordinator(0),
  { api = "CreateAcls", ignore = true, body = function(s) return { creations = {
    creation(R_GROUP, s.name, LITERAL, "User:bob", OP.READ) } } end },
  { api = "ConsumerGroupHeartbeat", as = "bob", body = function(s) return cgh(s, 0) end },
} }

scenario { name = "ACLs: share groups per topic", api = "ShareFetch", acl = true, steps = {
  create(1), metadata(), find_coordinator(0),
  bob_reads(function(s) return { creation(R_GROUP, s.name, LITERAL, "User:alice", OP.READ),
    creation(R_GROUP, s.name, LITERAL, "User:bob", 6) } end), -- DELETE
  -- alice may not describe the topic she subscribes to
  { api = "ShareGroupHeartbeat", as = "alice", body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = 0, subscribed_topic_names = { s.name } } end },
  { api = "ShareFetch", as = "alice", body = function(s)
    local b = share_body(s, 0, {})
    b.max_wait_ms, b.min_bytes, b.max_bytes, b.max_records, b.batch_size = 0, 1, 1048576, 500, 500
    b.share_acquire_mode, b.is_renew_ack, b.forgotten_topics_data = 0, false, {}
    return b
  end },
  { api = "ShareAcknowledge", as = "alice", body = function(s)
    local b = share_body(s, 1, { { first_offset = 0, last_offset = 0, acknowledge_types = { 1 } } })
    b.is_renew_ack = false
    return b
  end },
  { api = "DescribeShareGroupOffsets", as = "alice", body = function(s) return { groups = { { group_id = s.name,
    topics = { { topic_name = s.name, partitions = { 0 } } } } } } end },
  { api = "AlterShareGroupOffsets", as = "bob", body = function(s) return { group_id = s.name, topics = {
    { topic_name = s.name .. "-b", partitions = { { partition_index = 0, start_offset = 0 } } } } } end },
  { api = "DeleteShareGroupOffsets", as = "bob", body = function(s) return { group_id = s.name,
    topics = { { topic_name = s.name .. "-b" } } } end },
} }

-- A binding removed while bob's share session holds the topic: his next
-- fetch (naming no topic) is refused it, as Kafka asks at each fetch.
local function as_bob(step)
  step.as = "bob"
  return step
end

scenario { name = "ACLs: a share session's topic refused once its binding is gone", api = "ShareFetch", acl = true,
  steps = {
  create(1), metadata(), find_coordinator(0), bob_reads(),
  { api = "IncrementalAlterConfigs", ignore = true, body = function(s) return { validate_only = false, resources = {
    { resource_type = 32, resource_name = s.name, configs = {
      { name = "share.auto.offset.reset", config_operation = 0, value = "earliest" } } } } } end },
  { api = "ShareGroupHeartbeat", as = "bob", ignore = true, body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = 0, subscribed_topic_names = { s.name } } end,
    save = function(s, r) s.share_epoch = r.member_epoch end },
  { api = "ShareGroupHeartbeat", as = "bob", ignore = true, body = function(s) return { group_id = s.name,
    member_id = SHARE_MEMBER, member_epoch = s.share_epoch } end,
    save = function(s, r) s.share_epoch = r.member_epoch end,
    ["until"] = function(r) return r.assignment ~= nil and #r.assignment.topic_partitions > 0 end },
  produce(0, records(2, "share")),
  as_bob(share_fetch(0, nil, true)),
  { api = "DeleteAcls", ignore = true, body = function(s) return { filters = {
    acl_filter(R_TOPIC, s.name, LITERAL, "User:bob", OP.READ, ALLOW) } } end },
  { api = "ShareFetch", as = "bob", body = function(s)
    local b = share_body(s, 1, {})
    b.topics = {}
    b.max_wait_ms, b.min_bytes, b.max_bytes, b.max_records, b.batch_size = 0, 1, 1048576, 500, 500
    b.share_acquire_mode, b.is_renew_ack, b.forgotten_topics_data = 0, false, {}
    return b
  end, ["until"] = function(r)
    local t = r.responses and r.responses[1]
    return t ~= nil and t.partitions[1] ~= nil and t.partitions[1].error_code == 29
  end },
} }

scenario { name = "ACLs: the cluster's admin APIs refused to bob", api = "DescribeClientQuotas", acl = true, steps = {
  create(1),
  { api = "DescribeClientQuotas", as = "bob", body = { components = {}, strict = false } },
  { api = "AlterClientQuotas", as = "bob", body = function(s) return { validate_only = false, entries = {
    { entity = { { entity_type = "user", entity_name = s.name } },
      ops = { { key = "producer_byte_rate", value = 1024, remove = false } } } } } end },
  { api = "ListPartitionReassignments", as = "bob", body = { timeout_ms = 10000 } },
  { api = "AlterPartitionReassignments", as = "bob", body = function(s) return { timeout_ms = 10000, topics = {
    { name = s.name, partitions = { { partition_index = 0, replicas = { 1 } } } } } } end },
  { api = "DescribeQuorum", as = "bob", body = { topics = { { topic_name = "__cluster_metadata",
    partitions = { { partition_index = 0 } } } } } },
  { api = "DescribeProducers", as = "bob", body = function(s) return { topics = { { name = s.name,
    partition_indexes = { 0 } } } } end },
  { api = "DescribeLogDirs", as = "bob", body = function(s) return { topics = { { topic = s.name,
    partitions = { 0 } } } } end },
} }

-- ---------------------------------------------------------------- client quotas
-- Kept by the controller: KafkaIQ's node is combined, as Kafka's. Kafka
-- answers entities, their parts and their values in hash-map order: the
-- answers are put in one order before comparing.

local function sorted_by(t, f)
  table.sort(t, function(x, y) return f(x) < f(y) end)
  return t
end

local function entity_text(e)
  local parts = {}
  for _, p in ipairs(e) do parts[#parts + 1] = p.entity_type .. "=" .. tostring(p.entity_name) end
  return table.concat(parts, ",")
end

local function quotas_in_order(r)
  for _, e in ipairs(r.entries or {}) do
    sorted_by(e.entity, function(p) return p.entity_type end)
    if e.values then sorted_by(e.values, function(v) return v.key end) end
  end
  if r.entries then sorted_by(r.entries, function(e) return entity_text(e.entity) end) end
  return r
end

-- An AlterClientQuotas entry: entity parts as { type, name } (name nil:
-- the default), ops as { key, value } or { key, remove = true }.
local function quota(entity, ops)
  local e, o = {}, {}
  for _, p in ipairs(entity) do e[#e + 1] = { entity_type = p[1], entity_name = p[2] } end
  for _, op in ipairs(ops) do o[#o + 1] = { key = op[1], value = op[2] or 0, remove = op.remove or false } end
  return { entity = e, ops = o }
end

local function alter_quotas(entries, validate_only)
  return { api = "AlterClientQuotas", pick = quotas_in_order,
    body = function(s) return { entries = entries(s), validate_only = validate_only or false } end }
end

-- components as { type, match_type, match }; n: the entries to wait for
-- (Kafka's broker answers from its metadata image, a moment behind its
-- controller's)
-- n: the entries to wait for (Kafka's broker image catches up with its
-- controller); values: and as many values in the first
local function describe_quotas(components, strict, n, values)
  return { api = "DescribeClientQuotas", pick = quotas_in_order,
    ["until"] = n and function(r)
      return r.entries and #r.entries == n and (not values or #(r.entries[1].values or {}) == values)
    end,
    body = function(s)
      local cs = {}
      for _, c in ipairs(components(s)) do cs[#cs + 1] = { entity_type = c[1], match_type = c[2], match = c[3] } end
      return { components = cs, strict = strict or false }
    end }
end

local EXACT, DEFAULT, SPECIFIED = 0, 1, 2

scenario { name = "AlterClientQuotas and DescribeClientQuotas", api = "DescribeClientQuotas", combined = true,
  steps = {
  alter_quotas(function(s) return {
    quota({ { "user", s.name } }, { { "producer_byte_rate", 1024 }, { "consumer_byte_rate", 2048 } }),
    quota({ { "user", s.name }, { "client-id", s.name .. "-app" } }, { { "request_percentage", 50.5 } }),
    quota({ { "client-id", s.name .. "-c" } }, { { "controller_mutation_rate", 10 } }),
  } end),
  describe_quotas(function(s) return { { "user", EXACT, s.name } } end, false, 2),
  describe_quotas(function(s) return { { "client-id", EXACT, s.name .. "-c" } } end, true, 1),
  describe_quotas(function(s) return { { "user", EXACT, s.name } } end, true),
  describe_quotas(function(s) return { { "user", EXACT, s.name }, { "client-id", SPECIFIED } } end),
  describe_quotas(function(s) return { { "client-id", EXACT, s.name .. "-c" } } end, true),
  describe_quotas(function(s) return { { "client-id", EXACT, s.name .. "-app" }, { "user", EXACT, s.name } } end),
  -- a changed value, one removed, one removed that is not there, and one
  -- validated only (not kept)
  alter_quotas(function(s) return {
    quota({ { "user", s.name } }, { { "producer_byte_rate", 4096 }, { "consumer_byte_rate", remove = true },
      { "request_percentage", remove = true } }),
  } end),
  alter_quotas(function(s) return { quota({ { "user", s.name } }, { { "consumer_byte_rate", 1 } }) } end, true),
  describe_quotas(function(s) return { { "user", EXACT, s.name } } end, true, 1, 1),
  -- refusals, one entity each
  alter_quotas(function(s) return { quota({ { "client-id", s.name .. "-c" } }, { { "producer_byte_rate", 10.5 } }) } end),
  alter_quotas(function(s) return { quota({ { "client-id", s.name .. "-c" } }, { { "bogus_rate", 1 } }) } end),
  alter_quotas(function(s) return { quota({ { "client-id", s.name .. "-c" } }, { { "consumer_byte_rate", 0 } }) } end),
  alter_quotas(function(s) return { quota({ { "client-id", s.name .. "-c" } }, { { "request_percentage", -1 } }) } end),
  alter_quotas(function(s) return { quota({}, { { "producer_byte_rate", 1 } }) } end),
  alter_quotas(function(s) return { quota({ { "group", s.name } }, { { "producer_byte_rate", 1 } }) } end),
  alter_quotas(function(s) return { quota({ { "user", "" } }, { { "producer_byte_rate", 1 } }) } end),
  -- an entity refused leaves the others of the request be
  alter_quotas(function(s) return {
    quota({ { "client-id", s.name .. "-c" } }, { { "producer_byte_rate", 2.5 } }),
    quota({ { "user", s.name .. "-ok" } }, { { "producer_byte_rate", 100 } }),
  } end),
  describe_quotas(function(s) return { { "user", EXACT, s.name .. "-ok" } } end, false, 1),
  describe_quotas(function(s) return { { "client-id", EXACT, s.name .. "-c" } } end),
  -- filters Kafka refuses
  describe_quotas(function() return { { "", EXACT, "x" } } end),
  describe_quotas(function() return { { "group", EXACT, "x" } } end),
  describe_quotas(function() return { { "user", 5 } } end),
  describe_quotas(function() return { { "user", EXACT } } end),
  describe_quotas(function() return { { "user", DEFAULT, "x" } } end),
  describe_quotas(function() return { { "user", SPECIFIED, "x" } } end),
  describe_quotas(function(s) return { { "user", EXACT, s.name }, { "user", SPECIFIED } } end),
  describe_quotas(function(s) return { { "ip", SPECIFIED }, { "user", EXACT, s.name } } end),
  -- everything removed: nothing to describe
  alter_quotas(function(s) return {
    quota({ { "user", s.name } }, { { "producer_byte_rate", remove = true } }),
    quota({ { "user", s.name }, { "client-id", s.name .. "-app" } }, { { "request_percentage", remove = true } }),
    quota({ { "client-id", s.name .. "-c" } }, { { "controller_mutation_rate", remove = true } }),
    quota({ { "user", s.name .. "-ok" } }, { { "producer_byte_rate", remove = true } }),
  } end),
  describe_quotas(function(s) return { { "user", EXACT, s.name } } end, false, 0),
  describe_quotas(function(s) return { { "client-id", EXACT, s.name .. "-c" } } end, false, 0),
} }

scenario { name = "Client quotas of the defaults", api = "AlterClientQuotas", combined = true, steps = {
  alter_quotas(function(s) return {
    quota({ { "user", nil }, { "client-id", s.name } }, { { "producer_byte_rate", 300 } }),
  } end),
  describe_quotas(function(s) return { { "user", DEFAULT }, { "client-id", EXACT, s.name } } end, true, 1),
  describe_quotas(function(s) return { { "user", EXACT, s.name } } end),
  alter_quotas(function(s) return {
    quota({ { "user", nil }, { "client-id", s.name } }, { { "producer_byte_rate", remove = true } }),
  } end),
  describe_quotas(function(s) return { { "user", DEFAULT }, { "client-id", EXACT, s.name } } end, true, 0),
} }

-- ---------------------------------------------------------------- delegation tokens (KIP-48)

-- Only a SASL connection may ask for tokens: on the harness's PLAINTEXT
-- listener each request is refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
-- with the other fields as Kafka's broker fills them (the anonymous owner
-- and requester, -1 timestamps). Signed in, on the acl setup: below.
scenario { name = "CreateDelegationToken on a PLAINTEXT listener", api = "CreateDelegationToken", steps = {
  { api = "CreateDelegationToken", body = { renewers = { { principal_type = "User", principal_name = "bob" } },
    max_lifetime_ms = -1 } },
} }
scenario { name = "RenewDelegationToken on a PLAINTEXT listener", api = "RenewDelegationToken", steps = {
  { api = "RenewDelegationToken", body = { hmac = "not-a-token", renew_period_ms = 1000 } },
} }
scenario { name = "ExpireDelegationToken on a PLAINTEXT listener", api = "ExpireDelegationToken", steps = {
  { api = "ExpireDelegationToken", body = { hmac = "not-a-token", expiry_time_period_ms = -1 } },
} }
scenario { name = "DescribeDelegationToken on a PLAINTEXT listener", api = "DescribeDelegationToken", steps = {
  { api = "DescribeDelegationToken", body = {} },
  { api = "DescribeDelegationToken", body = { owners = { { principal_type = "User", principal_name = "bob" } } } },
} }

-- With SASL and StandardAuthorizer (the acl setup, delegation.token.secret.key
-- set on both): bob may not make a token for alice (KIP-373: CREATE_TOKENS on
-- User:alice), renewing or expiring an HMAC no token has is
-- DELEGATION_TOKEN_NOT_FOUND, and bob sees no token (none of his own).
scenario { name = "ACLs: delegation tokens refused to bob", api = "DescribeDelegationToken", acl = true, steps = {
  { api = "CreateDelegationToken", as = "bob", version = 3, body = { owner_principal_type = "User",
    owner_principal_name = "alice", renewers = {}, max_lifetime_ms = -1 } },
  { api = "RenewDelegationToken", as = "bob", body = { hmac = "not-a-token", renew_period_ms = 1000 } },
  { api = "ExpireDelegationToken", as = "bob", body = { hmac = "not-a-token", expiry_time_period_ms = -1 } },
  { api = "DescribeDelegationToken", as = "bob", body = { owners = { { principal_type = "User",
    principal_name = "bob" } } } },
} }

return S
