-- Partitioners: function(key, partition_count[, record]) -> partition in
-- [0, partition_count). The built-ins match the real clients' own, so the
-- same key lands on the same partition whichever client produced it.
--
-- Null keys: the built-ins pick a uniformly random partition. That is what
-- librdkafka's murmur2_random and consistent_random do; the Java producer
-- (2.4+) instead sticks to one partition per batch for null keys, which no
-- per-record function can reproduce.

local bit = require "bit"
local core = require "kafkaiq.core"

local M = {}

local function check(key, n, level)
  if key ~= nil and type(key) ~= "string" then
    error("partitioner: key must be a string or nil, got " .. type(key), level + 1)
  end
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) or n >= 2 ^ 31 then
    error("partitioner: partition count must be a positive integer, got " .. tostring(n), level + 1)
  end
end

-- random(key, n) -> a uniformly random partition, whatever the key.
function M.random(key, n)
  check(key, n, 2)
  return math.random(0, n - 1)
end

-- murmur2(key, n) -> (murmur2(key) & 0x7fffffff) % n: the Java client's
-- default for keyed records (toPositive, not abs) and librdkafka's
-- murmur2/murmur2_random. A nil key gets a random partition.
function M.murmur2(key, n)
  check(key, n, 2)
  if key == nil then return math.random(0, n - 1) end
  return bit.band(core.murmur2(key), 0x7fffffff) % n
end

-- consistent_random(key, n) -> crc32(key) % n: librdkafka's default
-- partitioner (and kcat's). A nil or empty key gets a random partition.
function M.consistent_random(key, n)
  check(key, n, 2)
  if key == nil or key == "" then return math.random(0, n - 1) end
  return core.crc32(key) % n
end

-- consistent(key, n) -> crc32(key) % n always, as librdkafka's "consistent";
-- a nil key hashes like the empty string (partition 0).
function M.consistent(key, n)
  check(key, n, 2)
  return core.crc32(key or "") % n
end

-- The partitioners producers accept by name, with librdkafka's aliases.
M.by_name = {
  murmur2 = M.murmur2, murmur2_random = M.murmur2,
  consistent_random = M.consistent_random, consistent = M.consistent,
  random = M.random,
}

-- get(name_or_function) -> partitioner function | nil, err.
function M.get(p)
  if type(p) == "function" then return p end
  local f = M.by_name[p]
  if not f then
    local names = {}
    for k in pairs(M.by_name) do names[#names + 1] = k end
    table.sort(names)
    return nil, ("unknown partitioner '%s' (known: %s)"):format(tostring(p), table.concat(names, ", "))
  end
  return f
end

-- spread(partitioner, keys, n) -> { counts = {[0] = c0, ..., [n-1] = c}, total,
-- min, max, mean, skew = max / mean, stddev (population) }.
-- partitioner: a function or a built-in's name; keys: a list of strings.
-- Raises when the partitioner returns something other than an integer in [0, n).
function M.spread(partitioner, keys, n)
  local f, err = M.get(partitioner)
  if not f then error("spread: " .. err, 2) end
  if type(keys) ~= "table" then error("spread: list of keys expected, got " .. type(keys), 2) end
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then
    error("spread: partition count must be a positive integer, got " .. tostring(n), 2)
  end
  local counts = {}
  for p = 0, n - 1 do counts[p] = 0 end
  local total = #keys
  for i = 1, total do
    local p = f(keys[i], n)
    if counts[p] == nil then
      error(("spread: partitioner returned %s for key %d (expected an integer in [0, %d])")
        :format(tostring(p), i, n - 1), 2)
    end
    counts[p] = counts[p] + 1
  end
  local min, max = math.huge, -math.huge
  for p = 0, n - 1 do
    if counts[p] < min then min = counts[p] end
    if counts[p] > max then max = counts[p] end
  end
  local mean = total / n
  local var = 0
  for p = 0, n - 1 do var = var + (counts[p] - mean) ^ 2 end
  return {
    counts = counts, total = total, min = min, max = max, mean = mean,
    skew = mean > 0 and max / mean or 0, stddev = math.sqrt(var / n),
  }
end

return M
