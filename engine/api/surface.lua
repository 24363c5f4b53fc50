-- The API surface: one row per API the broker serves, read by
-- scripts/gen_surface.lua, which writes build/gen/api/surface.c (the rows
-- table with each API's handler, kiq_api_<snake name>_handle, and their
-- prototypes). ApiVersions walks it, admission checks against it, dispatch
-- calls from it. Versions come from the API's schema (engine/proto/schema)
-- unless a row narrows them:
--
-- - min: the lowest version served and advertised, where Kafka 4.0 dropped
--   older ones (KIP-896) that no client's feature detection needs (those
--   stay: librdkafka before 2.11 turns its group consumer on only with
--   JoinGroup/SyncGroup/Heartbeat/LeaveGroup/FindCoordinator v0 in range,
--   idempotence only with InitProducerId v0, timestamps with ListOffsets v1,
--   commits with OffsetCommit 1-2 and OffsetFetch 1);
-- - advertised_min: lower still in ApiVersions only. librdkafka before
--   2.11.1 compresses a batch only if the broker's Produce range starts at
--   0, so Produce is advertised from 0 as Kafka 4.0 does (KAFKA-18659) and
--   v0-2 requests are refused like any unsupported version.
--
-- planes: which listeners serve it, "data" (clients), "control" (the
-- controller's listener) or "both".
--
-- cluster: the operation on the cluster (Kafka's ACL operation) the whole
-- request needs when an authorizer is configured, asked before the
-- handler runs; refused, the top-level error_code is
-- CLUSTER_AUTHORIZATION_FAILED. control: likewise, only for a request
-- arriving on the control plane (the nodes' own traffic: Kafka's
-- controller asks CLUSTER_ACTION, which brokers and controllers hold as
-- super users or by a binding). txn and group: likewise for the request's
-- transactional_id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and group_id
-- (GROUP_AUTHORIZATION_FAILED), asked in that order. Handlers check the
-- rest themselves (topics, and whatever is refused per element).
return {
  { "Produce", planes = "data", advertised_min = 0 },
  -- on the control plane: the controller quorum's Fetch of __cluster_metadata
  { "Fetch", planes = "both", control = "CLUSTER_ACTION" },
  { "ListOffsets", planes = "data" },
  { "Metadata", planes = "both" },
  { "OffsetCommit", planes = "data", min = 2 },
  { "OffsetFetch", planes = "data", min = 1 },
  { "FindCoordinator", planes = "data" },
  { "JoinGroup", planes = "data", group = "READ" },
  { "Heartbeat", planes = "data", group = "READ" },
  { "LeaveGroup", planes = "data", group = "READ" },
  { "SyncGroup", planes = "data", group = "READ" },
  { "DescribeGroups", planes = "data" },
  { "ListGroups", planes = "data" },
  { "ApiVersions", planes = "both" },
  -- on a SASL listener, before anything else; elsewhere ILLEGAL_SASL_STATE and a close
  { "SaslHandshake", planes = "both" },
  { "SaslAuthenticate", planes = "both" },
  -- forwarded by the other brokers to the active controller
  { "DescribeUserScramCredentials", planes = "both" },
  { "AlterUserScramCredentials", planes = "both" },
  -- ACL bindings, forwarded by the other brokers to the active controller
  { "DescribeAcls", planes = "both", cluster = "DESCRIBE" },
  { "CreateAcls", planes = "both" },
  { "DeleteAcls", planes = "both" },
  -- forwarded by the other brokers to the active controller
  { "DescribeClientQuotas", planes = "both" },
  { "AlterClientQuotas", planes = "both" },
  -- forwarded by the other brokers to the active controller, naming the client
  { "CreateDelegationToken", planes = "both" },
  { "RenewDelegationToken", planes = "both" },
  { "ExpireDelegationToken", planes = "both" },
  { "DescribeDelegationToken", planes = "both" },
  -- forwarded by the other brokers to the one hosting the controller
  { "CreateTopics", planes = "both", min = 2 },
  { "DeleteTopics", planes = "both", min = 1 },
  { "DeleteRecords", planes = "data" },
  { "InitProducerId", planes = "data" },
  { "AddPartitionsToTxn", planes = "data" },
  { "AddOffsetsToTxn", planes = "data", txn = "WRITE", group = "READ" },
  { "EndTxn", planes = "data", txn = "WRITE" },
  -- coordinator to partition leader; clients are refused
  { "WriteTxnMarkers", planes = "data", min = 1 },
  { "TxnOffsetCommit", planes = "data" },
  { "OffsetForLeaderEpoch", planes = "data", min = 2 },
  -- the replicas ask the controller for a new topic's configs
  { "DescribeConfigs", planes = "both", min = 1 },
  { "AlterConfigs", planes = "both" },
  { "AlterReplicaLogDirs", planes = "data", min = 1 },
  { "DescribeLogDirs", planes = "data", min = 1 },
  { "CreatePartitions", planes = "both" },
  { "DeleteGroups", planes = "data" },
  { "ElectLeaders", planes = "both" },
  { "AlterPartitionReassignments", planes = "both" },
  { "ListPartitionReassignments", planes = "both", cluster = "DESCRIBE" },
  { "IncrementalAlterConfigs", planes = "both" },
  { "OffsetDelete", planes = "data", group = "DELETE" },
  { "DescribeCluster", planes = "both" },
  { "DescribeProducers", planes = "data" },
  { "DescribeTransactions", planes = "data" },
  { "ListTransactions", planes = "data" },
  { "ConsumerGroupHeartbeat", planes = "data", group = "READ" },
  { "ConsumerGroupDescribe", planes = "data" },
  -- share groups (KIP-932): membership at the group coordinator, records
  -- acquired and acknowledged at each partition's leader
  { "ShareGroupHeartbeat", planes = "data", group = "READ" },
  { "ShareGroupDescribe", planes = "data" },
  { "ShareFetch", planes = "data", group = "READ" },
  { "ShareAcknowledge", planes = "data", group = "READ" },
  { "DescribeShareGroupOffsets", planes = "data" },
  { "AlterShareGroupOffsets", planes = "data", group = "READ" },
  { "DeleteShareGroupOffsets", planes = "data", group = "DELETE" },
  { "GetTelemetrySubscriptions", planes = "data" },
  { "PushTelemetry", planes = "data" },
  { "ListConfigResources", planes = "data" },
  { "DescribeTopicPartitions", planes = "data" },
  -- the controller's, on the control plane of the broker hosting it
  { "BrokerRegistration", planes = "control", control = "CLUSTER_ACTION" },
  { "BrokerHeartbeat", planes = "control", control = "CLUSTER_ACTION" },
  { "AllocateProducerIds", planes = "control", control = "CLUSTER_ACTION" },
  { "AlterPartition", planes = "control", control = "CLUSTER_ACTION" },
  { "AssignReplicasToDirs", planes = "control", control = "CLUSTER_ACTION" },
  -- the controller quorum's voters to each other (KRaft)
  { "Vote", planes = "control", control = "CLUSTER_ACTION" },
  { "BeginQuorumEpoch", planes = "control", control = "CLUSTER_ACTION" },
  { "EndQuorumEpoch", planes = "control", control = "CLUSTER_ACTION" },
  { "FetchSnapshot", planes = "control", control = "CLUSTER_ACTION" },
  { "DescribeQuorum", planes = "both", cluster = "DESCRIBE" },
  -- dynamic voters (KIP-853), answered by the quorum's leader
  { "AddRaftVoter", planes = "both", cluster = "ALTER" },
  { "RemoveRaftVoter", planes = "both", cluster = "ALTER" },
  -- a voter's own new endpoints, to the leader only
  { "UpdateRaftVoter", planes = "control", control = "CLUSTER_ACTION" },
  { "UnregisterBroker", planes = "both", cluster = "ALTER" },
  -- forwarded by the other brokers to the one hosting the controller
  { "UpdateFeatures", planes = "both", cluster = "ALTER" },
  -- the controller's pushes to every broker
  { "UpdateMetadata", planes = "control", control = "CLUSTER_ACTION" },
  { "LeaderAndIsr", planes = "control", control = "CLUSTER_ACTION" },
  { "StopReplica", planes = "control", control = "CLUSTER_ACTION" },
}
