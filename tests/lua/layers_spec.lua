-- The layering check (scripts/check_layers.lua): the engine passes it, and
-- a tree with a forbidden include, a cycle, a Lua header in the wrong place
-- or an undeclared folder fails it, naming the include.
local layers = dofile("scripts/check_layers.lua")

local function tree(files)
  local p = assert(io.popen("mktemp -d"))
  local root = p:read("*l")
  p:close()
  for path, text in pairs(files) do
    os.execute(("mkdir -p '%s/%s'"):format(root, path:match("^(.*)/")))
    local f = assert(io.open(root .. "/" .. path, "w"))
    f:write(text)
    f:close()
  end
  return root
end

local function check(files)
  local root = tree(files)
  local problems = layers.check(root)
  os.execute("rm -rf '" .. root .. "'")
  return problems, root
end

describe("the layering check", function()
  it("passes the engine as it is", function()
    local problems = layers.check("engine")
    assert.are.same({}, problems, table.concat(problems, "\n"))
  end)

  it("passes the generated sources, each held to the layer of the folder it is generated into", function()
    local problems = layers.check("build/gen")
    assert.are.same({}, problems, table.concat(problems, "\n"))
    -- the Lua converters are the Lua boundary's: generated into lua/
    assert.is_truthy(io.open("build/gen/lua/messages_lua.c"))
    assert.is_falsy(io.open("build/gen/proto/messages_lua.c"))
  end)

  it("passes includes that point down", function()
    assert.are.same({}, check {
      ["core/a.h"] = "#include <stdint.h>\n",
      ["log/b.c"] = '#include "core/a.h"\n#include "log/c.h"\n',
      ["api/d.c"] = '#include "log/b.h"\n#include "server/e.h"\n',
    })
  end)

  it("names a forbidden include with its file and line", function()
    local problems, root = check {
      ["log/segment.c"] = '#include "core/error.h"\n\n#include "net/processor.h"\n',
      ["net/processor.h"] = "\n",
    }
    assert.are.equal(1, #problems)
    assert.are.equal(root .. '/log/segment.c:3: includes "net/processor.h": log may not include net', problems[1])
  end)

  it("reports a cycle between folders with the arrows that make it", function()
    local problems = check {
      ["api/fetch.c"] = '#include "server/broker.h"\n',
      ["server/broker.c"] = '#include "api/api.h"\n',
    }
    assert.are.equal(2, #problems)
    assert.matches("server/broker.c:1: includes \"api/api.h\": server may not include api", problems[1], 1, true)
    assert.matches("^cycle between api, server: api %-> server %(.-api/fetch%.c:1%); server %-> api", problems[2])
  end)

  it("allows Lua's headers only at the Lua boundary and in the command", function()
    local problems = check {
      ["lua/module.c"] = "#include <lua.h>\n#include <lauxlib.h>\n",
      ["cmd/main.c"] = "#include <luajit.h>\n",
      ["api/produce.c"] = "#include <stdio.h>\n#include <lua.h>\n",
    }
    assert.are.equal(1, #problems)
    assert.matches("api/produce.c:2: includes <lua.h>: only lua/ and cmd/ may use Lua's headers", problems[1], 1, true)
  end)

  it("refuses a folder no layer declares", function()
    local problems = check { ["journal/ring.c"] = '#include "core/error.h"\n' }
    assert.are.equal(1, #problems)
    assert.matches("journal: a folder with no layer", problems[1], 1, true)
  end)

  it("fails as a command, with the problems on stderr", function()
    local root = tree { ["core/clock.h"] = '#include "log/segment.h"\n' }
    local p = assert(io.popen("luajit scripts/check_layers.lua '" .. root .. "' 2>&1; echo \"rc=$?\""))
    local out = p:read("*a")
    p:close()
    os.execute("rm -rf '" .. root .. "'")
    assert.matches('core/clock.h:1: includes "log/segment.h": core may not include log', out, 1, true)
    assert.matches("rc=1", out, 1, true)
  end)
end)
