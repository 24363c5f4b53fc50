-- Smoke tests of the kafkaiq command, run by busted on LuaJIT from the repo root.

local BIN = os.getenv("KIQ_BIN") or "build/kafkaiq"
local CONFIG = "config/server.properties"

-- Runs a shell command with a time limit; returns its combined output and exit code.
local function run(cmd)
  local p = assert(io.popen("timeout 10 " .. cmd .. " 2>&1; echo \"<exit:$?>\""))
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("<exit:(%d+)>%s*$"))
  return out:gsub("<exit:%d+>%s*$", ""), code
end

local function tmpdir()
  local p = assert(io.popen("mktemp -d"))
  local dir = p:read("*l")
  p:close()
  return dir
end

-- serve with a throwaway data dir and an ephemeral port, so a config the broker
-- wrongly accepts cannot collide with anything; timeout ends it (exit 124).
local function serve(overrides)
  local dir = tmpdir()
  local cmd = BIN .. " serve " .. CONFIG .. " --override log.dirs=" .. dir
  local has_listener = false
  for _, kv in ipairs(overrides) do
    if kv:match("^listeners=") then has_listener = true end
    cmd = cmd .. " --override '" .. kv .. "'"
  end
  if not has_listener then
    cmd = cmd .. " --override listeners=PLAINTEXT://127.0.0.1:0 --override kafkaiq.http.listener=127.0.0.1:0"
  end
  local out, code = run(cmd)
  os.execute("rm -rf '" .. dir .. "'")
  return out, code
end

describe("LuaJIT", function()
  it("is the runtime", function()
    assert.is_table(jit)
    assert.matches("^LuaJIT 2%.1", jit.version)
  end)
end)

describe("kafkaiq command", function()
  it("prints its version", function()
    local out, code = run(BIN .. " version")
    assert.equals(0, code)
    assert.matches("^kafkaiq %d+%.%d+%.%d+", out)
  end)

  it("knows every key of the shipped server.properties", function()
    local out, code = run(BIN .. " configs")
    assert.equals(0, code)
    local known = {}
    for line in out:gmatch("[^\n]+") do
      local key = line:match("^([%w%._-]+)%s")
      if key then known[key] = true end
    end
    local n = 0
    for line in io.lines(CONFIG) do
      local key = line:match("^%s*([^#%s][^=]-)%s*=")
      if key then
        n = n + 1
        assert.is_true(known[key] == true, "unknown key in " .. CONFIG .. ": " .. key)
      end
    end
    assert.is_true(n >= 10, "too few keys parsed from " .. CONFIG)
  end)

  it("rejects an unknown subcommand", function()
    local _, code = run(BIN .. " no-such-command")
    assert.is_true(code ~= 0)
  end)

  it("refuses a missing properties file", function()
    local out, code = run(BIN .. " serve /nonexistent/kiq.properties")
    assert.is_true(code ~= 0 and code ~= 124, "exit " .. tostring(code))
    assert.matches("/nonexistent/kiq.properties", out, 1, true)
  end)

  local bad = {
    { "num.partitions", "abc" },
    { "num.io.threads", "0" },
    { "socket.request.max.bytes", "-5" },
    { "auto.create.topics.enable", "maybe" },
    { "log.message.timestamp.type", "Sometime" },
    { "listeners", "bogus" },
  }
  for _, kv in ipairs(bad) do
    local key, value = kv[1], kv[2]
    it("exits non-zero naming " .. key .. " when it is " .. value, function()
      local out, code = serve({ key .. "=" .. value })
      assert.is_true(code ~= 0 and code ~= 124, "exit " .. tostring(code) .. ": " .. out)
      assert.matches(key, out, 1, true)
    end)
  end
end)
