-- KRaft metadata record type 9 (__cluster_metadata): the topic and all its
-- partitions are deleted.
return {
  name = "RemoveTopicRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "topic_id", "uuid" },
  },
}
