-- core.encode_data / core.decode_data: Kafka's data messages (consumer
-- protocol payloads, __consumer_offsets records) as Lua tables. Run from the
-- repo root after `make`:
--   luajit /usr/bin/busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' tests/lua/data_messages_spec.lua

local core = require "kafkaiq.core"

describe("data messages", function()
  it("round-trips a ConsumerProtocolSubscription v1 with owned partitions", function()
    local sub = {
      topics = { "orders", "payments" },
      user_data = "\0\1\2",
      owned_partitions = { { topic = "orders", partitions = { 0, 2 } } },
    }
    local bytes = assert(core.encode_data("ConsumerProtocolSubscription", 1, sub))
    local back = assert(core.decode_data("ConsumerProtocolSubscription", 1, bytes))
    assert.same(sub, back)
    -- v0 has no owned_partitions: they are not written, nor read back
    local v0 = assert(core.encode_data("ConsumerProtocolSubscription", 0, sub))
    assert.is_true(#v0 < #bytes)
    local back0 = assert(core.decode_data("ConsumerProtocolSubscription", 0, v0))
    assert.same({ "orders", "payments" }, back0.topics)
    assert.is_nil(back0.owned_partitions)
  end)

  it("round-trips a ConsumerProtocolAssignment and matches Kafka's layout", function()
    local asg = { assigned_partitions = { { topic = "t", partitions = { 0, 3 } } } }
    local bytes = assert(core.encode_data("ConsumerProtocolAssignment", 0, asg))
    -- count 1, "t", [0, 3], user_data null (the default)
    assert.equal("\0\0\0\1" .. "\0\1t" .. "\0\0\0\2\0\0\0\0\0\0\0\3" .. "\255\255\255\255", bytes)
    local back = assert(core.decode_data("ConsumerProtocolAssignment", 0, bytes))
    assert.same(asg, back)
    assert.is_nil(back.user_data)
  end)

  it("fills defaults for fields a version lacks", function()
    local bytes = assert(core.encode_data("OffsetCommitValue", 3,
      { offset = 42, metadata = "", commit_timestamp = 1700000000000 }))
    local back = assert(core.decode_data("OffsetCommitValue", 3, bytes))
    assert.equal(42, back.offset)
    assert.equal(-1, back.leader_epoch)
    assert.equal(1700000000000, back.commit_timestamp)
    assert.is_nil(back.expire_timestamp) -- only in v1
  end)

  it("raises for an unknown name, a version out of range or a bad value", function()
    assert.has_error(function() core.encode_data("NoSuchMessage", 0, {}) end)
    assert.has_error(function() core.decode_data("GroupMetadataKey", 0, "") end)
    assert.has_error(function() core.encode_data("OffsetCommitValue", 4, {}) end)
    assert.has_error(function() core.encode_data("OffsetCommitKey", 0, { partition = "zero" }) end)
    local ok, err = pcall(function() return core.decode_data("NoSuchMessage", 0, "") end)
    assert.is_false(ok)
    -- blames the caller's line, as error(msg, 2) does
    assert.matches("data_messages_spec%.lua:%d+: unknown data message 'NoSuchMessage'", err)
    ok, err = pcall(function() return core.encode_data("OffsetCommitValue", 4, {}) end)
    assert.is_false(ok)
    assert.matches("OffsetCommitValue v4 is not supported %(0%-3%)", err)
  end)

  it("returns nil, err for malformed or trailing bytes", function()
    local bytes = assert(core.encode_data("OffsetCommitKey", 1, { group = "g", topic = "t", partition = 5 }))
    local back = assert(core.decode_data("OffsetCommitKey", 1, bytes))
    assert.same({ group = "g", topic = "t", partition = 5 }, back)
    local v, err = core.decode_data("OffsetCommitKey", 1, bytes:sub(1, -2))
    assert.is_nil(v)
    assert.matches("malformed OffsetCommitKey v1", err)
    v, err = core.decode_data("OffsetCommitKey", 1, bytes .. "\0")
    assert.is_nil(v)
    assert.matches("1 trailing bytes", err)
    local read
    v, read = core.decode_data("OffsetCommitKey", 1, bytes .. "\0\1", true)
    assert.same({ group = "g", topic = "t", partition = 5 }, v)
    assert.equals(#bytes, read)
  end)
end)
