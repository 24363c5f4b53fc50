-- KRaft metadata record type 12 (__cluster_metadata): a feature's finalized
-- level for the whole cluster (KIP-584, KIP-778). Level 0 takes the
-- feature out of the finalized set. metadata.version's is the first record
-- of a cluster's log and of every snapshot.
return {
  name = "FeatureLevelRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "name", "string" },
    { "feature_level", "int16" },
  },
}
