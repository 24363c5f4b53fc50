/* kafkaiq.core's codec: requests, responses and data messages to and
 * from Lua tables keyed by the schemas' field names, through the
 * generated converters (lua/messages_lua.h). */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "core/arena.h"
#include "lua/convert.h"
#include "lua/module.h"
#include "proto/header.h"
#include "lua/messages_lua.h"
#include "proto/reader.h"
#include "proto/writer.h"

/* ---- codec ------------------------------------------------------------- */

static const kiq_api_codec_t *check_api(lua_State *L, int idx, int16_t version)
{
    int key = (int)luaL_checkinteger(L, idx);
    const kiq_api_codec_t *c = kiq_api_codec((int16_t)key);
    if (!c) luaL_error(L, "unknown api key %d", key);
    if (version < c->min_version || version > c->max_version)
        luaL_error(L, "%s v%d is not supported (%d-%d)", c->name, version, c->min_version,
                   c->max_version);
    return c;
}

/* core.encode_request(api_key, version, correlation_id, client_id, body) -> frame */
static int l_encode_request(lua_State *L)
{
    int16_t version = (int16_t)luaL_checkinteger(L, 2);
    const kiq_api_codec_t *c = check_api(L, 1, version);
    int32_t corr = (int32_t)luaL_checkinteger(L, 3);
    size_t idlen;
    const char *id = luaL_optlstring(L, 4, NULL, &idlen);
    luaL_checktype(L, 5, LUA_TTABLE);
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->request_size);
    kiq_api_lua_check(c->key, true)(L, 5, version, &a, m); /* may raise: arena is lost then */
    kiq_request_header_t h = {
        .api_key = c->key, .api_version = version, .correlation_id = corr,
        .client_id = {id, (int32_t)idlen},
        .version = (int8_t)kiq_request_header_version(c->key, version),
    };
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, 0);
    kiq_request_header_encode(&w, &h);
    c->request_encode(&w, version, m);
    kiq_arena_reset(&a);
    if (w.err) {
        kiq_wr_free(&w);
        return kiq_lua_fail(L, "cannot encode the request (a value too large for its field?)");
    }
    kiq_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
    lua_pushlstring(L, (const char *)w.buf, w.len);
    kiq_wr_free(&w);
    return 1;
}

/* core.decode_response(api_key, version, frame) -> correlation_id, body | nil, err */
static int l_decode_response(lua_State *L)
{
    int16_t version = (int16_t)luaL_checkinteger(L, 2);
    const kiq_api_codec_t *c = check_api(L, 1, version);
    size_t len;
    const char *frame = luaL_checklstring(L, 3, &len);
    kiq_rd_t r;
    kiq_rd_init(&r, frame, len);
    int32_t corr = kiq_rd_i32(&r);
    if (kiq_response_header_version(c->key, version) >= 1) {
        uint32_t ntags = kiq_rd_uvarint(&r);
        for (uint32_t i = 0; i < ntags && !r.err; i++) {
            kiq_rd_uvarint(&r);
            kiq_rd_raw(&r, kiq_rd_uvarint(&r));
        }
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->response_size);
    if (c->response_decode(&r, version, &a, m) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "malformed %s v%d response at offset %d: %s", c->name, version,
                        (int)kiq_rd_offset(&r), r.err);
        kiq_arena_reset(&a);
        return 2;
    }
    lua_pushinteger(L, corr);
    kiq_api_lua_push(c->key, false)(L, version, m);
    kiq_arena_reset(&a);
    return 2;
}

/* core.decode_request(frame) -> header, body | nil, err */
static int l_decode_request(lua_State *L)
{
    size_t len;
    const char *frame = luaL_checklstring(L, 1, &len);
    kiq_rd_t r;
    kiq_rd_init(&r, frame, len);
    kiq_request_header_t h;
    if (kiq_request_header_decode(&r, &h) != 0) return kiq_lua_fail(L, "malformed request header");
    const kiq_api_codec_t *c = kiq_api_codec(h.api_key);
    if (!c || h.api_version < c->min_version || h.api_version > c->max_version)
        return kiq_lua_fail(L, "unsupported api key or version");
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->request_size);
    if (c->request_decode(&r, h.api_version, &a, m) != 0) {
        kiq_arena_reset(&a);
        return kiq_lua_fail(L, "malformed request body");
    }
    lua_createtable(L, 0, 5);
    kiq_lua_set_num(L, "api_key", h.api_key);
    lua_pushstring(L, c->name);
    lua_setfield(L, -2, "api_name");
    kiq_lua_set_num(L, "api_version", h.api_version);
    kiq_lua_set_num(L, "correlation_id", h.correlation_id);
    kiq_lua_push_str(L, h.client_id);
    lua_setfield(L, -2, "client_id");
    kiq_api_lua_push(c->key, true)(L, h.api_version, m);
    kiq_arena_reset(&a);
    return 2;
}

/* core.apis() -> { { key, name, min_version, max_version, flexible_min }, ... } */
static int l_apis(lua_State *L)
{
    lua_createtable(L, (int)kiq_api_codec_count, 0);
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        const kiq_api_codec_t *c = &kiq_api_codecs[i];
        lua_createtable(L, 0, 5);
        kiq_lua_set_num(L, "key", c->key);
        lua_pushstring(L, c->name);
        lua_setfield(L, -2, "name");
        kiq_lua_set_num(L, "min_version", c->min_version);
        kiq_lua_set_num(L, "max_version", c->max_version);
        kiq_lua_set_num(L, "flexible_min", c->flexible_min);
        lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
}

/* A data message by name and a version it has; misuse raises at the
 * caller's line, as error(msg, 2) would. */
static const kiq_data_codec_t *check_data(lua_State *L, int16_t *version)
{
    const char *name = luaL_checkstring(L, 1);
    lua_Integer v = luaL_checkinteger(L, 2);
    const kiq_data_codec_t *c = kiq_data_codec(name);
    luaL_where(L, 2);
    if (!c)
        lua_pushfstring(L, "unknown data message '%s'", name);
    else if (v < c->min_version || v > c->max_version)
        lua_pushfstring(L, "%s v%d is not supported (%d-%d)", c->name, (int)v, c->min_version,
                        c->max_version);
    else {
        lua_pop(L, 1);
        *version = (int16_t)v;
        return c;
    }
    lua_concat(L, 2);
    lua_error(L);
    return NULL;
}

/* core.encode_data(name, version, tbl) -> bytes (without the leading int16
 * version) | nil, err */
static int l_encode_data(lua_State *L)
{
    int16_t version;
    const kiq_data_codec_t *c = check_data(L, &version);
    luaL_checktype(L, 3, LUA_TTABLE);
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    kiq_data_lua_check(c->name)(L, 3, version, &a, m); /* may raise: arena is lost then */
    kiq_wr_t w;
    kiq_wr_init(&w);
    c->encode(&w, version, m);
    kiq_arena_reset(&a);
    if (w.err) {
        kiq_wr_free(&w);
        return kiq_lua_fail(L, "cannot encode the data message (a value too large for its field?)");
    }
    lua_pushlstring(L, (const char *)w.buf, w.len);
    kiq_wr_free(&w);
    return 1;
}

/* core.decode_data(name, version, bytes[, allow_trailing]) -> tbl, consumed |
 * nil, err. bytes must hold exactly the message unless allow_trailing is
 * set: Kafka's newer versions of these payloads only append fields, so
 * their known prefix can be read as the newest version we declare. */
static int l_decode_data(lua_State *L)
{
    int16_t version;
    const kiq_data_codec_t *c = check_data(L, &version);
    size_t len;
    const char *bytes = luaL_checklstring(L, 3, &len);
    kiq_rd_t r;
    kiq_rd_init(&r, bytes, len);
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    if (c->decode(&r, version, &a, m) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "malformed %s v%d at offset %d: %s", c->name, version, (int)kiq_rd_offset(&r),
                        r.err);
        kiq_arena_reset(&a);
        return 2;
    }
    if (kiq_rd_left(&r) > 0 && !lua_toboolean(L, 4)) {
        lua_pushnil(L);
        lua_pushfstring(L, "%d trailing bytes after %s v%d", (int)kiq_rd_left(&r), c->name, version);
        kiq_arena_reset(&a);
        return 2;
    }
    kiq_data_lua_push(c->name)(L, version, m);
    kiq_arena_reset(&a);
    lua_pushinteger(L, (lua_Integer)kiq_rd_offset(&r));
    return 2;
}

const luaL_Reg kiq_lua_codec_functions[] = {
    {"encode_request", l_encode_request}, {"decode_response", l_decode_response},
    {"decode_request", l_decode_request}, {"apis", l_apis},
    {"encode_data", l_encode_data},       {"decode_data", l_decode_data},
    {NULL, NULL},
};
