-- What the differential harness makes of an answer before comparing it
-- (run.lua): each rule names a field (at any depth, by its schema name)
-- and why the two brokers' values cannot be the same. apply(resp) returns a
-- normalised deep copy; keys says how arrays' elements are matched.

-- Fields whose value is each broker's own; a present value becomes "<...>",
-- so a missing or null one still differs from a set one.
local placeholder = {
  cluster_id = "each cluster's own random id",
  topic_id = "each topic's own random id (a zero id is kept: its absence counts)",
  host = "each broker's own listener",
  port = "each broker's own listener",
  log_append_time_ms = "the broker's clock",
  current_state_timestamp = "the broker's clock",
  last_timestamp = "the broker's clock",
  producer_id = "handed out by each broker's own allocator",
  member_id = "a random id each coordinator makes up",
  transaction_start_time_ms = "the coordinator's clock",
  leader = "the group leader's member id, made up by each coordinator",
  incarnation_id = "random",
  client_host = "where the harness connects from",
  log_dir = "each broker's own data directory",
  path = "each broker's own data directory",
}

-- Fields each broker makes up where 0 means none: 0 is kept, any other value
-- becomes "<...>".
local nonzero_placeholder = {
  session_id = "a fetch session's id, random at each broker (0: no session)",
}

-- String fields that carry a topic id among other text: the id (22
-- base64 characters after a ':') becomes "<topic_id>".
local embedded_topic_id = {
  key = "a share coordinator key (FindCoordinator key type 2) is group:topicId:partition",
}
local TOPIC_ID_PART = ":" .. ("[%w_%-]"):rep(22) .. "%f[^%w_%-]"

-- Fields left out entirely.
local drop = {
  error_message = "the wording, and whether a success carries an empty one, is each broker's own; clients act on the code",
  throttle_time_ms = "quota throttling, timing-dependent",
  total_bytes = "bytes of each broker's own log files",
  usable_bytes = "free space of each broker's own disk",
  size = "bytes of each broker's own log files",
  offset_lag = "moves as the log grows",
}

-- Arrays whose elements are told apart by a field (their order carries no
-- meaning): compared element by element matched by it (a list: the first
-- of its fields that every element has).
local keys = {
  api_keys = "api_key",
  brokers = "node_id",
  configs = "name",
  groups = "group_id",
  partitions = "partition_index",
  partition_responses = "index",
  partition_results = "partition_index",
  topics = "name",
  responses = "name",
  results = { "name", "topic_name" }, -- the first every element has
  supported_features = "name",
  finalized_features = "name",
}

-- In a cluster, node ids as well: each cluster places replicas, leaders,
-- coordinators and its controller its own way (Kafka's placement starts
-- at a random broker), and numbers its nodes from a different id.
local node_ids = {
  node_id = true, leader_id = true, controller_id = true, replica_nodes = true, isr_nodes = true,
  offline_replicas = true, broker_id = true, replicas = true, isr = true, leader = true,
}

local ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

local function copy(v, field, cluster)
  if embedded_topic_id[field] and type(v) == "string" then return (v:gsub(TOPIC_ID_PART, ":<topic_id>")) end
  if type(v) ~= "table" then
    if nonzero_placeholder[field] and type(v) == "number" and v ~= 0 then return "<" .. field .. ">" end
    if (placeholder[field] or cluster and node_ids[field] and type(v) == "number") and v ~= nil and
        v ~= ZERO_UUID and v ~= -1 and v ~= "" then
      return "<" .. field .. ">"
    end
    return v
  end
  local out = {}
  for k, x in pairs(v) do
    if not drop[k] then out[k] = copy(x, type(k) == "string" and k or field, cluster) end
  end
  return out
end

local function apply(resp, cluster)
  return copy(resp, "", cluster)
end

return { keys = keys, apply = apply }
