-- The surface generator (scripts/gen_surface.lua): the real surface makes
-- one row per schema API (but those whose schema says served = false); a
-- row naming no schema or an unserved one, an API left out, a bad plane or
-- version stops it with the reason.
local function tmp()
  local p = assert(io.popen("mktemp -d"))
  local d = p:read("*l")
  p:close()
  return d
end

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function run(surface_text, schemas)
  local d = tmp()
  write(d .. "/surface.lua", surface_text)
  local args = {}
  for i, s in ipairs(schemas) do
    local path = ("%s/s%d.lua"):format(d, i)
    write(path, s)
    args[#args + 1] = path
  end
  local p = assert(io.popen(("luajit scripts/gen_surface.lua %s/out.c %s/surface.lua %s 2>&1; echo \"rc=$?\""):format(d,
    d, table.concat(args, " "))))
  local out = p:read("*a")
  p:close()
  local f = io.open(d .. "/out.c")
  local c = f and f:read("*a")
  if f then f:close() end
  os.execute("rm -rf '" .. d .. "'")
  return out, c
end

local PRODUCE = 'return { key = 0, name = "Produce", versions = "3-11" }'
local FETCH = 'return { key = 1, name = "Fetch", versions = "4-17" }'

describe("the surface generator", function()
  it("writes a row and a handler prototype per served API", function()
    local out, c = run('return { { "Produce", planes = "data", advertised_min = 0 }, { "Fetch", planes = "both", min = 4 } }',
      { PRODUCE, FETCH, 'return { name = "OffsetCommitKey", versions = "0-1", fields = {} }' })
    assert.matches("rc=0", out, 1, true)
    assert.matches("int kiq_api_produce_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp);", c, 1, true)
    assert.matches("{KIQ_API_PRODUCE, -1, 0, DATA, kiq_api_produce_handle, 0, 0, NULL, 0, NULL, 0, NULL},", c, 1, true)
    assert.matches("{KIQ_API_FETCH, 4, -1, BOTH, kiq_api_fetch_handle, 0, 0, NULL, 0, NULL, 0, NULL},", c, 1, true)
    assert.matches("const size_t kiq_api_nrows = 2;", c, 1, true)
  end)

  it("refuses a row no schema declares", function()
    local out = run('return { { "Produce", planes = "data" }, { "Fetcj", planes = "data" } }', { PRODUCE, FETCH })
    assert.matches('row 2: no schema declares "Fetcj"', out, 1, true)
    assert.matches("rc=1", out, 1, true)
  end)

  it("refuses a schema API that no row serves", function()
    local out = run('return { { "Produce", planes = "data" } }', { PRODUCE, FETCH })
    assert.matches("Fetch", out, 1, true)
    assert.matches("is in no row", out, 1, true)
    assert.matches("rc=1", out, 1, true)
  end)

  it("leaves out an API whose schema says served = false, and refuses a row for it", function()
    local VOTE = 'return { key = 52, name = "Vote", versions = "0-2", served = false }'
    local out, c = run('return { { "Produce", planes = "data" }, { "Fetch", planes = "data" } }', { PRODUCE, FETCH, VOTE })
    assert.matches("rc=0", out, 1, true)
    assert.matches("const size_t kiq_api_nrows = 2;", c, 1, true)
    assert.is_nil(c:find("VOTE", 1, true))
    out = run('return { { "Produce", planes = "data" }, { "Fetch", planes = "data" }, { "Vote", planes = "control" } }',
      { PRODUCE, FETCH, VOTE })
    assert.matches("row 3: Vote says served = false", out, 1, true)
    assert.matches("rc=1", out, 1, true)
  end)

  it("refuses bad planes, versions and fields", function()
    assert.matches("planes must be data, control or both",
      run('return { { "Produce", planes = "client" }, { "Fetch", planes = "data" } }', { PRODUCE, FETCH }), 1, true)
    assert.matches("min must be a version",
      run('return { { "Produce", planes = "data", min = -1 }, { "Fetch", planes = "data" } }', { PRODUCE, FETCH }), 1, true)
    assert.matches('unknown field "max"',
      run('return { { "Produce", planes = "data", max = 9 }, { "Fetch", planes = "data" } }', { PRODUCE, FETCH }), 1, true)
  end)

  it("writes the authorization columns: the operation and how a refusal is answered", function()
    local END = [[return { key = 26, name = "EndTxn", versions = "0-5",
      request = { { "transactional_id", "string" }, { "group_id", "string" } },
      response = { { "throttle_time_ms", "int32" }, { "error_code", "int16", v = "1+" } } }]]
    local out, c = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "data", cluster = "ALTER", ' ..
      'txn = "WRITE", group = "READ" } }', { PRODUCE, END })
    assert.matches("rc=0", out, 1, true)
    assert.matches("{KIQ_API_END_TXN, -1, -1, DATA, kiq_api_end_txn_handle, KIQ_OP_ALTER, 0, deny_end_txn, KIQ_OP_READ, " ..
      "group_of_end_txn, KIQ_OP_WRITE, txn_of_end_txn},", c, 1, true)
    assert.matches("if (v >= 1) ((kiq_end_txn_response_t *)resp)->error_code = code;", c, 1, true)
    assert.matches("return ((const kiq_end_txn_request_t *)req)->transactional_id;", c, 1, true)
    -- a refusal needs a top-level error_code; a group column a group_id
    out = run('return { { "Produce", planes = "data", cluster = "ALTER" }, { "EndTxn", planes = "data" } }',
      { PRODUCE, END })
    assert.matches("needs a top-level error_code", out, 1, true)
    out = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "data", cluster = "READ" } }',
      { PRODUCE, END })
    assert.matches("cluster must be an operation on the cluster", out, 1, true)
    local NOGROUP = 'return { key = 26, name = "EndTxn", versions = "0-5", request = {}, ' ..
      'response = { { "error_code", "int16" } } }'
    out = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "data", group = "READ" } }',
      { PRODUCE, NOGROUP })
    assert.matches("group needs a top-level group_id", out, 1, true)
    assert.matches("rc=1", out, 1, true)
    -- control: the cluster operation asked only on the control plane, which must serve the API
    out, c = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "both", control = "CLUSTER_ACTION" } }',
      { PRODUCE, END })
    assert.matches("rc=0", out, 1, true)
    assert.matches("{KIQ_API_END_TXN, -1, -1, BOTH, kiq_api_end_txn_handle, 0, KIQ_OP_CLUSTER_ACTION, deny_end_txn, 0, " ..
      "NULL, 0, NULL},", c, 1, true)
    out = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "data", control = "CLUSTER_ACTION" } }',
      { PRODUCE, END })
    assert.matches("control on an API the control plane does not serve", out, 1, true)
    out = run('return { { "Produce", planes = "data" }, { "EndTxn", planes = "both", control = "READ" } }',
      { PRODUCE, END })
    assert.matches("control must be an operation on the cluster", out, 1, true)
  end)

  it("serves every API the engine's schemas declare, but those not served yet", function()
    local p = assert(io.popen("ls engine/proto/schema/*.lua"))
    local n = 0
    for path in p:lines() do
      if dofile(path).served ~= false then n = n + 1 end
    end
    p:close()
    local f = assert(io.open("build/gen/api/surface.c"))
    local c = f:read("*a")
    f:close()
    assert.matches(("const size_t kiq_api_nrows = %d;"):format(n), c, 1, true)
  end)
end)
