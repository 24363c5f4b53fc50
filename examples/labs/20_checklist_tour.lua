-- Lab 20: the checklist as a live tour (the lesson's section 14). The
-- things to know about a broker, each shown on a running cluster of three
-- with where to look on the live page: listeners, threads, the queue bound,
-- log segments and their indexes, replication and the ISR, the high
-- watermark, the controller, acks with min.insync.replicas, retention.
--
--   KAFKAIQ_LAB_HOLD=120 build/kafkaiq run examples/labs/20_checklist_tour.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"

kiq.log_level("error")
local L = lab.new(20, "the checklist as a live tour")
-- three voters, as `serve --brokers 3` runs
local c = assert(kiq.cluster{ brokers = 3, voters = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0", ["num.network.threads"] = 3,
                              ["num.io.threads"] = 8, ["queued.max.requests"] = 100, ["min.insync.replicas"] = 2,
                              ["log.retention.check.interval.ms"] = 100 })
L:page(c)
local topic = "lab20-tour"
local admin = c:admin()
assert(admin:create_topics{ { name = topic, partitions = 1, replication_factor = 3,
                              configs = { ["segment.bytes"] = "4096", ["retention.bytes"] = "8192" } } })
assert(c:wait_for_isr(topic, 0, 3, 10000))
local leader_id = c:partition(topic, 0).leader
local leader = c:broker(leader_id)
local p = assert(c:producer{ acks = "all", linger_ms = 5, batch_size = 1024 })
for i = 1, 400 do p:send(topic, ("k%03d"):format(i % 50), ("reading %d: 21.%d C"):format(i, i % 10), { partition = 0 }) end
assert(p:flush(10000))
p:close()
assert(c:wait_for_replicas(topic, 0, 10000))
L:say("%s-0 on brokers 0, 1 and 2, leader %d; 400 records written with acks=all", topic, leader_id)
local function look(where) L:say("   on the page: %s", where) end
local st = leader:state()
local part = st.topics[topic].partitions[0]

L:step("1. listeners")
L:say("clients: the Kafka listener on port %d (its acceptor has taken %d connections)", st.port, st.acceptor.accepted)
L:say("the controller: a control-plane listener of its own on port %d, its own queue (depth %d)", st.control_port,
  st.control_plane.depth)
L:say("people: the HTTP listener at http://%s/ (this page, /metrics, /api/state)", leader.http)
look(("broker %d's heading and network layer (acceptor port); the control plane under its request queue"):format(
  leader_id))
L:fact("listeners_distinct", st.port ~= st.control_port and st.acceptor.port == st.port)

L:step("2. threads")
local per = {}
for _, pr in ipairs(st.processors) do per[#per + 1] = pr.connections end
L:say("num.network.threads = %d processors, each its own event loop over its connections (now %s)", #st.processors,
  table.concat(per, ", "))
L:say("num.io.threads = %d I/O threads, busy %.1f%% of the time since start", st.io.threads,
  100 * st.io.busy_ns / math.max(1, st.io.up_ns * st.io.threads))
look("the network layer (one line per processor) and the I/O threads box")
L:fact("network_threads", #st.processors)
L:fact("io_threads", st.io.threads)

L:step("3. the request queue's bound")
L:say("queued.max.requests = %d: depth now %d; when full, processors stop reading (muted) instead of queueing more",
  st.request_queue.bound, st.request_queue.depth)
for _, api in ipairs { "Produce", "Fetch" } do
  local w = st.request_queue.waits[api]
  if w and w.count > 0 then
    L:say("  %s requests waited in it: median %.3f ms, p99 %.3f ms (%d served)", api, w.p50_ms, w.p99_ms, w.count)
  end
end
look("the request queue box: its bar against the bound, the muted count")
L:fact("queue_bound", st.request_queue.bound)

L:step("4. log segments and their indexes")
assert(kiq.wait_for(function()
  local pt = leader:state().topics[topic].partitions[0]
  return pt.log_start_offset > 0 and pt.size <= 8192 + 4096
end, 10000, "retention to delete the oldest segments"))
st = leader:state()
part = st.topics[topic].partitions[0]
local dir = st.log_dirs[1].path .. "/" .. topic .. "-0"
local files = { log = 0, index = 0, timeindex = 0 }
local names = {}
local ls = assert(io.popen(("ls %q"):format(dir)))
for name in ls:lines() do
  local ext = name:match("^%d+%.(%a+)$")
  if ext and files[ext] then files[ext] = files[ext] + 1 end
  names[#names + 1] = name
end
ls:close()
L:say("%s (segment.bytes=4096):", dir)
L:say("  %s", table.concat(names, " "))
L:say("%d segments, each a .log (batches as on the wire), a sparse .index (offset -> byte) and a .timeindex",
  part.segment_count)
L:say("(time -> offset), named by its first offset; the newest is the active one, the only one written")
look("the partitions table: the segments column, the active one marked")
L:fact("segments", part.segment_count)
L:fact("log_files", files.log)
L:fact("index_files", files.index)
L:fact("timeindex_files", files.timeindex)

L:step("5. replication and the ISR")
local followers = {}
for id, f in pairs(part.followers) do followers[#followers + 1] = ("broker %s at %d"):format(id, f.leo) end
table.sort(followers)
L:say("replicas [%s], ISR [%s]; the leader at LEO %d, its followers (who fetch from it): %s",
  table.concat(part.replicas, ", "), table.concat(part.isr, ", "), part.log_end_offset, table.concat(followers, ", "))
look("the partitions table: one row per replica, ISR and followers' LEO (lag); the replication box")
L:fact("isr", #part.isr)

L:step("6. the high watermark")
L:say("high watermark %d = log end %d: every record committed, all of it readable; a follower behind would hold it",
  part.high_watermark, part.log_end_offset)
look("the partitions table: log end, high watermark and the records not yet committed")
L:fact("hw_is_leo", part.high_watermark == part.log_end_offset)

L:step("7. the controller")
local q = c:broker(0):state().quorum
local ctl = c:controller()
local live = 0
for _, b in pairs(ctl.brokers) do if not b.fenced then live = live + 1 end end
L:say("the controller quorum: %d voters (a majority decides), leader %d in epoch %d, its metadata log committed to %d", #q.voters,
  q.leader, q.epoch, q.high_watermark)
L:say("it keeps %d brokers registered and live (heartbeating), and decides each partition's leader and ISR:", live)
L:say("  %s-0: leader %d, leader epoch %d, ISR [%s]", topic, ctl.topics[topic][0].leader,
  ctl.topics[topic][0].leader_epoch, table.concat(ctl.topics[topic][0].isr, ", "))
look("the controller and the controller quorum sections")
L:fact("voters", #q.voters)
L:fact("live_brokers", live)
L:fact("controller_agrees", ctl.topics[topic][0].leader == leader_id)

L:step("8. acks and min.insync.replicas")
local cfg = assert(admin:describe_configs{ { type = "topic", name = topic, keys = { "min.insync.replicas" } } })
local mir = cfg[1].configs["min.insync.replicas"]
L:say("min.insync.replicas = %s (%s): an acks=all write needs %s replicas in the ISR, and waits for all of them",
  mir.value, mir.source, mir.value)
L:say("the ISR has %d, so acks=all is accepted; with fewer it would answer NOT_ENOUGH_REPLICAS. acks=1 waits for the", #part.isr)
L:say("leader's append alone, acks=0 for nothing (lab 18)")
look("a record's journey: acknowledged after committed at acks=all")
L:fact("min_insync", tonumber(mir.value))

L:step("9. retention")
cfg = assert(admin:describe_configs{ { type = "topic", name = topic, keys = { "retention.bytes", "retention.ms" } } })
L:say("retention.bytes = %s, retention.ms = %s: the log manager deletes whole old segments, never records",
  cfg[1].configs["retention.bytes"].value, cfg[1].configs["retention.ms"].value)
L:say("of the 400 records, offsets %d..%d remain (%d bytes): the log start offset moved to %d", part.log_start_offset,
  part.log_end_offset - 1, part.size, part.log_start_offset)
look("the partitions table: log start and size")
L:fact("log_start", part.log_start_offset)
L:fact("first_segment_is_log_start", part.segments[1].base_offset == part.log_start_offset)
L:fact("size_within_retention", part.size <= 8192 + 4096)
admin:close()
L:finish()
c:stop()
