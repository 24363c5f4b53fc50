-- Value of a consumer group's epoch record (key version 3); a tombstone
-- deletes the group. Kafka 4.1 tags in a hash of the subscribed topics.
return {
  name = "ConsumerGroupMetadataValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "epoch", "int32" },
    { "metadata_hash", "int64", tag = 0, tagged = "0+" },
  },
}
