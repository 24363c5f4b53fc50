-- Generates the API surface table from engine/api/surface.lua (one row per
-- served API: its planes and version floors) and the schemas (each API's
-- key and name):
--
--   luajit scripts/gen_surface.lua OUT.c SURFACE.lua SCHEMA.lua...
--
-- A row's `cluster` names the operation on the cluster its whole request
-- needs (the authorizer asks it before the handler runs); refused, the
-- response's top-level error_code says CLUSTER_AUTHORIZATION_FAILED.
-- `group` and `txn` likewise for the request's group_id and
-- transactional_id (GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
--
-- OUT.c defines kiq_api_rows / kiq_api_nrows (api/api.h) and declares each
-- row's handler, kiq_api_<snake name>_handle, which api/<snake name>.c
-- defines. A row naming no schema, a schema API no row serves (unless the
-- schema says served = false: a codec only, neither advertised nor
-- accepted), a row serving such an API, or a bad field stops the build
-- with the reason.
local out, surface_path = arg[1], arg[2]
if not out or not surface_path then
  io.stderr:write("usage: gen_surface.lua OUT.c SURFACE.lua SCHEMA.lua...\n")
  os.exit(2)
end

local function die(fmt, ...)
  io.stderr:write("gen_surface: ", string.format(fmt, ...), "\n")
  os.exit(1)
end

local function snake(name)
  return (name:gsub("(%l)(%u)", "%1_%2"):gsub("(%u)(%u%l)", "%1_%2"):lower())
end

-- the operations a row may ask of the cluster before its handler runs
local cluster_ops = { ALTER = true, DESCRIBE = true, CLUSTER_ACTION = true, CREATE = true }
-- and of the request's group or transactional id
local resource_ops = { READ = true, WRITE = true, DESCRIBE = true, DELETE = true }

-- "N", "N+", "N-M" as the lowest and highest version
local function versions(v)
  local lo, hi = v:match("^(%d+)%-(%d+)$")
  if lo then return tonumber(lo), tonumber(hi) end
  lo = v:match("^(%d+)%+$")
  if lo then return tonumber(lo), 32767 end
  return tonumber(v), tonumber(v)
end

local apis = {}
for i = 3, #arg do
  local s = assert(loadfile(arg[i]))()
  if s.key ~= nil then
    apis[s.name] = { key = s.key, name = s.name, file = arg[i], served = s.served ~= false, request = s.request,
      response = s.response }
  end
end

local chunk, err = loadfile(surface_path)
if not chunk then die("%s", err) end
local rows = chunk()
local planes = { data = "DATA", control = "CONTROL", both = "BOTH" }
local seen = {}
local lines = {}
for i, row in ipairs(rows) do
  local name = row[1]
  local where = ("%s: row %d"):format(surface_path, i)
  for k in pairs(row) do
    if k ~= 1 and k ~= "planes" and k ~= "min" and k ~= "advertised_min" and k ~= "cluster" and k ~= "group" and
      k ~= "txn" and k ~= "control" then
      die("%s: unknown field %q", where, k)
    end
  end
  local api = apis[name] or die("%s: no schema declares %q", where, tostring(name))
  if not api.served then die("%s: %s says served = false (%s)", where, name, api.file) end
  if seen[name] then die("%s: %s is served twice", where, name) end
  seen[name] = true
  local p = planes[row.planes] or die("%s (%s): planes must be data, control or both", where, name)
  for _, k in ipairs({ "min", "advertised_min" }) do
    if row[k] ~= nil and (type(row[k]) ~= "number" or row[k] < 0 or row[k] % 1 ~= 0) then
      die("%s (%s): %s must be a version", where, name, k)
    end
  end
  local l = { key = "KIQ_API_" .. snake(name):upper(), handler = "kiq_api_" .. snake(name) .. "_handle",
    min = row.min or -1, advertised_min = row.advertised_min or -1, planes = p, cluster = "0", control = "0", deny = "NULL" }
  for _, col in ipairs({ { "group", "group_id" }, { "txn", "transactional_id" } }) do
    local op, field = row[col[1]], col[2]
    l[col[1]] = "0"
    l[col[1] .. "_of"] = "NULL"
    if op ~= nil then
      if not resource_ops[op] then die("%s (%s): %s must be an operation", where, name, col[1]) end
      local has
      for _, f in ipairs(api.request or {}) do
        if f[1] == field and f[2] == "string" and not f.v then has = true end
      end
      if not has then die("%s (%s): %s needs a top-level %s in every version of the request", where, name, col[1], field) end
      l[col[1]] = "KIQ_OP_" .. op
      l[col[1] .. "_of"] = ("%s_of_%s"):format(col[1], snake(name))
      l[col[1] .. "_body"] = ("    return ((const kiq_%s_request_t *)req)->%s;"):format(snake(name), field)
    end
  end
  if row.cluster ~= nil or row.group ~= nil or row.txn ~= nil or row.control ~= nil then
    for _, k in ipairs({ "cluster", "control" }) do
      if row[k] ~= nil and not cluster_ops[row[k]] then
        die("%s (%s): %s must be an operation on the cluster", where, name, k)
      end
    end
    if row.control ~= nil and p == "DATA" then die("%s (%s): control on an API the control plane does not serve", where, name) end
    local top
    for _, f in ipairs(api.response or {}) do
      if f[1] == "error_code" then top = f end
    end
    if not top then die("%s (%s): an authorization column needs a top-level error_code in the response", where, name) end
    local lo, hi = versions(top.v or "0+")
    l.cluster = row.cluster and ("KIQ_OP_" .. row.cluster) or "0"
    l.control = row.control and ("KIQ_OP_" .. row.control) or "0"
    l.deny = "deny_" .. snake(name)
    local conds = {}
    if lo > 0 then conds[#conds + 1] = ("v >= %d"):format(lo) end
    if hi < 32767 then conds[#conds + 1] = ("v <= %d"):format(hi) end
    l.deny_body = ("    %s((kiq_%s_response_t *)resp)->error_code = code;"):format(
      #conds > 0 and ("if (" .. table.concat(conds, " && ") .. ") ") or "(void)v;\n    ", snake(name))
  end
  lines[#lines + 1] = l
end
for name, api in pairs(apis) do
  if api.served and not seen[name] then die("%s: %s (%s) is in no row of %s", api.file, name, api.file, surface_path) end
end

local o = {}
o[#o + 1] = "/* Generated by scripts/gen_surface.lua from engine/api/surface.lua; do not edit. */"
o[#o + 1] = '#include "api/api.h"'
o[#o + 1] = ""
o[#o + 1] = "enum { DATA = 1 << KIQ_LISTENER_DATA, CONTROL = 1 << KIQ_LISTENER_CONTROL, BOTH = DATA | CONTROL };"
o[#o + 1] = ""
for _, l in ipairs(lines) do
  o[#o + 1] = ("int %s(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);"):format(l.handler)
end
o[#o + 1] = ""
for _, l in ipairs(lines) do
  if l.deny_body then
    o[#o + 1] = ("static void %s(void *resp, int16_t v, int16_t code)\n{\n%s\n}\n"):format(l.deny, l.deny_body)
  end
  for _, col in ipairs({ "group", "txn" }) do
    if l[col .. "_body"] then
      o[#o + 1] = ("static kiq_str_t %s(const void *req)\n{\n%s\n}\n"):format(l[col .. "_of"], l[col .. "_body"])
    end
  end
end
o[#o + 1] = "const kiq_api_row_t kiq_api_rows[] = {"
for _, l in ipairs(lines) do
  o[#o + 1] = ("    {%s, %d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s},"):format(l.key, l.min, l.advertised_min,
    l.planes, l.handler, l.cluster, l.control, l.deny, l.group, l.group_of, l.txn, l.txn_of)
end
o[#o + 1] = "};"
o[#o + 1] = ("const size_t kiq_api_nrows = %d;"):format(#lines)
local f = assert(io.open(out .. ".tmp", "w"))
f:write(table.concat(o, "\n"), "\n")
f:close()
assert(os.rename(out .. ".tmp", out))
