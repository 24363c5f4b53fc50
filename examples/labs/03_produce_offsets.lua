-- Lab 3: produce handling and offset assignment. A partition whose log
-- end offset (LEO) is 1000 receives one batch of 10 records: the leader's
-- I/O thread validates the batch, assigns it offsets 1000..1009 under the
-- log's lock, appends it to the active segment, and the LEO becomes 1010.
-- The producer never chooses offsets; the leader does, batch by batch.
--
--   build/kafkaiq run examples/labs/03_produce_offsets.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"

kiq.log_level("error")
local L = lab.new(3, "produce handling and offset assignment")
local b = assert(kiq.broker{ ["kafkaiq.http.listener"] = "127.0.0.1:0", ["num.partitions"] = 1 })
L:page(b)
local topic = "lab3-orders"
assert(b:admin():create_topics{ { name = topic, partitions = 1 } })

L:step("fill the partition to offset 1000")
local p = assert(b:producer{ acks = "all", linger_ms = 0 })
for i = 1, 1000 do p:send(topic, nil, ("filler %d"):format(i), { partition = 0 }) end
assert(p:flush(10000))
local before = b:state().topics[topic].partitions[0]
L:say("the partition's LEO is %d: the next record appended gets offset %d", before.log_end_offset, before.log_end_offset)
L:fact("leo_before", before.log_end_offset)

L:step("one batch of 10 records")
local acked = {}
local batch = assert(b:producer{ acks = "all", linger_ms = 100, batch_size = 1048576,
                                 on_delivery = function(err, r) if not err then acked[#acked + 1] = r.offset end end })
for i = 1, 10 do batch:send(topic, "order-" .. i, ("order %d"):format(i), { partition = 0 }) end
assert(batch:flush(10000))
table.sort(acked)
local j = assert(b:journey(topic, 0, before.log_end_offset))
local appended = lab.stage(j, "appended")
local validated = lab.stage(j, "validated")
L:say("the producer sent %d records in one batch; the leader's I/O thread validated it (%d records, CRC ok)",
  #acked, validated.records)
L:say("and assigned offsets %d..%d while the LEO went %d -> %d", j.first_offset, j.last_offset, appended.before,
  appended.after)
L:say("the batch went to %s at byte %d of the active segment", appended.file, appended.position)
L:say("the producer was told offsets %d..%d", acked[1], acked[#acked])
local after = b:state().topics[topic].partitions[0]
L:say("the partition's LEO is now %d, its high watermark %d (a single replica commits at once)",
  after.log_end_offset, after.high_watermark)
L:fact("batch_records", validated.records)
L:fact("first_offset", j.first_offset)
L:fact("last_offset", j.last_offset)
L:fact("appended_leo_before", appended.before)
L:fact("appended_leo_after", appended.after)
L:fact("acked_first", acked[1])
L:fact("acked_last", acked[#acked])
L:fact("acked_count", #acked)
L:fact("leo_after", after.log_end_offset)
L:fact("hw_after", after.high_watermark)
L:fact("segment_file", appended.file)

L:step("the journey of that batch")
L:journey(j)
L:finish()
p:close()
batch:close()
b:stop()
