#include "lua/convert.h"

#include <string.h>

#include "core/uuid.h"

static int type_error(lua_State *L, int idx, const char *field, const char *want)
{
    return luaL_error(L, "field '%s': %s expected, got %s", field, want, luaL_typename(L, idx));
}

void kiq_lua_push_str(lua_State *L, kiq_str_t s)
{
    if (s.p)
        lua_pushlstring(L, s.p, (size_t)s.len);
    else
        lua_pushnil(L);
}

void kiq_lua_push_bytes(lua_State *L, kiq_bytes_t b)
{
    if (b.p)
        lua_pushlstring(L, (const char *)b.p, (size_t)b.len);
    else
        lua_pushnil(L);
}

void kiq_lua_push_uuid(lua_State *L, const kiq_uuid_t *u)
{
    char text[23];
    kiq_uuid_to_base64(u, text);
    lua_pushstring(L, text);
}

void kiq_lua_push_int64(lua_State *L, int64_t v) { lua_pushnumber(L, (lua_Number)v); }

kiq_str_t kiq_lua_to_str(lua_State *L, int idx, kiq_arena_t *a, const char *field)
{
    if (lua_isnil(L, idx)) return KIQ_STR_NULL;
    if (lua_type(L, idx) != LUA_TSTRING) type_error(L, idx, field, "string");
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    return (kiq_str_t){kiq_arena_strndup(a, s, n), (int32_t)n};
}

kiq_bytes_t kiq_lua_to_bytes(lua_State *L, int idx, kiq_arena_t *a, const char *field)
{
    kiq_str_t s = kiq_lua_to_str(L, idx, a, field);
    return (kiq_bytes_t){(const uint8_t *)s.p, s.len};
}

kiq_uuid_t kiq_lua_to_uuid(lua_State *L, int idx, const char *field)
{
    kiq_uuid_t u = {{0}};
    if (lua_isnil(L, idx)) return u;
    if (lua_type(L, idx) != LUA_TSTRING || kiq_uuid_from_base64(lua_tostring(L, idx), &u) != 0)
        type_error(L, idx, field, "uuid (22-character base64 string)");
    return u;
}

int64_t kiq_lua_to_int(lua_State *L, int idx, int64_t min, int64_t max, const char *field)
{
    if (lua_type(L, idx) != LUA_TNUMBER) type_error(L, idx, field, "number");
    lua_Number n = lua_tonumber(L, idx);
    /* the cast is defined only inside int64's range (2^63 is a double an
     * int64 near its top rounds to): that first */
    if (!(n >= -9223372036854775808.0 && n < 9223372036854775808.0) || n != (lua_Number)(int64_t)n ||
        (int64_t)n < min || (int64_t)n > max)
        luaL_error(L, "field '%s': %f is not an integer in [%lld, %lld]", field, n, (long long)min,
                   (long long)max);
    return (int64_t)n;
}

double kiq_lua_to_double(lua_State *L, int idx, const char *field)
{
    if (lua_type(L, idx) != LUA_TNUMBER) type_error(L, idx, field, "number");
    return lua_tonumber(L, idx);
}

bool kiq_lua_to_bool(lua_State *L, int idx, const char *field)
{
    if (lua_type(L, idx) != LUA_TBOOLEAN) type_error(L, idx, field, "boolean");
    return lua_toboolean(L, idx) != 0;
}

int32_t kiq_lua_array_len(lua_State *L, int idx, const char *field)
{
    if (lua_type(L, idx) != LUA_TTABLE) type_error(L, idx, field, "table");
    return (int32_t)lua_objlen(L, idx);
}
