-- Pieces the producer, consumer and admin share: building a cluster from
-- checked options, calling user hooks safely, and the batch-result convention.

local cluster = require "kafkaiq.client.cluster"

local M = {}

-- The default log sink for errors raised by user hooks.
local function stderr_log(msg)
  io.stderr:write("kafkaiq: ", msg, "\n")
end

-- setup(self, cfg, what, level) fills in self.cfg, self.cluster and self.log;
-- raises at `level` when bootstrap is missing.
function M.setup(self, cfg, what, level)
  if not cfg.bootstrap then error(what .. ": option 'bootstrap' is required", level + 1) end
  self.cfg = cfg
  self.log = cfg.log or stderr_log
  self.cluster = cluster.new(cfg)
  return self
end

-- call_hook(self, name, fn, ...) -> true, results... | false.
-- A user hook that raises is logged and ignored, as Kafka's clients do with
-- interceptors and callbacks: one bad hook must not lose other records.
function M.call_hook(self, name, fn, ...)
  local res = { pcall(fn, ...) }
  if not res[1] then
    self.log(("%s raised: %s"):format(name, tostring(res[2])))
    return false
  end
  return unpack(res)
end

-- finish(results, what) applies the convention of every multi-item call:
-- results (a list in request order, each with `error` = nil or a Kafka error
-- name) when all items succeeded; otherwise nil, a message naming each
-- failed item, and the results as a third value.
function M.finish(results, what)
  local failed = {}
  for _, r in ipairs(results) do
    if r.error then
      local s = ("%s: %s"):format(tostring(r.name), r.error)
      if r.error_message and r.error_message ~= "" then s = s .. " (" .. r.error_message .. ")" end
      failed[#failed + 1] = s
    end
  end
  if #failed == 0 then return results end
  return nil, ("%s failed for %s"):format(what, table.concat(failed, "; ")), results
end

-- check_name(v, what, level) raises unless v is a non-empty string.
function M.check_name(v, what, level)
  if type(v) ~= "string" or v == "" then
    error(("%s: non-empty string expected, got %s"):format(what, type(v) == "string" and '""' or type(v)), level + 1)
  end
end

return M
