-- Several log directories (log.dirs as a comma list, Kafka's JBOD): new
-- partitions spread over them, a restart loads every one, a partition
-- found twice or directories of different clusters refuse the start, and
-- a disk fault takes only its own directory offline.

package.cpath = "build/lua/?.so;" .. package.cpath

local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local client = require "kafkaiq.client"
local connection = require "kafkaiq.client.connection"

local FETCH, STORAGE_ERROR = 1, 56

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

-- The partition numbers of topic whose directories are in dir.
local function partitions_in(dir, topic)
  local out = {}
  for name in sh("ls '" .. dir .. "'"):gmatch("[^\n]+") do
    local p = name:match("^" .. topic .. "%-(%d+)$")
    if p then out[#out + 1] = tonumber(p) end
  end
  table.sort(out)
  return out
end

-- The raw Fetch answer for one partition from offset 0.
local function fetch_partition(b, topic, partition)
  local conn = assert(connection.open(b.host, b.port,
    { client_id = "log-dirs-spec", connect_timeout_ms = 2000, request_timeout_ms = 5000 }))
  local resp = assert(conn:request(FETCH, {
    replica_id = -1, max_wait_ms = 0, min_bytes = 1, max_bytes = 1048576, isolation_level = 0,
    session_id = 0, session_epoch = -1, forgotten_topics_data = {}, rack_id = "",
    topics = { { topic = topic, partitions = { { partition = partition, fetch_offset = 0,
      partition_max_bytes = 1048576, current_leader_epoch = -1, log_start_offset = -1 } } } },
  }, { version = 12 })) -- topics by name
  conn:close()
  return resp.responses[1].partitions[1]
end

local function read_partition(b, topic, partition, want)
  local c = client.consumer { bootstrap = b.bootstrap, fetch_max_wait_ms = 50 }
  assert(c:assign { { topic = topic, partition = partition, offset = 0 } })
  local out = {}
  local deadline = core.now_ms() + 5000
  while #out < want and core.now_ms() < deadline do
    for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r.value end
  end
  for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r.value end
  c:close()
  return out
end

describe("log.dirs with several directories", function()
  local base, d1, d2, b

  before_each(function()
    core.log_level("error") -- the disk failure is logged as an error on purpose
    base = sh("mktemp -d /tmp/kafkaiq-jbod-XXXXXX"):gsub("%s+$", "")
    d1, d2 = base .. "/d1", base .. "/d2"
  end)

  after_each(function()
    if b then
      b:clear_disk_fault()
      if b.handle:running() then b:stop() end
    end
    b = nil
    collectgarbage("collect") -- frees the broker handles, releasing the .lock files
    os.execute("rm -rf '" .. base .. "'")
  end)

  it("spreads partitions, survives a fault in one directory and restarts", function()
    b = assert(kiq.broker { dir = base, ["log.dirs"] = d1 .. "," .. d2 })
    local st = b:state()
    assert.equals(2, #st.log_dirs)
    assert.equals(d1, st.log_dirs[1].path)
    assert.equals(d2, st.log_dirs[2].path)
    for _, d in ipairs { d1, d2 } do
      assert.equals(0, os.execute("test -f '" .. d .. "/meta.properties' -a -f '" .. d .. "/.lock'"))
    end

    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:create_topics { { name = "jb", partitions = 4 } })
    a:close()
    local in1, in2 = partitions_in(d1, "jb"), partitions_in(d2, "jb")
    assert.equals(2, #in1)
    assert.equals(2, #in2)

    local p = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    local p2 = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    for part = 0, 3 do
      for i = 1, 2 do assert(p:send("jb", "k", ("p%d-%d"):format(part, i), { partition = part })) end
    end
    assert(p:flush())
    for part = 0, 3 do assert(p2:send("jb", "k", ("p%d-3"):format(part), { partition = part })) end
    assert(p2:flush())

    -- dir 2 fails: its partitions answer 56, dir 1's keep serving
    assert(b:inject_disk_fault { dir = d2, errno = "EIO" })
    assert(p:send("jb", "k", "lost", { partition = in2[1] }))
    local ok, err = p:flush()
    assert.is_nil(ok)
    assert.matches("KAFKA_STORAGE_ERROR", err)
    p:close()
    st = b:state()
    assert.same({ d2 }, st.offline_log_dirs)
    assert.is_false(st.log_dirs[1].offline)
    assert.is_true(st.log_dirs[2].offline)
    assert.equals("Input/output error", st.log_dirs[2].error)
    for _, part in ipairs(in2) do
      assert.is_true(st.topics.jb.partitions[part].offline)
      assert.equals(STORAGE_ERROR, fetch_partition(b, "jb", part).error_code)
    end
    assert(p2:send("jb", "k", ("p%d-4"):format(in1[1]), { partition = in1[1] }))
    assert(p2:flush())
    p2:close()
    -- a producer that first learns the topic now, with two partitions
    -- leaderless, still sends to the healthy ones
    local p3 = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    assert(p3:send("jb", "k", ("p%d-4"):format(in1[2]), { partition = in1[2] }))
    assert(p3:flush())
    p3:close()
    for _, part in ipairs(in1) do
      assert.is_false(st.topics.jb.partitions[part].offline)
      local fp = fetch_partition(b, "jb", part)
      assert.equals(0, fp.error_code)
      assert.equals(4, fp.high_watermark)
      assert.is_true(#fp.records > 0)
    end

    -- kill, clear, start: both directories load, everything acknowledged is there
    b:kill()
    b:clear_disk_fault { dir = d2 }
    assert(b:start())
    st = b:state()
    assert.same({}, st.offline_log_dirs)
    for part = 0, 3 do
      local want = (part == in1[1] or part == in1[2]) and 4 or 3
      assert.equals(want, st.topics.jb.partitions[part].log_end_offset)
      local got = read_partition(b, "jb", part, want)
      assert.equals(want, #got)
      for i = 1, want do assert.equals(("p%d-%d"):format(part, i), got[i]) end
    end
    assert.same(in1, partitions_in(d1, "jb"))
    assert.same(in2, partitions_in(d2, "jb"))

    -- the same partition in both directories refuses the start
    b:stop()
    os.execute(("cp -r '%s/jb-%d' '%s/'"):format(d1, in1[1], d2))
    local started, serr = b:start()
    assert.is_nil(started)
    assert.matches(("partition jb%%-%d is in two log directories"):format(in1[1]), serr)
    os.execute(("rm -rf '%s/jb-%d'"):format(d2, in1[1]))
    assert(b:start())
  end)

  it("picks the first directory for a fault by default and refuses an unknown one", function()
    b = assert(kiq.broker { dir = base, ["log.dirs"] = d1 .. "," .. d2 })
    local ok, err = b:inject_disk_fault { dir = base .. "/nope", errno = "EIO" }
    assert.is_nil(ok)
    assert.matches("not one of log.dirs", err)
    assert(b:inject_disk_fault { errno = "EIO" })
    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:create_topics { { name = "f", partitions = 2 } })
    a:close()
    local p = client.producer { bootstrap = b.bootstrap, acks = 1, retries = 0, linger_ms = 0 }
    local first = partitions_in(d1, "f")[1]
    assert(p:send("f", "k", "v", { partition = first }))
    assert.is_nil(p:flush())
    p:close()
    assert.same({ d1 }, b:state().offline_log_dirs)
  end)

  it("refuses directories of different clusters", function()
    for _, d in ipairs { d1, d2 } do
      local one = assert(kiq.broker { dir = d, start = false })
      one = nil -- luacheck: ignore
    end
    collectgarbage("collect")
    local nb, err = kiq.broker { dir = base, ["log.dirs"] = d1 .. "," .. d2, start = false }
    assert.is_nil(nb)
    assert.matches("belong to different clusters", err)
  end)
end)
