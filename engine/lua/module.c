/* kafkaiq.core: the C side of the Lua module (DESIGN §6), made of broker
 * objects (lua/broker.c), connections (lua/connection.c), the codec
 * (lua/codec.c), records (lua/records.c), cluster controls
 * (lua/cluster_controls.c) and, here, the helpers they share, the hashing
 * partitioners use and the module's registration. Expected failures return
 * nil, err; misuse raises. */
#include <lauxlib.h>
#include <lua.h>
#include <time.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/version.h"
#include "lua/module.h"

int kiq_lua_fail(lua_State *L, const char *msg)
{
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
}

void kiq_lua_set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

void kiq_lua_set_str(lua_State *L, const char *k, const char *v)
{
    if (!v) return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

/* ---- hashing for partitioners ----------------------------------------- */

/* The Java client's murmur2 (seed 0x9747b28c), as its default partitioner
 * and librdkafka's murmur2 partitioners use it. */
static int32_t murmur2(const uint8_t *data, size_t len)
{
    const uint32_t m = 0x5bd1e995;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        uint32_t k = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 | (uint32_t)data[i + 2] << 16 |
                     (uint32_t)data[i + 3] << 24;
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (len & 3) {
    case 3: h ^= (uint32_t)data[i + 2] << 16; /* fallthrough */
    case 2: h ^= (uint32_t)data[i + 1] << 8;  /* fallthrough */
    case 1:
        h ^= data[i];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

static int l_murmur2(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_pushnumber(L, murmur2((const uint8_t *)s, len));
    return 1;
}

static int l_crc32(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_pushnumber(L, (lua_Number)crc32(0, (const Bytef *)s, (uInt)len));
    return 1;
}

static int l_log_level(lua_State *L)
{
    int level = kiq_say_level_parse(luaL_checkstring(L, 1));
    if (level < 0) return luaL_error(L, "unknown log level '%s'", lua_tostring(L, 1));
    kiq_say_set_level(level);
    return 0;
}

/* now_ms(): the system's wall clock, as a client's (a moved engine clock
 * aside: scripts time their waits by it). */
static int l_now_ms(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)(kiq_clock_wall_ms() - kiq_clock_ahead() / 1000000));
    return 1;
}

/* advance_clock(ms) -> { ahead_ms, wall_ms } | nil, err: the engine's
 * clock moved ms ahead (a broker of the process has kafkaiq.clock=manual);
 * advance_clock(0) tells where it is. */
static int l_advance_clock(lua_State *L)
{
    if (kiq_clock_advance_ms((int64_t)luaL_checknumber(L, 1)) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_createtable(L, 0, 2);
    kiq_lua_set_num(L, "ahead_ms", (double)(kiq_clock_ahead() / 1000000));
    kiq_lua_set_num(L, "wall_ms", (double)kiq_clock_wall_ms());
    return 1;
}

static int l_sleep_ms(lua_State *L)
{
    lua_Number ms = luaL_checknumber(L, 1);
    if (ms > 0) usleep((useconds_t)(ms * 1000));
    return 0;
}

/* The metatable of a kind of object: its methods and its __gc. */
static void new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc)
{
    luaL_newmetatable(L, name);
    lua_newtable(L);
    luaL_register(L, NULL, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
}

int luaopen_kafkaiq_core(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"broker_new", kiq_lua_broker_new}, {"connect", kiq_lua_connect}, {"murmur2", l_murmur2},
        {"crc32", l_crc32},                 {"log_level", l_log_level},   {"now_ms", l_now_ms},
        {"sleep_ms", l_sleep_ms},           {"free_port", kiq_lua_free_port},
        {"advance_clock", l_advance_clock}, {"broker_set_new", kiq_lua_broker_set_new},
        {NULL, NULL},
    };
    new_class(L, KIQ_LUA_BROKER_MT, kiq_lua_broker_methods, kiq_lua_broker_gc);
    new_class(L, KIQ_LUA_BROKER_SET_MT, kiq_lua_broker_set_methods, kiq_lua_broker_set_free);
    new_class(L, KIQ_LUA_CONN_MT, kiq_lua_conn_methods, kiq_lua_conn_close);
    lua_newtable(L);
    luaL_register(L, NULL, functions);
    luaL_register(L, NULL, kiq_lua_codec_functions);
    luaL_register(L, NULL, kiq_lua_record_functions);
    lua_pushstring(L, KIQ_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
