-- Option tables: every public constructor and method checks its options
-- against a spec, so a misspelt name or a wrong type raises at the caller
-- instead of being silently ignored.

local M = {}

-- A checker is { check = function(v) -> value | nil, why ; default = value }.

-- string([default]) accepts a string.
function M.string(default)
  return { default = default, check = function(v)
    if type(v) ~= "string" then return nil, "string expected, got " .. type(v) end
    return v
  end }
end

local function is_integer(v)
  return type(v) == "number" and v == math.floor(v) and v > -math.huge and v < math.huge
end
M.is_integer = is_integer

-- integer(min, max[, default]) accepts an integer in [min, max].
function M.integer(min, max, default)
  return { default = default, check = function(v)
    if not is_integer(v) then return nil, "integer expected, got " .. tostring(v) end
    if v < min or (max and v > max) then
      return nil, ("%s is out of range [%s, %s]"):format(tostring(v), tostring(min), tostring(max or "inf"))
    end
    return v
  end }
end

-- enum(values, default) accepts one of values (a list); aliases map extra names.
function M.enum(values, default, aliases)
  local ok = {}
  for _, v in ipairs(values) do ok[v] = v end
  for k, v in pairs(aliases or {}) do ok[k] = v end
  return { default = default, check = function(v)
    if ok[v] == nil then
      local names = {}
      for _, x in ipairs(values) do names[#names + 1] = tostring(x) end
      return nil, ("%s is not one of %s"):format(tostring(v), table.concat(names, ", "))
    end
    return ok[v]
  end }
end

-- func() accepts a function.
function M.func()
  return { check = function(v)
    if type(v) ~= "function" then return nil, "function expected, got " .. type(v) end
    return v
  end }
end

-- boolean(default) accepts true or false.
function M.boolean(default)
  return { default = default, check = function(v)
    if type(v) ~= "boolean" then return nil, "boolean expected, got " .. type(v) end
    return v
  end }
end

-- hooks(names) accepts a table whose keys are among names and whose values are functions.
function M.hooks(names)
  local known = {}
  for _, n in ipairs(names) do known[n] = true end
  return { default = {}, check = function(v)
    if type(v) ~= "table" then return nil, "table expected, got " .. type(v) end
    for k, f in pairs(v) do
      if not known[k] then
        return nil, ("unknown hook '%s' (known: %s)"):format(tostring(k), table.concat(names, ", "))
      end
      if type(f) ~= "function" then return nil, ("hook '%s': function expected"):format(k) end
    end
    return v
  end }
end

-- custom(fn, default) uses fn(v) -> value | nil, why.
function M.custom(fn, default)
  return { default = default, check = fn }
end

-- check(opts, spec, what, level) -> a new table with every spec key set
-- (defaults filled in). Raises at `level` (counted from the caller of
-- check) when opts is not a table, names an unknown option, or a value fails.
function M.check(opts, spec, what, level)
  level = (level or 1) + 1
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then
    error(("%s: options table expected, got %s"):format(what, type(opts)), level)
  end
  local out = {}
  for k, v in pairs(opts) do
    local c = spec[k]
    if not c then error(("%s: unknown option '%s'"):format(what, tostring(k)), level) end
    local val, why = c.check(v)
    if val == nil and why then error(("%s: option '%s': %s"):format(what, k, why), level) end
    out[k] = val
  end
  for k, c in pairs(spec) do
    if out[k] == nil then out[k] = c.default end
  end
  return out
end

-- Options every client (producer, consumer, admin) understands.
function M.common()
  return {
    bootstrap = M.custom(function(v)
      if type(v) ~= "string" then return nil, "string \"host:port[,host:port]\" expected, got " .. type(v) end
      local list = {}
      for item in v:gmatch("[^,]+") do
        item = item:match("^%s*(.-)%s*$")
        local host, port = item:match("^%[?([^%[%]]+)%]?:(%d+)$")
        port = tonumber(port)
        if not host or not port or port < 1 or port > 65535 then
          return nil, ("'%s' is not host:port"):format(item)
        end
        list[#list + 1] = { host = host, port = port }
      end
      if #list == 0 then return nil, "no host:port given" end
      return list
    end),
    client_id = M.string("kafkaiq-lua"),
    request_timeout_ms = M.integer(1, 2 ^ 31 - 1, 30000),
    connect_timeout_ms = M.integer(1, 2 ^ 31 - 1, 10000),
    retries = M.integer(0, 1000, 5),
    retry_backoff_ms = M.integer(0, 60000, 100),
    log = M.func(),
  }
end

-- with(base, extra) -> base plus extra's keys (a new table).
function M.with(base, extra)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(extra) do t[k] = v end
  return t
end

return M
