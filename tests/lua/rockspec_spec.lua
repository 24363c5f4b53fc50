-- The rockspec installs the module into a fresh tree, and a plain LuaJIT
-- loads it from there and starts a broker.
describe("luarocks make", function()
  it("installs kafkaiq into a fresh tree that LuaJIT can load from", function()
    local p = assert(io.popen("mktemp -d"))
    local tree = p:read("*l")
    p:close()
    local ok = os.execute("timeout 300 luarocks --lua-version=5.1 make --tree " .. tree ..
                          " kafkaiq-0.1.0-1.rockspec >/dev/null 2>&1")
    assert.is_true(ok == 0 or ok == true)
    local script = ([[
      package.path = "%s/share/lua/5.1/?.lua;%s/share/lua/5.1/?/init.lua"
      package.cpath = "%s/lib/lua/5.1/?.so"
      local kiq = require "kafkaiq"
      kiq.log_level("error")
      local b = assert(kiq.broker{})
      io.write("loaded ", kiq.version, " ", b.bootstrap, "\n")
      b:stop()
    ]]):format(tree, tree, tree)
    -- run from / so nothing in the repository can be picked up by accident
    p = assert(io.popen("cd / && timeout 30 luajit -e '" .. script:gsub("'", "'\\''") .. "' 2>&1"))
    local out = p:read("*a")
    p:close()
    local cmd = os.execute("test -x " .. tree .. "/bin/kafkaiq")
    os.execute("rm -rf " .. tree)
    assert.truthy(out:find("loaded 0.1.0 127.0.0.1:%d+"), out)
    assert.is_true(cmd == 0 or cmd == true, "the kafkaiq command is installed in the tree")
  end)
end)
