-- The differential harness: the same requests to Apache Kafka (the
-- reference broker, scripts/kafka.sh) and to KafkaIQ, each answer decoded
-- with KafkaIQ's own codec, normalised as normalize.lua declares, and
-- compared field by field. A difference allow.lua does not list (each entry
-- with its reason) fails the case.
--
--   build/kafkaiq run tests/differential/run.lua [--kafka HOST:PORT] [--kafka-acl HOST:PORT] [--only PATTERN]... [-v]
--
-- Without --kafka it starts a one-node Kafka with scripts/kafka.sh and stops
-- it at the end (names given --kafka end in a tag of the run's own, so a
-- run can follow another against the same Kafka); --only runs the scenarios whose name matches one of the
-- patterns (Lua's). Each scenario (scenarios.lua) runs once at the lowest and
-- once at the highest version of its API that both brokers and the codec
-- speak (a case), with names of its own, against a KafkaIQ broker
-- configured as scripts/kafka.sh configures Kafka; a cluster scenario
-- against three KRaft nodes and serve --brokers 3 (kiq.cluster); an acl
-- scenario against a node of its own each side (kafka.sh --acl, or the
-- SASL listener --kafka-acl names; a combined KafkaIQ node), both with
-- StandardAuthorizer, SASL PLAIN users admin (a super user), alice and bob,
-- its steps signed in as admin or as a step's `as`. The last line:
--   differential: S scenarios, C cases, I identical, A allowed, F different
local kiq = require "kafkaiq"
local core = require "kafkaiq.core"
local connection = require "kafkaiq.client.connection"

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local scenarios = require "scenarios"
-- a step may be a list of steps (a helper's several requests): flattened
for _, sc in ipairs(scenarios) do
  local flat = {}
  local function add(step)
    if step.api then flat[#flat + 1] = step else for _, x in ipairs(step) do add(x) end end
  end
  for _, step in ipairs(sc.steps) do add(step) end
  sc.steps = flat
end
local normalize = require "normalize"
local allow = require "allow"

kiq.log_level("error")

local args = { ... }
local kafka_bootstrap, kafka_acl, only, verbose
local i = 1
while i <= #args do
  if args[i] == "--kafka" then kafka_bootstrap, i = args[i + 1], i + 2
  elseif args[i] == "--kafka-acl" then kafka_acl, i = args[i + 1], i + 2
  elseif args[i] == "--only" then
    only = only or {}
    only[#only + 1] = args[i + 1]
    i = i + 2
  elseif args[i] == "-v" then verbose, i = true, i + 1
  else
    io.stderr:write("usage: run.lua [--kafka HOST:PORT] [--kafka-acl HOST:PORT] [--only PATTERN]... [-v]\n")
    os.exit(2)
  end
end

-- A Kafka given with --kafka may have seen this run's names before: they
-- get a tag of the run's own
local run_tag = (kafka_bootstrap or kafka_acl) and ("-" .. os.time()) or ""

local API_VERSIONS = 18
local codec = {}
for _, a in ipairs(core.apis()) do codec[a.name] = a end

-- ---------------------------------------------------------------- brokers

local root = here .. "/../.."

local kafka_dirs = {}

-- A reference of `nodes` KRaft nodes (scripts/kafka.sh); its bootstrap
-- (with acl: its SASL listener's).
local function start_kafka_nodes(nodes, acl)
  local dir = os.tmpname()
  os.remove(dir)
  kafka_dirs[#kafka_dirs + 1] = dir
  local p = assert(io.popen(("%s/scripts/kafka.sh start --nodes %d --dir %s%s"):format(root, nodes, dir,
    acl and " --acl" or "")))
  local out = p:read("*a")
  p:close()
  local bs = out:match(acl and "KAFKA_SASL=(%S+)" or "KAFKA_BOOTSTRAP=(%S+)")
  if not bs then error("differential: the reference broker did not start:\n" .. out) end
  return bs
end

local function stop_kafka()
  for _, dir in ipairs(kafka_dirs) do
    os.execute(("%s/scripts/kafka.sh stop --dir %s >/dev/null 2>&1"):format(root, dir))
    os.execute(("rm -rf %s"):format(dir))
  end
end

-- KafkaIQ set up as kafka.sh sets up Kafka's node: id 1, one partition
-- per auto-created topic, no rebalance delay.
-- combined: also the quorum's only controller, as Kafka's node is (for
-- what only a controller keeps: client quotas).
local function start_kiq(combined)
  local cfg = { id = 1, ["num.partitions"] = 1, ["default.replication.factor"] = 1,
    ["group.initial.rebalance.delay.ms"] = 0,
    ["offsets.topic.replication.factor"] = 1, ["transaction.state.log.replication.factor"] = 1,
    ["transaction.state.log.min.isr"] = 1 }
  if combined then
    cfg.control_port = core.free_port()
    cfg["controller.quorum.voters"] = ("1@127.0.0.1:%d"):format(cfg.control_port)
  end
  return assert(kiq.broker(cfg))
end

-- A combined KafkaIQ node set up as kafka.sh --acl sets up Kafka's (its
-- one client listener the SASL one).
local function start_kiq_acl()
  local cp = core.free_port()
  return assert(kiq.broker { id = 1, control_port = cp, ["controller.quorum.voters"] = ("1@127.0.0.1:%d"):format(cp),
    ["num.partitions"] = 1, ["default.replication.factor"] = 1, ["group.initial.rebalance.delay.ms"] = 0,
    ["offsets.topic.replication.factor"] = 1, ["transaction.state.log.replication.factor"] = 1,
    ["transaction.state.log.min.isr"] = 1,
    ["listener.security.protocol.map"] = "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
    ["sasl.enabled.mechanisms"] = "PLAIN",
    ["plain.sasl.jaas.config"] = 'org.apache.kafka.common.security.plain.PlainLoginModule required '
      .. 'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";',
    ["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    ["super.users"] = "User:admin;User:ANONYMOUS", ["delegation.token.secret.key"] = "differential-secret" })
end

-- A connection, signed in as user (PLAIN, password <user>-secret) when given.
local function open(bootstrap, user)
  local host, port = bootstrap:match("^([^,:]+):(%d+)")
  return assert(connection.open(host, tonumber(port), { client_id = "differential", connect_timeout_ms = 10000,
    request_timeout_ms = 30000, sasl = user and { username = user, password = user .. "-secret" } }))
end

-- The API ranges a broker advertises: name -> { min, max }.
local function ranges(c)
  local resp = assert(c:request(API_VERSIONS, { client_software_name = "differential",
    client_software_version = "1" }))
  local out = {}
  for _, k in ipairs(resp.api_keys) do
    for name, a in pairs(codec) do
      if a.key == k.api_key then out[name] = { k.min_version, k.max_version } end
    end
  end
  return out
end

-- ---------------------------------------------------------------- comparing

local function is_array(t)
  return type(t) == "table" and (#t > 0 or next(t) == nil)
end

local function show(v)
  if type(v) == "string" then
    if #v > 48 or v:find("[^%g ]") then return ("<%d bytes>"):format(#v) end
    return ("%q"):format(v)
  end
  if type(v) == "table" then return is_array(v) and ("<array of %d>"):format(#v) or "<struct>" end
  return tostring(v)
end

-- The key an array's elements are matched by (normalize.keys), when
-- every element of both has it.
local function key_of(field, a, b)
  local keys = normalize.keys[field]
  if type(keys) ~= "table" then keys = { keys } end
  for _, key in ipairs(keys) do
    local all = true
    for _, t in ipairs({ a, b }) do
      for _, e in ipairs(t) do
        -- a normalised key ("<node_id>") tells no element from another
        if type(e) ~= "table" or e[key] == nil or tostring(e[key]):sub(1, 1) == "<" then all = false end
      end
    end
    if all then return key end
  end
end

-- Differences between a (Kafka's) and b (KafkaIQ's) into out, as
-- { path, kafka, kafkaiq }. Arrays of structs with a key are matched by it
-- ("configs[name=segment.bytes]"), others position by position.
local function diff(a, b, path, out, field)
  if type(a) ~= "table" or type(b) ~= "table" then
    if a ~= b then out[#out + 1] = { path, show(a), show(b) } end
    return
  end
  if is_array(a) and is_array(b) then
    local key = key_of(field, a, b)
    if key then
      local by, names = {}, {}
      for side, t in ipairs({ a, b }) do
        for _, e in ipairs(t) do
          local k = tostring(e[key])
          if not by[k] then by[k] = {}; names[#names + 1] = k end
          by[k][side] = e
        end
      end
      table.sort(names)
      for _, k in ipairs(names) do
        local ea, eb = by[k][1], by[k][2]
        local at = ("%s[%s=%s]"):format(path, key, k)
        if not ea or not eb then
          out[#out + 1] = { at, ea and "present" or "missing", eb and "present" or "missing" }
        else
          diff(ea, eb, at, out, field)
        end
      end
      return
    end
    if #a ~= #b then out[#out + 1] = { path .. ".#", tostring(#a), tostring(#b) } end
    for k = 1, math.min(#a, #b) do diff(a[k], b[k], ("%s[%d]"):format(path, k), out, field) end
    return
  end
  local keys = {}
  for k in pairs(a) do keys[k] = true end
  for k in pairs(b) do keys[k] = true end
  local sorted = {}
  for k in pairs(keys) do sorted[#sorted + 1] = k end
  table.sort(sorted, function(x, y) return tostring(x) < tostring(y) end)
  for _, k in ipairs(sorted) do
    diff(a[k], b[k], path == "" and tostring(k) or path .. "." .. tostring(k), out, k)
  end
end

-- A value written out whole, for -v.
local function dump(v, indent)
  indent = indent or ""
  if type(v) ~= "table" then return show(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  local out = { "{" }
  for _, k in ipairs(keys) do out[#out + 1] = ("%s  %s = %s"):format(indent, tostring(k), dump(v[k], indent .. "  ")) end
  out[#out + 1] = indent .. "}"
  return table.concat(out, "\n")
end

local function matches(pattern, s)
  if not pattern then return true end
  return s:find(pattern) ~= nil
end

-- The allowlist entry that covers a difference, or nil.
local function allowed(case_name, d)
  for _, e in ipairs(allow) do
    if matches(e.case, case_name) and matches(e.path, d[1]) then return e end
  end
end

-- ---------------------------------------------------------------- running

-- One side's run of a case: its connections (the bootstrap's, and one per
-- node a step is sent to) and what steps saved.
local function side_new(bootstrap, id, acl)
  return { conn = open(bootstrap, acl and "admin"), bootstrap = bootstrap, id = id, saved = {}, nodes = {},
    acl = acl, users = {} }
end

-- The connection signed in as a step's `as` (acl scenarios).
local function user_conn(side, user)
  side.users[user] = side.users[user] or open(side.bootstrap, user)
  return side.users[user]
end

-- The connection to node `id` of a side (from Metadata's broker list).
local function node_conn(side, id)
  if side.nodes[id] then return side.nodes[id] end
  local md = assert(side.conn:request(codec.Metadata.key, { topics = {}, allow_auto_topic_creation = false }))
  for _, b in ipairs(md.brokers) do
    if b.node_id == id then
      side.nodes[id] = assert(connection.open(b.host, b.port, { client_id = "differential",
        connect_timeout_ms = 10000, request_timeout_ms = 30000 }))
      return side.nodes[id]
    end
  end
  error(("no node %s in the cluster's metadata"):format(tostring(id)))
end

-- Sends a step's request on one side: the decoded response, or nil, err.
-- A step with `until` is repeated (bounded) until until(resp) is true,
-- its body made again each time (until may have saved what the next one
-- needs, a session's next epoch); one with `to` goes to the node to(saved)
-- names.
local function send(side, step, version)
  local key = codec[step.api].key
  local conn = step.to and node_conn(side, step.to(side.saved)) or step.as and user_conn(side, step.as) or side.conn
  local deadline = core.now_ms() + (step.wait_ms or 10000)
  while true do
    local body = type(step.body) == "function" and step.body(side.saved, side) or step.body or {}
    local resp, err = conn:request(key, body, { version = version, timeout_ms = step.timeout_ms })
    if not resp then
      conn:close()
      if conn == side.conn then side.conn = open(side.bootstrap, side.acl and "admin") end
      for id, c in pairs(side.nodes) do if c == conn then side.nodes[id] = nil end end
      for u, c in pairs(side.users) do if c == conn then side.users[u] = nil end end
      return nil, err
    end
    if not step["until"] or step["until"](resp, side.saved) or core.now_ms() > deadline then return resp end
    core.sleep_ms(100)
  end
end

-- Runs one case; returns "identical" | "allowed" | "different" and the
-- lines to show.
local function run_case(case_name, sc, version, kafka_bs, kiq_bs)
  local sides = { side_new(kafka_bs, case_name, sc.acl), side_new(kiq_bs, case_name, sc.acl) }
  for _, s in ipairs(sides) do s.saved.name = sc.name:gsub("[^%w]+", "-") .. "-v" .. version .. run_tag end
  local verdict, lines = "identical", {}
  for n, step in ipairs(sc.steps) do
    local v = step.api == sc.api and version or step.version
    local resps = {}
    for k, s in ipairs(sides) do
      local resp, err = send(s, step, v)
      if not resp then
        resps[k] = { transport_error = err:gsub("^[^:]*:%d+: ", "") }
      else
        if step.save then step.save(s.saved, resp) end
        resps[k] = step.pick and step.pick(resp, s.saved) or resp
      end
    end
    if not step.ignore then
      local a = normalize.apply(resps[1], sc.cluster)
      local b = normalize.apply(resps[2], sc.cluster)
      local diffs = {}
      diff(a, b, "", diffs)
      for _, d in ipairs(diffs) do
        local e = allowed(case_name, d)
        local where = ("step %d %s: %s"):format(n, step.api, d[1])
        if e then
          if verdict == "identical" then verdict = "allowed" end
          if verbose then lines[#lines + 1] = ("  allowed  %s: Kafka %s, KafkaIQ %s (%s)"):format(where, d[2], d[3], e.reason) end
        else
          verdict = "different"
          lines[#lines + 1] = ("  DIFFERS  %s: Kafka %s, KafkaIQ %s"):format(where, d[2], d[3])
        end
      end
      if verbose and #diffs > 0 then
        lines[#lines + 1] = ("  step %d, Kafka's answer: %s"):format(n, dump(a, "  "))
        lines[#lines + 1] = ("  step %d, KafkaIQ's answer: %s"):format(n, dump(b, "  "))
      end
    end
  end
  for _, s in ipairs(sides) do
    s.conn:close()
    for _, c in pairs(s.nodes) do c:close() end
    for _, c in pairs(s.users) do c:close() end
  end
  return verdict, lines
end

-- The brokers a scenario runs against: one node each (combined: KafkaIQ's
-- also its controller), (cluster) three KRaft nodes beside serve --brokers
-- 3's three brokers, or (acl) one node each with SASL and
-- StandardAuthorizer; started once.
local setups = {}
local function setup(sc)
  local cluster, acl, combined = sc.cluster, sc.acl, sc.combined
  local key = cluster and "cluster" or acl and "acl" or combined and "combined" or "one"
  if setups[key] then return setups[key] end
  local st = {}
  if acl then
    st.kafka = kafka_acl or start_kafka_nodes(1, true)
    st.kiq = start_kiq_acl()
    st.kiq_bootstrap = st.kiq.bootstrap
  elseif cluster then
    st.kafka = start_kafka_nodes(3)
    st.kiq = assert(kiq.cluster { brokers = 3, ["num.partitions"] = 1, ["default.replication.factor"] = 3,
      ["min.insync.replicas"] = 1, ["group.initial.rebalance.delay.ms"] = 0,
      ["offsets.topic.replication.factor"] = 3, ["transaction.state.log.replication.factor"] = 3,
      ["transaction.state.log.min.isr"] = 1 })
    st.kiq_bootstrap = st.kiq:bootstrap()
  else
    st.kafka = (setups.one or setups.combined or {}).kafka or kafka_bootstrap or start_kafka_nodes(1)
    st.kiq = start_kiq(combined)
    st.kiq_bootstrap = st.kiq.bootstrap
  end
  local kc, qc = open(st.kafka, acl and "admin"), open(st.kiq_bootstrap, acl and "admin")
  st.kafka_ranges, st.kiq_ranges = ranges(kc), ranges(qc)
  kc:close()
  qc:close()
  setups[key] = st
  return st
end

local function main()
  local counts = { identical = 0, allowed = 0, different = 0 }
  local nscenarios, ncases, errors = 0, 0, 0
  for _, sc in ipairs(scenarios) do
    local wanted = not only
    for _, p in ipairs(only or {}) do wanted = wanted or matches(p, sc.name) end
    if wanted then
      local st = setup(sc)
      local kafka_bs, kr, qr = st.kafka, st.kafka_ranges, st.kiq_ranges
      nscenarios = nscenarios + 1
      local k, q, c = kr[sc.api], qr[sc.api], codec[sc.api]
      local versions = {}
      if k and q and c then
        local lo = math.max(k[1], q[1], c.min_version, sc.min_version or 0)
        local hi = math.min(k[2], q[2], c.max_version, sc.max_version or 1e9)
        if lo <= hi then versions = lo == hi and { lo } or { lo, hi } end
      end
      if #versions == 0 then
        local d = { "<no common version>", k and (k[1] .. "-" .. k[2]) or "none", q and (q[1] .. "-" .. q[2]) or "none" }
        local e = allowed(sc.name, d)
        if e then
          counts.allowed = counts.allowed + 1
        else
          errors = errors + 1
        end
        print(("%-60s %s (no common version: Kafka %s, KafkaIQ %s)"):format(sc.name, e and "allowed" or "DIFFERENT",
          d[2], d[3]))
        if e and verbose then print("  allowed: " .. e.reason) end
      end
      for _, v in ipairs(versions) do
        ncases = ncases + 1
        local case_name = ("%s v%d"):format(sc.name, v)
        local ok, verdict, lines = pcall(run_case, case_name, sc, v, kafka_bs, st.kiq_bootstrap)
        if not ok then
          verdict, lines = "different", { "  ERROR " .. tostring(verdict) }
        end
        counts[verdict] = counts[verdict] + 1
        print(("%-60s %s"):format(case_name, verdict))
        for _, l in ipairs(lines) do print(l) end
      end
    end
  end
  for _, st in pairs(setups) do st.kiq:stop() end
  local failed = counts.different + errors
  print(("differential: %d scenarios, %d cases, %d identical, %d allowed, %d different"):format(nscenarios, ncases,
    counts.identical, counts.allowed, failed))
  return failed
end

local ok, failed = pcall(main)
stop_kafka()
if not ok then
  io.stderr:write("differential: ", tostring(failed), "\n")
  os.exit(2)
end
os.exit(failed == 0 and 0 or 1)
