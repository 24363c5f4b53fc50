-- KRaft metadata record type 2 (__cluster_metadata): a topic is created
-- with its name and id; its partitions follow as PartitionRecords.
return {
  name = "TopicRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "name", "string" },
    { "topic_id", "uuid" },
  },
}
