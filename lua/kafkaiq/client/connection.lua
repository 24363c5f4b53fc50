-- One blocking connection to one broker: ApiVersions negotiation on open,
-- then request/response with correlation ids checked. Requests go one at a
-- time, so a response always belongs to the last request sent.

local core = require "kafkaiq.core"
local errors = require "kafkaiq.client.errors"

local M = {}
local Connection = {}
Connection.__index = Connection

local API_VERSIONS = 18
local UNSUPPORTED_VERSION = 35

-- The versions our codec implements, by api key, and API names for messages.
local ours, api_names = {}, {}
for _, a in ipairs(core.apis()) do
  ours[a.key] = a
  api_names[a.key] = a.name
end

-- api_name(key) -> "Produce" etc.
function M.api_name(key)
  return api_names[key] or ("api " .. tostring(key))
end

-- The highest version both sides speak, per API: min(our max, their max),
-- provided the ranges overlap.
local function negotiate(api_keys)
  local versions = {}
  for _, a in ipairs(api_keys or {}) do
    local o = ours[a.api_key]
    if o then
      local lo = math.max(o.min_version, a.min_version)
      local hi = math.min(o.max_version, a.max_version)
      if lo <= hi then versions[a.api_key] = hi end
    end
  end
  return versions
end

-- The error code sits right after the correlation id in every ApiVersions
-- response version, so it can be read before knowing the layout.
local function peek_error(frame)
  if #frame < 6 then return nil end
  local hi, lo = frame:byte(5, 6)
  local v = hi * 256 + lo
  if v >= 32768 then v = v - 65536 end
  return v
end

-- open(host, port, cfg) -> connection | nil, err.
-- cfg: client_id, connect_timeout_ms, request_timeout_ms.
function M.open(host, port, cfg)
  local sock, err = core.connect(host, port, cfg.connect_timeout_ms)
  if not sock then return nil, err end
  local c = setmetatable({
    sock = sock, host = host, port = port, addr = host .. ":" .. port,
    client_id = cfg.client_id, timeout = cfg.request_timeout_ms,
    corr = 0, versions = {},
  }, Connection)
  local ok, verr = c:_negotiate()
  if ok and cfg.sasl then ok, verr = c:_sasl_plain(cfg.sasl) end
  if not ok then
    c:close()
    return nil, verr
  end
  return c
end

local SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

-- SASL PLAIN (cfg.sasl = { username =, password = }) after ApiVersions, as
-- Kafka's clients sign in on a SASL_PLAINTEXT listener: SaslHandshake names
-- the mechanism, SaslAuthenticate carries the token.
function Connection:_sasl_plain(sasl)
  local resp, err = self:request(SASL_HANDSHAKE, { mechanism = "PLAIN" })
  if not resp then return nil, err end
  if resp.error_code ~= 0 then return self:_fail(errors.format("SaslHandshake", resp.error_code)) end
  local token = "\0" .. sasl.username .. "\0" .. sasl.password
  resp, err = self:request(SASL_AUTHENTICATE, { auth_bytes = token })
  if not resp then return nil, err end
  if resp.error_code ~= 0 then
    return self:_fail(("%s: %s"):format(errors.format("SaslAuthenticate", resp.error_code), resp.error_message or ""))
  end
  return true
end

-- Sends one request; returns the response frame and the correlation id sent
-- (or true for no_response) | nil, err.
function Connection:_exchange(api_key, version, body, no_response, timeout)
  self.corr = (self.corr + 1) % 2147483647
  local corr = self.corr
  local frame, err = core.encode_request(api_key, version, corr, self.client_id, body)
  if not frame then return nil, err end
  local ok
  ok, err = self.sock:send(frame, timeout)
  if not ok then return self:_fail(err) end
  if no_response then return true end
  frame, err = self.sock:receive(timeout)
  if not frame then return self:_fail(err) end
  return frame, corr
end

-- Closes the connection after a failure and returns nil, "host:port: err".
function Connection:_fail(err)
  self:close()
  return nil, ("%s: %s"):format(self.addr, err)
end

-- ApiVersions: learns the broker's ranges and picks our version per API.
function Connection:_negotiate()
  local ours_v = ours[API_VERSIONS].max_version
  local body = { client_software_name = "kafkaiq-lua", client_software_version = core.version }
  for _ = 1, 2 do
    local frame, corr = self:_exchange(API_VERSIONS, ours_v, body, false, self.timeout)
    if not frame then return nil, corr end
    local rcorr = core.decode_response(API_VERSIONS, 0, frame:sub(1, 4) .. "\0\0\0\0\0\0")
    if rcorr ~= corr then
      return self:_fail(("correlation id mismatch: sent %d, got %s"):format(corr, tostring(rcorr)))
    end
    if peek_error(frame) == UNSUPPORTED_VERSION then
      -- Kafka answers an unknown version in v0's layout, naming its range;
      -- some servers (librdkafka's mock) use another layout, so when that
      -- does not decode, fall back to v0, which every broker speaks.
      local _, resp = core.decode_response(API_VERSIONS, 0, frame)
      local theirs = 0
      for _, a in ipairs(type(resp) == "table" and resp.api_keys or {}) do
        if a.api_key == API_VERSIONS then theirs = a.max_version end
      end
      if ours_v == 0 or theirs >= ours_v then
        return self:_fail(errors.format("ApiVersions", UNSUPPORTED_VERSION))
      end
      ours_v = theirs
    else
      local ok, resp = core.decode_response(API_VERSIONS, ours_v, frame)
      if not ok then return self:_fail(resp) end
      if resp.error_code ~= 0 then return self:_fail(errors.format("ApiVersions", resp.error_code)) end
      self.versions = negotiate(resp.api_keys)
      return true
    end
  end
  return self:_fail("ApiVersions: no version both sides speak")
end

-- c:version(api_key) -> the negotiated version, or nil when the broker lacks the API.
function Connection:version(api_key)
  return self.versions[api_key]
end

-- c:alive() -> whether the socket is still open.
function Connection:alive()
  return self.sock ~= nil
end

-- c:request(api_key, body[, opts]) -> response, version | nil, err.
-- opts: no_response (acks=0 produce: returns true once sent), timeout_ms
-- (how long to wait for the answer), version (at most this one, for a
-- body shaped for an older version). An I/O failure or a mismatched
-- correlation id closes the connection.
function Connection:request(api_key, body, opts)
  opts = opts or {}
  if not self.sock then return nil, self.addr .. ": connection is closed" end
  local v = self.versions[api_key]
  if not v then
    return nil, ("%s: broker does not support %s"):format(self.addr, M.api_name(api_key))
  end
  if opts.version and opts.version < v then v = opts.version end
  local frame, corr = self:_exchange(api_key, v, body, opts.no_response, opts.timeout_ms or self.timeout)
  if not frame then return nil, corr end
  if opts.no_response then return true, v end
  local rcorr, resp = core.decode_response(api_key, v, frame)
  if not rcorr then return self:_fail(resp) end
  if rcorr ~= corr then
    return self:_fail(("correlation id mismatch: sent %d, got %d"):format(corr, rcorr))
  end
  return resp, v
end

-- c:send_request(api_key, body) -> pending | nil, err: sends a request
-- whose answer the broker may hold back (JoinGroup, SyncGroup); collect it
-- with c:collect(pending, wait_ms). One request at a time per connection.
function Connection:send_request(api_key, body)
  if not self.sock then return nil, self.addr .. ": connection is closed" end
  local v = self.versions[api_key]
  if not v then
    return nil, ("%s: broker does not support %s"):format(self.addr, M.api_name(api_key))
  end
  local ok, err = self:_exchange(api_key, v, body, true, self.timeout)
  if not ok then return nil, err end
  return { api_key = api_key, version = v, corr = self.corr }
end

-- c:collect(pending, wait_ms) -> response, version | false (not yet) | nil, err.
-- Waits up to wait_ms for the answer to start, then reads it whole.
function Connection:collect(pending, wait_ms)
  if not self.sock then return nil, self.addr .. ": connection is closed" end
  if not self.sock:readable(wait_ms) then return false end
  local frame, err = self.sock:receive(self.timeout)
  if not frame then return self:_fail(err) end
  local rcorr, resp = core.decode_response(pending.api_key, pending.version, frame)
  if not rcorr then return self:_fail(resp) end
  if rcorr ~= pending.corr then
    return self:_fail(("correlation id mismatch: sent %d, got %d"):format(pending.corr, rcorr))
  end
  return resp, pending.version
end

-- c:close() closes the socket (idempotent).
function Connection:close()
  if self.sock then
    self.sock:close()
    self.sock = nil
  end
end

return M
