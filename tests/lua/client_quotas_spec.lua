-- The controller mutation quota (KIP-599) on a combined node: topic
-- partitions created or deleted by a client id with controller_mutation_rate
-- are taken from a token bucket of (quota.window.num - 1) windows' worth;
-- a request that empties it is served and answered with the time the
-- bucket needs to refill (its connection then left unread that long); while
-- it is empty, CreateTopics v6+, CreatePartitions v3+ and DeleteTopics v5+
-- refuse with THROTTLING_QUOTA_EXCEEDED, older versions go ahead and are
-- throttled. Other client ids are not limited. In a cluster, the quota
-- APIs sent to a broker without the controller are forwarded to it; a
-- standalone broker keeps its quotas itself, across restarts, and a tiny
-- request_percentage throttles a client's Metadata within one window. The
-- Lua admin client sets and describes them.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
local client = require "kafkaiq.client"
kiq.log_level("error")

local CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 19, 20, 37, 48, 49
local METADATA, THROTTLING_QUOTA_EXCEEDED = 3, 89

local function open(b, client_id)
  return assert(connection.open("127.0.0.1", b.port, { client_id = client_id, connect_timeout_ms = 2000,
    request_timeout_ms = 15000 }))
end

local function create(c, name, partitions, version)
  local resp = assert(c:request(CREATE_TOPICS, { topics = { { name = name, num_partitions = partitions,
    replication_factor = 1, assignments = {}, configs = {} } }, timeout_ms = 10000, validate_only = false },
    { version = version }))
  return resp.topics[1].error_code, resp.throttle_time_ms
end

describe("controller mutation quota", function()
  local b

  setup(function()
    local cp = core.free_port()
    b = assert(kiq.broker { id = 1, control_port = cp, ["controller.quorum.voters"] = ("1@127.0.0.1:%d"):format(cp) })
    local c = open(b, "admin")
    -- 1 partition a second: a bucket of 10 (eleven one-second windows)
    local resp = assert(kiq.wait_for(function()
      local r = c:request(ALTER_CLIENT_QUOTAS, { entries = { { entity = { { entity_type = "client-id",
        entity_name = "limited" } }, ops = { { key = "controller_mutation_rate", value = 1, remove = false } } } },
        validate_only = false })
      return r and r.entries[1].error_code == 0 and r
    end, 10000, "the quota set"))
    assert.are.equal(0, resp.entries[1].error_code)
    -- the node's broker takes topics once registered (an unlimited client waits for it)
    assert(kiq.wait_for(function() return create(c, "mq-ready", 1) == 0 end, 10000, "the broker registered"))
    c:close()
  end)

  teardown(function() if b then b:stop() end end)

  it("serves the request that empties the bucket, then refuses strict versions until it refills", function()
    local first = open(b, "limited")
    local e1, throttle = create(first, "mq-a", 15)
    assert.are.equal(0, e1)
    assert.is_true(throttle > 4000 and throttle <= 5000, "throttle " .. tostring(throttle)) -- 15 taken from 10
    -- a second connection: the first is left unread while throttled
    local second = open(b, "limited")
    local e2, t2 = create(second, "mq-b", 1)
    assert.are.equal(THROTTLING_QUOTA_EXCEEDED, e2)
    assert.is_true(t2 > 3000 and t2 <= 5000, "throttle " .. tostring(t2)) -- 5 partitions over at 1 a second
    local third = open(b, "limited")
    local e3, t3 = create(third, "mq-c", 1, 5) -- v5 cannot be refused: created, throttled
    assert.are.equal(0, e3)
    assert.is_true(t3 > 4000 and t3 <= 6000, "throttle " .. tostring(t3))
    local fourth = open(b, "limited")
    local resp = assert(fourth:request(DELETE_TOPICS, { topics = { { name = "mq-a" } }, timeout_ms = 10000 }))
    assert.are.equal(THROTTLING_QUOTA_EXCEEDED, resp.responses[1].error_code)
    local fifth = open(b, "limited")
    resp = assert(fifth:request(CREATE_PARTITIONS, { topics = { { name = "mq-a", count = 20 } }, timeout_ms = 10000,
      validate_only = false }))
    assert.are.equal(THROTTLING_QUOTA_EXCEEDED, resp.results[1].error_code)
    -- another client id is not limited
    local other = open(b, "other")
    assert.are.equal(0, (create(other, "mq-d", 20)))
    for _, c in ipairs({ first, second, third, fourth, fifth, other }) do c:close() end
  end)
end)

describe("client quotas in a cluster", function()
  local c

  setup(function() c = assert(kiq.cluster { brokers = 3 }) end)
  teardown(function() if c then c:stop() end end)

  it("are set through one broker and described through another, both forwarding to the controller", function()
    local two, one = open(c:broker(2), "admin"), open(c:broker(1), "admin")
    local resp = assert(two:request(ALTER_CLIENT_QUOTAS, { entries = { { entity = { { entity_type = "user",
      entity_name = "alice" } }, ops = { { key = "producer_byte_rate", value = 1024, remove = false } } } },
      validate_only = false }))
    assert.are.equal(0, resp.entries[1].error_code)
    assert.are.equal("alice", resp.entries[1].entity[1].entity_name)
    resp = assert(one:request(DESCRIBE_CLIENT_QUOTAS, { components = { { entity_type = "user", match_type = 0,
      match = "alice" } }, strict = false }))
    assert.are.equal(0, resp.error_code)
    assert.are.equal(1, #resp.entries)
    assert.are.same({ { key = "producer_byte_rate", value = 1024 } }, resp.entries[1].values)
    -- refusals come back from the controller as it decided them
    resp = assert(one:request(ALTER_CLIENT_QUOTAS, { entries = { { entity = { { entity_type = "user",
      entity_name = "alice" } }, ops = { { key = "producer_byte_rate", value = 1.5, remove = false } } } },
      validate_only = false }))
    assert.are.equal(42, resp.entries[1].error_code) -- INVALID_REQUEST: byte rates are whole
    two:close()
    one:close()
  end)
end)

describe("client quotas on a standalone broker", function()
  local b

  setup(function() b = assert(kiq.broker { id = 1 }) end)
  teardown(function() if b then b:stop() end end)

  it("are kept across a restart and limit topic mutations", function()
    local c = open(b, "admin")
    local resp = assert(c:request(ALTER_CLIENT_QUOTAS, { entries = {
      { entity = { { entity_type = "client-id", entity_name = "limited" } },
        ops = { { key = "controller_mutation_rate", value = 1, remove = false } } },
      { entity = { { entity_type = "user" } }, -- the default user
        ops = { { key = "consumer_byte_rate", value = 4096, remove = false } } },
      { entity = { { entity_type = "user", entity_name = "bob" } },
        ops = { { key = "consumer_byte_rate", value = 1.5, remove = false } } },
    }, validate_only = false }))
    assert.are.equal(0, resp.entries[1].error_code)
    assert.are.equal(0, resp.entries[2].error_code)
    assert.are.equal(42, resp.entries[3].error_code) -- byte rates are whole numbers
    c:close()
    assert(b:restart())
    c = open(b, "admin")
    resp = assert(c:request(DESCRIBE_CLIENT_QUOTAS, { components = { { entity_type = "user", match_type = 1 } },
      strict = true }))
    assert.are.equal(0, resp.error_code)
    assert.are.equal(1, #resp.entries)
    assert.are.same({ { key = "consumer_byte_rate", value = 4096 } }, resp.entries[1].values)
    resp = assert(c:request(DESCRIBE_CLIENT_QUOTAS, { components = { { entity_type = "client-id", match_type = 2 } },
      strict = false }))
    assert.are.equal(1, #resp.entries)
    c:close()
    -- request_percentage: a share of a handler thread so small that a few
    -- requests' handler time passes it; the throttle bounded by one window
    c = open(b, "admin")
    assert.are.equal(0, assert(c:request(ALTER_CLIENT_QUOTAS, { entries = { { entity = { { entity_type = "client-id",
      entity_name = "busy" } }, ops = { { key = "request_percentage", value = 0.000001, remove = false } } } },
      validate_only = false })).entries[1].error_code)
    c:close()
    local throttled
    for _ = 1, 50 do
      local busy = open(b, "busy") -- a fresh connection: a throttled one is left unread a while
      local md = assert(busy:request(METADATA, { topics = {}, allow_auto_topic_creation = false }))
      busy:close()
      if md.throttle_time_ms > 0 then throttled = md.throttle_time_ms break end
    end
    assert.is_true(throttled ~= nil and throttled <= 1000, "throttle " .. tostring(throttled))
    local first = open(b, "limited")
    assert.are.equal(0, (create(first, "sq-a", 15)))
    local second = open(b, "limited")
    assert.are.equal(THROTTLING_QUOTA_EXCEEDED, (create(second, "sq-b", 1)))
    first:close()
    second:close()
  end)
end)

describe("the Lua admin client's client quotas", function()
  local b

  setup(function() b = assert(kiq.broker { id = 1 }) end)
  teardown(function() if b then b:stop() end end)

  it("sets, describes and removes quotas of users, client ids and defaults", function()
    local a = client.admin { bootstrap = b.bootstrap }
    assert(a:alter_client_quotas {
      { entity = { user = "alice" }, quotas = { producer_byte_rate = 1024, request_percentage = 12.5 } },
      { entity = { user = "alice", client_id = a.DEFAULT }, quotas = { consumer_byte_rate = 2048 } },
      { entity = { client_id = "app" }, quotas = { controller_mutation_rate = 3 } },
    })
    local all = assert(a:describe_client_quotas())
    assert.are.equal(3, #all)
    local users = assert(a:describe_client_quotas({ user = "alice" }, { strict = true }))
    assert.are.same({ { entity = { user = "alice" }, quotas = { producer_byte_rate = 1024, request_percentage = 12.5 } } },
      users)
    local both = assert(a:describe_client_quotas { user = true, client_id = a.DEFAULT })
    assert.are.equal(1, #both)
    assert.are.equal(a.DEFAULT, both[1].entity.client_id)
    assert.are.same({ consumer_byte_rate = 2048 }, both[1].quotas)
    -- a refused value names the entity; a removal leaves the rest
    local ok, err, results = a:alter_client_quotas { { entity = { user = "bob" }, quotas = { producer_byte_rate = 0.5 } } }
    assert.is_nil(ok)
    assert.matches("user=bob", err)
    assert.are.equal("INVALID_REQUEST", results[1].error)
    assert(a:alter_client_quotas { { entity = { user = "alice" }, quotas = { request_percentage = false } } })
    users = assert(a:describe_client_quotas({ user = "alice" }, { strict = true }))
    assert.are.same({ producer_byte_rate = 1024 }, users[1].quotas)
    a:close()
  end)
end)
