-- What the labs (examples/labs/) share: a heading, plain sentences, the
-- page to watch, a journey drawn one line per stage, and facts: the
-- figures a lab is about, which `make test` asserts. With
-- KAFKAIQ_LAB_FACTS=FILE each fact goes to FILE as a "name=value" line;
-- with KAFKAIQ_LAB_HOLD=SECONDS the lab keeps its brokers up that long at
-- the end, for the page.
local core = require "kafkaiq.core"

local M = {}
local Lab = {}
Lab.__index = Lab

function M.new(number, title)
  if type(number) ~= "number" or type(title) ~= "string" then error("lab.new(number, title) expected", 2) end
  local self = setmetatable({ number = number, facts = {}, pages = {} }, Lab)
  local head = ("Lab %d: %s"):format(number, title)
  print(head)
  print(("="):rep(#head))
  return self
end

-- A sentence, string.format style.
function Lab:say(fmt, ...)
  print(select("#", ...) > 0 and fmt:format(...) or fmt)
end

-- A section's heading inside the lab.
function Lab:step(fmt, ...)
  print("")
  print("-- " .. (select("#", ...) > 0 and fmt:format(...) or fmt))
end

-- Records a figure under name (letters, digits, _ and .) and returns it.
function Lab:fact(name, value)
  if type(name) ~= "string" or not name:match("^[%w_.]+$") then error("lab:fact: a name of [%w_.] expected", 2) end
  local t = type(value)
  if t ~= "number" and t ~= "string" and t ~= "boolean" then error("lab:fact: a number, string or boolean expected", 2) end
  self.facts[#self.facts + 1] = { name, tostring(value) }
  return value
end

-- Points at the live page of a broker (or a cluster's broker 0).
function Lab:page(b)
  local http = b.http or (b.broker and b:broker(0).http)
  if not http then return end
  self.pages[#self.pages + 1] = http
  self:say("   watch it live: http://%s/", http)
end

-- One stage of a journey in the broker's words (s.text: the one wording
-- of every stage, shared with `kafkaiq journey` and the live page).
function M.describe(s)
  return s.text or s.stage
end

-- Prints a journey, +ms from its receipt (each wait's why under its stage,
-- as `kafkaiq journey` does), and the leader's verdict.
function Lab:journey(j)
  local t0 = j.stages[1] and j.stages[1].t_ns or 0
  for _, s in ipairs(j.stages) do
    if s.stage == "received" then t0 = s.t_ns break end
  end
  for _, s in ipairs(j.stages) do
    self:say("  %+9.3f ms  %s", (s.t_ns - t0) / 1e6, M.describe(s))
    if s.why then self:say("                why: %s", s.why) end
  end
  if j.verdict then self:say("  verdict: %s", j.verdict.text) end
end

-- The stage named (and, for a follower's, of that peer) in journey j.
function M.stage(j, name, peer)
  for _, s in ipairs(j.stages) do
    if s.stage == name and (peer == nil or s.peer == peer or (name == "replicated" and s.broker == peer)) then return s end
  end
end

-- Writes the facts, holds if asked; the lab's last call.
function Lab:finish()
  local path = os.getenv("KAFKAIQ_LAB_FACTS")
  if path and path ~= "" then
    local f = assert(io.open(path, "w"))
    for _, kv in ipairs(self.facts) do f:write(kv[1], "=", kv[2], "\n") end
    f:close()
  end
  local hold = tonumber(os.getenv("KAFKAIQ_LAB_HOLD") or "")
  if hold and hold > 0 and #self.pages > 0 then
    self:say("")
    self:say("holding for %d s: http://%s/", hold, self.pages[1])
    core.sleep_ms(math.floor(hold * 1000))
  end
end

return M
