-- What the live page's topic browser reads, through Lua: a partition's
-- records (b:messages: key, value, headers, a binary value in base64, from
-- an offset or the newest) and a topic's configs with their sources
-- (b:configs, as DescribeConfigs gives them); unknown topics and
-- partitions answered nil, err.
local kiq = require "kafkaiq"
local client = require "kafkaiq.client"
kiq.log_level("error")

describe("b:messages and b:configs", function()
  local b
  after_each(function()
    if b then b:stop() end
    b = nil
  end)

  it("reads a partition's records and a topic's configs with their sources", function()
    b = assert(kiq.broker {})
    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:create_topics { { name = "browse", partitions = 1, replication_factor = 1,
                                configs = { ["retention.ms"] = "3600000" } } })
    local p = client.producer { bootstrap = b.bootstrap }
    for i = 0, 3 do assert(p:send("browse", "k" .. i, "v" .. i, { partition = 0, headers = { { "h", "x" .. i } } })) end
    assert(p:send("browse", "k4", "\0\255", { partition = 0 }))
    assert(p:send("browse", "k5", ("\195\169"):rep(3000), { partition = 0 }))
    assert(p:flush())
    assert.truthy(kiq.wait_for(function() return #b:messages("browse", 0).messages == 6 end, 10000))

    local m = b:messages("browse", 0)
    assert.are.equal(6, m.high_watermark)
    assert.are.equal(6, m.next_offset)
    for i = 0, 3 do
      local r = m.messages[i + 1]
      assert.are.same({ i, "k" .. i, "v" .. i, "h", "x" .. i }, { r.offset, r.key, r.value, r.headers[1].key, r.headers[1].value })
    end
    assert.are.equal("AP8=", m.messages[5].value_base64)
    assert.is_nil(m.messages[5].value)
    -- a long text value cut between its characters: still text
    local long = m.messages[6]
    assert.is_true(long.truncated)
    assert.are.equal(6000, long.value_bytes)
    assert.are.equal(("\195\169"):rep(2048), long.value)
    local two = b:messages("browse", 0, 2, 2)
    assert.are.same({ 2, 3 }, { two.messages[1].offset, two.messages[2].offset })
    assert.are.equal(4, two.next_offset)
    local newest = b:messages("browse", 0, nil, 1)
    assert.are.equal(5, newest.messages[1].offset)

    local cfg = {}
    for _, c in ipairs(b:configs("browse").configs) do cfg[c.name] = c end
    assert.are.same({ "3600000", "DYNAMIC_TOPIC_CONFIG" }, { cfg["retention.ms"].value, cfg["retention.ms"].source })
    assert.are.same({ "delete", "DEFAULT_CONFIG" }, { cfg["cleanup.policy"].value, cfg["cleanup.policy"].source })
    local broker = {}
    for _, c in ipairs(b:configs().configs) do broker[c.name] = c end
    assert.are.equal("STATIC_BROKER_CONFIG", broker["broker.id"].source)
    assert.is_true(broker["broker.id"].read_only)

    local none, err = b:messages("nowhere", 0)
    assert.is_nil(none)
    assert.truthy(err:match("no topic nowhere"))
    none, err = b:messages("browse", 9)
    assert.is_nil(none)
    assert.truthy(err:match("no partition 9"))
    none, err = b:configs("nowhere")
    assert.is_nil(none)
    assert.truthy(err:match("no topic nowhere"))
    assert.is_nil((b:messages("browse", 0, 0, 101)))
  end)
end)
