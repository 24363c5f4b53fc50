-- Every lab in examples/labs/ run as a user runs it (build/kafkaiq run),
-- with the facts it prints asserted: the figures of the lesson's section,
-- not just a zero exit.
-- env: more variables, "NAME='value' ..."; stdin is empty, so no lab prompts.
local function run_lab(name, env)
  local facts_path = os.tmpname()
  local cmd = ("%s KAFKAIQ_LAB_FACTS=%s timeout 180 build/kafkaiq run examples/labs/%s </dev/null 2>&1; echo \"<exit:$?>\"")
    :format(env or "", facts_path, name)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("<exit:(%d+)>"))
  local facts = {}
  local f = io.open(facts_path)
  if f then
    for line in f:lines() do
      local k, v = line:match("^([%w_.]+)=(.*)$")
      if k then
        if v == "true" or v == "false" then facts[k] = v == "true" else facts[k] = tonumber(v) or v end
      end
    end
    f:close()
  end
  os.remove(facts_path)
  assert(code == 0, ("%s exited %s:\n%s"):format(name, tostring(code), out))
  assert(out:find("watch it live: http://127%.0%.0%.1:%d+/"), name .. " points at the page:\n" .. out)
  return facts, out
end

describe("labs", function()
  it("1: a record's complete journey", function()
    local f = run_lab("01_record_journey.lua")
    assert.are.equal("received,enqueued,dequeued,validated,appended", f.stages:match("^[%a_,]-appended"))
    for _, stage in ipairs { "follower_fetched", "replicated", "follower_leo", "committed", "acknowledged", "sent",
                             "records_fetched" } do
      assert.is_truthy(f.stages:find(stage, 1, true), stage .. " in " .. f.stages)
    end
    assert.are.equal(0, f.offset)
    assert.are.equal(2, f.followers_with_the_record)
    assert.is_true(f.stages_in_order)
    assert.is_true(f.committed_after_a_follower_had_it)
  end)

  it("2: the three subsystems and their threads", function()
    local f = run_lab("02_threads.lua")
    assert.are.equal(1, f.acceptors)
    assert.are.equal(3, f.processors)
    assert.are.equal(8, f.io_threads)
    assert.are.equal(1, f.purgatory)
    assert.is_true(f.log_threads >= 3, "retention, flusher and a cleaner")
    assert.are.equal(3, f.cluster_lifecycles)
    -- three partitions led one per broker: each broker follows two leaders
    assert.are.equal(6, f.cluster_fetchers)
  end)

  it("3: produce handling and offset assignment (1000 -> 1000..1009 -> 1010)", function()
    local f = run_lab("03_produce_offsets.lua")
    assert.are.equal(1000, f.leo_before)
    assert.are.equal(10, f.batch_records)
    assert.are.same({ 1000, 1009, 1000, 1010 }, { f.first_offset, f.last_offset, f.appended_leo_before,
                                                 f.appended_leo_after })
    assert.are.same({ 1000, 1009, 10 }, { f.acked_first, f.acked_last, f.acked_count })
    assert.are.same({ 1010, 1010 }, { f.leo_after, f.hw_after })
    assert.are.equal("00000000000000000000.log", f.segment_file)
  end)

  it("4: records invisible until the followers fetch (LEO 1010, followers 1008 and 1009: HW 1008 -> 1009)", function()
    local f = run_lab("04_high_watermark.lua")
    assert.are.same({ 1010, 1008, 1009, 3 }, { f.leader_leo, f.follower_a_leo, f.follower_b_leo, f.isr_size })
    assert.are.equal(1008, f.hw_stuck)
    assert.are.equal(1008, f.visible_end_before)
    -- the journeys say which follower each invisible batch waits for
    assert.are.equal("stuck", f.batch_1008_verdict)
    assert.is_true(f.batch_1008_waiting_for_a)
    assert.is_true(f.batch_1009_waiting_for_both)
    assert.is_false(f.last_batch_committed_before)
    assert.are.equal(1009, f.hw_after_a)
    assert.are.equal(1009, f.visible_end_after_a)
    assert.is_true(f.batch_1009_waiting_for_b)
    assert.are.equal(1010, f.hw_final)
    assert.are.equal(1010, f.last_batch_committed_hw_after)
    -- zero copy: every byte by sendfile; copy: every byte through memory
    assert.is_true(f.zero_copy_sendfile_bytes > 64 * 1000 * 1000)
    assert.are.same({ 0, 0 }, { f.zero_copy_copied_bytes, f.copy_sendfile_bytes })
    assert.is_true(f.copy_copied_bytes > 64 * 1000 * 1000)
    assert.are.equal(65536, f.records_each_way)
  end)

  it("5: a leadership change applied over the control plane while the data plane is full", function()
    local f = run_lab("05_control_plane.lua")
    assert.is_true(f.queue_full_everywhere)
    assert.is_true(f.applied)
    assert.is_true(f.data_queue_when_applied >= 1, "the data plane was still busy")
    assert.are.equal(0, f.client_error)
  end)

  it("6: backpressure: a full queue mutes sockets, clients wait, nothing is lost", function()
    local f = run_lab("06_backpressure.lua")
    assert.are.equal(f.queue_bound, f.deepest)
    assert.is_true(f.waited_muted >= 1, "some request waited muted")
    assert.are.same({ 60, 60, 0 }, { f.sent, f.acknowledged, f.errors })
    assert.are.same({ 60, 60 }, { f.distinct_read, f.leo })
  end)

  it("7: routing: NOT_LEADER_OR_FOLLOWER after a leader move, then the new leader", function()
    local f = run_lab("07_routing.lua")
    assert.are_not.equal(f.old_leader, f.new_leader)
    assert.is_true(f.epoch_after > f.epoch_before)
    assert.are.equal(6, f.stale_error)
    assert.are.same({ f.new_leader, f.epoch_after }, { f.hint_leader, f.hint_epoch })
    assert.are.same({ 50, 50 }, { f.acked_before, f.acked_after })
    assert.is_true(f.metadata_refreshes >= 1)
    assert.are.same({ 100, 100 }, { f.leo_new_leader, f.leo_old_leader })
  end)

  it("9: the startup sequence, clean and after a crash", function()
    local f = run_lab("09_startup.lua")
    local function position(order)
      local at = {}
      local i = 0
      for name in order:gmatch("[%a_]+") do
        i = i + 1
        at[name] = i
      end
      return at
    end
    for _, order in ipairs { f.clean_order, f.crash_order } do
      local at = position(order)
      assert.are.same({ 1, 2, 3, 4, 5 }, { at.config, at.logs, at.listeners, at.registered, at.metadata }, order)
      assert.is_true(at.replication > at.metadata and at.ready > at.metadata, order)
    end
    assert.is_true(f.clean_marker)
    assert.is_false(f.crash_marker)
    assert.is_true(f.crash_recovered_batches > f.clean_recovered_batches)
    assert.are.same({ 6, 6 }, { f.partitions_opened, f.partitions_assigned })
  end)

  it("10: the invariants hold through a crash; an unclean election loses acknowledged records", function()
    local f = run_lab("10_invariants.lua")
    assert.is_true(f.checks > 0 and f.acked > 0)
    assert.are.equal(f.acked, f.verified)
    assert.are.equal(30, f.acked_unclean)
    assert.are.equal(-1, f.offline)
    assert.are.equal(0, f.unclean_error)
    assert.is_true(f.was_out_of_sync)
    assert.is_true(f.verify_failed)
    assert.are.equal("nothing acknowledged lost", f.violation)
    assert.are.equal(20, f.lost)
    assert.are.same({ 10, 10 }, { f.new_leader_leo, f.old_leader_leo_after })
  end)

  it("12: why it is fast: batching, sequential appends, the page cache, compression", function()
    local f = run_lab("12_why_fast.lua")
    assert.are.equal(20000, f.requests_one)
    assert.is_true(f.requests_batched < 200, "batched into few requests")
    assert.is_true(f.bytes_per_record_batched < f.bytes_per_record_one, "less overhead per record")
    assert.is_true(f.batches_checked > 100)
    assert.are.equal(f.batches_checked, f.batches_contiguous)
    assert.are.equal(20000, f.consumed)
    assert.is_true(f.sendfile_bytes > 3 * 1000 * 1000)
    assert.are.equal(1, f.ratio_none)
    for _, codec in ipairs { "gzip", "snappy", "lz4", "zstd" } do
      assert.is_true(f["ratio_" .. codec] > 2, codec .. " compresses the JSON")
    end
  end)

  it("8: the ISR shrinks without a lagging follower and expands when it is back", function()
    local f = run_lab("08_isr.lua")
    assert.are.equal(3, f.isr_before)
    assert.are.same({ 100, 100, 150 }, { f.hw_while_lagging, f.lagging_follower_leo, f.leo_while_lagging })
    assert.are.same({ 2, 2 }, { f.isr_shrunk, f.controller_isr_shrunk })
    assert.is_false(f.follower_in_isr_after_shrink)
    assert.are.equal(150, f.hw_after_shrink)
    assert.are.same({ 3, 150 }, { f.isr_expanded, f.follower_leo_after })
    -- a batch written meanwhile: its journey has both, the lagging follower named
    assert.are.equal(f.lagging_follower, f.journey_isr_shrunk_follower)
    assert.are.equal(f.lagging_follower, f.journey_isr_expanded_follower)
    assert.is_true(f.journey_isr_shrunk_after_ms > 1500)
    assert.is_true(f.journey_committed_after_shrink)
  end)

  it("11: why this architecture, each claim measured", function()
    local f = run_lab("11_why_this_architecture.lua")
    -- an I/O thread in a slow fsync: another connection read and answered meanwhile
    assert.is_true(f.slow_fsync_ms >= 600)
    assert.is_true(f.other_read_during_fsync)
    assert.is_true(f.other_answered_during_fsync)
    -- the queue at its bound, the rest muted, all acknowledged
    assert.are.same({ 2, 2, 8 }, { f.queue_bound, f.queue_deepest, f.queue_acked })
    assert.is_true(f.queue_waited_muted >= 1, "some request waited muted")
    -- a thousand waiting fetches (fewer only where descriptors are short), not one thread more, all woken by one append
    assert.is_true(f.waiting_fetches >= 250)
    assert.are.same({ f.waiting_fetches, 0, f.waiting_fetches },
      { f.purgatory_waiting, f.threads_added_by_waiting_fetches, f.fetches_answered })
    assert.are.equal(99, f.appends_contiguous)
    assert.is_true(f.zero_copy_sendfile_bytes > 0)
    assert.are.equal(0, f.zero_copy_copied_bytes)
    assert.are.same({ 20, 0, 2, 6 }, { f.leader_produces, f.follower_produces, f.followers_pulled,
                                       f.produce_to_follower_error })
  end)

  it("18: acks=0, 1 and all on the same stream, the leader killed after the ack", function()
    local f = run_lab("18_acks_levels.lua")
    assert.is_true(f.acks_0_no_response)
    assert.is_true(f.acks_all_answered_after_commit)
    -- acks=1: what only the leader had is gone; acks=all: nothing is
    assert.are.same({ 10, 10 }, { f.acks_1_acknowledged, f.acks_1_lost })
    assert.are.same({ 10, 0 }, { f.acks_all_acknowledged, f.acks_all_lost })
    -- acks=0: records the producer counted delivered, not in the log
    assert.is_true(f.acks_0_lost >= 1 and f.acks_0_lost <= f.acks_0_reported_delivered)
  end)

  it("19: the takeaways as a self-check, a learner's answers checked against the live broker", function()
    -- four right, one wrong (an acks=all record is not acknowledged while an ISR member is away)
    local f = run_lab("19_self_check.lua", "KAFKAIQ_LAB_ANSWERS='100..104;0-104;B;yes;0 to 110'")
    assert.are.same({ "100-104", "100-104" }, { f.q1_answer, f.q1_evidence })
    -- B paused at 105 while the leader and A reach 110: 105..109 invisible
    assert.are.same({ "0-104", 104, 110 }, { f.q2_answer, f.q2_readable_last, f.q2_leo })
    assert.are.equal("B", f.q3_answer)
    assert.are.same({ "no", 7, 111 }, { f.q4_answer, f.q4_error, f.q4_leo }) -- REQUEST_TIMED_OUT, yet appended
    assert.are.same({ "0-110", 110 }, { f.q5_answer, f.q5_readable_last })
    assert.are.same({ true, true, true, false, true }, { f.q1_correct, f.q2_correct, f.q3_correct, f.q4_correct,
                                                         f.q5_correct })
    assert.are.same({ 4, 5 }, { f.right, f.questions })
  end)

  it("20: the checklist as a live tour", function()
    local f = run_lab("20_checklist_tour.lua")
    assert.is_true(f.listeners_distinct)
    assert.are.same({ 3, 8, 100 }, { f.network_threads, f.io_threads, f.queue_bound })
    -- every segment a .log, an .index and a .timeindex; retention deleted the oldest
    assert.is_true(f.segments >= 2)
    assert.are.same({ f.segments, f.segments, f.segments }, { f.log_files, f.index_files, f.timeindex_files })
    assert.are.same({ 3, true }, { f.isr, f.hw_is_leo })
    assert.are.same({ 3, 3, true }, { f.voters, f.live_brokers, f.controller_agrees })
    assert.are.equal(2, f.min_insync)
    assert.is_true(f.log_start > 0)
    assert.is_true(f.first_segment_is_log_start)
    assert.is_true(f.size_within_retention)
  end)

  it("13: who decides? an election, a stale leader fenced, a snapshot fetched", function()
    local f = run_lab("13_who_decides.lua")
    assert.are.equal(3, f.voters)
    assert.is_true(f.new_leader_differs)
    assert.is_true(f.new_epoch > f.first_epoch)
    assert.are.same({ "leader", f.first_epoch }, { f.stale_role, f.stale_epoch })
    -- not before the fetch timeout, counted from the leader's last answer,
    -- which may have come a held fetch's wait (a quarter of it) before the pause
    assert.is_true(f.election_ms >= 700)
    assert.is_true(f.stale_uncommitted >= 1)
    assert.is_true(f.stale_write_refused)
    assert.are.same({ "follower", f.new_epoch }, { f.fenced_role, f.fenced_epoch })
    assert.is_false(f.lost_topic_exists)
    assert.is_true(f.committed_topic_exists)
    -- the snapshot: its file named by its end offset, the log starting
    -- there past the voter that was away, which then loaded it
    assert.are.equal(("%020d-%010d.checkpoint"):format(f.snapshot_end, f.new_epoch), f.snapshot_file)
    assert.are.equal(f.snapshot_end, f.log_start)
    assert.is_true(f.away_end < f.log_start)
    assert.is_true(f.away_log_start >= f.snapshot_end)
    assert.is_true(f.away_has_topic)
  end)

  it("14: moving a replica, the new one caught up before the old one goes", function()
    local f = run_lab("14_moving_a_replica.lua")
    assert.are.equal(200, f.records)
    assert.are.equal(0, f.alter_error)
    local leader, new, leaving = f.replicas_while_moving:match("^(%d+),(%d+),(%d+)$")
    assert.is_truthy(leader, f.replicas_while_moving)
    assert.are.same({ tonumber(new), tonumber(leaving) }, { f.adding, f.removing }) -- one id each: read as numbers
    assert.are.equal(2, f.isr_while_moving)
    assert.are.equal(leader .. "," .. new, f.replicas_after)
    assert.are.equal(200, f.copied)
    assert.is_false(f.listed_after)
    assert.is_true(f.old_log_deleted)
  end)

  it("15: the consumer protocol, revocation before assignment", function()
    local f = run_lab("15_consumer_protocol.lua")
    assert.are.equal("0,1,2,3", f.a_first)
    assert.are.equal(f.group_epoch_one_member, f.a_join_epoch)
    -- B's join bumps the group epoch once; B is at it at once, owning
    -- nothing: its target is still A's
    assert.are.equal(f.group_epoch_one_member + 1, f.group_epoch_two_members)
    assert.are.equal(f.group_epoch_two_members, f.b_join_epoch)
    assert.are.equal(0, f.b_owns_at_join)
    assert.are.equal("unreleased_partitions", f.b_state_at_join)
    local split = {}
    for p in (f.a_target .. "," .. f.b_target):gmatch("%d") do split[#split + 1] = tonumber(p) end
    table.sort(split)
    assert.are.same({ 0, 1, 2, 3 }, split)
    -- A keeps its old epoch while it revokes; B gets nothing meanwhile
    assert.are.equal(f.a_join_epoch, f.a_epoch_revoking)
    assert.are.equal("unrevoked_partitions", f.a_state_revoking)
    assert.are.equal(f.b_target, f.a_to_revoke)
    assert.are.equal(0, f.b_owns_before_release)
    assert.are.equal(f.group_epoch_two_members, f.a_epoch_after)
    assert.are.equal(f.b_target, f.b_owns_after)
    assert.are.equal("Stable", f.state_after)
    assert.are.equal(110, f.fenced_error) -- FENCED_MEMBER_EPOCH
    assert.are.equal(0, f.old_epoch_commit_error) -- held since that epoch (KIP-1251)
    assert.are.equal(113, f.stale_commit_error) -- STALE_MEMBER_EPOCH
    assert.are.equal(f.group_epoch_two_members + 1, f.group_epoch_last)
    assert.are.equal(f.group_epoch_last, f.a_epoch_last)
    assert.are.equal("0,1,2,3", f.a_last)
  end)

  it("16: transactions v2, partitions added by the produce, an epoch per transaction", function()
    local f = run_lab("16_transactions_v2.lua")
    assert.are.equal(2, f.transaction_version)
    assert.are.equal(0, f.init_epoch)
    -- the produce alone added its partition and began the transaction
    assert.are.equal(0, f.first_produce_error)
    assert.are.equal("Ongoing", f.state_after_produce)
    assert.are.equal(0, f.partitions_after_produce) -- the facts file reads back a number
    assert.are.equal("0,1", f.partitions_after_second)
    -- the commit bumps the epoch; the marker carries the new one
    assert.are.equal(0, f.commit_error)
    assert.are.equal(f.init_epoch + 1, f.commit_epoch)
    assert.are.equal(2, f.log0_batches)
    assert.are.equal(f.init_epoch, f.log0_data_epoch)
    assert.are.same({ "COMMIT", f.commit_epoch }, { f.log0_marker, f.log0_marker_epoch })
    -- the old epoch fenced, nothing written; the same end again a retry
    assert.are.equal(47, f.old_epoch_error) -- INVALID_PRODUCER_EPOCH
    assert.are.equal(2, f.log0_after_old)
    assert.are.equal(f.commit_epoch, f.retry_epoch)
    -- the abort: one epoch more, its marker, one aborted transaction
    assert.are.equal(f.commit_epoch + 1, f.abort_epoch)
    assert.are.same({ "ABORT", f.abort_epoch }, { f.log0_last_marker, f.log0_last_marker_epoch })
    assert.are.equal(1, f.aborted_transactions)
    assert.are.equal(90, f.stale_end_error) -- PRODUCER_FENCED
  end)

  it("17: share groups, one partition shared, locks, redelivery and the delivery limit", function()
    local f = run_lab("17_share_groups.lua")
    assert.are.equal(0, f.configs_error)
    assert.are.same({ 0, 0 }, { f.worker1_partitions, f.worker2_partitions }) -- both given partition 0
    -- disjoint ranges of the one partition: first-last(delivery count)
    assert.are.same({ "0-2(1)", "3-5(1)" }, { f.worker1_acquired, f.worker2_acquired })
    assert.are.equal(0, f.start_offset_first)
    assert.are.equal("0-0(2)", f.released_redelivered)
    assert.are.same({ 0, 0 }, { f.reject_error, f.accept_error })
    assert.are.equal(1, f.start_offset_after_reject)
    -- the expired lock: available again, one delivery more; the old holder's ack refused
    assert.are.equal("1-2(2)", f.after_lock_expiry)
    assert.are.equal(121, f.late_ack_error) -- INVALID_RECORD_STATE
    -- the delivery limit (3) archives
    assert.are.equal("1-2(3)", f.third_delivery)
    assert.are.equal("none", f.after_limit)
    assert.are.same({ 1, 6 }, { f.start_offset_before_accept, f.start_offset_after_accept })
    -- offset 2's journey names each member that acquired it
    assert.are.equal("worker-1,worker-2,worker-1", f.journey_acquired_by)
    assert.are.equal(1, f.journey_lock_expired)
    assert.is_true(f.journey_archived_at_limit)
  end)
end)
