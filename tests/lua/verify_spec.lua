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
