-- kafkaiq.check: a history checker in the manner of Jepsen's Kafka
-- workload. A test records every send, acknowledgement and poll (values
-- must be unique per send); check() then reports the anomalies by Jepsen's
-- names:
--
--   lost-write            acknowledged, never read, though consumers read
--                         past its offset in that partition
--   duplicate             one value at more than one offset
--   inconsistent-offsets  one offset seen holding different values (in
--                         acknowledgements and polls together)
--   nonmonotonic-poll     a consumer's next record in a partition is not
--                         after its previous one (no reset in between)
--   poll-skip             a consumer's next record in a partition jumps
--                         over an offset known to hold a record
--   unseen                acknowledged and never read, consumers never
--                         reading that far (a final read was too short)
--   aborted-read (G1a)    a read_committed consumer read a value of an
--                         aborted transaction
--
-- Usage:
--   local check = require "kafkaiq.check"
--   local h = check.history()
--   h:send(value, topic, partition)            -- before the producer sends
--   h:ack(value, topic, partition, offset)     -- its delivery report (offset nil: not reported)
--   h:fail(value, err)                         -- a failed delivery
--   h:poll(consumer, topic, partition, offset, value, { read_committed = true })
--   h:reset(consumer)                          -- a seek, assign or rebalance
--   h:abort(value)                             -- its transaction aborted
--   local report = h:check()  -- { ok, counts = {...}, anomalies = { [name] = { evidence... } } }
--   print(check.summary(report))
--
-- A history can also be written as text, one event per line (what
-- scripts/soak.sh records from real clients), and read with check.load:
--   send VALUE TOPIC PARTITION | ack VALUE TOPIC PARTITION OFFSET|? |
--   fail VALUE ERROR | poll CONSUMER TOPIC PARTITION OFFSET VALUE [rc] |
--   reset CONSUMER | abort VALUE
-- (fields separated by single spaces; values and names without spaces).

local M = {}
local History = {}
History.__index = History

M.ANOMALIES = { "lost-write", "duplicate", "inconsistent-offsets", "nonmonotonic-poll", "poll-skip", "unseen",
  "aborted-read" }

-- Evidence kept per anomaly; the counts go on past it.
local EVIDENCE_KEPT = 20

local function tp(topic, partition) return topic .. "-" .. partition end

function M.history()
  return setmetatable({
    writes = {},        -- value -> { topic, partition, state = "sent"|"acked"|"failed", offset, aborted }
    nwrites = 0,
    at = {},            -- "topic-partition" -> { [offset] = { [value] = true } }
    seen = {},          -- value -> { [ "tp@offset" ] = true } (polls only)
    read_upto = {},     -- "topic-partition" -> highest offset any poll read
    consumers = {},     -- consumer -> { [tp] = last offset }
    steps = {},         -- consumer -> { { tp, from, to }, ... } in order
    aborted_reads = {}, -- { evidence, ... }
    nonmonotonic = {},
  }, History)
end

local function need(v, what, level)
  if v == nil then error(what .. " is required", level + 1) end
  return v
end

local function offset_of(v, level)
  if type(v) ~= "number" or v < 0 or v % 1 ~= 0 then error("offset must be a non-negative integer", level + 1) end
  return v
end

local function observe(h, topic, partition, offset, value)
  local key = tp(topic, partition)
  local byoff = h.at[key]
  if not byoff then byoff = {}; h.at[key] = byoff end
  local vals = byoff[offset]
  if not vals then vals = {}; byoff[offset] = vals end
  vals[value] = true
end

function History:send(value, topic, partition)
  need(value, "value", 2)
  need(topic, "topic", 2)
  if self.writes[value] then error("send: value " .. tostring(value) .. " was sent before; values must be unique", 2) end
  self.writes[value] = { topic = topic, partition = partition, state = "sent" }
  self.nwrites = self.nwrites + 1
end

function History:ack(value, topic, partition, offset)
  local w = self.writes[need(value, "value", 2)]
  if not w then error("ack: value " .. tostring(value) .. " was never sent", 2) end
  w.state, w.topic, w.partition = "acked", topic, partition
  if offset ~= nil then
    w.offset = offset_of(offset, 2)
    observe(self, topic, partition, offset, value)
  end
end

function History:fail(value, err)
  local w = self.writes[need(value, "value", 2)]
  if not w then error("fail: value " .. tostring(value) .. " was never sent", 2) end
  if w.state ~= "acked" then w.state, w.err = "failed", err end
end

function History:abort(value)
  local w = self.writes[need(value, "value", 2)]
  if not w then error("abort: value " .. tostring(value) .. " was never sent", 2) end
  w.aborted = true
end

function History:reset(consumer)
  self.consumers[need(consumer, "consumer", 2)] = {}
end

function History:poll(consumer, topic, partition, offset, value, opts)
  need(consumer, "consumer", 2)
  offset_of(offset, 2)
  need(value, "value", 2)
  local key = tp(topic, partition)
  observe(self, topic, partition, offset, value)
  local where = key .. "@" .. offset
  local s = self.seen[value]
  if not s then s = {}; self.seen[value] = s end
  s[where] = true
  if (self.read_upto[key] or -1) < offset then self.read_upto[key] = offset end
  local c = self.consumers[consumer]
  if not c then c = {}; self.consumers[consumer] = c end
  local last = c[key]
  if last and offset <= last then
    self.nonmonotonic[#self.nonmonotonic + 1] = ("%s read %s offset %d after %d"):format(consumer, key, offset, last)
  elseif last then
    local st = self.steps[consumer]
    if not st then st = {}; self.steps[consumer] = st end
    if offset > last + 1 then st[#st + 1] = { key, last, offset } end
  end
  if not last or offset > last then c[key] = offset end -- a step back is reported once, not again as a skip
  local w = self.writes[value]
  if w and w.aborted and opts and opts.read_committed then
    self.aborted_reads[#self.aborted_reads + 1] = ("%s read aborted %s at %s"):format(consumer, value, where)
  end
end

-- Whether every value seen at an offset is an aborted transaction's (a
-- read_committed consumer skips those).
function History:only_aborted(vals)
  for v in pairs(vals) do
    local w = self.writes[v]
    if not (w and w.aborted) then return false end
  end
  return true
end

local function add(report, name, evidence)
  report.counts[name] = report.counts[name] + 1
  local list = report.anomalies[name]
  if #list < EVIDENCE_KEPT then list[#list + 1] = evidence end
end

-- check() -> report: ok (no anomaly), counts[name], anomalies[name] =
-- { evidence strings }, and the totals sent, acked, failed, read.
function History:check()
  local report = { counts = {}, anomalies = {}, sent = self.nwrites, acked = 0, failed = 0, read = 0 }
  for _, name in ipairs(M.ANOMALIES) do
    report.counts[name], report.anomalies[name] = 0, {}
  end
  for value, w in pairs(self.writes) do
    if w.state == "acked" then
      report.acked = report.acked + 1
      if not self.seen[value] and not w.aborted then
        local key = tp(w.topic, w.partition)
        if w.offset and (self.read_upto[key] or -1) > w.offset then
          add(report, "lost-write", ("%s acknowledged at %s@%d, consumers read up to %d"):format(
            value, key, w.offset, self.read_upto[key]))
        else
          add(report, "unseen", ("%s acknowledged at %s@%s"):format(value, key, tostring(w.offset or "?")))
        end
      end
    elseif w.state == "failed" then
      report.failed = report.failed + 1
    end
  end
  -- values by offset, offsets by value
  local where_of = {}
  for key, byoff in pairs(self.at) do
    for off, vals in pairs(byoff) do
      local n, list = 0, {}
      for v in pairs(vals) do
        n = n + 1
        list[#list + 1] = tostring(v)
        local wv = where_of[v]
        if not wv then wv = {}; where_of[v] = wv end
        wv[#wv + 1] = key .. "@" .. off
      end
      if n > 1 then
        table.sort(list)
        add(report, "inconsistent-offsets", ("%s@%d holds %s"):format(key, off, table.concat(list, ", ")))
      end
    end
  end
  for v, places in pairs(where_of) do
    if #places > 1 then
      table.sort(places)
      add(report, "duplicate", ("%s at %s"):format(tostring(v), table.concat(places, ", ")))
    end
  end
  for _, s in pairs(self.seen) do
    for _ in pairs(s) do report.read = report.read + 1 end
  end
  for _, e in ipairs(self.nonmonotonic) do add(report, "nonmonotonic-poll", e) end
  for consumer, st in pairs(self.steps) do
    for _, step in ipairs(st) do
      local key, from, to = step[1], step[2], step[3]
      local byoff = self.at[key] or {}
      for off = from + 1, to - 1 do
        if byoff[off] and not self:only_aborted(byoff[off]) then
          add(report, "poll-skip", ("%s went from %s@%d to %d past offset %d"):format(consumer, key, from, to, off))
          break
        end
      end
    end
  end
  for _, e in ipairs(self.aborted_reads) do add(report, "aborted-read", e) end
  report.ok = true
  for _, name in ipairs(M.ANOMALIES) do
    if name ~= "unseen" and report.counts[name] > 0 then report.ok = false end
  end
  return report
end

-- summary(report) -> one line per total and anomaly, for people.
function M.summary(report)
  local out = { ("sent %d, acknowledged %d, failed %d, read %d"):format(report.sent, report.acked, report.failed,
    report.read) }
  for _, name in ipairs(M.ANOMALIES) do
    out[#out + 1] = ("%-21s %d"):format(name, report.counts[name])
    for _, e in ipairs(report.anomalies[name]) do out[#out + 1] = "    " .. e end
  end
  out[#out + 1] = report.ok and "ok: no anomaly" or "ANOMALIES FOUND"
  return table.concat(out, "\n")
end

-- load(path) -> history, or nil, err: a history written as text (above).
function M.load(path)
  local f, err = io.open(path)
  if not f then return nil, err end
  local h = M.history()
  local n = 0
  for line in f:lines() do
    n = n + 1
    local w = {}
    for field in line:gmatch("%S+") do w[#w + 1] = field end
    local ok, perr = pcall(function()
      local kind = w[1]
      if kind == "send" then
        h:send(w[2], w[3], tonumber(w[4]))
      elseif kind == "ack" then
        h:ack(w[2], w[3], tonumber(w[4]), w[5] ~= "?" and tonumber(w[5]) or nil)
      elseif kind == "fail" then
        h:fail(w[2], w[3])
      elseif kind == "poll" then
        h:poll(w[2], w[3], tonumber(w[4]), tonumber(w[5]), w[6], { read_committed = w[7] == "rc" })
      elseif kind == "reset" then
        h:reset(w[2])
      elseif kind == "abort" then
        h:abort(w[2])
      elseif kind then
        error("unknown event '" .. kind .. "'")
      end
    end)
    if not ok then
      f:close()
      return nil, ("%s:%d: %s"):format(path, n, tostring(perr):gsub("^.-:%d+: ", ""))
    end
  end
  f:close()
  return h
end

return M
