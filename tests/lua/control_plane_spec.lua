-- The control-plane listener: the controller's requests get their own
-- listener, queue and thread; clients' APIs are not served there.
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"
kiq.log_level("warn")

local function open(port)
  return assert(connection.open("127.0.0.1", port, { client_id = "spec", connect_timeout_ms = 2000,
    request_timeout_ms = 5000 }))
end

describe("control-plane listener", function()
  local b
  before_each(function()
    b = assert(kiq.broker{ control_port = 0 })
  end)
  after_each(function() b:stop() end)

  it("serves the control APIs apart from the clients' ones", function()
    local cp = b:state().control_port
    assert.is_number(cp)
    assert.are_not.equal(b.port, cp)
    local c, d = open(cp), open(b.port)
    assert.are.equal(4, c:version(18))
    assert.is_nil(c:version(0)) -- no Produce on the control plane
    assert.are.equal(12, d:version(0))
    local md = assert(c:request(3, { topics = {} }))
    assert.are.equal(b.port, md.brokers[1].port)
    c:close()
    d:close()
  end)

  it("comes back on the same control port after a restart", function()
    local cp = b:state().control_port
    assert(b:restart())
    assert.are.equal(cp, b:state().control_port)
    open(cp):close()
  end)
end)

describe("cluster configs", function()
  it("refuses a controller without a control-plane listener, and bad listener lists", function()
    local dir = os.tmpname()
    os.remove(dir)
    local cases = {
      { listeners = "PLAINTEXT://127.0.0.1:0", ["controller.quorum.voters"] = "0@127.0.0.1:9093" },
      { listeners = "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", ["control.plane.listener.name"] = "CONTROLLER",
        ["controller.quorum.voters"] = "zero@127.0.0.1:9093" },
      { listeners = "PLAINTEXT://127.0.0.1:0", ["control.plane.listener.name"] = "CONTROLLER" },
      { listeners = "CONTROLLER://127.0.0.1:0", ["control.plane.listener.name"] = "CONTROLLER" },
      { listeners = "PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:1" },
      { listeners = "PLAINTEXT//127.0.0.1:0" },
    }
    for _, cfg in ipairs(cases) do
      cfg["log.dirs"] = dir
      local h, err = core.broker_new(cfg)
      assert.is_nil(h)
      assert.is_string(err)
    end
  end)
end)
