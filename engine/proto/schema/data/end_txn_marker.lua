-- Value of a transaction marker, the one record of a control batch that
-- commits or aborts a producer's transaction in a partition (after its
-- int16 version, 0): the coordinator epoch that wrote it.
return {
  name = "EndTxnMarker",
  versions = "0",
  fields = {
    { "coordinator_epoch", "int32" },
  },
}
