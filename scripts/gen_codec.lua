-- Generates the C codec of every Kafka message from the declarations in
-- engine/proto/schema/*.lua (APIs) and engine/proto/schema/data/*.lua (data
-- messages) (format: engine/proto/schema/README.md).
--
--   luajit scripts/gen_codec.lua GENDIR schema1.lua schema2.lua ...
--
-- Writes GENDIR/proto/messages.h, GENDIR/proto/messages.c (structs, init,
-- decode, encode, the API and data tables), GENDIR/proto/messages_sample.c
-- (fills every field of a message with non-default values, for the
-- round-trip tests only) and GENDIR/lua/messages_lua.{h,c} (messages to and
-- from Lua tables: the Lua boundary's, so in lua/ as the layers want).
-- A schema error stops the build with the file and field that are wrong.

local outdir = assert(arg[1], "usage: gen_codec.lua GENDIR SCHEMA...")
local MAXV = 32767

local function die(fmt, ...)
  io.stderr:write("gen_codec: ", string.format(fmt, ...), "\n")
  os.exit(1)
end

-- "N", "N+", "N-M", "none" -> {lo, hi} (lo > hi means never)
local function range(s, where)
  if s == nil then return { 0, MAXV } end
  if s == "none" then return { 1, 0 } end
  local lo = s:match("^(%d+)%+$")
  if lo then return { tonumber(lo), MAXV } end
  local a, b = s:match("^(%d+)%-(%d+)$")
  if a then return { tonumber(a), tonumber(b) } end
  local n = s:match("^(%d+)$")
  if n then return { tonumber(n), tonumber(n) } end
  die("%s: bad version range %q", where, tostring(s))
end

local function intersect(a, b)
  return { math.max(a[1], b[1]), math.min(a[2], b[2]) }
end

local function empty(r) return r[1] > r[2] end

-- C condition for "v in r" within the message's valid versions vr
local function cond(r, vr)
  r = intersect(r, vr)
  if empty(r) then return "0" end
  local parts = {}
  if r[1] > vr[1] then parts[#parts + 1] = "v >= " .. r[1] end
  if r[2] < vr[2] then parts[#parts + 1] = "v <= " .. r[2] end
  if #parts == 0 then return "1" end
  return table.concat(parts, " && ")
end

local function snake(name)
  return (name:gsub("(%l)(%u)", "%1_%2"):gsub("(%u)(%u%l)", "%1_%2"):lower())
end

local prim = {
  bool = { c = "bool", rd = "kiq_rd_bool(r)", wr = "kiq_wr_bool(w, %s)", min = 1 },
  int8 = { c = "int8_t", rd = "kiq_rd_i8(r)", wr = "kiq_wr_i8(w, %s)", min = 1 },
  int16 = { c = "int16_t", rd = "kiq_rd_i16(r)", wr = "kiq_wr_i16(w, %s)", min = 2 },
  uint16 = { c = "uint16_t", rd = "kiq_rd_u16(r)", wr = "kiq_wr_u16(w, %s)", min = 2 },
  int32 = { c = "int32_t", rd = "kiq_rd_i32(r)", wr = "kiq_wr_i32(w, %s)", min = 4 },
  int64 = { c = "int64_t", rd = "kiq_rd_i64(r)", wr = "kiq_wr_i64(w, %s)", min = 8 },
  float64 = { c = "double", rd = "kiq_rd_f64(r)", wr = "kiq_wr_f64(w, %s)", min = 8 },
  uuid = { c = "kiq_uuid_t", rd = "kiq_rd_uuid(r)", wr = "kiq_wr_uuid(w, &%s)", min = 16 },
  string = { c = "kiq_str_t", rd = "kiq_rd_string(r, flex, %s)", wr = "kiq_wr_string(w, %s, flex, %s)",
             min = "(flex ? 1 : 2)", nullable = true },
  bytes = { c = "kiq_bytes_t", rd = "kiq_rd_bytes(r, flex, %s)", wr = "kiq_wr_bytes(w, %s, flex, %s)",
            min = "(flex ? 1 : 4)", nullable = true },
}
prim.records = prim.bytes

---------------------------------------------------------------------------
-- Schema loading and checking

local apis, datas = {}, {}

-- Turns a field list into a struct description; ctype names follow the path.
local function load_struct(fields, ctype, where, vr)
  local st = { ctype = ctype, fields = {}, children = {} }
  local seen, tags = {}, {}
  for i, f in ipairs(fields) do
    local fw = where .. "." .. tostring(f[1])
    if type(f[1]) ~= "string" or not f[1]:match("^[a-z][a-z0-9_]*$") then
      die("%s: field %d needs a snake_case name", where, i)
    end
    if seen[f[1]] then die("%s: duplicate field", fw) end
    seen[f[1]] = true
    for k in pairs(f) do
      if type(k) == "string" and not ({ v = 1, null = 1, tag = 1, tagged = 1, default = 1, fields = 1 })[k] then
        die("%s: unknown attribute %q", fw, k)
      end
    end
    local t = f[2]
    local fd = {
      name = f[1], type = t, where = fw,
      v = range(f.v, fw), null = f.null and range(f.null, fw) or { 1, 0 },
      tag = f.tag, tagged = f.tagged and range(f.tagged, fw) or { 1, 0 },
      default = f.default,
    }
    if (f.tag == nil) ~= (f.tagged == nil) then die("%s: tag and tagged go together", fw) end
    if f.tag then
      if tags[f.tag] then die("%s: tag %d used twice", fw, f.tag) end
      tags[f.tag] = true
    end
    if t == "[]" or t == "struct" then
      if type(f.fields) ~= "table" then die("%s: %s needs fields", fw, t) end
      -- a nullable struct: an int8 marker (-1 null, 1 present) before its fields
      fd.nullable_struct = t == "struct" and not empty(fd.null)
      -- tagged, it is written only when not null (Kafka's ClassicMemberMetadata)
      if fd.nullable_struct and f.tag and fd.default ~= "null" then
        die("%s: a tagged nullable struct must default to null", fw)
      end
      fd.struct = load_struct(f.fields, ctype:gsub("_t$", "") .. "_" .. f[1] .. "_t", fw, vr)
      fd.kind = t == "[]" and "sarray" or "struct"
      st.children[#st.children + 1] = fd.struct
    elseif type(t) == "string" and t:match("^%[%]") then
      fd.elem = t:sub(3)
      if not prim[fd.elem] then die("%s: unknown element type %q", fw, fd.elem) end
      fd.kind = "parray"
    elseif prim[t] then
      fd.kind = "prim"
      if f.fields then die("%s: a %s has no fields", fw, t) end
    else
      die("%s: unknown type %q", fw, tostring(t))
    end
    if not empty(fd.null) and fd.kind == "prim" and not prim[t].nullable then
      die("%s: %s cannot be nullable", fw, t)
    end
    st.fields[#st.fields + 1] = fd
  end
  return st
end

-- A data message (no api key: a record in __consumer_offsets, a consumer
-- protocol payload) is one struct of its own, without request or response.
local function load_data(s, path)
  for k in pairs(s) do
    if not ({ name = 1, versions = 1, flexible = 1, fields = 1 })[k] then
      die("%s: unknown key %q in a data message", path, tostring(k))
    end
  end
  if not s.name:match("^%u%w*$") then die("%s: name must be CamelCase", path) end
  if type(s.fields) ~= "table" then die("%s: fields missing", path) end
  local d = {
    name = s.name, cname = snake(s.name), file = path,
    vr = range(s.versions, path), flex = range(s.flexible or "none", path),
  }
  if empty(d.vr) then die("%s: no versions", path) end
  d.st = load_struct(s.fields, "kiq_" .. d.cname .. "_t", path, d.vr)
  for _, other in ipairs(datas) do
    if other.name == d.name then die("%s: data message %s also in %s", path, d.name, other.file) end
  end
  datas[#datas + 1] = d
end

local function load_api(s, path)
  for k in pairs(s) do
    if not ({ key = 1, name = 1, versions = 1, flexible = 1, request = 1, response = 1, served = 1 })[k] then
      die("%s: unknown key %q in an API schema", path, tostring(k))
    end
  end
  -- served = false: a codec only, in no row of engine/api/surface.lua
  -- (scripts/gen_surface.lua checks that); the codec is generated the same
  if s.served ~= nil and s.served ~= false then die("%s: served must be false when given", path) end
  local api = {
    key = s.key, name = s.name, cname = snake(s.name), file = path,
    vr = range(s.versions, path), flex = range(s.flexible or "none", path),
  }
  if empty(api.vr) then die("%s: no versions", path) end
  for _, dir in ipairs({ "request", "response" }) do
    if type(s[dir]) ~= "table" then die("%s: %s missing", path, dir) end
    api[dir] = load_struct(s[dir], "kiq_" .. api.cname .. "_" .. dir .. "_t", path .. ":" .. dir, api.vr)
  end
  for _, other in ipairs(apis) do
    if other.key == api.key then die("%s: api key %d also in %s", path, api.key, other.file) end
  end
  apis[#apis + 1] = api
end

for i = 2, #arg do
  local path = arg[i]
  local chunk, err = loadfile(path)
  if not chunk then die("%s", err) end
  local ok, s = pcall(chunk)
  if not ok then die("%s: %s", path, s) end
  if type(s) ~= "table" or type(s.name) ~= "string" then die("%s: must return a table with a name", path) end
  if s.key == nil then
    load_data(s, path)
  elseif type(s.key) == "number" then
    load_api(s, path)
  else
    die("%s: key must be an api key number (data messages have none)", path)
  end
end
table.sort(apis, function(a, b) return a.key < b.key end)
table.sort(datas, function(a, b) return a.name < b.name end)

-- Every generated C type name once: a data message named like an API's
-- request or nested struct would otherwise collide at compile time.
do
  local owner = {}
  local function claim(st, file)
    for _, child in ipairs(st.children) do claim(child, file) end
    if owner[st.ctype] then die("%s: C type %s also generated for %s", file, st.ctype, owner[st.ctype]) end
    owner[st.ctype] = file
  end
  for _, api in ipairs(apis) do
    claim(api.request, api.file)
    claim(api.response, api.file)
  end
  for _, d in ipairs(datas) do claim(d.st, d.file) end
end

---------------------------------------------------------------------------
-- Emitters

local H, C, S = {}, {}, {}
local function emit(buf, fmt, ...) buf[#buf + 1] = select("#", ...) > 0 and fmt:format(...) or fmt end

local function each_struct(st, fn)
  for _, child in ipairs(st.children) do each_struct(child, fn) end
  fn(st)
end

local function fname(st) return st.ctype:gsub("_t$", "") end

local function c_default(fd)
  local d = fd.default
  if fd.kind == "prim" then
    local t = fd.type
    if t == "string" then
      if d == "null" then return nil end
      if d and d ~= "" then return ("KIQ_STR(%q)"):format(d) end
      return nil
    elseif t == "bool" then
      return d == true and "true" or nil
    elseif t == "bytes" or t == "records" or t == "uuid" then
      return nil
    elseif d ~= nil and d ~= 0 then
      if type(d) ~= "number" then die("%s: default must be a number", fd.where) end
      if t == "int64" then return ("INT64_C(%d)"):format(d) end
      return tostring(d)
    end
  elseif (fd.kind == "sarray" or fd.kind == "parray") and d == "null" then
    return "null-array"
  end
  return nil
end

local function gen_struct_decl(st)
  emit(H, "typedef struct %s {", fname(st))
  for _, fd in ipairs(st.fields) do
    if fd.kind == "prim" then
      emit(H, "    %s %s;", prim[fd.type].c, fd.name)
      -- records may instead lie in files (sendfile); NULL means in memory
      if fd.type == "records" then emit(H, "    const kiq_file_records_t *%s_file;", fd.name) end
    elseif fd.kind == "struct" then
      emit(H, "    %s %s;", fd.struct.ctype, fd.name)
      if fd.nullable_struct then emit(H, "    bool %s_null;", fd.name) end
    else
      local et = fd.kind == "sarray" and fd.struct.ctype or prim[fd.elem].c
      emit(H, "    int32_t %s_n;", fd.name)
      emit(H, "    %s *%s;", et, fd.name)
    end
  end
  emit(H, "    kiq_tags_t _tags;")
  emit(H, "} %s;", st.ctype)
  emit(H, "void %s_init(%s *m);", fname(st), st.ctype)
  emit(H, "")
end

local function gen_init(st)
  emit(C, "void %s_init(%s *m)\n{", fname(st), st.ctype)
  emit(C, "    memset(m, 0, sizeof *m);")
  for _, fd in ipairs(st.fields) do
    local d = c_default(fd)
    if fd.kind == "struct" then
      emit(C, "    %s_init(&m->%s);", fname(fd.struct), fd.name)
      if fd.nullable_struct and fd.default == "null" then emit(C, "    m->%s_null = true;", fd.name) end
    elseif d == "null-array" then
      emit(C, "    m->%s_n = -1;", fd.name)
    elseif d then
      emit(C, "    m->%s = %s;", fd.name, d)
    end
  end
  emit(C, "}\n")
end

-- Code reading one value of field fd into lvalue `dst` from reader `r`.
local function rd_value(fd, vr, dst, indent)
  local nul = cond(fd.null, vr)
  if fd.kind == "prim" then
    local p = prim[fd.type]
    return { indent .. dst .. " = " .. p.rd:format(nul) .. ";" }
  elseif fd.kind == "struct" then
    if fd.nullable_struct then
      return { indent .. ("%s_null = (%s) && kiq_rd_i8(r) < 0;"):format(dst, nul),
               indent .. ("if (!%s_null) dec_%s(r, v, a, &%s);"):format(dst, fname(fd.struct), dst) }
    end
    return { indent .. ("dec_%s(r, v, a, &%s);"):format(fname(fd.struct), dst) }
  end
  local out = {}
  local et, emin
  if fd.kind == "sarray" then
    et, emin = fd.struct.ctype, ("min_%s(v)"):format(fname(fd.struct))
  else
    et, emin = prim[fd.elem].c, tostring(prim[fd.elem].min)
  end
  out[#out + 1] = indent .. ("%s_n = kiq_rd_array_len(r, flex, %s, %s);"):format(dst, nul, emin)
  out[#out + 1] = indent .. ("if (%s_n > 0) {"):format(dst)
  out[#out + 1] = indent .. ("    %s = kiq_arena_calloc(a, (size_t)%s_n, sizeof(%s));"):format(dst, dst, et)
  out[#out + 1] = indent .. ("    for (int32_t i = 0; i < %s_n && !r->err; i++)"):format(dst)
  if fd.kind == "sarray" then
    out[#out + 1] = indent .. ("        dec_%s(r, v, a, &%s[i]);"):format(fname(fd.struct), dst)
  else
    local p = prim[fd.elem]
    out[#out + 1] = indent .. ("        %s[i] = %s;"):format(dst, p.rd:format("false"))
  end
  out[#out + 1] = indent .. "}"
  return out
end

local function wr_value(fd, vr, src, indent)
  local nul = cond(fd.null, vr)
  if fd.kind == "prim" then
    local p = prim[fd.type]
    if fd.type == "records" then
      return { indent .. ("kiq_wr_records(w, %s, %s_file, flex, %s);"):format(src, src, nul) }
    end
    if p.nullable then return { indent .. p.wr:format(src, nul) .. ";" } end
    return { indent .. p.wr:format(src) .. ";" }
  elseif fd.kind == "struct" then
    if fd.nullable_struct then
      return { indent .. ("if (%s) kiq_wr_i8(w, %s_null ? -1 : 1);"):format(nul, src),
               indent .. ("if (!(%s) || !%s_null) enc_%s(w, v, &%s);"):format(nul, src, fname(fd.struct), src) }
    end
    return { indent .. ("enc_%s(w, v, &%s);"):format(fname(fd.struct), src) }
  end
  local out = {}
  out[#out + 1] = indent .. ("kiq_wr_array_len(w, %s_n, flex, %s);"):format(src, nul)
  out[#out + 1] = indent .. ("for (int32_t i = 0; i < %s_n; i++)"):format(src)
  if fd.kind == "sarray" then
    out[#out + 1] = indent .. ("    enc_%s(w, v, &%s[i]);"):format(fname(fd.struct), src)
  else
    out[#out + 1] = indent .. "    " .. prim[fd.elem].wr:format(src .. "[i]", "false") .. ";"
  end
  return out
end

-- Is a tagged field at its default (then it is not written)?
local function is_default_expr(fd, src)
  local d = c_default(fd)
  if fd.kind == "prim" then
    local t = fd.type
    if t == "string" then
      if fd.default == "null" then return src .. ".p == NULL" end
      if d then return ("(%s.p && %s.len == %d && memcmp(%s.p, %q, %d) == 0)"):format(
        src, src, #fd.default, src, fd.default, #fd.default) end
      return ("(%s.p == NULL || %s.len == 0)"):format(src, src)
    elseif t == "bytes" or t == "records" then
      return ("(%s.p == NULL || %s.len == 0)"):format(src, src)
    elseif t == "uuid" then
      return ("kiq_uuid_is_zero(&%s)"):format(src)
    end
    return ("%s == %s"):format(src, d or (t == "bool" and "false" or "0"))
  elseif fd.kind == "struct" then
    if fd.nullable_struct then return src .. "_null" end
    return ("is_default_%s(&%s)"):format(fname(fd.struct), src)
  end
  return d == "null-array" and (src .. "_n < 0") or (src .. "_n == 0")
end

local function tagged_fields(st)
  local t = {}
  for _, fd in ipairs(st.fields) do if fd.tag then t[#t + 1] = fd end end
  table.sort(t, function(a, b) return a.tag < b.tag end)
  return t
end

local function gen_codec(st, vr, flexr)
  local n = fname(st)
  local flexc = cond(flexr, vr)
  -- minimum wire size of an element, to bound array counts before allocating
  if not st.top then
  -- inline: a struct held directly by a top-level message has no array to bound
  emit(C, "static inline size_t min_%s(int16_t v)\n{", n)
  emit(C, "    bool flex = %s;\n    size_t n = flex ? 1 : 0;\n    (void)v;\n    (void)flex;", flexc)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    local tagged = cond(fd.tagged, vr)
    local m
    if fd.kind == "prim" then
      m = tostring(prim[fd.type].min)
    elseif fd.kind == "struct" then
      m = fd.nullable_struct and ("((%s) ? 1 : min_%s(v))"):format(cond(fd.null, vr), fname(fd.struct))
          or ("min_%s(v)"):format(fname(fd.struct))
    else
      m = "(flex ? 1 : 4)"
    end
    if present ~= "0" then
      emit(C, "    if ((%s) && !(%s)) n += %s;", present, tagged, m)
    end
  end
  emit(C, "    return n;\n}\n")
  end

  if st.used_by_tags then
    emit(C, "static bool is_default_%s(const %s *m)\n{", n, st.ctype)
    local parts = {}
    for _, fd in ipairs(st.fields) do parts[#parts + 1] = is_default_expr(fd, "m->" .. fd.name) end
    emit(C, "    return %s;\n}\n", #parts > 0 and table.concat(parts, " && ") or "true")
  end

  -- decoder
  emit(C, "static void dec_%s(kiq_rd_t *r, int16_t v, kiq_arena_t *a, %s *m)\n{", n, st.ctype)
  emit(C, "    bool flex = %s;\n    (void)flex;\n    (void)a;\n    %s_init(m);", flexc, n)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      local tagged = cond(fd.tagged, vr)
      emit(C, "    if ((%s) && !(%s)) {", present, tagged)
      for _, l in ipairs(rd_value(fd, vr, "m->" .. fd.name, "        ")) do emit(C, l) end
      emit(C, "    }")
    end
  end
  local tags = tagged_fields(st)
  emit(C, "    if (flex) {")
  emit(C, "        uint32_t count = kiq_rd_uvarint(r);")
  emit(C, "        const uint8_t *section = r->p;")
  emit(C, "        uint8_t *unknown = NULL;")
  emit(C, "        for (uint32_t t = 0; t < count && !r->err; t++) {")
  emit(C, "            const uint8_t *start = r->p;")
  emit(C, "            uint32_t tag = kiq_rd_uvarint(r);")
  emit(C, "            uint32_t size = kiq_rd_uvarint(r);")
  emit(C, "            const uint8_t *data = kiq_rd_raw(r, size);")
  emit(C, "            (void)tag;")
  emit(C, "            if (!data) break;")
  if #tags > 0 then
    emit(C, "            kiq_rd_t sub;")
    emit(C, "            kiq_rd_init(&sub, data, size);")
    emit(C, "            switch (tag) {")
    for _, fd in ipairs(tags) do
      emit(C, "            case %d:", fd.tag)
      emit(C, "                if (%s) {", cond(intersect(fd.tagged, fd.v), vr))
      emit(C, "                    kiq_rd_t *outer = r;")
      emit(C, "                    r = &sub;")
      for _, l in ipairs(rd_value(fd, vr, "m->" .. fd.name, "                    ")) do emit(C, l) end
      emit(C, "                    r = outer;")
      emit(C, "                    if (sub.err) kiq_rd_fail(r, sub.err);")
      emit(C, "                    continue;")
      emit(C, "                }")
      emit(C, "                break;")
    end
    emit(C, "            default:\n                break;\n            }")
  end
  emit(C, "            if (!unknown) unknown = kiq_arena_alloc(a, (size_t)(r->end - section));")
  emit(C, "            memcpy(unknown + m->_tags.len, start, (size_t)(r->p - start));")
  emit(C, "            m->_tags.raw = unknown;")
  emit(C, "            m->_tags.len += (int32_t)(r->p - start);")
  emit(C, "            m->_tags.count++;")
  emit(C, "        }")
  emit(C, "    }")
  emit(C, "}\n")

  -- encoder
  emit(C, "static void enc_%s(kiq_wr_t *w, int16_t v, const %s *m)\n{", n, st.ctype)
  emit(C, "    bool flex = %s;\n    (void)flex;", flexc)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      emit(C, "    if ((%s) && !(%s)) {", present, cond(fd.tagged, vr))
      for _, l in ipairs(wr_value(fd, vr, "m->" .. fd.name, "        ")) do emit(C, l) end
      emit(C, "    }")
    end
  end
  emit(C, "    if (flex) {")
  if #tags == 0 then
    emit(C, "        kiq_wr_uvarint(w, (uint32_t)m->_tags.count);")
  else
    emit(C, "        uint32_t count = (uint32_t)m->_tags.count;")
    for _, fd in ipairs(tags) do
      emit(C, "        bool has_%s = (%s) && !(%s);", fd.name, cond(intersect(fd.tagged, fd.v), vr),
        is_default_expr(fd, "m->" .. fd.name))
      emit(C, "        count += has_%s;", fd.name)
    end
    emit(C, "        kiq_wr_uvarint(w, count);")
    for _, fd in ipairs(tags) do
      emit(C, "        if (has_%s) {", fd.name)
      emit(C, "            kiq_wr_t tw, *outer = w;")
      emit(C, "            kiq_wr_init(&tw);")
      emit(C, "            w = &tw;")
      for _, l in ipairs(wr_value(fd, vr, "m->" .. fd.name, "            ")) do emit(C, l) end
      emit(C, "            w = outer;")
      emit(C, "            kiq_wr_uvarint(w, %d);", fd.tag)
      emit(C, "            kiq_wr_uvarint(w, (uint32_t)tw.len);")
      emit(C, "            kiq_wr_raw(w, tw.buf, tw.len);")
      emit(C, "            if (tw.err) w->err = true;")
      emit(C, "            kiq_wr_free(&tw);")
      emit(C, "        }")
    end
  end
  emit(C, "        kiq_wr_raw(w, m->_tags.raw, (size_t)m->_tags.len);")
  emit(C, "    }")
  emit(C, "}\n")
end

-- Sample values: every field present in the version gets a non-default value.
local function gen_sample(st, vr)
  local n = fname(st)
  emit(S, "static void sample_%s(%s *m, int16_t v, kiq_arena_t *a, unsigned seed)\n{", n, st.ctype)
  emit(S, "    (void)a;\n    (void)v;\n    (void)seed;\n    %s_init(m);", n)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      emit(S, "    if (%s) {", present)
      local dst = "m->" .. fd.name
      local function val(t, d)
        if t == "bool" then return d == true and "false" or "true" end
        if t == "string" then return ("sample_str(a, seed, %q)"):format(fd.name) end
        if t == "bytes" or t == "records" then return "sample_bytes(a, seed)" end
        if t == "uuid" then return "sample_uuid(seed)" end
        if t == "float64" then return "(double)seed + 0.5" end
        if t == "int8" then return "(int8_t)(seed % 100 + 1)" end
        if t == "uint16" then return "(uint16_t)(seed % 60000 + 1)" end
        if t == "int16" then return "(int16_t)(seed % 30000 + 1)" end
        if t == "int32" then return "(int32_t)(seed * 7 + 1)" end
        return "(int64_t)seed * 1000003 + 1"
      end
      if fd.kind == "prim" then
        emit(S, "        %s = %s;", dst, val(fd.type, fd.default))
      elseif fd.kind == "struct" then
        emit(S, "        sample_%s(&%s, v, a, seed + 1);", fname(fd.struct), dst)
        if fd.nullable_struct then emit(S, "        %s_null = false;", dst) end
      else
        local et = fd.kind == "sarray" and fd.struct.ctype or prim[fd.elem].c
        emit(S, "        %s_n = 2;", dst)
        emit(S, "        %s = kiq_arena_calloc(a, 2, sizeof(%s));", dst, et)
        emit(S, "        for (int32_t i = 0; i < 2; i++)")
        if fd.kind == "sarray" then
          emit(S, "            sample_%s(&%s[i], v, a, seed + 3 * (unsigned)i + 1);", fname(fd.struct), dst)
        else
          emit(S, "            %s[i] = %s;", dst, val(fd.elem):gsub("seed", "(seed + (unsigned)i)"))
        end
      end
      emit(S, "    }")
    end
  end
  emit(S, "}\n")
end

local function mark_tag_structs(st)
  for _, fd in ipairs(st.fields) do
    if fd.struct then
      if fd.tag and fd.kind == "struct" and not fd.nullable_struct then
        local function mark(s)
          s.used_by_tags = true
          for _, f in ipairs(s.fields) do if f.struct and f.kind == "struct" then mark(f.struct) end end
        end
        mark(fd.struct)
      end
      mark_tag_structs(fd.struct)
    end
  end
end

-- Lua converters: a message as a Lua table keyed by field name, for the
-- Lua module (the engine's own client speaks through the same codec).
local L, LH = {}, {}
local int_range = {
  int8 = { "INT8_MIN", "INT8_MAX" }, int16 = { "INT16_MIN", "INT16_MAX" },
  uint16 = { "0", "UINT16_MAX" }, int32 = { "INT32_MIN", "INT32_MAX" },
  int64 = { "INT64_MIN", "INT64_MAX" },
}

local function lua_push_value(kind, t, src, st_fd)
  if kind == "struct" then return ("push_%s(L, v, &%s);"):format(fname(st_fd.struct), src) end
  if t == "bool" then return ("lua_pushboolean(L, %s);"):format(src) end
  if t == "string" then return ("kiq_lua_push_str(L, %s);"):format(src) end
  if t == "bytes" or t == "records" then return ("kiq_lua_push_bytes(L, %s);"):format(src) end
  if t == "uuid" then return ("kiq_lua_push_uuid(L, &%s);"):format(src) end
  if t == "int64" then return ("kiq_lua_push_int64(L, %s);"):format(src) end
  return ("lua_pushnumber(L, (lua_Number)%s);"):format(src)
end

local function lua_check_value(kind, t, dst, fd, idx)
  local name = fd.name
  if kind == "struct" then
    return ("if (!lua_istable(L, %s)) luaL_error(L, \"field '%s': table expected\");\n"):format(idx, name) ..
      ("        check_%s(L, %s, v, a, &%s);"):format(fname(fd.struct), idx, dst)
  end
  if t == "bool" then return ("%s = kiq_lua_to_bool(L, %s, %q);"):format(dst, idx, name) end
  if t == "string" then return ("%s = kiq_lua_to_str(L, %s, a, %q);"):format(dst, idx, name) end
  if t == "bytes" or t == "records" then return ("%s = kiq_lua_to_bytes(L, %s, a, %q);"):format(dst, idx, name) end
  if t == "uuid" then return ("%s = kiq_lua_to_uuid(L, %s, %q);"):format(dst, idx, name) end
  if t == "float64" then return ("%s = kiq_lua_to_double(L, %s, %q);"):format(dst, idx, name) end
  local r = int_range[t]
  return ("%s = (%s)kiq_lua_to_int(L, %s, %s, %s, %q);"):format(dst, prim[t].c, idx, r[1], r[2], name)
end

local function gen_lua(st, vr)
  local n = fname(st)
  emit(L, "static void push_%s(lua_State *L, int16_t v, const %s *m)\n{", n, st.ctype)
  emit(L, "    (void)v;\n    lua_createtable(L, 0, %d);", #st.fields)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      emit(L, "    if (%s) {", present)
      local src = "m->" .. fd.name
      if fd.kind == "sarray" or fd.kind == "parray" then
        emit(L, "        if (%s_n < 0) {\n            lua_pushnil(L);\n        } else {", src)
        emit(L, "            lua_createtable(L, %s_n, 0);", src)
        emit(L, "            for (int32_t i = 0; i < %s_n; i++) {", src)
        if fd.kind == "sarray" then
          emit(L, "                push_%s(L, v, &%s[i]);", fname(fd.struct), src)
        else
          emit(L, "                %s", lua_push_value("prim", fd.elem, src .. "[i]"))
        end
        emit(L, "                lua_rawseti(L, -2, i + 1);\n            }\n        }")
      elseif fd.nullable_struct then
        emit(L, "        if (%s_null) lua_pushnil(L);\n        else %s", src, lua_push_value(fd.kind, fd.type, src, fd))
      else
        emit(L, "        %s", lua_push_value(fd.kind, fd.type, src, fd))
      end
      emit(L, "        lua_setfield(L, -2, %q);\n    }", fd.name)
    end
  end
  emit(L, "}\n")

  emit(L, "static void check_%s(lua_State *L, int idx, int16_t v, kiq_arena_t *a, %s *m)\n{", n, st.ctype)
  emit(L, "    (void)v;\n    (void)a;\n    %s_init(m);", n)
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      emit(L, "    if (%s) {", present)
      emit(L, "        lua_getfield(L, idx, %q);", fd.name)
      emit(L, "        int top = lua_gettop(L);")
      emit(L, "        if (!lua_isnil(L, top)) {")
      local dst = "m->" .. fd.name
      if fd.kind == "sarray" or fd.kind == "parray" then
        local et = fd.kind == "sarray" and fd.struct.ctype or prim[fd.elem].c
        emit(L, "            %s_n = kiq_lua_array_len(L, top, %q);", dst, fd.name)
        emit(L, "            %s = kiq_arena_calloc(a, (size_t)%s_n, sizeof(%s));", dst, dst, et)
        emit(L, "            for (int32_t i = 0; i < %s_n; i++) {", dst)
        emit(L, "                lua_rawgeti(L, top, i + 1);")
        if fd.kind == "sarray" then
          emit(L, "                %s", lua_check_value("struct", nil, dst .. "[i]", fd, "top + 1"))
        else
          emit(L, "                %s", lua_check_value("prim", fd.elem, dst .. "[i]", fd, "top + 1"))
        end
        emit(L, "                lua_pop(L, 1);\n            }")
      else
        emit(L, "            %s", lua_check_value(fd.kind, fd.type, dst, fd, "top"))
        if fd.nullable_struct then emit(L, "            %s_null = false;", dst) end
      end
      local nul = cond(fd.null, vr)
      if (fd.kind == "sarray" or fd.kind == "parray") and nul ~= "0" then
        -- an absent nullable array is null (Metadata: nil topics = all)
        emit(L, "        } else if (%s) {\n            %s_n = -1;", nul, dst)
      elseif fd.nullable_struct and nul ~= "0" then
        emit(L, "        } else if (%s) {\n            %s_null = true;", nul, dst)
      end
      emit(L, "        }\n        lua_pop(L, 1);\n    }")
    end
  end
  emit(L, "}\n")
end

emit(L, "/* Generated by scripts/gen_codec.lua: messages as Lua tables. */")
emit(L, '#include "lua/messages_lua.h"\n\n#include <stdint.h>\n#include <string.h>\n\n#include "lua/convert.h"\n')
emit(L, "static int lua_absindex_compat(lua_State *L, int idx)\n{")
emit(L, "    return idx > 0 || idx <= LUA_REGISTRYINDEX ? idx : lua_gettop(L) + idx + 1;\n}\n")

emit(H, "/* Generated by scripts/gen_codec.lua from engine/proto/schema. Do not edit. */")
emit(H, "#ifndef KIQ_PROTO_MESSAGES_H\n#define KIQ_PROTO_MESSAGES_H\n")
emit(H, '#include <stddef.h>\n\n#include "core/arena.h"\n#include "proto/reader.h"\n#include "proto/writer.h"\n')
emit(H, "enum kiq_api_key {")
for _, api in ipairs(apis) do emit(H, "    KIQ_API_%s = %d,", api.cname:upper(), api.key) end
emit(H, "};\n")

emit(C, "/* Generated by scripts/gen_codec.lua from engine/proto/schema. Do not edit. */")
emit(C, '#include "proto/messages.h"\n\n#include <stddef.h>\n#include <string.h>\n')

emit(S, "/* Generated by scripts/gen_codec.lua: sample messages for the codec tests. */")
emit(S, '#include "proto/messages.h"\n\n#include <stdio.h>\n#include <string.h>\n')
emit(S, [[
static kiq_str_t sample_str(kiq_arena_t *a, unsigned seed, const char *field)
{
    char tmp[96];
    int n = snprintf(tmp, sizeof tmp, "%s-%u", field, seed);
    return (kiq_str_t){kiq_arena_strndup(a, tmp, (size_t)n), n};
}

static kiq_bytes_t sample_bytes(kiq_arena_t *a, unsigned seed)
{
    uint8_t *p = kiq_arena_alloc(a, 5);
    for (int i = 0; i < 5; i++) p[i] = (uint8_t)(seed + (unsigned)i);
    return (kiq_bytes_t){p, 5};
}

static kiq_uuid_t sample_uuid(unsigned seed)
{
    kiq_uuid_t u;
    for (int i = 0; i < 16; i++) u.b[i] = (uint8_t)(seed * 31 + (unsigned)i + 1);
    return u;
}
]])

-- Everything generated for one top-level message: structs, init, codec,
-- the type-erased *_any wrappers the tables point at, samples, Lua converters.
-- Whether a struct holds an error_code, itself or in what it holds: the
-- error visitor's way down.
local function holds_errors(st)
  if st.holds_errors == nil then
    st.holds_errors = false
    for _, fd in ipairs(st.fields) do
      if (fd.kind == "prim" and fd.type == "int16" and fd.name == "error_code")
          or ((fd.kind == "struct" or fd.kind == "sarray") and holds_errors(fd.struct)) then
        st.holds_errors = true
      end
    end
  end
  return st.holds_errors
end

-- A visitor of every error_code a version of the struct carries (Kafka's
-- errorCounts: the top level's and each element's).
local function gen_errors(st, vr)
  if not holds_errors(st) then return end
  local n = fname(st)
  emit(C, "static void errs_%s(const %s *m, int16_t v, kiq_error_visit_fn visit, void *ctx)\n{", n, st.ctype)
  emit(C, "    (void)v;")
  for _, fd in ipairs(st.fields) do
    local present = cond(fd.v, vr)
    if present ~= "0" then
      if fd.kind == "prim" and fd.type == "int16" and fd.name == "error_code" then
        emit(C, "    if (%s) visit(ctx, m->error_code);", present)
      elseif fd.kind == "struct" and holds_errors(fd.struct) then
        local null = fd.nullable_struct and (" && !m->%s_null"):format(fd.name) or ""
        emit(C, "    if ((%s)%s) errs_%s(&m->%s, v, visit, ctx);", present, null, fname(fd.struct), fd.name)
      elseif fd.kind == "sarray" and holds_errors(fd.struct) then
        emit(C, "    for (int32_t i = 0; (%s) && i < m->%s_n; i++) errs_%s(&m->%s[i], v, visit, ctx);", present,
          fd.name, fname(fd.struct), fd.name)
      end
    end
  end
  emit(C, "}\n")
end

local function gen_message(st, vr, flex)
  st.top = true
  mark_tag_structs(st)
  each_struct(st, gen_struct_decl)
  each_struct(st, function(s) gen_init(s) end)
  -- forward declarations so nested structs can reference each other
  each_struct(st, function(s)
    emit(C, "static void dec_%s(kiq_rd_t *r, int16_t v, kiq_arena_t *a, %s *m);", fname(s), s.ctype)
    emit(C, "static void enc_%s(kiq_wr_t *w, int16_t v, const %s *m);", fname(s), s.ctype)
  end)
  emit(C, "")
  each_struct(st, function(s) gen_codec(s, vr, flex) end)
  local n = fname(st)
  emit(H, "int %s_decode(kiq_rd_t *r, int16_t version, kiq_arena_t *a, %s *m);", n, st.ctype)
  emit(H, "int %s_encode(kiq_wr_t *w, int16_t version, const %s *m);\n", n, st.ctype)
  emit(C, "int %s_decode(kiq_rd_t *r, int16_t version, kiq_arena_t *a, %s *m)\n{", n, st.ctype)
  emit(C, "    dec_%s(r, version, a, m);\n    return r->err ? -1 : 0;\n}\n", n)
  emit(C, "int %s_encode(kiq_wr_t *w, int16_t version, const %s *m)\n{", n, st.ctype)
  emit(C, "    enc_%s(w, version, m);\n    return w->err ? -1 : 0;\n}\n", n)
  emit(C, "static int %s_decode_any(kiq_rd_t *r, int16_t v, kiq_arena_t *a, void *m)\n{", n)
  emit(C, "    return %s_decode(r, v, a, m);\n}\n", n)
  emit(C, "static void %s_init_any(void *m)\n{\n    %s_init(m);\n}\n", n, n)
  emit(C, "static int %s_encode_any(kiq_wr_t *w, int16_t v, const void *m)\n{", n)
  emit(C, "    return %s_encode(w, v, m);\n}\n", n)
  if st.response then
    each_struct(st, function(s) gen_errors(s, vr) end)
    emit(C, "static void %s_errors_any(const void *m, int16_t v, kiq_error_visit_fn visit, void *ctx)\n{", n)
    if holds_errors(st) then
      emit(C, "    errs_%s(m, v, visit, ctx);\n}\n", n)
    else
      emit(C, "    (void)m;\n    (void)v;\n    (void)visit;\n    (void)ctx;\n}\n")
    end
  end
  each_struct(st, function(s) gen_sample(s, vr) end)
  each_struct(st, function(s)
    emit(L, "static void push_%s(lua_State *L, int16_t v, const %s *m);", fname(s), s.ctype)
    emit(L, "static void check_%s(lua_State *L, int idx, int16_t v, kiq_arena_t *a, %s *m);", fname(s), s.ctype)
  end)
  each_struct(st, function(s) gen_lua(s, vr) end)
  emit(L, "static void %s_push_any(lua_State *L, int16_t v, const void *m)\n{\n    push_%s(L, v, m);\n}\n", n, n)
  emit(L, "static void %s_check_any(lua_State *L, int idx, int16_t v, kiq_arena_t *a, void *m)\n{", n)
  emit(L, "    check_%s(L, lua_absindex_compat(L, idx), v, a, m);\n}\n", n)
  emit(S, "static void %s_sample_any(void *m, int16_t v, kiq_arena_t *a, unsigned seed)\n{", n)
  emit(S, "    sample_%s(m, v, a, seed);\n}\n", n)
end

for _, api in ipairs(apis) do
  api.response.response = true
  for _, dir in ipairs({ "request", "response" }) do gen_message(api[dir], api.vr, api.flex) end
end
for _, d in ipairs(datas) do gen_message(d.st, d.vr, d.flex) end

emit(H, [[
typedef int (*kiq_decode_fn)(kiq_rd_t *r, int16_t version, kiq_arena_t *a, void *m);
typedef int (*kiq_encode_fn)(kiq_wr_t *w, int16_t version, const void *m);
typedef void (*kiq_sample_fn)(void *m, int16_t version, kiq_arena_t *a, unsigned seed);
typedef void (*kiq_error_visit_fn)(void *ctx, int16_t error_code);

/* One API's codec: versions this build understands and the functions for
 * both directions. Immutable; shared by all threads. */
typedef struct kiq_api_codec {
    int16_t key;
    const char *name;
    int16_t min_version;
    int16_t max_version;
    int16_t flexible_min; /* first flexible version; INT16_MAX when none */
    size_t request_size;
    size_t response_size;
    void (*request_init)(void *m);
    kiq_decode_fn request_decode;
    kiq_encode_fn request_encode;
    void (*response_init)(void *m);
    kiq_decode_fn response_decode;
    kiq_encode_fn response_encode;
    /* Calls visit with each error_code a response of that version carries. */
    void (*response_errors)(const void *m, int16_t version, kiq_error_visit_fn visit, void *ctx);
    /* Where the response's top-level int32 throttle_time_ms is (client
     * quotas set it), -1 when it has none. */
    ptrdiff_t throttle_at;
} kiq_api_codec_t;

extern const kiq_api_codec_t kiq_api_codecs[];
extern const size_t kiq_api_codec_count;
/* NULL for an api key this build does not know. */
const kiq_api_codec_t *kiq_api_codec(int16_t key);

/* Test support (messages_sample.c): fill every field present in a version. */
kiq_sample_fn kiq_api_request_sample(int16_t key);
kiq_sample_fn kiq_api_response_sample(int16_t key);

/* One data message's codec (engine/proto/schema/data): a versioned struct
 * that is no API, such as a __consumer_offsets key or value or a consumer
 * protocol payload. The int16 version Kafka writes in front of it is the
 * caller's to read and write. Immutable; shared by all threads. */
typedef struct kiq_data_codec {
    const char *name; /* as Kafka names it, e.g. "OffsetCommitValue" */
    int16_t min_version;
    int16_t max_version;
    size_t size;
    void (*init)(void *m);
    kiq_decode_fn decode;
    kiq_encode_fn encode;
} kiq_data_codec_t;

extern const kiq_data_codec_t kiq_data_codecs[];
extern const size_t kiq_data_codec_count;
/* NULL for a name (exact spelling) this build does not know. */
const kiq_data_codec_t *kiq_data_codec(const char *name);
/* Test support (messages_sample.c), as kiq_api_request_sample. */
kiq_sample_fn kiq_data_sample(const char *name);

#endif]])

emit(C, "const kiq_api_codec_t kiq_api_codecs[] = {")
for _, api in ipairs(apis) do
  local flexmin = empty(api.flex) and "INT16_MAX" or tostring(math.max(api.flex[1], api.vr[1]))
  emit(C, '    {%d, "%s", %d, %d, %s, sizeof(kiq_%s_request_t), sizeof(kiq_%s_response_t),',
    api.key, api.name, api.vr[1], api.vr[2], flexmin, api.cname, api.cname)
  emit(C, "     kiq_%s_request_init_any, kiq_%s_request_decode_any, kiq_%s_request_encode_any,",
    api.cname, api.cname, api.cname)
  emit(C, "     kiq_%s_response_init_any, kiq_%s_response_decode_any, kiq_%s_response_encode_any,",
    api.cname, api.cname, api.cname)
  local throttle = "-1"
  for _, fd in ipairs(api.response.fields) do
    if fd.name == "throttle_time_ms" and fd.type == "int32" then
      throttle = ("(ptrdiff_t)offsetof(kiq_%s_response_t, throttle_time_ms)"):format(api.cname)
    end
  end
  emit(C, "     kiq_%s_response_errors_any, %s},", api.cname, throttle)
end
emit(C, "};\nconst size_t kiq_api_codec_count = sizeof kiq_api_codecs / sizeof kiq_api_codecs[0];\n")
emit(C, "const kiq_api_codec_t *kiq_api_codec(int16_t key)\n{")
emit(C, "    for (size_t i = 0; i < kiq_api_codec_count; i++)")
emit(C, "        if (kiq_api_codecs[i].key == key) return &kiq_api_codecs[i];")
emit(C, "    return NULL;\n}\n")
emit(C, "const kiq_data_codec_t kiq_data_codecs[] = {")
for _, d in ipairs(datas) do
  local n = fname(d.st)
  emit(C, '    {"%s", %d, %d, sizeof(%s), %s_init_any, %s_decode_any, %s_encode_any},',
    d.name, d.vr[1], d.vr[2], d.st.ctype, n, n, n)
end
emit(C, "};\nconst size_t kiq_data_codec_count = sizeof kiq_data_codecs / sizeof kiq_data_codecs[0];\n")
emit(C, "const kiq_data_codec_t *kiq_data_codec(const char *name)\n{")
emit(C, "    for (size_t i = 0; name && i < kiq_data_codec_count; i++)")
emit(C, "        if (strcmp(kiq_data_codecs[i].name, name) == 0) return &kiq_data_codecs[i];")
emit(C, "    return NULL;\n}")

for _, dir in ipairs({ "request", "response" }) do
  emit(S, "kiq_sample_fn kiq_api_%s_sample(int16_t key)\n{\n    switch (key) {", dir)
  for _, api in ipairs(apis) do
    emit(S, "    case %d:\n        return kiq_%s_%s_sample_any;", api.key, api.cname, dir)
  end
  emit(S, "    default:\n        return NULL;\n    }\n}\n")
end
emit(S, "kiq_sample_fn kiq_data_sample(const char *name)\n{")
for _, d in ipairs(datas) do
  emit(S, '    if (name && strcmp(name, "%s") == 0) return %s_sample_any;', d.name, fname(d.st))
end
emit(S, "    return NULL;\n}\n")

emit(LH, "/* Generated by scripts/gen_codec.lua: messages as Lua tables. Do not edit. */")
emit(LH, "#ifndef KIQ_LUA_MESSAGES_LUA_H\n#define KIQ_LUA_MESSAGES_LUA_H\n")
emit(LH, '#include <lua.h>\n\n#include "proto/messages.h"\n')
emit(LH, "/* Push a decoded message as a table / fill a message from the table at idx")
emit(LH, " * (missing fields keep their defaults; wrong types raise a Lua error). */")
emit(LH, "typedef void (*kiq_lua_push_fn)(lua_State *L, int16_t version, const void *m);")
emit(LH, "typedef void (*kiq_lua_check_fn)(lua_State *L, int idx, int16_t version, kiq_arena_t *a, void *m);\n")
emit(LH, "kiq_lua_push_fn kiq_api_lua_push(int16_t key, bool request);")
emit(LH, "kiq_lua_check_fn kiq_api_lua_check(int16_t key, bool request);")
emit(LH, "/* The same for a data message (kiq_data_codec); NULL for an unknown name. */")
emit(LH, "kiq_lua_push_fn kiq_data_lua_push(const char *name);")
emit(LH, "kiq_lua_check_fn kiq_data_lua_check(const char *name);\n\n#endif")
for _, what in ipairs({ "push", "check" }) do
  emit(L, "kiq_lua_%s_fn kiq_api_lua_%s(int16_t key, bool request)\n{\n    switch (key) {", what, what)
  for _, api in ipairs(apis) do
    emit(L, "    case %d:\n        return request ? kiq_%s_request_%s_any : kiq_%s_response_%s_any;",
      api.key, api.cname, what, api.cname, what)
  end
  emit(L, "    default:\n        return NULL;\n    }\n}\n")
end
for _, what in ipairs({ "push", "check" }) do
  emit(L, "kiq_lua_%s_fn kiq_data_lua_%s(const char *name)\n{", what, what)
  for _, d in ipairs(datas) do
    emit(L, '    if (name && strcmp(name, "%s") == 0) return %s_%s_any;', d.name, fname(d.st), what)
  end
  emit(L, "    return NULL;\n}\n")
end

local function write(name, buf)
  local path = outdir .. "/" .. name
  local f = assert(io.open(path .. ".tmp", "w"))
  f:write(table.concat(buf, "\n"), "\n")
  f:close()
  assert(os.rename(path .. ".tmp", path))
end
write("proto/messages.h", H)
write("proto/messages.c", C)
write("proto/messages_sample.c", S)
write("lua/messages_lua.h", LH)
write("lua/messages_lua.c", L)
