-- Prototype a partitioner and compare it with the Java client's murmur2 on a
-- set of keys: how evenly each spreads them, and how many keys the two place
-- on the same partition. Then produce with it and check where records land.
--
--   build/kafkaiq run examples/partitioner_compare.lua [keyfile] [partitions]
-- keyfile: one key per line (default: 10,000 generated order-like keys).
local kiq = require "kafkaiq"
local partitioners = require "kafkaiq.partitioner"

local keyfile, n = arg and arg[1], tonumber(arg and arg[2]) or 6
local keys = {}
if keyfile then
  for line in assert(io.open(keyfile)):lines() do keys[#keys + 1] = line end
else
  local r = kiq.random(1)
  for i = 1, 10000 do keys[i] = ("customer-%d/order-%d"):format(r:int(1, 300), i) end
end

-- The prototype: route by the customer part of the key only, so one
-- customer's orders stay together whatever the order id.
local function by_customer(key, count)
  local customer = key and key:match("^([^/]+)/") or key
  return partitioners.murmur2(customer, count)
end

local function report(name, p)
  local s = partitioners.spread(p, keys, n)
  local counts = {}
  for i = 0, n - 1 do counts[#counts + 1] = s.counts[i] end
  print(("%-12s counts %s  skew %.3f  stddev %.1f"):format(name, table.concat(counts, " "), s.skew, s.stddev))
end

report("murmur2", partitioners.murmur2)
report("by_customer", by_customer)
local same = 0
for _, k in ipairs(keys) do
  if by_customer(k, n) == partitioners.murmur2(k, n) then same = same + 1 end
end
print(("%d of %d keys land on the same partition with both"):format(same, #keys))

-- The prototype as a real producer's partitioner, checked on the broker.
kiq.log_level("warn")
local b = assert(kiq.broker{ ["num.partitions"] = n })
local placed = {}
local p = b:producer{ partitioner = by_customer, on_delivery = function(err, r)
  assert(not err, err)
  placed[r.key] = r.partition
end }
for i = 1, 200 do assert(p:send("orders", keys[i], "v")) end
assert(p:flush(10000))
for i = 1, 200 do assert(placed[keys[i]] == by_customer(keys[i], n), keys[i]) end
print("200 records produced; each landed where by_customer said")
p:close()
b:stop()
