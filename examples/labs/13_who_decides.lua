-- Lab 13: who decides? The controllers are a Raft quorum (KRaft): three
-- voters elect one leader per epoch, and the leader is the active
-- controller; a metadata record counts once a majority has it in its log
-- (the quorum's high watermark). When the leader stops, the others stop
-- hearing from it: after controller.quorum.fetch.timeout.ms one asks the
-- others first whether they would vote for it (PreVote), then for their
-- votes, and leads a higher epoch. The old leader, paused meanwhile, still
-- believes it leads: it takes a write it can never commit. Once it runs
-- again, the first message of the higher epoch fences it: it follows the
-- new leader and its uncommitted write is cut from its log. Last, a
-- metadata snapshot (KIP-630): the leader writes what the committed log
-- adds up to in one file, its log then starts after it, and a voter that
-- was away while that happened copies the snapshot (FetchSnapshot) rather
-- than the log it can no longer have.
--
--   build/kafkaiq run examples/labs/13_who_decides.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"

kiq.log_level("error")
local L = lab.new(13, "who decides? the controller quorum")
local fetch_timeout = 1000
local c = assert(kiq.cluster{ brokers = 3, voters = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0",
                              ["controller.quorum.fetch.timeout.ms"] = fetch_timeout })
L:page(c)

local function views() return c:quorum_views() end
local function show(id, q)
  L:say("   voter %d: %-9s epoch %d, leader %s, log %d..%d, high watermark %d", id, q.role, q.epoch,
    q.leader < 0 and "none" or tostring(q.leader), q.log_start, q.log_end, q.high_watermark)
end
local function show_all()
  local v = views()
  for id = 0, 2 do if v[id] then show(id, v[id]) end end
end

L:step("three voters, one leader")
local q
assert(kiq.wait_for(function() q = c:quorum() return q ~= nil end, 10000, "a quorum leader"))
show_all()
L:fact("voters", #q.voters)
L:fact("first_epoch", q.epoch)
local old, old_epoch = q.leader, q.epoch
L:say("voter %d won epoch %d (a majority, its own vote among them); it is the active controller", old, old_epoch)

L:step("a topic created: one metadata batch, committed once two of three have it")
local hw_before = q.high_watermark
assert(c:admin():create_topics{ { name = "lab13-orders", partitions = 3, replication_factor = 3 } })
q = c:quorum()
L:say("the quorum's high watermark moved %d -> %d", hw_before, q.high_watermark)
for _, v in ipairs(q.voters) do
  L:say("   the leader sees voter %d at log end %d (lag %d, last fetch %d ms ago)", v.id, v.log_end, v.lag,
    v.last_fetch_ms_ago)
end

L:step("voter %d is paused (as SIGSTOP would): its clock and its Raft traffic stop", old)
c:pause(old)
local paused_at = core.now_ms()
local new
assert(kiq.wait_for(function()
  local n = c:quorum()
  if n and n.leader ~= old then new = n end
  return new ~= nil
end, 10000, "a new leader"))
local took = core.now_ms() - paused_at
L:say("after %d ms (the fetch timeout is %d ms) voter %d leads epoch %d", took, fetch_timeout, new.leader, new.epoch)
L:fact("election_ms", took)
L:fact("new_leader_differs", new.leader ~= old)
L:fact("new_epoch", new.epoch)
show_all()
local stale = views()[old]
L:say("voter %d still thinks it leads epoch %d: a stale leader", old, stale.epoch)
L:fact("stale_role", stale.role)
L:fact("stale_epoch", stale.epoch)

L:step("a write sent to the stale leader")
local a = assert(c:admin{ bootstrap = c:broker(old).bootstrap, request_timeout_ms = 6000, retries = 0 })
local res, err = a:create_topics({ { name = "lab13-lost", partitions = 1, replication_factor = 3 } },
  { timeout_ms = 3000 })
a:close()
local outcome = res and (res[1].error or "created") or err
stale = views()[old]
L:say("it appended it (log end %d) but no other voter took it: high watermark %d; the answer: %s",
  stale.log_end, stale.high_watermark, outcome)
L:fact("stale_uncommitted", stale.log_end - stale.high_watermark)
L:fact("stale_write_refused", outcome ~= "created")

L:step("voter %d runs again", old)
c:resume(old)
local fenced
assert(kiq.wait_for(function()
  local v, l = views()[old], c:quorum()
  if v.role == "follower" and l and v.epoch == l.epoch and v.log_end == l.log_end then fenced = v end
  return fenced ~= nil
end, 10000, "the stale leader fenced"))
show_all()
L:say("the higher epoch fenced it: it follows voter %d, its uncommitted write cut away", fenced.leader)
L:fact("fenced_role", fenced.role)
L:fact("fenced_epoch", fenced.epoch)
L:fact("lost_topic_exists", c:controller().topics["lab13-lost"] ~= nil)
L:fact("committed_topic_exists", c:controller().topics["lab13-orders"] ~= nil)

L:step("a metadata snapshot (KIP-630), and a voter that was away catching up from it")
local lead = c:quorum()
local away = (lead.leader + 1) % 3
for id = 0, 2 do
  if id ~= away then c:cut(id, away, { both = true }) end
end
local away_end = views()[away].log_end
assert(c:admin():create_topics{ { name = "lab13-while-away", partitions = 1, replication_factor = 2 } })
local snap = assert(c:snapshot(lead.leader))
local after = views()[lead.leader]
L:say("voter %d (cut off) ends at offset %d; the leader wrote %s: offsets below %d in one file",
  away, away_end, snap.file, snap.end_offset)
L:say("the leader's log now starts at %d: a Fetch below it is answered with the snapshot's id", after.log_start)
L:fact("snapshot_file", snap.file)
L:fact("snapshot_end", snap.end_offset)
L:fact("log_start", after.log_start)
L:fact("away_end", away_end)
for id = 0, 2 do
  if id ~= away then c:heal(id, away, { both = true }) end
end
local back
assert(kiq.wait_for(function()
  local v, l = views()[away], c:quorum()
  if l and v.log_start >= snap.end_offset and v.log_end == l.log_end then back = v end
  return back ~= nil
end, 10000, "the voter that was away caught up"))
show_all()
L:say("voter %d fetched the snapshot (FetchSnapshot), loaded it and fetches on from offset %d", away, back.log_start)
L:fact("away_log_start", back.log_start)
local mine
assert(kiq.wait_for(function()
  mine = c:broker(away):controller(true)
  return mine and mine.topics["lab13-while-away"] ~= nil
end, 10000, "the topic in the voter's metadata"))
L:fact("away_has_topic", mine.topics["lab13-orders"] ~= nil and mine.topics["lab13-while-away"] ~= nil)

c:stop()
L:finish()
