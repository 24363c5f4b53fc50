-- Bounds on what one request may make the broker do: a produced batch may
-- decompress to at most kafkaiq.max.decompressed.batch.bytes (a gzip bomb
-- is refused with MESSAGE_TOO_LARGE naming the setting, nothing appended,
-- with every codec), a batch that inflates to nothing is refused cleanly,
-- and a Fetch for no partitions is answered at once instead of after its
-- max_wait_ms, as Kafka does.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("error")

local PRODUCE, FETCH = 0, 1
local NONE, MESSAGE_TOO_LARGE = 0, 10
local LIMIT = 65536

describe("request limits", function()
  local b, c
  setup(function()
    b = assert(kiq.broker { ["kafkaiq.max.decompressed.batch.bytes"] = LIMIT })
    -- a short request timeout: a Fetch left to wait would fail the call
    c = assert(connection.open("127.0.0.1", b.port, { client_id = "limits-spec", request_timeout_ms = 3000 }))
    local a = assert(b:admin())
    assert(a:create_topics { { name = "lim", partitions = 1 } })
    a:close()
  end)
  teardown(function()
    c:close()
    b:stop()
  end)

  local function produce(batch)
    local r = assert(c:request(PRODUCE, { acks = 1, timeout_ms = 5000,
      topic_data = { { name = "lim", partition_data = { { index = 0, records = batch } } } } }, { version = 9 }))
    local pr = r.responses[1].partition_responses[1]
    return pr.error_code, pr.error_message
  end

  it("refuses a batch that decompresses past kafkaiq.max.decompressed.batch.bytes, every codec", function()
    local bomb = string.rep("\0", 1024 * 1024)
    for _, codec in ipairs { "gzip", "snappy", "lz4", "zstd" } do
      local batch = assert(core.build_batch { codec = codec, records = { { value = bomb } } })
      assert.is_true(#batch < LIMIT, codec)
      local err, msg = produce(batch)
      assert.are.equal(MESSAGE_TOO_LARGE, err, codec)
      assert.matches("kafkaiq.max.decompressed.batch.bytes", msg, 1, true)
      assert.matches(tostring(LIMIT), msg, 1, true)
    end
    assert.are.equal(0, b:state().topics.lim.partitions[0].log_end_offset)
    -- just under the bound is taken
    local fits = assert(core.build_batch { codec = "zstd", records = { { value = string.rep("\0", LIMIT - 100) } } })
    assert.are.equal(NONE, (produce(fits)))
    assert.are.equal(1, b:state().topics.lim.partitions[0].log_end_offset)
  end)

  it("answers a Fetch for no partitions at once", function()
    local r = assert(c:request(FETCH, { replica_id = -1, max_wait_ms = 30000, min_bytes = 1, max_bytes = 1048576,
      isolation_level = 0, session_id = 0, session_epoch = -1, forgotten_topics_data = {}, rack_id = "",
      topics = {} }, { version = 12 }))
    assert.are.equal(NONE, r.error_code)
    assert.are.same({}, r.responses)
  end)
end)
