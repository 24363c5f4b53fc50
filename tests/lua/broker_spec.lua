-- In-process brokers from Lua: start, state, stop, kill, restart, errors.
local kiq = require "kafkaiq"
kiq.log_level("warn")

local function kcat(args, input)
  local cmd = "timeout 20 kcat " .. args .. " 2>/dev/null"
  if input then
    local f = assert(io.popen(cmd, "w"))
    f:write(input)
    return f:close()
  end
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

local function total_end_offset(b, topic)
  local t = b:state().topics[topic]
  if not t then return 0 end
  local n = 0
  for i = 0, t.partition_count - 1 do n = n + t.partitions[i].log_end_offset end
  return n
end

describe("kiq.broker", function()
  local b
  after_each(function()
    if b then b:stop() end
    b = nil
  end)

  it("starts on a free port with Kafka config names and serves a real client", function()
    b = assert(kiq.broker{ ["num.partitions"] = 3 })
    assert.truthy(b.bootstrap:match("^127%.0%.0%.1:%d+$"))
    assert.is_true(b:running())
    kcat("-b " .. b.bootstrap .. " -P -t orders -K:", "k1:v1\nk2:v2\nk3:v3\n")
    assert.truthy(kiq.wait_for(function() return total_end_offset(b, "orders") == 3 end, 10000))
    local st = b:state()
    assert.are.equal(3, st.topics.orders.partition_count)
    local p0 = st.topics.orders.partitions[0]
    assert.are.equal(0, p0.log_start_offset)
    assert.are.equal(p0.log_end_offset, p0.high_watermark)
    assert.are.equal(1, #p0.segments)
    assert.are.equal(0, st.request_queue.depth)
    local stats = b:request_stats()
    assert.truthy(stats.Produce.count >= 1)
    assert.truthy(stats.Metadata.count >= 1)
    for _, k in ipairs{ "queue_ms", "local_ms", "remote_ms", "response_queue_ms", "send_ms", "total_ms" } do
      assert.is_number(stats.Produce[k])
      assert.truthy(stats.Produce[k] >= 0)
    end
  end)

  it("starts its services in the broker's order, each stamped, and shows the same start in b:state()", function()
    b = assert(kiq.broker{})
    local s = b:startup()
    local names, last = {}, -1
    for _, svc in ipairs(s.services) do
      names[#names + 1] = svc.name
      assert.is_true(svc.ms >= last)
      last = svc.ms
    end
    assert.are.same({ "configs", "logs", "journeys", "log tasks", "coordinators", "replicas", "requests",
                      "control listener", "controller", "control plane", "lifecycle", "replication", "ready" }, names)
    assert.are.equal("listeners", s.phases[3].phase)
    assert.are.equal(b.port, s.phases[3].detail)
    local st = b:state().startup
    assert.are.equal(#s.services, #st.services)
    assert.are.equal("ready", st.services[#st.services].name)
  end)

  it("keeps data across stop and restart on the same port and directory", function()
    b = assert(kiq.broker{})
    local port = b.port
    kcat("-b " .. b.bootstrap .. " -P -t keep -K:", "a:1\nb:2\n")
    assert.truthy(b:wait_for_offset("keep", 0, 2, 10000))
    b:stop()
    assert.is_false(b:running())
    assert(b:restart())
    assert.are.equal(port, b.port)
    assert.are.equal(2, b:state().topics.keep.partitions[0].log_end_offset)
    local out = kcat("-b " .. b.bootstrap .. " -C -t keep -o beginning -e -f '%k=%s\\n'")
    assert.are.equal("a=1\nb=2\n", out)
  end)

  it("recovers after an unclean kill", function()
    b = assert(kiq.broker{})
    kcat("-b " .. b.bootstrap .. " -P -t crash -K:", "a:1\nb:2\nc:3\n")
    assert.truthy(b:wait_for_offset("crash", 0, 3, 10000))
    b:kill()
    assert.is_false(b:running())
    assert(b:start())
    assert.are.equal(3, b:state().topics.crash.partitions[0].log_end_offset)
  end)

  it("runs several brokers in one process, each with its own port, directory and data", function()
    local brokers = {}
    for i = 1, 3 do brokers[i] = assert(kiq.broker{ id = i }) end
    for i, br in ipairs(brokers) do
      kcat("-b " .. br.bootstrap .. " -P -t own -K:", ("k:%d\n"):rep(i):format(i, i, i))
    end
    for i, br in ipairs(brokers) do
      assert.truthy(br:wait_for_offset("own", 0, i, 10000))
      assert.are.equal(i, br:state().node_id)
      for j, other in ipairs(brokers) do
        if j ~= i then assert.are_not.equal(other.port, br.port) end
      end
    end
    for _, br in ipairs(brokers) do br:stop() end
  end)

  it("refuses unknown config names and bad values with a message naming them", function()
    local nb, err = kiq.broker{ ["no.such.config"] = 1 }
    assert.is_nil(nb)
    assert.truthy(err:find("no.such.config", 1, true))
    nb, err = kiq.broker{ ["num.partitions"] = "many" }
    assert.is_nil(nb)
    assert.truthy(err:find("num.partitions", 1, true))
    nb, err = kiq.broker{ ["auto.create.topics.enable"] = "maybe" }
    assert.is_nil(nb)
    assert.truthy(err:find("auto.create.topics.enable", 1, true))
  end)

  it("fails to start on a port that is taken", function()
    b = assert(kiq.broker{})
    local other, err = kiq.broker{ port = b.port }
    assert.is_nil(other)
    assert.truthy(err:find("in use", 1, true))
  end)

  it("refuses a data directory another broker holds", function()
    b = assert(kiq.broker{})
    local other, err = kiq.broker{ dir = b.dir }
    assert.is_nil(other)
    assert.truthy(err:find("in use", 1, true))
  end)

  -- The first all-topics Metadata request librdkafka 2.1 or later sent in
  -- tests/corpus: its bytes and version.
  local function librdkafka_all_topics_metadata()
    local corpus = os.getenv("KIQ_CORPUS_DIR") or "tests/corpus"
    for line in io.lines(corpus .. "/index.tsv") do
      local file, key, version, major, minor =
        line:match("^(%S+)\t(%d+)\t(%d+)\t%d+\t%d+\tlibrdkafka%-(%d+)%.(%d+)")
      if key == "3" and tonumber(major) * 1000 + tonumber(minor) >= 2001 then
        local f = assert(io.open(corpus .. "/" .. file, "rb"))
        local frame = f:read("*a")
        f:close()
        -- the null topics array (0x00), then "00 00 00" where librdkafka
        -- wrote a 4-byte count, then the real allow-auto-create,
        -- authorized-ops and tags
        if frame:sub(-7) == "\0\0\0\0\1\0\0" then return frame, tonumber(version) end
      end
    end
    error("no all-topics Metadata request from librdkafka 2.1+ in " .. corpus)
  end

  it("serves a request with bytes after its last field and counts them (librdkafka 2.1+ all-topics Metadata)", function()
    local core = require "kafkaiq.core"
    local frame, version = librdkafka_all_topics_metadata()
    b = assert(kiq.broker{})
    kcat("-b " .. b.bootstrap .. " -P -t listed", "x\n")
    assert.truthy(b:wait_for_offset("listed", 0, 1, 10000))
    local conn = assert(core.connect("127.0.0.1", b.port, 5000))
    local n = #frame
    local size = string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
                             math.floor(n / 256) % 256, n % 256)
    assert(conn:send(size .. frame, 5000))
    local resp = assert(conn:receive(5000))
    conn:close()
    local corr, md = core.decode_response(3, version, resp)
    assert.truthy(corr)
    assert.is_table(md)
    local names = {}
    for _, t in ipairs(md.topics) do names[t.name] = t.error_code end
    assert.are.equal(0, names.listed)
    local stats = b:request_stats().Metadata
    assert.are.equal(1, stats.trailing_requests)
    assert.are.equal(3, stats.trailing_bytes)
  end)

  it("raises on misuse", function()
    assert.has_error(function() kiq.broker("x") end)
    assert.has_error(function() kiq.broker{ bogus = 1 } end, "broker: unknown option 'bogus'")
    assert.has_error(function() kiq.wait_for(nil, 10) end)
  end)
end)

describe("kiq.wait_for", function()
  it("returns the condition's value, or nil and a message on timeout", function()
    local n = 0
    assert.are.equal("done", kiq.wait_for(function()
      n = n + 1
      return n >= 3 and "done"
    end, 1000))
    local ok, err = kiq.wait_for(function() return false end, 30, "nothing")
    assert.is_nil(ok)
    assert.truthy(err:find("nothing", 1, true))
  end)
end)

describe("kiq.random", function()
  it("replays the same sequence for the same seed and differs for another", function()
    local a, b2, c = kiq.random(42), kiq.random(42), kiq.random(43)
    local sa, sb, sc = {}, {}, {}
    for i = 1, 50 do
      sa[i], sb[i], sc[i] = a:int(1, 1000), b2:int(1, 1000), c:int(1, 1000)
      assert.truthy(sa[i] >= 1 and sa[i] <= 1000)
    end
    assert.are.same(sa, sb)
    assert.are_not.same(sa, sc)
    assert.has_error(function() a:int(5, 1) end)
  end)
end)

describe("kafkaiq run", function()
  local function run(args)
    local p = assert(io.popen("timeout 30 build/kafkaiq run " .. args .. " 2>&1; echo \"<exit:$?>\""))
    local out = p:read("*a")
    p:close()
    return out, tonumber(out:match("<exit:(%d+)>"))
  end
  local function script(text)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(text)
    f:close()
    return path
  end

  it("runs a script with the engine embedded and the seed it was given", function()
    local path = script([[
      local kiq = require "kafkaiq"
      local rt = require "kafkaiq.runtime"
      local b = assert(kiq.broker{})
      print("seed=" .. rt.seed .. " arg=" .. tostring(arg[1]) .. " port=" .. b.port)
      b:stop()
    ]])
    local out, code = run("--seed 99 " .. path .. " hello")
    os.remove(path)
    assert.are.equal(0, code)
    assert.truthy(out:find("seed=99 arg=hello port=%d+"))
  end)

  it("fails with the error and a traceback when the script raises or does not parse", function()
    local path = script("local x = 1\nerror('scenario broke')\n")
    local out, code = run(path)
    assert.are.equal(1, code)
    assert.truthy(out:find("scenario broke", 1, true))
    assert.truthy(out:find("traceback", 1, true))
    os.remove(path)
    path = script("x = = 1\n")
    out, code = run(path)
    assert.are.equal(1, code)
    assert.truthy(out:find("unexpected symbol", 1, true))
    os.remove(path)
  end)
end)
