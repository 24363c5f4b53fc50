-- Disk faults injected under an in-process broker's log directory: the
-- directory goes offline, its partitions answer KAFKA_STORAGE_ERROR while
-- the broker keeps serving the rest, and a restart with the disk working
-- again brings back every acknowledged record and no partial batch.

package.cpath = "build/lua/?.so;" .. package.cpath

local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local client = require "kafkaiq.client"
local connection = require "kafkaiq.client.connection"

local FETCH, LIST_OFFSETS, METADATA = 1, 2, 3
local STORAGE_ERROR, LEADER_NOT_AVAILABLE = 56, 5

local function raw(b)
  return assert(connection.open(b.host, b.port,
    { client_id = "disk-fault-spec", connect_timeout_ms = 2000, request_timeout_ms = 5000 }))
end

local function fetch_code(conn, topic, partition)
  local resp = assert(conn:request(FETCH, {
    replica_id = -1, max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, isolation_level = 0,
    session_id = 0, session_epoch = -1, forgotten_topics_data = {}, rack_id = "",
    topics = { { topic = topic, partitions = { { partition = partition, fetch_offset = 0,
      partition_max_bytes = 1048576, current_leader_epoch = -1, log_start_offset = -1 } } } },
  }, { version = 12 })) -- topics by name
  return resp.responses[1].partitions[1].error_code
end

local function read_partition(b, topic, partition, want)
  local c = client.consumer { bootstrap = b.bootstrap, fetch_max_wait_ms = 50 }
  assert(c:assign { { topic = topic, partition = partition, offset = 0 } })
  local out = {}
  local deadline = core.now_ms() + 5000
  while #out < want and core.now_ms() < deadline do
    for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r end
  end
  -- one more round: nothing beyond what was acknowledged may show up
  for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r end
  c:close()
  return out
end

describe("disk faults", function()
  local b

  before_each(function()
    core.log_level("error") -- the failure is logged as an error on purpose
    b = assert(kiq.broker { ["num.partitions"] = "2" })
  end)

  after_each(function()
    b:clear_disk_fault()
    if b.handle:running() then b:stop() end
    os.execute("rm -rf '" .. b.dir .. "'")
  end)

  it("refuses bad fault specs", function()
    assert.has_error(function() b:inject_disk_fault { errno = "EPERM" } end)
    assert.has_error(function() b:inject_disk_fault { errno = "ENOSPC", after_bytes = -1 } end)
    assert.is_false(b:state().log_dirs[1].offline)
  end)

  it("makes a full directory read-only, and takes appends again once there is room", function()
    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:create_topics { { name = "dfull", partitions = 1 } })
    a:close()
    local p = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    for i = 1, 5 do assert(p:send("dfull", "k" .. i, "acked-" .. i, { partition = 0 })) end
    assert(p:flush())
    assert(b:inject_disk_fault { errno = "ENOSPC", after_bytes = 10 })
    assert(p:send("dfull", "late", "refused", { partition = 0 }))
    local ok, err = p:flush()
    assert.is_nil(ok)
    assert.matches("KAFKA_STORAGE_ERROR", err)
    local st = b:state()
    assert.same({}, st.offline_log_dirs)
    assert.is_false(st.log_dirs[1].offline)
    assert.equals("No space left on device", st.log_dirs[1].full)
    assert.equals(5, st.topics.dfull.partitions[0].log_end_offset)
    -- every acknowledged record is still read
    local conn = raw(b)
    assert.equals(0, fetch_code(conn, "dfull", 0))
    conn:close()
    local got = read_partition(b, "dfull", 0, 5)
    assert.equals(5, #got)
    -- room again: appends resume without a restart
    b:clear_disk_fault()
    assert(kiq.wait_for(function()
      assert(p:send("dfull", "k", "after", { partition = 0 }))
      return p:flush() ~= nil
    end, 10000, "appends to resume"))
    assert.is_nil(b:state().log_dirs[1].full)
    p:close()
  end)

  it("takes the log directory offline and recovers on restart", function()
    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:create_topics { { name = "df", partitions = 2 } })
    local p = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    for i = 1, 5 do assert(p:send("df", "k" .. i, "acked-" .. i, { partition = 0 })) end
    assert(p:flush())

    -- The next batch gets 10 bytes onto the disk, then the disk fails.
    assert(b:inject_disk_fault { errno = "EIO", after_bytes = 10 })
    assert(p:send("df", "lost", "never-acked", { partition = 0 }))
    local ok, err = p:flush()
    assert.is_nil(ok)
    assert.matches("KAFKA_STORAGE_ERROR", err)

    local st = b:state()
    assert.same({ b.dir }, st.offline_log_dirs)
    assert.is_true(st.log_dirs[1].offline)
    assert.equals("Input/output error", st.log_dirs[1].error)
    assert.is_true(st.topics.df.partitions[0].offline)
    assert.is_true(st.topics.df.partitions[1].offline)
    assert.equals(5, st.topics.df.partitions[0].log_end_offset)

    -- Every partition of the directory answers 56; ApiVersions (on
    -- connect) and Metadata are still served.
    local conn = raw(b)
    assert.equals(STORAGE_ERROR, fetch_code(conn, "df", 0))
    assert.equals(STORAGE_ERROR, fetch_code(conn, "df", 1))
    local lo = assert(conn:request(LIST_OFFSETS, { replica_id = -1, isolation_level = 0,
      topics = { { name = "df", partitions = { { partition_index = 1, timestamp = -1,
        current_leader_epoch = -1, max_num_offsets = 1 } } } } }))
    assert.equals(STORAGE_ERROR, lo.topics[1].partitions[1].error_code)
    local md = assert(conn:request(METADATA, { topics = { { name = "df" } },
      allow_auto_topic_creation = false, include_cluster_authorized_operations = false,
      include_topic_authorized_operations = false }))
    assert.equals(1, #md.brokers)
    for _, part in ipairs(md.topics[1].partitions) do
      assert.equals(LEADER_NOT_AVAILABLE, part.error_code)
      assert.equals(-1, part.leader_id)
      assert.same({ st.node_id }, part.offline_replicas)
    end
    conn:close()
    local created, cerr = a:create_topics { { name = "df2", partitions = 1 } }
    assert.is_nil(created)
    assert.matches("KAFKA_STORAGE_ERROR %(Log directory .* is offline%)", cerr)
    a:close()
    p:close()

    -- Space again: the restart brings the directory back with the five
    -- acknowledged records and nothing of the torn batch.
    b:kill()
    b:clear_disk_fault()
    assert(b:start())
    st = b:state()
    assert.same({}, st.offline_log_dirs)
    assert.is_false(st.topics.df.partitions[0].offline)
    assert.equals(5, st.topics.df.partitions[0].log_end_offset)
    local recs = read_partition(b, "df", 0, 5)
    assert.equals(5, #recs)
    for i, r in ipairs(recs) do
      assert.equals(i - 1, r.offset)
      assert.equals("acked-" .. i, r.value)
    end
    p = client.producer { bootstrap = b.bootstrap, acks = 1, linger_ms = 0 }
    assert(p:send("df", "again", "after", { partition = 0 }))
    assert(p:flush())
    p:close()
    assert.equals(6, b:state().topics.df.partitions[0].log_end_offset)
  end)
end)
