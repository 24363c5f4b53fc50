-- `kafkaiq verify DIR`: the offline check of a data directory finds a
-- sound log sound, and names the file and position of a flipped byte in an
-- older segment and the data loss of a deleted active segment (exit 1);
-- a torn tail left by a crash is only a warning; bad arguments exit 2.
-- And the scrubber finds the same flipped byte while the broker runs, after
-- which the damaged batch is never served.
local kiq = require "kafkaiq"
local client = require "kafkaiq.client"
kiq.log_level("error")

local function verify(dir)
  local p = assert(io.popen("build/kafkaiq verify '" .. dir .. "' 2>&1; echo \"<exit:$?>\""))
  local out = p:read("*a")
  p:close()
  return tonumber(out:match("<exit:(%d+)>")), out
end

local function segments(dir)
  local p = assert(io.popen("ls '" .. dir .. "' | grep '\\.log$' | sort"))
  local out = {}
  for line in p:lines() do out[#out + 1] = dir .. "/" .. line end
  p:close()
  return out
end

describe("kafkaiq verify", function()
  local b, dir
  setup(function()
    b = assert(kiq.broker { ["log.segment.bytes"] = 2048 })
    dir = b.dir
    local a = assert(b:admin())
    assert(a:create_topics { { name = "ver", partitions = 1 } })
    a:close()
    local p = client.producer { bootstrap = b.bootstrap, linger_ms = 0 }
    for i = 1, 60 do
      assert(p:send("ver", "k", ("value %d %s"):format(i, ("x"):rep(100)), { partition = 0 }))
      assert(p:flush())
    end
    p:close()
    b:stop()
  end)
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("passes a sound data directory", function()
    local rc, out = verify(dir)
    assert.are.equal(0, rc, out)
    assert.matches("OK [^\n]*ver%-0: %d+ segments, 60 batches, offsets 0..59", out)
    assert.matches("0 damaged", out)
    assert.is_true(#segments(dir .. "/ver-0") > 2)
  end)

  it("names the file and position of a flipped byte in an older segment", function()
    local seg = segments(dir .. "/ver-0")[1]
    local f = assert(io.open(seg, "r+b"))
    f:seek("set", 200)
    local byte = f:read(1)
    f:seek("set", 200)
    f:write(string.char((byte:byte() + 1) % 256))
    f:close()
    local rc, out = verify(dir)
    assert.are.equal(1, rc, out)
    assert.matches("DAMAGED " .. seg:gsub("%p", "%%%0") .. ": batch at position %d+", out)
    f = assert(io.open(seg, "r+b"))
    f:seek("set", 200)
    f:write(byte)
    f:close()
    assert.are.equal(0, (verify(dir)))
  end)

  it("takes a torn tail for what a crash leaves, and a missing active segment for data loss", function()
    local segs = segments(dir .. "/ver-0")
    local last = segs[#segs]
    local f = assert(io.open(last, "ab"))
    f:write("torn")
    f:close()
    local rc, out = verify(dir)
    assert.are.equal(0, rc, out)
    assert.matches("WARNING [^\n]*torn tail", out)
    os.remove(last)
    rc, out = verify(dir)
    assert.are.equal(1, rc, out)
    assert.matches("data loss: the log ends at offset %d+ but was flushed up to 60", out)
  end)

  it("exits 2 for what it cannot read", function()
    assert.are.equal(2, (verify("/nonexistent/kafkaiq-dir")))
  end)

  it("is what the scrubber does to closed segments while the broker runs", function()
    local sb = assert(kiq.broker { ["log.segment.bytes"] = 2048, ["kafkaiq.log.scrub.interval.ms"] = 0 })
    local a = assert(sb:admin())
    assert(a:create_topics { { name = "scr", partitions = 1 } })
    a:close()
    local p = client.producer { bootstrap = sb.bootstrap, linger_ms = 0 }
    for i = 1, 40 do
      assert(p:send("scr", "k", ("value %d %s"):format(i, ("x"):rep(100)), { partition = 0 }))
      assert(p:flush())
    end
    p:close()
    assert.are.equal(0, sb:scrub())
    assert.is_nil(sb:state().topics.scr.partitions[0].damaged)
    local seg = segments(sb.dir .. "/scr-0")[2]
    local f = assert(io.open(seg, "r+b"))
    f:seek("set", 300)
    local byte = f:read(1)
    f:seek("set", 300)
    f:write(string.char((byte:byte() + 1) % 256))
    f:close()
    assert.are.equal(1, sb:scrub())
    assert.are.equal(0, sb:scrub()) -- reported once
    local d = sb:state().topics.scr.partitions[0].damaged
    assert.is_not_nil(d)
    assert.are.equal(tonumber(seg:match("(%d+)%.log$")), d.segment)
    assert.matches("batch at position %d+", d.why)
    -- what lies before the damage is read, the damaged batch never: its
    -- fetch is answered CORRUPT_MESSAGE, as Kafka answers a corrupt read
    local from = tonumber(d.why:match("%(offset (%d+)%)"))
    assert.is_true(from > d.segment)
    local c = client.consumer { bootstrap = sb.bootstrap, fetch_max_wait_ms = 50 }
    assert(c:assign { { topic = "scr", partition = 0, offset = 0 } })
    local got, err = {}, nil
    assert(kiq.wait_for(function()
      local recs, e = c:poll(100)
      for _, r in ipairs(recs or {}) do got[#got + 1] = r end
      err = e
      return err ~= nil
    end, 10000, "the damaged batch's fetch to fail"))
    c:close()
    assert.matches("CORRUPT_MESSAGE", err)
    assert.are.equal(from, #got)
    for i, r in ipairs(got) do
      assert.are.equal(i - 1, r.offset)
      assert.are.equal(("value %d %s"):format(i, ("x"):rep(100)), r.value)
    end
    sb:stop()
    os.execute("rm -rf '" .. sb.dir .. "'")
  end)
end)

-- Data loss never goes silent: a segment file deleted under a running
-- broker is written back from the file the broker still holds open; one
-- cut under it, or one lost while the broker was down, leaves the
-- partition marked (b:state().data_loss, `kafkaiq verify` exit 1) across
-- restarts until an operator acknowledges it.
describe("data loss", function()
  local b, dir

  local function produce(n, tag)
    local p = client.producer { bootstrap = b.bootstrap, linger_ms = 0 }
    for i = 1, n do
      assert(p:send("loss", "k", ("%s %d %s"):format(tag, i, ("x"):rep(100)), { partition = 0 }))
      assert(p:flush())
    end
    p:close()
  end

  local function read_all()
    local c = client.consumer { bootstrap = b.bootstrap, fetch_max_wait_ms = 50 }
    assert(c:assign { { topic = "loss", partition = 0, offset = 0 } })
    local hw = b:state().topics.loss.partitions[0].high_watermark
    local got = {}
    assert(kiq.wait_for(function()
      for _, r in ipairs(assert(c:poll(100))) do got[#got + 1] = r end
      return #got > 0 and got[#got].offset == hw - 1
    end, 10000, "the partition to be read to its end"))
    c:close()
    return got
  end

  local function loss() return b:state().topics.loss.partitions[0].data_loss end

  before_each(function()
    b = assert(kiq.broker { ["log.segment.bytes"] = 2048, ["kafkaiq.log.scrub.interval.ms"] = 0 })
    dir = b.dir
    local a = assert(b:admin())
    assert(a:create_topics { { name = "loss", partitions = 1 } })
    a:close()
    produce(30, "before")
  end)
  after_each(function()
    if b:running() then b:stop() end
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("writes back an active segment file deleted under the broker", function()
    local segs = segments(dir .. "/loss-0")
    local active = segs[#segs]
    assert(os.remove(active))
    assert(kiq.wait_for(function()
      local f = io.open(active, "rb")
      if f then f:close() end
      return f ~= nil
    end, 10000, "the segment file to be written back"))
    produce(5, "after")
    b:stop()
    assert.are.equal(0, (verify(dir)))
    assert(b:start())
    assert.is_nil(loss())
    local got = read_all()
    assert.are.equal(35, #got)
    assert.are.equal("after 5 " .. ("x"):rep(100), got[35].value)
  end)

  it("marks a partition whose active segment file was cut under it until the loss is acknowledged", function()
    local segs = segments(dir .. "/loss-0")
    local active = segs[#segs]
    local base = tonumber(active:match("(%d+)%.log$"))
    local leo = b:state().topics.loss.partitions[0].log_end_offset
    assert.is_true(leo > base + 3)
    os.execute("truncate -s 200 '" .. active .. "'") -- the first batch stays whole
    assert(kiq.wait_for(function() return loss() ~= nil end, 10000, "the cut to be found"))
    local l = loss()
    assert.are.equal(base + 1, l.from)
    assert.are.equal(leo, l.to)
    assert.matches("cut to 200 bytes under the broker", l.why)
    -- appends go on past the gap, and what is left is served
    produce(3, "after")
    local got = read_all()
    assert.are.equal(leo - (l.to - l.from) + 3, #got)
    assert.are.equal(base, got[base + 1].offset)
    assert.are.equal(leo, got[base + 2].offset)
    b:stop()
    local rc, out = verify(dir)
    assert.are.equal(1, rc, out)
    assert.matches("DAMAGED [^\n]*loss%-0: data loss not acknowledged: offsets " .. l.from .. "%.%." .. (l.to - 1), out)
    for _ = 1, 2 do -- restarts keep it, and keep what followed the cut
      assert(b:start())
      assert.are.equal(l.from, loss().from)
      assert.are.equal(#got, #read_all())
      b:stop()
    end
    assert(b:start())
    local p = assert(io.popen("build/kafkaiq verify --acknowledge '" .. dir .. "/loss-0'; echo \"<exit:$?>\""))
    out = p:read("*a")
    p:close()
    assert.matches("acknowledged the data loss of offsets", out)
    assert.matches("<exit:0>", out)
    assert(kiq.wait_for(function() return loss() == nil end, 10000, "the acknowledgement to be taken"))
    b:stop()
    assert.are.equal(0, (verify(dir)))
  end)

  it("marks a partition whose active segment file went while the broker was down", function()
    b:stop()
    local segs = segments(dir .. "/loss-0")
    local base = tonumber(segs[#segs]:match("(%d+)%.log$"))
    os.remove(segs[#segs])
    for _ = 1, 2 do
      assert(b:start())
      local l = loss()
      assert.is_not_nil(l)
      assert.are.equal(base, l.from)
      assert.are.equal(30, l.to)
      assert.matches("flushed up to 30", l.why)
      b:stop()
      local rc, out = verify(dir)
      assert.are.equal(1, rc, out)
      assert.matches("data loss not acknowledged: offsets " .. base .. "%.%.29", out)
    end
  end)

  it("keeps what follows a closed segment found cut or missing at open, and marks the loss", function()
    produce(20, "more")
    b:stop()
    local segs = segments(dir .. "/loss-0")
    assert.is_true(#segs >= 4)
    local cut_base = tonumber(segs[2]:match("(%d+)%.log$"))
    local gone_base = tonumber(segs[3]:match("(%d+)%.log$"))
    os.execute("truncate -s 200 '" .. segs[2] .. "'")
    os.remove(segs[3])
    assert(b:start())
    local st = b:state().topics.loss.partitions[0]
    assert.are.equal(50, st.log_end_offset)
    local l = st.data_loss
    assert.are.equal(cut_base + 1, l.from)
    assert.are.equal(2, l.findings)
    local got = read_all()
    for _, r in ipairs(got) do assert.is_true(r.offset <= cut_base or r.offset >= tonumber(segs[4]:match("(%d+)%.log$"))) end
    assert.are.equal(49, got[#got].offset)
    b:stop()
    local rc, out = verify(dir)
    assert.are.equal(1, rc, out)
    assert.matches("not acknowledged", out)
    assert.is_true(gone_base > cut_base)
  end)
end)
