-- Lab 8: replication flow and the ISR shrinking and expanding. Followers
-- fetch from the leader like consumers do; a follower that has not caught
-- up to the leader's log end for replica.lag.time.max.ms leaves the
-- in-sync replicas (the leader asks the controller, AlterPartition), and
-- the high watermark then advances without it. Once it fetches again and
-- reaches the high watermark it is back in the ISR. The journey of a batch
-- written while it lagged shows both changes as stages, with the reason.
--
--   build/kafkaiq run examples/labs/08_isr.lua
local kiq = require "kafkaiq"
local lab = require "kafkaiq.lab"
local core = require "kafkaiq.core"

kiq.log_level("error")
local L = lab.new(8, "replication flow, ISR shrink and expand")
local lag_ms = 1500
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0",
                              ["replica.lag.time.max.ms"] = lag_ms, ["min.insync.replicas"] = 2 })
L:page(c)
local topic = "lab8-clicks"
assert(c:admin():create_topics{ { name = topic, partitions = 1, replication_factor = 3 } })
assert(c:wait_for_isr(topic, 0, 3, 10000))
assert(c:wait_for_replicas(topic, 0, 10000))
local info = c:partition(topic, 0)
local leader = c:broker(info.leader)
local follower
for _, r in ipairs(info.replicas) do if r ~= info.leader then follower = follower or r end end
local function part() return leader:state().topics[topic].partitions[0] end
local function send(acks, n)
  local p = assert(c:producer{ acks = acks, linger_ms = 0 })
  for i = 1, n do p:send(topic, nil, "click " .. i, { partition = 0 }) end
  assert(p:flush(10000))
  p:close()
end

L:step("leader broker %d; ISR [%s]; replica.lag.time.max.ms = %d", info.leader, table.concat(part().isr, ", "), lag_ms)
send("all", 100)
L:say("100 records with acks=all: every follower fetched them; HW %d", part().high_watermark)
L:fact("isr_before", #part().isr)

L:fact("lagging_follower", follower)
L:step("follower %d stops fetching (its link from the leader cut)", follower)
c:cut(info.leader, follower)
local cut_at = core.now_ms()
send(1, 50)
local s = part()
L:say("50 more with acks=1: leader LEO %d, follower %d LEO %d, HW %d", s.log_end_offset, follower,
  s.followers[follower].leo, s.high_watermark)
L:say("the HW waits for every ISR member, the lagging one too (an acks=all producer would wait with it)")
L:fact("hw_while_lagging", s.high_watermark)
L:fact("lagging_follower_leo", s.followers[follower].leo)
L:fact("leo_while_lagging", s.log_end_offset)
local function member(id)
  for _, r in ipairs(part().isr) do if r == id then return true end end
  return false
end
assert(kiq.wait_for(function() return not member(follower) end, lag_ms * 6, "the ISR to shrink"))
s = part()
L:say("after %d ms the leader took it out: ISR [%s]; HW %d (the commit no longer waits for it)",
  core.now_ms() - cut_at, table.concat(s.isr, ", "), s.high_watermark)
L:fact("isr_shrunk", #s.isr)
L:fact("hw_after_shrink", s.high_watermark)
L:fact("leo_after_shrink", s.log_end_offset)
L:fact("follower_in_isr_after_shrink", member(follower))
local ctl = c:controller().topics[topic][0]
L:say("the controller's record agrees: ISR [%s], partition epoch %d", table.concat(ctl.isr, ", "), ctl.partition_epoch)
L:fact("controller_isr_shrunk", #ctl.isr)

L:step("follower %d fetches again", follower)
c:heal(info.leader, follower)
local healed_at = core.now_ms()
assert(kiq.wait_for(function() return member(follower) end, 10000, "the ISR to expand"))
s = part()
L:say("it caught up to LEO %d and was back in the ISR %d ms later: ISR [%s]", s.followers[follower].leo,
  core.now_ms() - healed_at, table.concat(s.isr, ", "))
L:fact("isr_expanded", #s.isr)
L:fact("follower_leo_after", s.followers[follower].leo)
L:fact("leo_after", s.log_end_offset)

L:step("the journey of the last batch written while follower %d lagged", follower)
local j
assert(kiq.wait_for(function()
  j = assert(c:journey(topic, 0, 149))
  return lab.stage(j, "isr_expanded", follower)
end, 10000, "the ISR's expansion in the journey"))
L:journey(j)
local shrunk, expanded = lab.stage(j, "isr_shrunk", follower), lab.stage(j, "isr_expanded", follower)
L:fact("journey_isr_shrunk_follower", shrunk and shrunk.peer or -1)
L:fact("journey_isr_shrunk_after_ms", shrunk and shrunk.since_caught_up_ms or -1)
L:fact("journey_isr_expanded_follower", expanded.peer)
L:fact("journey_committed_after_shrink", lab.stage(j, "committed").t_ns >= (shrunk and shrunk.t_ns or math.huge))
L:finish()
c:stop()
