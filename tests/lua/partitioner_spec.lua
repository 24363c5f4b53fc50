-- Specs for kafkaiq.partitioner: the built-ins against published hash
-- vectors, null-key handling, argument checks, and the spread report.

package.cpath = "build/lua/?.so;" .. package.cpath

local P = require "kafkaiq.partitioner"

-- Kafka's own murmur2 test vectors (UtilsTest), as signed 32-bit hashes.
local MURMUR2 = {
  ["21"] = -973932308,
  ["foobar"] = -790332482,
  ["a-little-bit-long-string"] = -985981536,
  ["a-little-bit-longer-string"] = -1486304829,
  ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"] = -58897971,
  ["abc"] = 479470107,
}

-- Java's toPositive: clear the sign bit (not abs()).
local function to_positive(h)
  return h < 0 and h + 2 ^ 31 or h
end

describe("partitioner.murmur2", function()
  it("is (murmur2(key) & 0x7fffffff) % n for Kafka's test vectors", function()
    for key, h in pairs(MURMUR2) do
      for _, n in ipairs({ 1, 3, 7, 100, 2 ^ 31 - 1 }) do
        assert.equals(to_positive(h) % n, P.murmur2(key, n), key .. " % " .. n)
      end
    end
  end)

  it("gives known partitions", function()
    assert.equals(3, P.murmur2("21", 7))
    assert.equals(0, P.murmur2("foobar", 7))
    assert.equals(4, P.murmur2("abc", 7))
    assert.equals(66, P.murmur2("foobar", 100))
  end)

  it("hashes bytes, including NUL and high bytes", function()
    local k1, k2 = "a\0b\255", "a\0b\254"
    local p1, p2 = P.murmur2(k1, 2 ^ 31 - 1), P.murmur2(k2, 2 ^ 31 - 1)
    assert.is_true(p1 >= 0 and p2 >= 0)
    assert.are_not.equal(p1, p2)
  end)

  it("puts a nil key on a random partition in range", function()
    local seen, count = {}, 0
    for _ = 1, 200 do
      local p = P.murmur2(nil, 4)
      assert.is_true(p >= 0 and p < 4 and p == math.floor(p))
      if not seen[p] then count = count + 1 end
      seen[p] = true
    end
    assert.is_true(count > 1, "200 nil keys all on one partition")
  end)
end)

describe("partitioner.consistent_random", function()
  it("is crc32(key) % n", function()
    -- crc32("123456789") = 0xCBF43926, the standard check value
    assert.equals(3421780262 % 7, P.consistent_random("123456789", 7))
    assert.equals(3421780262 % 1000, P.consistent_random("123456789", 1000))
  end)

  it("puts nil and empty keys on random partitions in range", function()
    for _, key in ipairs({ false, "" }) do
      local seen, count = {}, 0
      for _ = 1, 200 do
        local p = P.consistent_random(key or nil, 5)
        assert.is_true(p >= 0 and p < 5)
        if not seen[p] then count = count + 1 end
        seen[p] = true
      end
      assert.is_true(count > 1)
    end
  end)
end)

describe("partitioner.consistent", function()
  it("is crc32(key) % n, with nil hashing like the empty string", function()
    assert.equals(3421780262 % 7, P.consistent("123456789", 7))
    for _ = 1, 20 do assert.equals(0, P.consistent(nil, 7)) end
    assert.equals(0, P.consistent("", 7))
  end)
end)

describe("partitioner.random", function()
  it("stays in range", function()
    for _ = 1, 100 do
      local p = P.random("k", 3)
      assert.is_true(p >= 0 and p < 3)
    end
  end)
end)

describe("partitioner argument checks", function()
  for _, name in ipairs({ "murmur2", "consistent_random", "consistent", "random" }) do
    it(name .. " refuses bad partition counts and keys", function()
      local f = P[name]
      for _, n in ipairs({ 0, -1, 1.5, 2 ^ 31 }) do
        assert.has_error(function() f("k", n) end, "partitioner: partition count must be a positive integer, got " .. tostring(n))
      end
      assert.has_error(function() f("k", "3") end)
      assert.has_error(function() f(42, 3) end, "partitioner: key must be a string or nil, got number")
    end)
  end
end)

describe("partitioner.get", function()
  it("finds built-ins by name, librdkafka's aliases included", function()
    assert.equals(P.murmur2, P.get("murmur2"))
    assert.equals(P.murmur2, P.get("murmur2_random"))
    assert.equals(P.consistent_random, P.get("consistent_random"))
    assert.equals(P.consistent, P.get("consistent"))
    assert.equals(P.random, P.get("random"))
  end)

  it("passes functions through", function()
    local f = function() return 0 end
    assert.equals(f, P.get(f))
  end)

  it("answers nil, err for an unknown name", function()
    local f, err = P.get("sticky")
    assert.is_nil(f)
    assert.matches("unknown partitioner 'sticky'", err, 1, true)
    assert.matches("murmur2", err, 1, true)
  end)
end)

describe("partitioner.spread", function()
  local keys = {}
  for i = 1, 1000 do keys[i] = "key-" .. i end

  it("counts every partition, empty ones included", function()
    local s = P.spread(function() return 0 end, keys, 4)
    assert.same({ [0] = 1000, 0, 0, 0 }, s.counts)
    assert.equals(1000, s.total)
    assert.equals(0, s.min)
    assert.equals(1000, s.max)
    assert.equals(250, s.mean)
    assert.equals(4, s.skew)
    assert.is_true(math.abs(s.stddev - math.sqrt((750 ^ 2 + 3 * 250 ^ 2) / 4)) < 1e-9)
  end)

  it("reports a perfect spread as skew 1 and stddev 0", function()
    local i = -1
    local s = P.spread(function(_, n) i = i + 1; return i % n end, keys, 8)
    assert.equals(125, s.min)
    assert.equals(125, s.max)
    assert.equals(1, s.skew)
    assert.equals(0, s.stddev)
  end)

  it("takes a built-in's name, and murmur2 spreads keys evenly", function()
    local s = P.spread("murmur2", keys, 10)
    local sum = 0
    for p = 0, 9 do sum = sum + s.counts[p] end
    assert.equals(1000, sum)
    assert.is_true(s.skew < 1.5, "skew " .. s.skew)
    assert.is_true(s.min > 50, "min " .. s.min)
  end)

  it("gives zeros for no keys", function()
    local s = P.spread("consistent", {}, 3)
    assert.equals(0, s.total)
    assert.equals(0, s.skew)
    assert.equals(0, s.max)
  end)

  it("raises when the partitioner returns something out of range", function()
    for _, bad in ipairs({ -1, 4, 1.5, "1" }) do
      assert.has_error(function() P.spread(function() return bad end, keys, 4) end,
        ("spread: partitioner returned %s for key 1 (expected an integer in [0, 3])"):format(tostring(bad)))
    end
    assert.has_error(function() P.spread(function() end, keys, 4) end)
  end)

  it("raises on bad arguments", function()
    assert.has_error(function() P.spread("nope", keys, 4) end)
    assert.has_error(function() P.spread("murmur2", "keys", 4) end, "spread: list of keys expected, got string")
    assert.has_error(function() P.spread("murmur2", keys, 0) end)
  end)
end)
