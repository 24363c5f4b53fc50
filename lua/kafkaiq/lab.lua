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

local acks_names = { [0] = "0", [1] = "1", [-1] = "all" }

-- One stage of a journey in the words of `kafkaiq journey` (the broker's
-- own, s.text, for the stages it words).
function M.describe(s)
  local st = s.stage
  if s.text then
    return s.text
  elseif st == "received" then
    return ("broker %d, network thread %d: Produce v%d received, %d bytes, from client %q"):format(s.broker, s.thread or -1,
      s.version or -1, s.bytes or 0, s.client_id or "")
  elseif st == "enqueued" then
    return ("request queue: joined behind %d requests (depth %d/%d)%s"):format(s.before, s.before + 1, s.after,
      s.waited_muted and ", after waiting muted: the queue was full" or
      ((s.muted or 0) > 0 and ("; %d connections muted"):format(s.muted) or ""))
  elseif st == "dequeued" then
    return ("I/O thread %d took it"):format(s.thread or -1)
  elseif st == "validated" then
    return ("validated: %d records, %d bytes, CRC ok (acks=%s)"):format(s.records or 0, s.bytes or 0,
      acks_names[s.acks] or tostring(s.acks))
  elseif st == "appended" then
    return ("offsets %d..%d assigned (LEO %d -> %d); appended to %s at byte %d"):format(s.first_offset, s.after - 1,
      s.before, s.after, s.file or "?", s.position or -1)
  elseif st == "handled" then
    return "handler done (an acks=all answer waits in the purgatory)"
  elseif st == "follower_fetched" then
    return ("follower %d fetched it (fetch offset %d, %s)"):format(s.peer, s.first_offset,
      s.sendfile and "sendfile" or "copied")
  elseif st == "replicated" then
    return ("broker %d (follower of %d): appended it to its %s at byte %d"):format(s.broker, s.peer, s.file or "?",
      s.position or -1)
  elseif st == "follower_leo" then
    return ("follower %d has it: its LEO %d -> %d"):format(s.peer, s.before, s.after)
  elseif st == "committed" then
    return ("high watermark %d -> %d: committed, visible to consumers"):format(s.before, s.after)
  elseif st == "acknowledged" then
    return ("acknowledged: acks=%s, error %d"):format(acks_names[s.acks] or tostring(s.acks), s.error or 0)
  elseif st == "response_queued" then
    return ("response queued for the network thread (%d bytes)"):format(s.bytes or 0)
  elseif st == "sent" then
    return "response sent"
  elseif st == "records_fetched" then
    return ("consumer %q fetched it (fetch offset %d, %s)"):format(s.client_id or "", s.first_offset,
      s.sendfile and "sendfile" or "copied")
  elseif st == "txn_committed" then
    return ("transaction committed: COMMIT marker at offset %d, read_committed consumers now see it"):format(s.after)
  elseif st == "txn_aborted" then
    return ("transaction aborted: ABORT marker at offset %d, read_committed consumers skip it"):format(s.after)
  end
  return st
end

-- Prints a journey, +ms from its receipt, and the leader's verdict.
function Lab:journey(j)
  local t0 = j.stages[1] and j.stages[1].t_ns or 0
  for _, s in ipairs(j.stages) do
    if s.stage == "received" then t0 = s.t_ns break end
  end
  for _, s in ipairs(j.stages) do
    self:say("  %+9.3f ms  %s", (s.t_ns - t0) / 1e6, M.describe(s))
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
