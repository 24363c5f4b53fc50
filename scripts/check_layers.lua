-- The engine's layering, checked: which folder of engine/ may include
-- which (README, "Layout"). Reads every .c and .h file, takes each
-- `#include "folder/file.h"` as an arrow between folders, and reports
-- every arrow the layers forbid, every cycle between folders, every
-- folder with no layer, and every Lua header included outside engine/lua
-- and engine/cmd. The generated sources (build/gen: the codecs, the API
-- surface, the embedded page and Lua) are held to the same layers, by the
-- folder they are generated into.
--
--   luajit scripts/check_layers.lua [DIR...]   exit 1 on any problem
--   (default: engine, and build/gen when it has been built)
--
-- As a module (dofile), returns { check = function(engine_dir) -> problems,
-- LAYERS = the table below }; each problem is one line naming the file,
-- the line and the include.
local M = {}

-- Each folder, bottom up, and what it may include besides itself. A folder
-- may include nothing above it, and none of its peers unless listed.
local below_log = { "core", "proto", "record", "config" }
local domain = { "log", "net", "record", "config", "proto", "core", "metrics", "raft", "security" }
local function with(list, ...)
  local out = { ... }
  for _, v in ipairs(list) do out[#out + 1] = v end
  return out
end
M.LAYERS = {
  core = {},                                        -- threads, clocks, errors, logging, uuids, maps
  proto = { "core" },                               -- wire types, readers, writers, generated codecs
  record = { "core", "proto" },                     -- RecordBatch, compression, CRC
  config = { "core", "proto" },                     -- configs and their Kafka names
  security = { "core", "proto", "config" },         -- TLS sessions, SASL mechanisms
  net = { "core", "proto", "config", "metrics", "security" },            -- acceptor, processors, request queue, client
  metrics = { "core" },                             -- histograms, per-topic counters
  raft = { "core", "proto" },                       -- KRaft's rules as a state machine with no I/O
  journey = { "core", "proto", "record", "net" },   -- record journeys (an observer)
  log = below_log,                                  -- log manager, partition logs, segments, indexes
  controller = domain,                              -- controller, metadata image and log, metadata cache
  replica = with(domain, "controller"),             -- partition replicas, replica manager, fetchers
  group = with(domain, "controller", "replica"),    -- group coordinator, __consumer_offsets
  share = with(domain, "controller", "replica"),                      -- share groups' share-partitions and sessions (KIP-932)
  txn = with(domain, "controller", "replica", "group"), -- transaction coordinator, __transaction_state
  include = { "core" },                             -- the public C API
  server = with(domain, "controller", "replica", "group", "txn", "share", "include", "journey", "metrics"), -- the broker
  http = with(domain, "controller", "replica", "group", "txn", "share", "include", "journey", "metrics", "server"), -- HTTP
  api = with(domain, "controller", "replica", "group", "txn", "share", "server", "include", "journey", "metrics", "http"), -- API
  app = with(domain, "controller", "replica", "group", "txn", "share", "server", "api", "include", "journey", "metrics",
    "http"), -- the composition root: a broker serving the API table, with its HTTP listener
  lua = with(domain, "controller", "replica", "group", "txn", "share", "server", "api", "include", "journey", "metrics",
    "http"),
  cmd = with(domain, "controller", "replica", "group", "txn", "share", "server", "api", "include", "journey", "metrics",
    "http", "lua"), -- the kafkaiq command
}
local LUA_HEADERS = { ["lua.h"] = true, ["lauxlib.h"] = true, ["lualib.h"] = true, ["luajit.h"] = true,
  ["lua.hpp"] = true }
local LUA_ALLOWED = { lua = true, cmd = true }

local function files_of(root)
  local p = assert(io.popen("find '" .. root .. "' -type f \\( -name '*.c' -o -name '*.h' \\) | LC_ALL=C sort"))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

local function allowed(from, to)
  for _, v in ipairs(M.LAYERS[from]) do
    if v == to then return true end
  end
  return false
end

-- Cycles in graph (folder -> { folder -> first "file:line" }), as lists of
-- folders, each found once (Tarjan's strongly connected components).
local function cycles(graph)
  local index, low, on, stack, n, out = {}, {}, {}, {}, 0, {}
  local names = {}
  for k in pairs(graph) do names[#names + 1] = k end
  table.sort(names)
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    on[v] = true
    local next = {}
    for w in pairs(graph[v] or {}) do next[#next + 1] = w end
    table.sort(next)
    for _, w in ipairs(next) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local scc = {}
      repeat
        local w = table.remove(stack)
        on[w] = false
        scc[#scc + 1] = w
      until w == v
      if #scc > 1 then
        table.sort(scc)
        out[#out + 1] = scc
      end
    end
  end
  for _, v in ipairs(names) do
    if not index[v] then visit(v) end
  end
  return out
end

function M.check(root)
  root = (root or "engine"):gsub("/$", "")
  local problems, graph, unknown = {}, {}, {}
  for _, path in ipairs(files_of(root)) do
    local rel = path:sub(#root + 2)
    local folder = rel:match("^([^/]+)/")
    if not folder then
      problems[#problems + 1] = ("%s: a file outside any folder"):format(path)
    elseif not M.LAYERS[folder] then
      if not unknown[folder] then
        unknown[folder] = true
        problems[#problems + 1] = ("%s/%s: a folder with no layer (add it to scripts/check_layers.lua)"):format(root,
          folder)
      end
    else
      local ln = 0
      for line in io.lines(path) do
        ln = ln + 1
        local quoted = line:match('^%s*#%s*include%s*"([^"]+)"')
        local angled = line:match("^%s*#%s*include%s*<([^>]+)>")
        local header = quoted or angled
        if header then
          local base = header:match("([^/]+)$")
          if LUA_HEADERS[base] and not LUA_ALLOWED[folder] then
            problems[#problems + 1] = ("%s:%d: includes <%s>: only lua/ and cmd/ may use Lua's headers"):format(
              path, ln, header)
          end
          local to = quoted and header:match("^([^/]+)/")
          if to and to ~= folder then
            graph[folder] = graph[folder] or {}
            graph[folder][to] = graph[folder][to] or ("%s:%d"):format(path, ln)
            if M.LAYERS[to] and not allowed(folder, to) then
              problems[#problems + 1] = ("%s:%d: includes \"%s\": %s may not include %s"):format(path, ln, header,
                folder, to)
            end
          end
        end
      end
    end
  end
  for _, scc in ipairs(cycles(graph)) do
    local arrows = {}
    for _, a in ipairs(scc) do
      for _, b in ipairs(scc) do
        if graph[a] and graph[a][b] then arrows[#arrows + 1] = ("%s -> %s (%s)"):format(a, b, graph[a][b]) end
      end
    end
    problems[#problems + 1] = ("cycle between %s: %s"):format(table.concat(scc, ", "), table.concat(arrows, "; "))
  end
  return problems
end

if arg and arg[0] and arg[0]:match("check_layers%.lua$") then
  local roots = { ... }
  if #roots == 0 then
    roots = { "engine" }
    local built = io.open("build/gen/proto/messages.h")
    if built then
      built:close()
      roots[2] = "build/gen"
    end
  end
  local problems = {}
  for _, root in ipairs(roots) do
    for _, p in ipairs(M.check(root)) do problems[#problems + 1] = p end
  end
  for _, p in ipairs(problems) do io.stderr:write(p, "\n") end
  if #problems > 0 then
    io.stderr:write(("%d layering problem(s)\n"):format(#problems))
    os.exit(1)
  end
  print("layers: ok (" .. table.concat(roots, ", ") .. ")")
end

return M
