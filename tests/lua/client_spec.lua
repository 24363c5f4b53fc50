-- Specs for kafkaiq.client (admin, producer, consumer) against an in-process
-- broker on a free port; run by busted on LuaJIT from the repo root.

package.cpath = "build/lua/?.so;" .. package.cpath

local core = require "kafkaiq.core"
local client = require "kafkaiq.client"
local errors = require "kafkaiq.client.errors"
local connection = require "kafkaiq.client.connection"
local partitioner = require "kafkaiq.partitioner"

local MAX_MESSAGE = 200000
local REFUSED = "127.0.0.1:1" -- nothing listens on port 1

local broker, dir, BS

local function tmpdir()
  local p = assert(io.popen("mktemp -d"))
  local d = p:read("*l")
  p:close()
  return d
end

local topic_seq = 0
-- A fresh topic name, created with n partitions.
local function new_topic(n)
  topic_seq = topic_seq + 1
  local name = ("spec-%d-%d"):format(topic_seq, math.random(1e6))
  local a = client.admin { bootstrap = BS }
  assert(a:create_topics { { name = name, partitions = n or 3 } })
  a:close()
  return name
end

-- Reads every record of topic's partitions 0..n-1 from the start.
local function read_all(topic, n, want, opts)
  local c = client.consumer(opts or { bootstrap = BS, fetch_max_wait_ms = 50 })
  local list = {}
  for p = 0, n - 1 do list[#list + 1] = { topic = topic, partition = p, offset = 0 } end
  assert(c:assign(list))
  local out = {}
  local deadline = core.now_ms() + 5000
  while #out < want and core.now_ms() < deadline do
    for _, r in ipairs(assert(c:poll(100))) do out[#out + 1] = r end
  end
  c:close()
  return out
end

setup(function()
  core.log_level("error") -- the broker warns about the batches it is made to refuse
  dir = tmpdir()
  broker = assert(core.broker_new {
    listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = dir, ["num.partitions"] = "3",
    ["message.max.bytes"] = tostring(MAX_MESSAGE),
  })
  assert(broker:start())
  BS = "127.0.0.1:" .. broker:port()
end)

teardown(function()
  if broker then broker:stop() end
  if dir then os.execute("rm -rf '" .. dir .. "'") end
end)

describe("kafkaiq.client", function()
  it("exports the three constructors and the error table", function()
    assert.is_function(client.producer)
    assert.is_function(client.consumer)
    assert.is_function(client.admin)
    assert.equals(errors, client.errors)
  end)
end)

describe("client.errors", function()
  it("names codes from Kafka's table", function()
    assert.equals("NONE", errors.name(0))
    assert.equals("UNKNOWN_SERVER_ERROR", errors.name(-1))
    assert.equals("OFFSET_OUT_OF_RANGE", errors.name(1))
    assert.equals("UNKNOWN_TOPIC_OR_PARTITION", errors.name(3))
    assert.equals("NOT_LEADER_OR_FOLLOWER", errors.name(6))
    assert.equals("TOPIC_ALREADY_EXISTS", errors.name(36))
    assert.equals("INVALID_RECORD", errors.name(87))
    assert.equals("UNKNOWN_TOPIC_ID", errors.name(100))
    assert.equals("UNKNOWN_ERROR_9999", errors.name(9999))
    assert.equals(1, errors.codes.OFFSET_OUT_OF_RANGE)
    assert.equals(41, errors.codes.NOT_CONTROLLER)
  end)

  it("formats messages with name and code", function()
    assert.equals("fetch t[0]: OFFSET_OUT_OF_RANGE (1)", errors.format("fetch t[0]", 1))
    assert.equals("x: INVALID_CONFIG (40): bad", errors.format("x", 40, "bad"))
  end)

  it("marks stale-metadata errors retriable", function()
    for _, c in ipairs({ 3, 5, 6 }) do
      assert.is_true(errors.retriable[c])
      assert.is_true(errors.stale_metadata[c])
    end
    assert.is_nil(errors.retriable[36])
  end)
end)

describe("connection", function()
  it("negotiates min(ours, broker's) per API", function()
    local c = assert(connection.open("127.0.0.1", broker:port(),
      { client_id = "spec", connect_timeout_ms = 2000, request_timeout_ms = 5000 }))
    local ours = {}
    for _, a in ipairs(core.apis()) do ours[a.key] = a end
    assert.equals(math.min(ours[0].max_version, 12), c:version(0))
    assert.equals(math.min(ours[1].max_version, 17), c:version(1))
    assert.equals(math.min(ours[3].max_version, 13), c:version(3))
    assert.equals(4, c:version(18))
    -- LeaderAndIsr is in our codec but not served to clients: no version negotiated
    assert.is_nil(c:version(4))
    local resp, v = c:request(3, { topics = {} })
    assert.is_table(resp)
    assert.equals(c:version(3), v)
    assert.equals(broker:port(), resp.brokers[1].port)
    local none, err = c:request(4, { topics = {} })
    assert.is_nil(none)
    assert.matches("does not support LeaderAndIsr", err, 1, true)
    c:close()
    assert.is_false(c:alive())
    none, err = c:request(3, { topics = {} })
    assert.is_nil(none)
    assert.matches("connection is closed", err, 1, true)
  end)

  it("keeps one connection per broker, the bootstrap one included", function()
    local a = client.admin { bootstrap = BS }
    assert(a:describe_topics())
    assert(a:create_topics { { name = "conn-one" } })
    assert(a:describe_configs { { type = "broker", name = "0" } })
    local n = 0
    for id, c in pairs(a.cluster.conns) do
      n = n + 1
      assert.equals(0, id)
      assert.is_true(c:alive())
    end
    assert.equals(1, n)
    assert.is_nil(a.cluster.boot)
    a:close()
    assert.is_nil(next(a.cluster.conns))
  end)

  it("reports a refused connection", function()
    local c, err = connection.open("127.0.0.1", 1, { client_id = "x", connect_timeout_ms = 1000, request_timeout_ms = 1000 })
    assert.is_nil(c)
    assert.matches("Connection refused", err, 1, true)
  end)
end)

describe("constructors", function()
  local ctors = { producer = client.producer, consumer = client.consumer, admin = client.admin }
  for name, ctor in pairs(ctors) do
    it(name .. " raises at the caller on misuse", function()
      local ok, err = pcall(function() ctor { bootstrap = BS, lingerms = 3 } end)
      assert.is_false(ok)
      assert.matches("client_spec.lua:%d+: " .. name .. ": unknown option 'lingerms'", err)
      assert.has_error(function() ctor("x") end, name .. ": options table expected, got string")
      assert.has_error(function() ctor {} end, name .. ": option 'bootstrap' is required")
      assert.has_error(function() ctor { bootstrap = 42 } end)
      for _, bad in ipairs({ "localhost", "h:0", "h:99999", "", ",", "h:x" }) do
        assert.has_error(function() ctor { bootstrap = bad } end)
      end
      assert.has_error(function() ctor { bootstrap = BS, client_id = 1 } end,
        name .. ": option 'client_id': string expected, got number")
      assert.has_error(function() ctor { bootstrap = BS, request_timeout_ms = 0 } end)
      assert.has_error(function() ctor { bootstrap = BS, retries = 1.5 } end)
      assert.has_error(function() ctor { bootstrap = BS, log = "stderr" } end)
    end)
    it(name .. " accepts a bootstrap list and connects lazily", function()
      local x = ctor { bootstrap = " 127.0.0.1:1 , [::1]:2,h:3", client_id = "c" }
      assert.equals(3, #x.cfg.bootstrap)
      assert.equals("::1", x.cfg.bootstrap[2].host)
      x:close()
    end)
  end

  it("producer checks its own options", function()
    local bad = {
      { acks = 2 }, { acks = "none" }, { compression = "brotli" }, { linger_ms = -1 },
      { batch_size = 0 }, { batch_size = 1.5 }, { partitioner = "nope" }, { partitioner = 42 },
      { on_delivery = "f" }, { interceptors = { on_sned = print } }, { interceptors = { on_send = 1 } },
      { interceptors = "x" }, { allow_auto_create_topics = "yes" },
    }
    for _, o in ipairs(bad) do
      o.bootstrap = BS
      assert.has_error(function() client.producer(o) end)
    end
    for _, acks in ipairs({ 0, 1, -1, "all", "1" }) do
      assert.is_table(client.producer { bootstrap = BS, acks = acks })
    end
    assert.equals(-1, client.producer { bootstrap = BS, acks = "all" }.cfg.acks)
    assert.equals(-1, client.producer { bootstrap = BS }.cfg.acks)
  end)

  it("consumer checks its own options", function()
    local bad = {
      { auto_offset_reset = "smallest" }, { fetch_max_wait_ms = -1 }, { group_id = 3 },
      { interceptors = { on_send = print } }, { isolation_level = "dirty" }, { fetch_max_bytes = 0 },
    }
    for _, o in ipairs(bad) do
      o.bootstrap = BS
      assert.has_error(function() client.consumer(o) end)
    end
  end)
end)

describe("admin", function()
  local a
  before_each(function() a = client.admin { bootstrap = BS } end)
  after_each(function() a:close() end)

  it("creates topics and reports each one", function()
    local r = assert(a:create_topics { { name = "adm-a", partitions = 4 }, { name = "adm-b" } })
    assert.equals(2, #r)
    assert.equals("adm-a", r[1].name)
    assert.is_nil(r[1].error)
    assert.equals(0, r[1].error_code)
    assert.equals(4, r[1].partitions)
    assert.equals(1, r[1].replication_factor)
    assert.equals(22, #r[1].topic_id)
    assert.equals(3, r[2].partitions) -- the broker's num.partitions
    local d = assert(a:describe_topics { "adm-a", "adm-b" })
    assert.equals(4, d[1].partition_count)
    assert.equals(3, d[2].partition_count)
  end)

  it("returns nil, err and the results when an item fails", function()
    assert(a:create_topics { { name = "adm-dup" } })
    local r, err, results = a:create_topics { { name = "adm-new" }, { name = "adm-dup" } }
    assert.is_nil(r)
    assert.matches("create_topics failed for adm-dup: TOPIC_ALREADY_EXISTS", err, 1, true)
    assert.not_matches("adm-new", err, 1, true)
    assert.is_nil(results[1].error)
    assert.equals("TOPIC_ALREADY_EXISTS", results[2].error)
    assert.equals(36, results[2].error_code)
  end)

  it("passes the broker's refusals through", function()
    local _, err, res = a:create_topics { { name = "adm-zero", partitions = 0 } }
    assert.matches("INVALID_PARTITIONS", err, 1, true)
    assert.equals("INVALID_PARTITIONS", res[1].error)
    _, err = a:create_topics { { name = "adm-rf", replication_factor = 3 } }
    assert.matches("INVALID_REPLICATION_FACTOR", err, 1, true)
    _, err = a:create_topics { { name = "adm-cfg", configs = { ["no.such.config"] = "1" } } }
    assert.matches("INVALID_CONFIG", err, 1, true)
  end)

  it("sends configs and honours validate_only", function()
    assert(a:create_topics({ { name = "adm-vo", configs = { ["retention.ms"] = 60000, ["cleanup.policy"] = "delete" } } },
      { validate_only = true, timeout_ms = 5000 }))
    local _, err = a:describe_topics { "adm-vo" }
    assert.matches("adm-vo: UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
  end)

  it("raises on malformed topic lists", function()
    assert.has_error(function() a:create_topics {} end, "create_topics: non-empty list of topics expected")
    assert.has_error(function() a:create_topics "t" end)
    assert.has_error(function() a:create_topics { { partitions = 1 } } end)
    assert.has_error(function() a:create_topics { { name = "" } } end)
    assert.has_error(function() a:create_topics { { name = "t", partitions = "3" } } end)
    assert.has_error(function() a:create_topics { { name = "t", partitions = -2 } } end)
    assert.has_error(function() a:create_topics { { name = "t", configs = { x = {} } } } end)
    assert.has_error(function() a:create_topics { { name = "t", replicas = 1 } } end,
      "create_topics: topic 1: unknown option 'replicas'")
    assert.has_error(function() a:create_topics({ { name = "t" } }, { timeout = 1 }) end)
  end)

  it("deletes topics", function()
    assert(a:create_topics { { name = "adm-del" } })
    local r = assert(a:delete_topics { "adm-del" })
    assert.equals("adm-del", r[1].name)
    assert.is_nil(r[1].error)
    local _, err, res = a:delete_topics { "adm-del" }
    assert.matches("adm-del: UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
    assert.equals("UNKNOWN_TOPIC_OR_PARTITION", res[1].error)
    assert.has_error(function() a:delete_topics {} end)
    assert.has_error(function() a:delete_topics { 1 } end)
    assert.has_error(function() a:delete_topics({ "x" }, { validate_only = true }) end)
  end)

  it("describes topics: named, all, unknown", function()
    assert(a:create_topics { { name = "adm-desc", partitions = 2 } })
    local d = assert(a:describe_topics { "adm-desc" })[1]
    assert.equals("adm-desc", d.name)
    assert.equals(22, #d.id)
    assert.is_false(d.internal)
    assert.equals(2, d.partition_count)
    for p = 0, 1 do
      local info = d.partitions[p]
      assert.equals(p, info.partition)
      assert.equals(0, info.leader)
      assert.same({ 0 }, info.replicas)
      assert.same({ 0 }, info.isr)
      assert.is_nil(info.error)
    end
    local all = assert(a:describe_topics())
    local names = {}
    for i, t in ipairs(all) do
      names[#names + 1] = t.name
      if i > 1 then assert.is_true(all[i - 1].name < t.name) end
    end
    assert.is_true(#names >= 1)
    assert.truthy(table.concat(names, ","):find("adm-desc", 1, true))
    local r, err, res = a:describe_topics { "adm-desc", "adm-missing" }
    assert.is_nil(r)
    assert.matches("adm-missing: UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
    assert.is_nil(res[1].error)
    assert.equals("UNKNOWN_TOPIC_OR_PARTITION", res[2].error)
    -- describing never creates the topic
    assert.matches("UNKNOWN_TOPIC_OR_PARTITION", select(2, a:describe_topics { "adm-missing" }), 1, true)
    assert.has_error(function() a:describe_topics "adm-desc" end)
    assert.has_error(function() a:describe_topics { 3 } end)
  end)

  it("describes topic and broker configs", function()
    assert(a:create_topics { { name = "adm-conf" } })
    local r = assert(a:describe_configs { { type = "topic", name = "adm-conf" }, { type = "broker", name = "0" } })
    assert.equals("topic", r[1].type)
    assert.equals("adm-conf", r[1].name)
    local ret = r[1].configs["retention.ms"]
    assert.is_table(ret)
    assert.is_string(ret.value)
    assert.is_boolean(ret.default)
    assert.is_string(ret.source)
    assert.equals("broker", r[2].type)
    assert.equals(tostring(MAX_MESSAGE), r[2].configs["message.max.bytes"].value)
    local only = assert(a:describe_configs { { type = "topic", name = "adm-conf", keys = { "cleanup.policy" } } })
    local n = 0
    for k in pairs(only[1].configs) do n = n + 1; assert.equals("cleanup.policy", k) end
    assert.equals(1, n)
    local _, err, res = a:describe_configs { { type = "topic", name = "adm-nope" } }
    assert.matches("adm-nope: UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
    assert.equals("UNKNOWN_TOPIC_OR_PARTITION", res[1].error)
  end)

  it("raises on malformed config requests", function()
    assert.has_error(function() a:describe_configs {} end)
    assert.has_error(function() a:describe_configs { { type = "group", name = "g" } } end)
    assert.has_error(function() a:describe_configs { { type = "broker", name = "zero" } } end)
    assert.has_error(function() a:describe_configs { { name = "t" } } end)
    assert.has_error(function() a:describe_configs { { type = "topic", name = "t", keys = { 1 } } } end)
  end)

  it("returns nil, err when no broker answers", function()
    local dead = client.admin { bootstrap = REFUSED, connect_timeout_ms = 1000 }
    for _, call in ipairs({
      function() return dead:create_topics { { name = "x" } } end,
      function() return dead:delete_topics { "x" } end,
      function() return dead:describe_topics() end,
      function() return dead:describe_configs { { type = "topic", name = "x" } } end,
    }) do
      local r, err = call()
      assert.is_nil(r)
      assert.matches("no broker reachable: connect 127.0.0.1:1: Connection refused", err, 1, true)
    end
  end)
end)

describe("producer", function()
  it("delivers records with offsets, keys, values, headers and timestamps", function()
    local t = new_topic(3)
    local reports = {}
    local p = client.producer { bootstrap = BS, on_delivery = function(err, r)
      assert.is_nil(err)
      reports[#reports + 1] = r
    end }
    for i = 1, 30 do
      assert.is_true(p:send(t, "key-" .. i, "value-" .. i, { headers = { { "i", tostring(i) }, { "n", nil } },
        timestamp = 1700000000000 + i }))
    end
    assert.is_true(p:flush(5000))
    assert.equals(30, #reports)
    local next_offset = {}
    for _, r in ipairs(reports) do
      assert.equals(t, r.topic)
      assert.equals(partitioner.murmur2(r.key, 3), r.partition)
      assert.equals(next_offset[r.partition] or 0, r.offset)
      next_offset[r.partition] = r.offset + 1
      local i = tonumber(r.key:match("%d+"))
      assert.equals("value-" .. i, r.value)
      assert.equals(1700000000000 + i, r.timestamp)
    end
    local got = read_all(t, 3, 30)
    assert.equals(30, #got)
    for _, r in ipairs(got) do
      local i = tonumber(r.key:match("%d+"))
      assert.equals("value-" .. i, r.value)
      assert.equals(1700000000000 + i, r.timestamp)
      assert.equals(2, #r.headers)
      assert.same({ "i", tostring(i) }, r.headers[1])
      assert.equals("n", r.headers[2][1])
      assert.is_nil(r.headers[2][2])
      assert.equals(partitioner.murmur2(r.key, 3), r.partition)
    end
    p:close()
  end)

  it("sends nil keys and values, and stamps records it is not given a time for", function()
    local t = new_topic(1)
    local p = client.producer { bootstrap = BS }
    local before = core.now_ms()
    assert(p:send(t, nil, nil))
    assert(p:send(t, "", ""))
    assert(p:flush())
    local got = read_all(t, 1, 2)
    assert.is_nil(got[1].key)
    assert.is_nil(got[1].value)
    assert.equals("", got[2].key)
    assert.equals("", got[2].value)
    assert.is_true(got[1].timestamp >= before and got[1].timestamp <= core.now_ms())
  end)

  for _, codec in ipairs({ "none", "gzip", "snappy", "lz4", "zstd" }) do
    it("round-trips records compressed with " .. codec, function()
      local t = new_topic(2)
      local p = client.producer { bootstrap = BS, compression = codec, linger_ms = 1000 }
      for i = 1, 50 do assert(p:send(t, "k" .. i, ("v%d-"):format(i) .. string.rep("x", 100))) end
      assert(p:flush())
      local got = read_all(t, 2, 50)
      assert.equals(50, #got)
      for _, r in ipairs(got) do
        assert.equals(("v%s-"):format(r.key:sub(2)) .. string.rep("x", 100), r.value)
      end
    end)
  end

  for _, acks in ipairs({ 0, 1, "all" }) do
    it("produces with acks=" .. acks, function()
      local t = new_topic(1)
      local reports = {}
      local p = client.producer { bootstrap = BS, acks = acks,
        on_delivery = function(err, r) reports[#reports + 1] = { err, r.offset } end }
      for i = 1, 5 do assert(p:send(t, "k" .. i, "v")) end
      assert(p:flush())
      -- a second batch on the same connection: acks=0 must not leave a
      -- response behind to confuse the next request's correlation
      for i = 6, 10 do assert(p:send(t, "k" .. i, "v")) end
      assert(p:flush())
      assert.equals(10, #reports)
      for i, rep in ipairs(reports) do
        assert.is_nil(rep[1])
        assert.equals(acks == 0 and -1 or i - 1, rep[2])
      end
      assert.equals(10, #read_all(t, 1, 10))
    end)
  end

  it("holds records for linger_ms and sends them from poll", function()
    local t = new_topic(1)
    local delivered = 0
    local p = client.producer { bootstrap = BS, linger_ms = 30, batch_size = 1e6,
      on_delivery = function() delivered = delivered + 1 end }
    assert(p:send(t, "a", "1"))
    assert(p:send(t, "b", "2"))
    assert.equals(2, p:buffered())
    assert.equals(0, p:poll())
    assert.equals(0, delivered)
    core.sleep_ms(40)
    assert.equals(2, p:poll())
    assert.equals(2, delivered)
    assert.equals(0, p:buffered())
  end)

  it("holds records until flush when linger_ms is long", function()
    local t = new_topic(1)
    local delivered = 0
    local p = client.producer { bootstrap = BS, linger_ms = 60000, batch_size = 1e6,
      on_delivery = function() delivered = delivered + 1 end }
    for i = 1, 10 do assert(p:send(t, "k" .. i, "v")) end
    assert.equals(0, p:poll())
    assert.equals(10, p:buffered())
    assert.equals(0, delivered)
    assert(p:flush())
    assert.equals(10, delivered)
  end)

  it("sends a batch as soon as it reaches batch_size", function()
    local t = new_topic(1)
    local delivered = 0
    local p = client.producer { bootstrap = BS, linger_ms = 60000, batch_size = 1000,
      on_delivery = function() delivered = delivered + 1 end }
    assert(p:send(t, "k", string.rep("v", 400)))
    assert.equals(0, delivered)
    assert(p:send(t, "k", string.rep("v", 600)))
    assert.equals(2, delivered)
    assert.equals(0, p:buffered())
  end)

  it("uses consistent_random and Lua partitioners, and opts.partition over both", function()
    local t = new_topic(5)
    local got = {}
    local seen_args
    local p1 = client.producer { bootstrap = BS, partitioner = "consistent_random",
      on_delivery = function(_, r) got[#got + 1] = r end }
    for i = 1, 20 do assert(p1:send(t, "key" .. i, "v")) end
    assert(p1:flush())
    for _, r in ipairs(got) do assert.equals(core.crc32(r.key) % 5, r.partition) end
    got = {}
    local p2 = client.producer { bootstrap = BS,
      partitioner = function(key, n, record)
        seen_args = { key, n, record.topic, record.value }
        return #key % n
      end,
      on_delivery = function(_, r) got[#got + 1] = r end }
    assert(p2:send(t, "abcdefg", "val"))
    assert(p2:send(t, "abc", "val", { partition = 4 }))
    assert(p2:flush())
    assert.same({ "abcdefg", 5, t, "val" }, seen_args) -- the explicit partition skipped it
    assert.equals(2, got[1].partition)
    assert.equals(4, got[2].partition)
  end)

  it("fails the send, without crashing, when the partitioner misbehaves", function()
    local t = new_topic(3)
    local cases = {
      { function() return -1 end, "returned %-1 %(number%): expected an integer in %[0, 2%]" },
      { function(_, n) return n end, "returned 3 %(number%)" },
      { function() return 1.5 end, "returned 1.5 %(number%)" },
      { function() return nil end, "returned nil %(nil%)" },
      { function() return "1" end, "returned 1 %(string%)" },
      { function() error("boom") end, "raised: .*boom" },
      { function() return 0 / 0 end, "returned %-?nan" },
    }
    local delivered = 0
    for _, case in ipairs(cases) do
      local p = client.producer { bootstrap = BS, partitioner = case[1],
        on_delivery = function() delivered = delivered + 1 end }
      local ok, err = p:send(t, "k", "v")
      assert.is_nil(ok)
      assert.matches("send: partitioner for topic '" .. t:gsub("%-", "%%-") .. "' %(3 partitions%) " .. case[2], err)
      assert.equals(0, p:buffered())
      -- the producer still works with an explicit partition
      assert(p:send(t, "k", "v", { partition = 1 }))
      assert(p:flush())
    end
    assert.equals(#cases, delivered)
  end)

  it("refuses an out-of-range explicit partition", function()
    local t = new_topic(2)
    local p = client.producer { bootstrap = BS }
    local ok, err = p:send(t, "k", "v", { partition = 2 })
    assert.is_nil(ok)
    assert.matches("partition 2 of topic '.*' %(2 partitions%): UNKNOWN_TOPIC_OR_PARTITION %(3%)", err)
  end)

  it("runs on_send and on_acknowledgement interceptors", function()
    local t = new_topic(1)
    local acks, delivered = {}, {}
    local p = client.producer { bootstrap = BS,
      interceptors = {
        on_send = function(r)
          if r.key == "replace" then
            return { topic = r.topic, key = "replaced", value = "new", headers = { { "by", "hook" } } }
          end
          r.headers[#r.headers + 1] = { "seen", "yes" }
        end,
        on_acknowledgement = function(r, err)
          acks[#acks + 1] = { r.key, err, #delivered }
        end,
      },
      on_delivery = function(_, r) delivered[#delivered + 1] = r.key end }
    assert(p:send(t, "keep", "v"))
    assert(p:send(t, "replace", "v"))
    assert(p:flush())
    -- on_acknowledgement runs before each record's on_delivery
    assert.same({ { "keep", nil, 0 }, { "replaced", nil, 1 } }, acks)
    local got = read_all(t, 1, 2)
    assert.same({ { "seen", "yes" } }, got[1].headers)
    assert.equals("replaced", got[2].key)
    assert.equals("new", got[2].value)
    assert.same({ { "by", "hook" } }, got[2].headers)
  end)

  it("logs and ignores hooks that raise", function()
    local t = new_topic(1)
    local logged = {}
    local p = client.producer { bootstrap = BS, log = function(m) logged[#logged + 1] = m end,
      interceptors = {
        on_send = function() error("send hook broke") end,
        on_acknowledgement = function() error("ack hook broke") end,
      },
      on_delivery = function() error("callback broke") end }
    assert(p:send(t, "k", "v"))
    assert(p:flush())
    assert.equals(3, #logged)
    assert.matches("interceptor on_send raised: .*send hook broke", logged[1])
    assert.matches("interceptor on_acknowledgement raised: .*ack hook broke", logged[2])
    assert.matches("on_delivery raised: .*callback broke", logged[3])
    assert.equals("v", read_all(t, 1, 1)[1].value)
  end)

  it("fails the send when on_send returns an unsendable record", function()
    local t = new_topic(1)
    local p = client.producer { bootstrap = BS, interceptors = { on_send = function(r) r.value = 42 end } }
    local ok, err = p:send(t, "k", "v")
    assert.is_nil(ok)
    assert.matches("on_send interceptor: value must be a string or nil", err, 1, true)
  end)

  it("fails a send to an unknown topic when auto-creation is off", function()
    local p = client.producer { bootstrap = BS, allow_auto_create_topics = false, retries = 1, retry_backoff_ms = 1 }
    local ok, err = p:send("prod-no-such-topic", "k", "v")
    assert.is_nil(ok)
    assert.matches("topic 'prod-no-such-topic': UNKNOWN_TOPIC_OR_PARTITION (3)", err, 1, true)
  end)

  it("auto-creates a topic it sends to by default", function()
    local p = client.producer { bootstrap = BS }
    assert(p:send("prod-auto", "k", "v"))
    assert(p:flush())
    local d = assert(client.admin { bootstrap = BS }:describe_topics { "prod-auto" })
    assert.equals(3, d[1].partition_count)
  end)

  it("reports a broker's refusal to on_delivery and flush", function()
    local t = new_topic(1)
    local errs = {}
    local p = client.producer { bootstrap = BS, linger_ms = 60000, batch_size = 1e7,
      on_delivery = function(err, r) errs[#errs + 1] = { err, r } end }
    assert(p:send(t, "big", string.rep("x", MAX_MESSAGE + 1000)))
    assert(p:send(t, "small", "x", { partition = 0 }))
    local ok, err = p:flush()
    assert.is_nil(ok)
    assert.matches("flush: 2 of 2 records failed, first: produce to " .. t:gsub("%-", "%%-") ..
      "%[0%]: MESSAGE_TOO_LARGE %(10%)", err)
    assert.equals(2, #errs)
    assert.matches("MESSAGE_TOO_LARGE", errs[1][1], 1, true)
    assert.equals("big", errs[1][2].key)
    assert.equals(-1, errs[1][2].offset)
    -- later records in a new batch go through
    assert(p:send(t, "after", "x"))
    assert.is_true(p:flush())
  end)

  it("retries then fails records whose topic disappeared", function()
    local t = new_topic(1)
    local errs = {}
    local p = client.producer { bootstrap = BS, allow_auto_create_topics = false, retries = 2,
      retry_backoff_ms = 5, linger_ms = 60000, on_delivery = function(err) errs[#errs + 1] = err end }
    assert(p:send(t, "k", "v"))
    assert(client.admin { bootstrap = BS }:delete_topics { t })
    local ok, err = p:flush(5000)
    assert.is_nil(ok)
    assert.matches("UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
    assert.equals(1, #errs)
    assert.matches("UNKNOWN_TOPIC_OR_PARTITION", errs[1], 1, true)
  end)

  it("reports a refused connection from send", function()
    local p = client.producer { bootstrap = REFUSED }
    local ok, err = p:send("t", "k", "v")
    assert.is_nil(ok)
    assert.matches("send: no broker reachable: connect 127.0.0.1:1: Connection refused", err, 1, true)
  end)

  it("raises on misuse", function()
    local p = client.producer { bootstrap = BS }
    assert.has_error(function() p:send(nil, "k", "v") end)
    assert.has_error(function() p:send("", "k", "v") end)
    assert.has_error(function() p:send("t", 42, "v") end, "send: key must be a string or nil, got number")
    assert.has_error(function() p:send("t", "k", {}) end, "send: value must be a string or nil, got table")
    assert.has_error(function() p:send("t", "k", "v", { partiton = 1 }) end, "send: unknown option 'partiton'")
    assert.has_error(function() p:send("t", "k", "v", { partition = 1.5 }) end)
    assert.has_error(function() p:send("t", "k", "v", { partition = -1 }) end)
    assert.has_error(function() p:send("t", "k", "v", { timestamp = "now" }) end)
    assert.has_error(function() p:send("t", "k", "v", { headers = { "a" } }) end)
    assert.has_error(function() p:send("t", "k", "v", { headers = { { 1, "v" } } }) end)
    assert.has_error(function() p:send("t", "k", "v", "opts") end)
    assert.has_error(function() p.send({}, "t", "k", "v") end)
    assert.has_error(function() p:flush(-1) end)
    assert.has_error(function() p:flush(1.5) end)
    local ok, err = pcall(function() p:send("t", 1, "v") end)
    assert.is_false(ok)
    assert.matches("^[^:]*client_spec.lua:%d+: send:", err)
  end)

  it("flushes on close and refuses sends afterwards", function()
    local t = new_topic(1)
    local delivered = 0
    local p = client.producer { bootstrap = BS, linger_ms = 60000, on_delivery = function() delivered = delivered + 1 end }
    assert(p:send(t, "k", "v"))
    assert.is_true(p:close())
    assert.equals(1, delivered)
    assert.is_true(p:close())
    assert.has_error(function() p:send(t, "k", "v") end, "send: producer is closed")
  end)
end)

describe("consumer", function()
  local t
  setup(function()
    t = new_topic(2)
    local p = client.producer { bootstrap = BS }
    for i = 0, 9 do
      assert(p:send(t, "k" .. i, "v" .. i, { partition = i % 2, headers = { { "h", "x" .. i } }, timestamp = 1000 + i }))
    end
    assert(p:flush())
  end)

  it("reads assigned partitions from given offsets and tracks positions", function()
    local c = client.consumer { bootstrap = BS, fetch_max_wait_ms = 10 }
    assert(c:assign { { topic = t, partition = 0, offset = 2 }, { t, 1, 0 } })
    local got = {}
    local deadline = core.now_ms() + 3000
    while #got < 8 and core.now_ms() < deadline do
      for _, r in ipairs(assert(c:poll(100))) do got[#got + 1] = r end
    end
    assert.equals(8, #got)
    local last = {}
    for _, r in ipairs(got) do
      assert.equals(t, r.topic)
      local i = tonumber(r.key:sub(2))
      assert.equals(i % 2, r.partition)
      assert.equals(math.floor(i / 2), r.offset)
      assert.equals("v" .. i, r.value)
      assert.same({ { "h", "x" .. i } }, r.headers)
      assert.equals(1000 + i, r.timestamp)
      assert.is_true(r.offset > (last[r.partition] or -1))
      last[r.partition] = r.offset
      if r.partition == 0 then assert.is_true(r.offset >= 2) end
    end
    assert.equals(5, c:position(t, 0))
    assert.equals(5, c:position(t, 1))
    assert.equals(5, c:high_watermark(t, 0))
    assert.same({ { topic = t, partition = 0, offset = 5 }, { topic = t, partition = 1, offset = 5 } }, c:assignment())
    c:close()
  end)

  it("resolves earliest and latest, and falls back to auto_offset_reset", function()
    local c = client.consumer { bootstrap = BS, auto_offset_reset = "earliest" }
    assert(c:assign { { topic = t, partition = 0, offset = "latest" }, { topic = t, partition = 1 } })
    assert.equals(5, c:position(t, 0))
    assert.equals(0, c:position(t, 1))
    assert(c:assign { { topic = t, partition = 0, offset = "earliest" } })
    assert.equals(0, c:position(t, 0))
    assert.same({ { topic = t, partition = 0, offset = 0 } }, c:assignment())
    local e = client.consumer { bootstrap = BS, auto_offset_reset = "error" }
    local ok, err = e:assign { { topic = t, partition = 0 } }
    assert.is_nil(ok)
    assert.matches("has no offset and auto_offset_reset is \"error\"", err, 1, true)
  end)

  it("seeks to offsets, earliest and latest", function()
    local c = client.consumer { bootstrap = BS, fetch_max_wait_ms = 10 }
    assert(c:assign { { t, 0, 0 } })
    assert(c:seek(t, 0, 3))
    local r = assert(c:poll(1000))
    assert.equals(3, r[1].offset)
    assert.equals(5, c:position(t, 0))
    assert(c:seek(t, 0, "earliest"))
    assert.equals(0, c:position(t, 0))
    assert(c:seek(t, 0, "latest"))
    assert.equals(5, c:position(t, 0))
    assert.same({}, assert(c:poll(0)))
  end)

  it("waits at most about timeout_ms when there is nothing to read", function()
    local c = client.consumer { bootstrap = BS, fetch_max_wait_ms = 50 }
    assert(c:assign { { t, 0, "latest" } })
    local t0 = core.now_ms()
    assert.same({}, assert(c:poll(200)))
    local took = core.now_ms() - t0
    assert.is_true(took >= 150 and took < 1500, "poll took " .. took .. " ms")
    c:unassign()
    assert.same({}, c:assignment())
    assert.same({}, assert(c:poll(0)))
  end)

  it("handles OFFSET_OUT_OF_RANGE per auto_offset_reset", function()
    local c = client.consumer { bootstrap = BS, auto_offset_reset = "earliest", fetch_max_wait_ms = 10 }
    assert(c:assign { { t, 0, 1000 } })
    local got = assert(c:poll(2000))
    assert.equals(0, got[1].offset)
    local l = client.consumer { bootstrap = BS, auto_offset_reset = "latest", fetch_max_wait_ms = 10 }
    assert(l:assign { { t, 1, 1000 } })
    assert.same({}, assert(l:poll(100)))
    assert.equals(5, l:position(t, 1))
    local e = client.consumer { bootstrap = BS, auto_offset_reset = "error" }
    assert(e:assign { { t, 1, 1000 } })
    local ok, err = e:poll(500)
    assert.is_nil(ok)
    assert.matches("poll: fetch " .. t:gsub("%-", "%%-") .. "%[1%] at offset 1000: OFFSET_OUT_OF_RANGE %(1%)", err)
  end)

  it("refuses unknown topics and partitions", function()
    local c = client.consumer { bootstrap = BS, retries = 1, retry_backoff_ms = 1 }
    local ok, err = c:assign { { "cons-no-such-topic", 0, 0 } }
    assert.is_nil(ok)
    assert.matches("topic 'cons-no-such-topic': UNKNOWN_TOPIC_OR_PARTITION (3)", err, 1, true)
    ok, err = c:assign { { t, 2, 0 } }
    assert.is_nil(ok)
    assert.matches("UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
    -- a failed assign keeps the old assignment
    assert(c:assign { { t, 0, 0 } })
    assert.is_nil(c:assign { { t, 7, 0 } })
    assert.equals(0, c:position(t, 0))
    -- the consumer does not create topics
    assert.is_nil(select(1, client.admin { bootstrap = BS }:describe_topics { "cons-no-such-topic" }))
  end)

  it("reports a refused connection", function()
    local c = client.consumer { bootstrap = REFUSED }
    local ok, err = c:assign { { "t", 0, 0 } }
    assert.is_nil(ok)
    assert.matches("Connection refused", err, 1, true)
  end)

  it("returns nil, err from poll when the topic goes away", function()
    local gone = new_topic(1)
    local c = client.consumer { bootstrap = BS, retries = 1, retry_backoff_ms = 5, fetch_max_wait_ms = 10 }
    assert(c:assign { { gone, 0, 0 } })
    assert(client.admin { bootstrap = BS }:delete_topics { gone })
    local ok, err = c:poll(300)
    assert.is_nil(ok)
    assert.matches("UNKNOWN_TOPIC_OR_PARTITION", err, 1, true)
  end)

  it("runs on_consume, which may replace the records", function()
    local seen
    local c = client.consumer { bootstrap = BS, fetch_max_wait_ms = 10, interceptors = {
      on_consume = function(records)
        seen = #records
        local keep = {}
        for _, r in ipairs(records) do
          if r.offset % 2 == 0 then keep[#keep + 1] = r end
        end
        return keep
      end } }
    assert(c:assign { { t, 0, 0 } })
    local got = assert(c:poll(1000))
    assert.equals(5, seen)
    assert.equals(3, #got)
    local logged = {}
    local c2 = client.consumer { bootstrap = BS, fetch_max_wait_ms = 10, log = function(m) logged[#logged + 1] = m end,
      interceptors = { on_consume = function() error("consume hook broke") end } }
    assert(c2:assign { { t, 0, 0 } })
    assert.equals(5, #assert(c2:poll(1000)))
    assert.matches("interceptor on_consume raised: .*consume hook broke", logged[1])
  end)

  it("commits to the group coordinator and tells on_commit", function()
    local committed = false
    local c = client.consumer { bootstrap = BS, group_id = "g1",
      interceptors = { on_commit = function() committed = true end } }
    assert(c:assign { { t, 0, 0 } })
    assert.is_true(c:commit {}) -- nothing to commit
    assert.is_false(committed)
    assert(c:commit { { topic = t, partition = 0, offset = 3 } })
    assert.is_true(committed)
    local stored
    for _, g in ipairs(broker:groups()) do
      if g.id == "g1" then stored = g.offsets[t][0].offset end
    end
    assert.equals(3, stored)
    c:close()
  end)

  it("raises on misuse", function()
    local c = client.consumer { bootstrap = BS }
    assert.has_error(function() c:assign "t" end)
    assert.has_error(function() c:assign { "t" } end, "assign: entry 1: table expected")
    assert.has_error(function() c:assign { { topic = t, partition = -1 } } end)
    assert.has_error(function() c:assign { { topic = t, partition = 0, offset = -5 } } end)
    assert.has_error(function() c:assign { { topic = t, partition = 0, offset = "middle" } } end)
    assert.has_error(function() c:assign { { topic = t, partition = 0, ofset = 1 } } end,
      "assign: entry 1: unknown field 'ofset'")
    assert.has_error(function() c:assign { { partition = 0 } } end)
    assert.has_error(function() c:seek(t, 0, 1) end, ("seek: %s[0] is not assigned"):format(t))
    assert.has_error(function() c:position(t, 0) end)
    assert.has_error(function() c:high_watermark(t, 0) end)
    assert(c:assign { { t, 0, 0 } })
    assert.has_error(function() c:seek(t, 0, -1) end)
    assert.has_error(function() c:seek(t, 0, "start") end)
    assert.has_error(function() c:seek(t, "0", 1) end)
    assert.has_error(function() c:poll(-1) end)
    assert.has_error(function() c:poll("1") end)
    assert.has_error(function() c:commit() end, "commit: the consumer needs the group_id option to commit")
    local g = client.consumer { bootstrap = BS, group_id = "g" }
    assert.has_error(function() g:commit "x" end)
    assert.has_error(function() g:commit { { topic = t, partition = 0, offset = -1 } } end)
    assert.has_error(function() g:commit { { topic = t, partition = 0 } } end)
    local ok, err = pcall(function() c:poll(-1) end)
    assert.is_false(ok)
    assert.matches("client_spec.lua:%d+: poll:", err)
  end)
end)

describe("a broker restart", function()
  local b, bdir
  setup(function()
    bdir = tmpdir()
    b = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = bdir, ["num.partitions"] = "1" })
    assert(b:start())
  end)
  teardown(function()
    if b then b:stop() end
    os.execute("rm -rf '" .. bdir .. "'")
  end)

  it("fails requests while the broker is down and reconnects after", function()
    local bs = "127.0.0.1:" .. b:port()
    local errs = {}
    local p = client.producer { bootstrap = bs, retries = 2, retry_backoff_ms = 5,
      on_delivery = function(err, r) if err then errs[#errs + 1] = r.key .. ": " .. err end end }
    assert(p:send("restart", "before", "1"))
    assert(p:flush())
    local c = client.consumer { bootstrap = bs, fetch_max_wait_ms = 10, retry_backoff_ms = 5 }
    assert(c:assign { { "restart", 0, 0 } })
    assert.equals("before", assert(c:poll(1000))[1].key)
    b:stop()
    assert(p:send("restart", "lost", "2"))
    local ok, err = p:flush(2000)
    assert.is_nil(ok)
    assert.matches("Connection refused", err, 1, true)
    assert.equals(1, #errs)
    -- the leader unreachable, the producer asked for metadata again: nobody answered
    assert.matches("^lost: produce to restart%[0%]: .*connect 127%.0%.0%.1:%d+: Connection refused", errs[1])
    ok, err = c:poll(100)
    assert.is_nil(ok)
    assert.matches("Connection refused", err, 1, true)
    assert(b:start())
    assert.equals(bs, "127.0.0.1:" .. b:port())
    assert(p:send("restart", "after", "3"))
    assert.is_true(p:flush())
    local got = assert(c:poll(1000))
    assert.equals(1, #got)
    assert.equals("after", got[1].key)
    assert.equals(1, got[1].offset)
  end)
end)

describe("next_offset", function()
  it("skips past every complete batch, ignoring a torn tail", function()
    local next_offset = require("kafkaiq.client.consumer")._next_offset
    local batch = assert(core.build_batch { records = { { key = "a", value = "1" }, { key = "b", value = "2" } } })
    -- base offset 0, two records: next is 2; a second copy claims base 0 too
    assert.equals(2, next_offset(batch))
    assert.equals(2, next_offset(batch .. batch:sub(1, 30)))
    assert.is_nil(next_offset(batch:sub(1, 40)))
    local moved = ("\0\0\0\1\0\0\0\5") .. batch:sub(9)
    assert.equals(2 ^ 32 + 5 + 2, next_offset(moved))
  end)
end)
