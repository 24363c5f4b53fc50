-- Differences the differential harness accepts (run.lua), each with its
-- reason: a KafkaIQ extension or a documented Kafka quirk. `case` and `path`
-- are Lua patterns matched against the case's name ("<scenario> v<N>") and
-- the differing field's path ("topics[1].error_code").
return {
  { case = "^Metadata of an unknown topic, no auto%-creation v0$", path = "^topics%[",
    reason = "Metadata v0-3 always ask to auto-create: Kafka 4 answers UNKNOWN_TOPIC_OR_PARTITION while its "
      .. "controller creates the topic, one KafkaIQ broker creates it before answering; clients ask again after either" },
  { case = "^ApiVersions v%d+$", path = "^api_keys%[",
    reason = "KafkaIQ serves the APIs and versions its README lists (client APIs; the others come with later "
      .. "issues: KRaft, SASL, ACLs, share groups, KIP-848, features), and KIP-714's telemetry APIs, which "
      .. "Kafka advertises only with a client-metrics plugin" },
  { case = "^ApiVersions v%d+$", path = "^supported_features%[",
    reason = "KafkaIQ supports only the feature levels it implements (controller/features.h): metadata.version "
      .. "up to 4.0-IV3 (Kafka 4.0's API versions), kraft.version 0 (static voters), eligible.leader.replicas.version 0, no "
      .. "streams.version; group.version 0-1, transaction.version 0-2 and share.version 0-2 as Kafka" },
  { case = "^ApiVersions v%d+$", path = "^finalized_features",
    reason = "KafkaIQ finalizes less than Kafka 4.4 deliberately: metadata.version 4.0-IV3, and no "
      .. "streams.version, eligible.leader.replicas.version or kraft.version level (group.version 1, "
      .. "transaction.version 2 and share.version 2 as Kafka); the epoch is the metadata offset of the last feature change, "
      .. "Kafka's the broker's whole metadata offset" },
  { case = "^ShareGroupHeartbeat", path = "assignment%.topic_partitions%.#$",
    reason = "Kafka assigns a share group's partitions only once the share coordinator has initialized their "
      .. "state (a later heartbeat, the group epoch bumped again); KafkaIQ's share-partitions start at their "
      .. "leader's first fetch, so the first heartbeat gets the partitions" },
  { case = "^ShareGroupHeartbeat", path = "epoch$",
    reason = "Kafka bumps a share group's epoch once more when its partitions' state is initialized (see "
      .. "the assignment's reason); KafkaIQ's first heartbeat already has the assignment at epoch 1" },
  { case = "Telemetry", path = "^<no common version>$",
    reason = "KafkaIQ answers KIP-714's telemetry APIs (no subscriptions); Kafka advertises them only with a "
      .. "client-metrics plugin configured" },
  { case = "^ListGroups", path = "^groups%[group_id=JoinGroup%-refusals%-v%d+[%-%d]*%]$",
    reason = "Kafka makes an empty classic group even for a JoinGroup it refuses (empty protocol type), and its "
      .. "state filter lets such a group through; KafkaIQ makes no group for a refused join" },
  { case = "^DescribeConfigs of the broker", path = "configs%[name=compression%.type%]%.read_only$",
    reason = "compression.type is dynamic in Kafka; KafkaIQ does not recompress (README), so it does not take "
      .. "the broker setting at runtime" },
  { case = "^Cluster: DescribeQuorum", path = "^topics%[1%]%.partitions%[partition_index=0%]%.current_voters",
    reason = "the quorums differ in make: Kafka's reference is three combined nodes (three voters), serve --brokers 3 "
      .. "one controller beside three brokers; each log's offsets count its own records, each leader's clock "
      .. "stamps the fetches" },
  { case = "^Cluster: DescribeQuorum", path = "^topics%[1%]%.partitions%[partition_index=0%]%.observers",
    reason = "the quorums differ in make (see current_voters)" },
  { case = "^Cluster: DescribeQuorum", path = "^topics%[1%]%.partitions%[partition_index=0%]%.high_watermark$",
    reason = "each metadata log holds its own records" },
  { case = "^Cluster: DescribeQuorum", path = "^topics%[1%]%.partitions%[partition_index=0%]%.leader_epoch$",
    reason = "each quorum's elections: a node that stood a moment before another's vote came makes it 2" },
  { case = "^Cluster: DescribeQuorum", path = "^nodes%.#$",
    reason = "a node per voter: three in Kafka's reference, one in serve --brokers 3" },
}
