-- Lab 12: why it is fast. Kafka's speed is mostly what it does not do: it
-- appends to the end of a file (sequential I/O, no seeks, no in-place
-- updates), it moves records in batches (one request, one CRC, one write
-- for many records), it leaves caching to the operating system's page
-- cache (a consumer close behind the producer reads memory, not disk) and
-- sends from it without copying, and it stores the producer's compressed
-- batches as they came. Each is measured here on one broker.
--
--   build/kafkaiq run examples/labs/12_why_fast.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"

kiq.log_level("error")
local L = lab.new(12, "why it is fast")
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0", ["kafkaiq.journey.max.batches"] = 20000 })
L:page(b)
local admin = b:admin()
local function log_bytes(topic)
  local p = b:state().topics[topic].partitions[0]
  local n = 0
  for _, s in ipairs(p.segments or {}) do n = n + (s.size or 0) end
  return n, p.log_end_offset
end
local function produces() local s = b:request_stats().Produce return s and s.count or 0 end

-- an order event as JSON: keys repeat from record to record, as real ones do
local function event(i)
  return ('{"order_id":"ord-%08d","customer":"cust-%05d","status":"%s","amount_cents":%d,"currency":"EUR",' ..
          '"items":[{"sku":"sku-%04d","qty":%d}],"created_at":"2026-12-01T10:%02d:%02dZ"}')
    :format(i, i % 5000, ({ "created", "paid", "shipped" })[i % 3 + 1], 100 + (i * 37) % 90000, i % 1000, 1 + i % 4,
      math.floor(i / 60) % 60, i % 60)
end

L:step("batching: 20000 records of ~190 bytes, one per request, then batched")
local n = 20000
local function run(topic, opts)
  assert(admin:create_topics{ { name = topic, partitions = 1 } })
  local before, t0 = produces(), core.now_ms()
  local p = assert(b:producer(opts))
  for i = 1, n do
    p:send(topic, nil, event(i), { partition = 0 })
    if opts.linger_ms == 0 then assert(p:flush(5000)) end
  end
  assert(p:flush(30000))
  p:close()
  local ms = math.max(1, core.now_ms() - t0)
  -- the broker counts a request once its answer is sent, a moment after
  -- the producer may have read it
  if opts.linger_ms == 0 then kiq.wait_for(function() return produces() - before >= n end, 2000) end
  local bytes = log_bytes(topic)
  return { requests = produces() - before, ms = ms, rate = n * 1000 / ms, per_record = bytes / n }
end
local one = run("lab12-one", { acks = 1, linger_ms = 0 })
local many = run("lab12-batched", { acks = 1, linger_ms = 10, batch_size = 1048576 })
L:say("one record per request: %d Produce requests, %.0f records/s, %.1f bytes on disk per record", one.requests,
  one.rate, one.per_record)
L:say("batched:                %d Produce requests, %.0f records/s, %.1f bytes on disk per record", many.requests,
  many.rate, many.per_record)
L:say("%.0fx fewer requests, %.1fx the rate: each batch has one header, one CRC and one write for all its records",
  one.requests / many.requests, many.rate / one.rate)
L:fact("requests_one", one.requests)
L:fact("requests_batched", many.requests)
L:fact("bytes_per_record_one", math.floor(one.per_record))
L:fact("bytes_per_record_batched", math.floor(many.per_record))

L:step("sequential I/O: where each batch of lab12-one went")
local contiguous, checked = 0, 0
for off = 0, n - 1, 97 do
  local j = b:journey("lab12-one", 0, off)
  local a = j and lab.stage(j, "appended")
  local prev = off > 0 and b:journey("lab12-one", 0, off - 1)
  local pa = prev and lab.stage(prev, "appended")
  if a and pa and pa.file == a.file then
    checked = checked + 1
    if pa.position + pa.bytes == a.position then contiguous = contiguous + 1 end
  end
end
L:say("%d of %d batches checked began exactly where the one before ended: every write at the end of the segment",
  contiguous, checked)
L:fact("batches_checked", checked)
L:fact("batches_contiguous", contiguous)

L:step("the page cache: a consumer reads what was just written")
local function io_read_bytes()
  local f = io.open("/proc/self/io")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return tonumber(text:match("\nread_bytes: (%d+)"))
end
local disk0, t0, st0 = io_read_bytes(), core.now_ms(), b:state()
local cons = assert(b:consumer{ auto_offset_reset = "earliest", fetch_max_bytes = 8388608,
                                max_partition_fetch_bytes = 8388608 })
assert(cons:assign{ { topic = "lab12-batched", partition = 0, offset = 0 } })
local got = 0
assert(kiq.wait_for(function() got = got + #(cons:poll(100) or {}) return got >= n end, 30000, "the records"))
cons:close()
local st1, disk1 = b:state(), io_read_bytes()
local sent = st1.fetch_bytes.sendfile - st0.fetch_bytes.sendfile
L:say("%d records, %.1f MB, read in %d ms: sent with sendfile from the page cache, %s bytes read from the disk",
  got, sent / 1e6, core.now_ms() - t0, disk0 and tostring(disk1 - disk0) or "?")
L:fact("consumed", got)
L:fact("sendfile_bytes", sent)

L:step("compression: the producer compresses a batch once, the broker stores it as it came")
local sizes = {}
for _, codec in ipairs { "none", "gzip", "snappy", "lz4", "zstd" } do
  local topic = "lab12-" .. codec
  assert(admin:create_topics{ { name = topic, partitions = 1 } })
  local p = assert(b:producer{ acks = 1, linger_ms = 10, batch_size = 1048576, compression = codec })
  for i = 1, 5000 do p:send(topic, nil, event(i), { partition = 0 }) end
  assert(p:flush(30000))
  p:close()
  sizes[codec] = log_bytes(topic)
end
for _, codec in ipairs { "none", "gzip", "snappy", "lz4", "zstd" } do
  L:say("  %-7s %9d bytes on disk for 5000 records%s", codec, sizes[codec], codec == "none" and "" or
    (": %.1fx smaller"):format(sizes.none / sizes[codec]))
  L:fact("ratio_" .. codec, math.floor(sizes.none / sizes[codec] * 10) / 10)
end
admin:close()
L:finish()
b:stop()
