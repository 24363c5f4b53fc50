-- Broker interceptors (b:intercept): an in-process broker driven by raw
-- protocol frames through kafkaiq.core and by kcat. Run from the repo root:
--   luajit /usr/bin/busted --lpath="lua/?.lua;lua/?/init.lua" --cpath="build/lua/?.so" \
--     tests/lua/intercept_spec.lua

local core = require "kafkaiq.core"
local ffi = require "ffi"

-- pcall: another spec in the same process may have declared them already
pcall(ffi.cdef, [[
int dup(int fd);
int dup2(int from, int to);
int open(const char *path, int flags, int mode);
int close(int fd);
]])

local ERR = { INVALID_RECORD = 87, POLICY_VIOLATION = 44, NOT_LEADER = 6,
              TOPIC_AUTHORIZATION_FAILED = 29, CLUSTER_AUTHORIZATION_FAILED = 31 }
local API = { Produce = 0, Fetch = 1, ListOffsets = 2, Metadata = 3, ApiVersions = 18,
              CreateTopics = 19, DeleteTopics = 20, DescribeConfigs = 32 }

local function tmpdir()
  local p = assert(io.popen("mktemp -d"))
  local dir = p:read("*l")
  p:close()
  assert(dir and dir ~= "", "mktemp -d failed") -- else a broker would write to ./data
  return dir
end

-- Polls cond every 10 ms until it holds or timeout_ms passes.
local function wait_for(cond, timeout_ms)
  local deadline = core.now_ms() + (timeout_ms or 5000)
  while core.now_ms() < deadline do
    if cond() then return true end
    core.sleep_ms(10)
  end
  return cond()
end

-- Runs fn with the process's stderr (where the broker logs) going to a
-- file; returns what was written.
local function capture_stderr(fn)
  local path = os.tmpname()
  local saved = ffi.C.dup(2)
  local fd = ffi.C.open(path, 577, 420) -- O_WRONLY|O_CREAT|O_TRUNC, 0644
  assert(fd >= 0 and saved >= 0)
  ffi.C.dup2(fd, 2)
  ffi.C.close(fd)
  local ok, err = pcall(fn)
  ffi.C.dup2(saved, 2)
  ffi.C.close(saved)
  local f = assert(io.open(path))
  local text = f:read("*a")
  f:close()
  os.remove(path)
  assert(ok, err)
  return text
end

-- A raw protocol client: one connection, one request at a time.
local Client = {}
Client.__index = Client

local function client(b, client_id)
  local c = assert(core.connect("127.0.0.1", b:port(), 5000))
  return setmetatable({ conn = c, corr = 0, id = client_id or "spec" }, Client)
end

function Client:send(api, version, body)
  self.corr = self.corr + 1
  assert(self.conn:send(core.encode_request(api, version, self.corr, self.id, body)))
  return self.corr
end

-- The decoded response, or nil and the reason (a closed connection).
function Client:receive(api, version, timeout_ms)
  local frame, err = self.conn:receive(timeout_ms or 10000)
  if not frame then return nil, err end
  local corr, body = core.decode_response(api, version, frame)
  assert(corr == self.corr, "correlation id " .. tostring(corr) .. " for " .. self.corr)
  return body
end

function Client:call(api, version, body, timeout_ms)
  self:send(api, version, body)
  return self:receive(api, version, timeout_ms)
end

function Client:close() self.conn:close() end

local function batch(records)
  return assert(core.build_batch { records = records })
end

local function produce_body(topic, records, acks)
  return { acks = acks or 1, timeout_ms = 5000,
           topic_data = { { name = topic, partition_data = { { index = 0, records = batch(records) } } } } }
end

-- Produce v8 (carries error_message); returns the partition's response.
local function produce(c, topic, records, acks)
  local resp, err = c:call(API.Produce, 8, produce_body(topic, records, acks))
  if not resp then return nil, err end
  return resp.responses[1].partition_responses[1]
end

local function fetch_body(topic, offset, max_wait_ms)
  return { replica_id = -1, max_wait_ms = max_wait_ms or 0, min_bytes = 1, max_bytes = 1048576,
           isolation_level = 0, session_id = 0, session_epoch = -1,
           topics = { { topic = topic, partitions = { { partition = 0, current_leader_epoch = -1,
             fetch_offset = offset or 0, log_start_offset = -1, partition_max_bytes = 1048576 } } } },
           forgotten_topics_data = {}, rack_id = "" }
end

-- Fetch v11 from partition 0; returns the partition's response and its records.
local function fetch(c, topic, offset, max_wait_ms)
  local resp, err = c:call(API.Fetch, 11, fetch_body(topic, offset, max_wait_ms))
  if not resp then return nil, err end
  local p = resp.responses[1].partitions[1]
  return p, assert(core.parse_records(p.records or ""))
end

local function create_topic(c, name)
  local resp = assert(c:call(API.CreateTopics, 4, { timeout_ms = 5000, topics = { {
    name = name, num_partitions = 1, replication_factor = 1, assignments = {}, configs = {} } } }))
  assert(resp.topics[1].error_code == 0, "create " .. name .. ": error " .. resp.topics[1].error_code)
end

local function log_end_offset(b, topic)
  local t = b:state().topics[topic]
  return t and t.partitions[0].log_end_offset
end

local function find_intercept(b, id)
  for _, h in ipairs(b:intercepts()) do
    if h.id == id then return h end
  end
end

-- kcat with a time limit; returns its output and exit code.
local function kcat(args, input)
  local cmd = "timeout 20 kcat " .. args .. " 2>&1; echo \"<exit:$?>\""
  if input then cmd = "printf '%s' '" .. input .. "' | " .. cmd end
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("<exit:(%d+)>%s*$"))
  return (out:gsub("<exit:%d+>%s*$", "")), code
end

local b, dir, c
local topic_seq = 0
local function new_topic()
  topic_seq = topic_seq + 1
  local name = "icpt-" .. topic_seq
  create_topic(c, name)
  return name
end

setup(function()
  dir = tmpdir()
  b = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = dir,
                               ["num.io.threads"] = 2 })
  assert(b:start())
end)

teardown(function()
  if b then b:stop() end
  os.execute("rm -rf '" .. dir .. "'")
end)

before_each(function() c = client(b) end)

after_each(function()
  c:close()
  for _, h in ipairs(b:intercepts()) do b:remove_intercept(h.id) end
end)

describe("b:intercept", function()
  it("refuses a chunk with a syntax error, with Lua's message", function()
    local id, err = b:intercept { on = "request", source = "return function(ctx) if then end" }
    assert.is_nil(id)
    assert.matches("interceptor:1:.*near 'then'", err)
    assert.same({}, b:intercepts())
  end)

  it("refuses a chunk that does not return a function", function()
    local id, err = b:intercept { on = "produce", source = "return { drop = true }" }
    assert.is_nil(id)
    assert.matches("must return the hook function, not a table", err)
  end)

  it("refuses a chunk whose top level raises or never ends", function()
    local id, err = b:intercept { on = "fetch", source = "error('no config here')" }
    assert.is_nil(id)
    assert.matches("no config here", err)
    id, err = b:intercept { on = "fetch", source = "while true do end" }
    assert.is_nil(id)
    assert.matches("over its budget", err)
  end)

  it("raises on misuse", function()
    local fn = "return function() end"
    assert.has_error(function() b:intercept { on = "respond", source = fn } end)
    assert.has_error(function() b:intercept { on = "request" } end)
    assert.has_error(function() b:intercept { on = "request", source = fn, apii = "Produce" } end)
    assert.has_error(function() b:intercept { on = "request", source = fn, api = "NoSuchApi" } end)
    assert.has_error(function() b:intercept { on = "produce", source = fn, api = "Produce" } end)
    assert.has_error(function() b:intercept { on = "request", source = fn, topic = 7 } end)
    assert.has_error(function() b:intercept "return function() end" end)
  end)

  it("lists what is installed and removes it", function()
    local a = assert(b:intercept { on = "request", api = "Metadata", client_id = "x",
                                   source = "return function() end" })
    local p = assert(b:intercept { on = "produce", topic = "t", source = "return function() end" })
    local f = assert(b:intercept { on = "fetch", api = nil, source = "return function() end" })
    assert.is_true(a < p and p < f)
    local list = b:intercepts()
    assert.equals(3, #list)
    assert.same({ id = a, on = "request", api = "Metadata", client_id = "x", failures = 0 }, list[1])
    assert.same({ id = p, on = "produce", topic = "t", failures = 0 }, list[2])
    assert.same({ id = f, on = "fetch", failures = 0 }, list[3])
    assert.is_true(b:remove_intercept(p))
    local ok, err = b:remove_intercept(p)
    assert.is_nil(ok)
    assert.matches("no interceptor " .. p, err)
    list = b:intercepts()
    assert.equals(2, #list)
    assert.same({ a, f }, { list[1].id, list[2].id })
  end)

  it("accepts an api by key", function()
    local id = assert(b:intercept { on = "request", api = API.Metadata, source = "return function() end" })
    assert.equals("Metadata", find_intercept(b, id).api)
  end)
end)

describe("produce interceptors", function()
  local require_trace = [[
    return function(ctx)
      for _, r in ipairs(ctx.records) do
        local found = false
        for _, h in ipairs(r.headers) do
          if h[1] == "trace" then found = true end
        end
        if not found then
          return { error = 87, message = "record " .. r.offset_delta .. " has no trace header" }
        end
      end
    end]]

  it("rejects a batch with a record missing a header: error to the client, nothing appended", function()
    local t = new_topic()
    assert(b:intercept { on = "produce", source = require_trace })
    local p = assert(produce(c, t, { { value = "a", headers = { { "trace", "1" } } }, { value = "b" } }))
    assert.equals(ERR.INVALID_RECORD, p.error_code)
    assert.equals("record 1 has no trace header", p.error_message)
    assert.equals(0, log_end_offset(b, t))
    p = assert(produce(c, t, { { value = "a", headers = { { "trace", "1" } } } }))
    assert.equals(0, p.error_code)
    assert.equals(1, log_end_offset(b, t))
  end)

  it("rejects kcat's record without the header, and takes the one with it", function()
    local t = new_topic()
    assert(b:intercept { on = "produce", topic = t, source = require_trace })
    local broker = "-b 127.0.0.1:" .. b:port()
    local out = kcat(broker .. " -P -t " .. t, "plain\n")
    assert.matches("Delivery failed.*failed to validate record", out) -- librdkafka's words for 87
    assert.equals(0, log_end_offset(b, t))
    local code
    out, code = kcat(broker .. " -P -t " .. t .. " -H trace=abc", "traced\n")
    assert.equals(0, code, out)
    assert.equals(1, log_end_offset(b, t))
  end)

  it("rewrites records: consumers see the new values, keys and headers stay", function()
    local t = new_topic()
    assert(b:intercept { on = "produce", topic = t, source = [[
      return function(ctx)
        local out = {}
        for i, r in ipairs(ctx.records) do
          out[i] = { key = r.key, value = r.value:upper(), headers = r.headers, timestamp = r.timestamp }
        end
        out[#out + 1] = { key = "extra", value = "added by " .. ctx.client_id }
        return { records = out }
      end]] })
    local p = assert(produce(c, t, { { key = "k1", value = "hello", headers = { { "h", "v" } }, timestamp = 1000 },
                                     { key = "k2", value = "world", timestamp = 2000 } }))
    assert.equals(0, p.error_code)
    assert.equals(3, log_end_offset(b, t))
    local fp, records = fetch(c, t, 0)
    assert.equals(0, fp.error_code)
    assert.equals(3, #records)
    assert.same({ "k1", "HELLO", 1000, { { "h", "v" } } },
                { records[1].key, records[1].value, records[1].timestamp, records[1].headers })
    assert.same({ "k2", "WORLD", 2000 }, { records[2].key, records[2].value, records[2].timestamp })
    assert.same({ "extra", "added by spec", 2 }, { records[3].key, records[3].value, records[3].offset })
    local out, code = kcat("-b 127.0.0.1:" .. b:port() .. " -C -t " .. t .. " -o beginning -e -f '%k=%s\\n'")
    assert.equals(0, code, out)
    assert.matches("k1=HELLO\nk2=WORLD\nextra=added by spec\n", out, 1, true)
  end)

  it("chains hooks: each sees the records as the previous one left them", function()
    local t = new_topic()
    for _, suffix in ipairs { "1", "2" } do
      assert(b:intercept { on = "produce", source = [[
        return function(ctx)
          local out = {}
          for i, r in ipairs(ctx.records) do out[i] = { value = r.value .. "]] .. suffix .. [[" } end
          return { records = out }
        end]] })
    end
    assert.equals(0, assert(produce(c, t, { { value = "v" } })).error_code)
    local _, records = fetch(c, t, 0)
    assert.equals("v12", records[1].value)
  end)

  it("refuses a rewrite to no records, and ignores a malformed one", function()
    local t = new_topic()
    local bad = assert(b:intercept { on = "produce", topic = t,
                                     source = "return function() return { records = { { value = 42 } } } end" })
    local p = assert(produce(c, t, { { value = "kept" } }))
    assert.equals(0, p.error_code)
    local _, records = fetch(c, t, 0)
    assert.equals("kept", records[1].value)
    assert.matches("field 'value'", find_intercept(b, bad).last_error)
    b:remove_intercept(bad)
    assert(b:intercept { on = "produce", topic = t, source = "return function() return { records = {} } end" })
    p = assert(produce(c, t, { { value = "gone" } }))
    assert.equals(ERR.INVALID_RECORD, p.error_code)
    assert.equals(1, log_end_offset(b, t))
  end)

  it("selects by topic and client id", function()
    local t1, t2 = new_topic(), new_topic()
    assert(b:intercept { on = "produce", topic = t1, client_id = "blocked",
                         source = "return function() return { error = 44 } end" })
    local other = client(b, "blocked")
    assert.equals(ERR.POLICY_VIOLATION, assert(produce(other, t1, { { value = "x" } })).error_code)
    assert.equals(0, assert(produce(other, t2, { { value = "x" } })).error_code)
    assert.equals(0, assert(produce(c, t1, { { value = "x" } })).error_code)
    other:close()
    assert.equals(1, log_end_offset(b, t1))
    assert.equals(1, log_end_offset(b, t2))
  end)
end)

describe("fetch interceptors", function()
  it("inspect the data served and may answer a partition with an error", function()
    local t = new_topic()
    assert(b:intercept { on = "fetch", topic = t, source = [[
      return function(ctx)
        assert(ctx.topic and ctx.partition == 0 and ctx.client_id == "spec")
        assert(ctx.high_watermark == 3 and ctx.log_start_offset == 0)
        for _, r in ipairs(ctx.records) do
          if r.value == "poison" then return { error = 6 } end
        end
      end]] })
    for _, v in ipairs { "ok", "poison", "fine" } do
      assert.equals(0, assert(produce(c, t, { { value = v } })).error_code)
    end
    local p, records = fetch(c, t, 0)
    assert.equals(ERR.NOT_LEADER, p.error_code)
    assert.equals(0, #records)
    p, records = fetch(c, t, 2)
    assert.equals(0, p.error_code)
    assert.same({ "fine", 2 }, { records[1].value, records[1].offset })
  end)

  it("also see a fetch that waited in the purgatory", function()
    local t = new_topic()
    assert(b:intercept { on = "fetch", topic = t, source = [[
      return function(ctx) if #ctx.records > 0 then return { error = 6 } end end]] })
    c:send(API.Fetch, 11, fetch_body(t, 0, 5000))
    assert.is_true(wait_for(function() return b:state().purgatory.waiting == 1 end))
    local writer = client(b)
    assert.equals(0, assert(produce(writer, t, { { value = "late" } })).error_code)
    writer:close()
    local resp = assert(c:receive(API.Fetch, 11))
    assert.equals(ERR.NOT_LEADER, resp.responses[1].partitions[1].error_code)
  end)
end)

describe("request interceptors", function()
  it("see the request's context", function()
    local t = new_topic()
    assert(b:intercept { on = "request", api = "Produce", source = [[
      return function(ctx)
        local ok = ctx.api_key == 0 and ctx.api_name == "Produce" and ctx.api_version == 8
          and ctx.client_id == "spec" and ctx.correlation_id > 0 and ctx.peer:match("^127%.0%.0%.1:")
          and #ctx.topics == 1 and ctx.topics[1] == ctx.request.topic_data[1].name
          and ctx.request.acks == 1
        if not ok then return { error = 42 } end
      end]] })
    assert.equals(0, assert(produce(c, t, { { value = "x" } })).error_code)
  end)

  it("delay a request: the answer comes later, the I/O threads go on", function()
    local t = new_topic()
    assert(b:intercept { on = "request", api = "Metadata", client_id = "slow",
                         source = "return function() return { delay_ms = 400 } end" })
    -- more delayed requests than the broker has I/O threads (2)
    local slow = {}
    local start = core.now_ms()
    for i = 1, 3 do
      slow[i] = client(b, "slow")
      slow[i]:send(API.Metadata, 9, { topics = { { name = t } }, allow_auto_topic_creation = false })
    end
    for _ = 1, 3 do assert.equals(0, assert(produce(c, t, { { value = "x" } })).error_code) end
    assert.is_true(core.now_ms() - start < 400, "the delays held up other requests")
    for i = 1, 3 do
      local resp = assert(slow[i]:receive(API.Metadata, 9))
      assert.is_true(core.now_ms() - start >= 400)
      assert.equals(t, resp.topics[1].name)
      assert.equals(0, resp.topics[1].error_code)
      slow[i]:close()
    end
  end)

  it("drop the connection without running the handler", function()
    local t = new_topic()
    assert(b:intercept { on = "request", api = "Produce", source = "return function() return { drop = true } end" })
    local p, err = produce(c, t, { { value = "x" } })
    assert.is_nil(p)
    assert.matches("closed", err)
    assert.equals(0, log_end_offset(b, t))
  end)

  it("drop the connection after the handler ran: appended, yet no answer", function()
    local t = new_topic()
    assert(b:intercept { on = "request", api = "Produce", source = [[return function() return { drop = "after" } end]] })
    local p, err = produce(c, t, { { value = "x" } })
    assert.is_nil(p)
    assert.matches("closed", err)
    assert.is_true(wait_for(function() return log_end_offset(b, t) == 1 end))
  end)

  it("delay and then drop", function()
    assert(b:intercept { on = "request", api = "Metadata",
                         source = "return function() return { delay_ms = 200, drop = true } end" })
    local start = core.now_ms()
    local resp, err = c:call(API.Metadata, 9, { topics = {} })
    assert.is_nil(resp)
    assert.matches("closed", err)
    assert.is_true(core.now_ms() - start >= 200)
  end)

  it("answer with an error code without running the handler", function()
    local t = new_topic()
    assert(b:intercept { on = "request", api = "Produce", source = "return function() return { error = 29 } end" })
    local resp = assert(c:call(API.Produce, 8, produce_body(t, { { value = "x" } })))
    assert.equals(t, resp.responses[1].name)
    assert.equals(0, resp.responses[1].partition_responses[1].index)
    assert.equals(ERR.TOPIC_AUTHORIZATION_FAILED, resp.responses[1].partition_responses[1].error_code)
    assert.equals(-1, resp.responses[1].partition_responses[1].base_offset)
    assert.equals(0, log_end_offset(b, t))
  end)

  -- Every API the broker serves: the error lands where a client looks for it.
  local cases = {
    { "Fetch", 11, function(t) return fetch_body(t, 0) end, function(r, t)
        local p = r.responses[1].partitions[1]
        return r.error_code == 31 and r.responses[1].topic == t and p.partition_index == 0
          and p.error_code == 31 and p.high_watermark == -1 and p.records == ""
      end },
    { "Fetch", 4, function(t) return fetch_body(t, 0) end, function(r)
        return r.responses[1].partitions[1].error_code == 31
      end },
    { "ListOffsets", 5, function(t) return { replica_id = -1, isolation_level = 0, topics = { { name = t,
        partitions = { { partition_index = 0, current_leader_epoch = -1, timestamp = -1 } } } } } end,
      function(r, t)
        local p = r.topics[1].partitions[1]
        return r.topics[1].name == t and p.partition_index == 0 and p.error_code == 31 and p.offset == -1
      end },
    { "Metadata", 9, function(t) return { topics = { { name = t } }, allow_auto_topic_creation = false } end,
      function(r, t) return r.topics[1].name == t and r.topics[1].error_code == 31 end },
    { "Metadata", 12, function(t) return { topics = { { name = t } }, allow_auto_topic_creation = false } end,
      function(r, t) return r.topics[1].name == t and r.topics[1].error_code == 31 end },
    { "CreateTopics", 7, function() return { timeout_ms = 1000, topics = { { name = "never-made",
        num_partitions = 1, replication_factor = 1, assignments = {}, configs = {} } } } end,
      function(r) return r.topics[1].name == "never-made" and r.topics[1].error_code == 31 end },
    { "DeleteTopics", 4, function(t) return { timeout_ms = 1000, topic_names = { t } } end,
      function(r, t) return r.responses[1].name == t and r.responses[1].error_code == 31 end },
    { "DeleteTopics", 6, function(t) return { timeout_ms = 1000, topics = { { name = t } } } end,
      function(r, t) return r.responses[1].name == t and r.responses[1].error_code == 31 end },
    { "DescribeConfigs", 4, function(t) return { resources = { { resource_type = 2, resource_name = t } } } end,
      function(r, t)
        return r.results[1].resource_name == t and r.results[1].resource_type == 2
          and r.results[1].error_code == 31
      end },
    { "ApiVersions", 3, function() return { client_software_name = "spec", client_software_version = "1" } end,
      function(r) return r.error_code == 31 end },
  }
  for _, case in ipairs(cases) do
    local api, version, body, check = case[1], case[2], case[3], case[4]
    it("answer " .. api .. " v" .. version .. " with an error code", function()
      local t = new_topic()
      local id = assert(b:intercept { on = "request", api = api,
                                      source = "return function() return { error = 31 } end" })
      local resp = assert(c:call(API[api], version, body(t)))
      assert.is_true(check(resp, t), api .. " v" .. version .. " answer lacks the error")
      b:remove_intercept(id)
      assert.is_truthy(b:state().topics[t], "the handler ran anyway")
      assert.is_nil(b:state().topics["never-made"])
    end)
  end

  it("select by api, client id and topic", function()
    local t1, t2 = new_topic(), new_topic()
    assert(b:intercept { on = "request", api = "Fetch", source = "return function() return { error = 31 } end" })
    assert(b:intercept { on = "request", client_id = "banned", source = "return function() return { error = 29 } end" })
    assert(b:intercept { on = "request", topic = t2, source = "return function() return { error = 44 } end" })
    assert.equals(0, assert(produce(c, t1, { { value = "x" } })).error_code) -- no hook selects it
    assert.equals(31, (fetch(c, t1, 0)).error_code)                         -- api
    local banned = client(b, "banned")
    assert.equals(29, assert(produce(banned, t1, { { value = "x" } })).error_code) -- client id
    banned:close()
    assert.equals(44, assert(produce(c, t2, { { value = "x" } })).error_code)      -- topic
    assert.equals(1, log_end_offset(b, t1))
    assert.equals(0, log_end_offset(b, t2))
  end)

  it("that raise are logged and the request goes on as without them", function()
    local t = new_topic()
    local id = assert(b:intercept { on = "request", api = "Produce",
                                    source = "return function(ctx) error('hook exploded') end" })
    local p
    core.log_level("warn") -- process-wide; other specs may have lowered it
    local log = capture_stderr(function() p = assert(produce(c, t, { { value = "x" } })) end)
    assert.equals(0, p.error_code)
    assert.equals(1, log_end_offset(b, t))
    assert.matches("WARN.*interceptor " .. id .. " failed.*hook exploded", log)
    assert.matches("stack traceback", log)
    local h = find_intercept(b, id)
    assert.equals(1, h.failures)
    assert.matches("hook exploded", h.last_error)
  end)

  it("that return nonsense are logged and ignored", function()
    local t = new_topic()
    local id = assert(b:intercept { on = "request", source = "return function() return { dorp = true } end" })
    assert.equals(0, assert(produce(c, t, { { value = "x" } })).error_code)
    assert.matches("unknown field 'dorp'", find_intercept(b, id).last_error)
  end)

  it("that loop forever are stopped and the request goes on", function()
    local t = new_topic()
    local id = assert(b:intercept { on = "request", api = "Produce", source = [[
      return function() while true do pcall(function() while true do end end) end end]] })
    local start = core.now_ms()
    local p = assert(produce(c, t, { { value = "x" } }))
    assert.equals(0, p.error_code)
    assert.is_true(core.now_ms() - start < 5000)
    assert.matches("over its budget of 10000000 instructions", find_intercept(b, id).last_error)
    -- the same thread's state still works: the hook is stopped again
    assert.equals(0, assert(produce(c, t, { { value = "y" } })).error_code)
    assert.equals(2, log_end_offset(b, t))
    assert.equals(2, find_intercept(b, id).failures)
  end)

  it("no longer act once removed", function()
    local t = new_topic()
    local id = assert(b:intercept { on = "request", source = "return function() return { error = 29 } end" })
    assert.equals(29, assert(produce(c, t, { { value = "x" } })).error_code)
    assert.is_true(b:remove_intercept(id))
    assert.equals(0, assert(produce(c, t, { { value = "x" } })).error_code)
  end)
end)

describe("interceptors and the broker's life", function()
  it("keep their upvalues between calls on a thread, across other installs", function()
    local d = tmpdir()
    local b1 = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = d,
                                        ["num.io.threads"] = 1 })
    assert(b1:start())
    assert(b1:intercept { on = "request", api = "Metadata", source = [[
      local n = 0
      return function() n = n + 1; if n % 3 == 0 then return { error = 31 } end end]] })
    local c1 = client(b1)
    local function metadata_error()
      local resp = assert(c1:call(API.Metadata, 9, { topics = { { name = "t" } },
                                                     allow_auto_topic_creation = false }))
      return resp.topics[1].error_code
    end
    assert.equals(3, metadata_error()) -- unknown topic: the handler answered
    assert.equals(3, metadata_error())
    assert.equals(31, metadata_error())
    -- another install makes the thread reload; the loaded hook keeps its n
    assert(b1:intercept { on = "fetch", source = "return function() end" })
    assert.equals(3, metadata_error())
    assert.equals(3, metadata_error())
    assert.equals(31, metadata_error())
    c1:close()
    b1:stop()
    os.execute("rm -rf '" .. d .. "'")
  end)

  it("honour kafkaiq.hook.max.instructions and survive a restart", function()
    local d = tmpdir()
    local b2 = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = d,
                                        ["kafkaiq.hook.max.instructions"] = 50000 })
    local id = assert(b2:intercept { on = "request", api = "Metadata", source = [[
      return function() for i = 1, 200000 do end return { error = 31 } end]] })
    assert(b2:start())
    local c2 = client(b2)
    local resp = assert(c2:call(API.Metadata, 9, { topics = {} }))
    assert.is_nil(resp.error_code) -- Metadata has none; the hook was stopped before answering
    assert.matches("budget of 50000 instructions", find_intercept(b2, id).last_error)
    c2:close()
    b2:stop()
    assert(b2:start())
    c2 = client(b2)
    assert(c2:call(API.Metadata, 9, { topics = {} }))
    assert.equals(2, find_intercept(b2, id).failures)
    c2:close()
    b2:stop()
    os.execute("rm -rf '" .. d .. "'")
  end)
end)

describe("authorize interceptors (a Lua authorizer)", function()
  -- no authorizer.class.name on this broker: the hook alone decides, and
  -- what it leaves (nil) is allowed
  local locked = [[
    return function(ctx)
      if ctx.resource_type == "TOPIC" and ctx.resource_name:match("^locked") and ctx.operation == "WRITE" then
        return { allow = false, reason = ctx.principal .. " may not write " .. ctx.resource_name .. " from " .. ctx.host }
      end
    end]]

  it("refuses what it denies with Kafka's error, logs its reason, leaves the rest", function()
    local t, open = new_topic(), new_topic()
    create_topic(c, "locked-" .. t)
    assert(b:intercept { on = "authorize", source = locked })
    local denied = b:event_counts().authorization_denied
    local p
    core.log_level("info") -- denials are logged at info
    local log = capture_stderr(function() p = assert(produce(c, "locked-" .. t, { { value = "x" } })) end)
    core.log_level("warn")
    assert.equals(ERR.TOPIC_AUTHORIZATION_FAILED, p.error_code)
    assert.equals(0, log_end_offset(b, "locked-" .. t))
    assert.matches("Lua authorizer %(interceptor %d+%): User:ANONYMOUS may not write locked%-" .. (t:gsub("%-", "%%-")) .. " from 127%.0%.0%.1",
      log)
    -- the refusal is an observer event too
    assert.equals(denied + 1, b:event_counts().authorization_denied)
    p = assert(produce(c, open, { { value = "y" } }))
    assert.equals(0, p.error_code)
    assert.equals(1, log_end_offset(b, open))
    -- reading is not its business: allowed
    assert.equals(0, (fetch(c, "locked-" .. t)).error_code)
  end)

  it("counts a hook answering something else as failed and lets the request through", function()
    local t = new_topic()
    local id = assert(b:intercept { on = "authorize", source = "return function() return { allow = 'yes' } end" })
    assert.equals(0, assert(produce(c, t, { { value = "z" } })).error_code)
    assert.is_true(find_intercept(b, id).failures >= 1)
  end)
end)
