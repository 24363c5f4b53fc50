-- KRaft metadata record type 19 (__cluster_metadata): the ACL binding with
-- this id is deleted.
return {
  name = "RemoveAccessControlEntryRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "id", "uuid" },
  },
}
