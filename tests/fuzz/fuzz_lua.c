/* libFuzzer target: the Lua value converters. A request that decodes is
 * pushed as a Lua table (what interceptors and kafkaiq.core hand to Lua)
 * and read back from it (what Lua hands to the engine), which must give a
 * message that encodes and decodes at that version. The table is also
 * mangled the way a script might (a field set to the wrong type), which
 * must raise a Lua error, never crash. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "proto/header.h"
#include "proto/messages.h"
#include "lua/messages_lua.h"
#include "proto/reader.h"
#include "proto/writer.h"

typedef struct round {
    kiq_lua_check_fn check;
    int16_t version;
    kiq_arena_t *a;
    void *m;
} round_t;

static int check_table(lua_State *L)
{
    round_t *r = lua_touserdata(L, 1);
    r->check(L, 2, r->version, r->a, r->m);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lua_State *L;
    if (!L && !(L = luaL_newstate())) return 0;
    kiq_rd_t rd;
    kiq_rd_init(&rd, data, size);
    kiq_request_header_t h;
    if (kiq_request_header_decode(&rd, &h) != 0) return 0;
    const kiq_api_codec_t *c = kiq_api_codec(h.api_key);
    kiq_lua_push_fn push = c ? kiq_api_lua_push(h.api_key, true) : NULL;
    kiq_lua_check_fn check = c ? kiq_api_lua_check(h.api_key, true) : NULL;
    if (!push || !check || h.api_version < c->min_version || h.api_version > c->max_version) return 0;
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->request_size);
    c->request_init(m);
    if (c->request_decode(&rd, h.api_version, &a, m) == 0) {
        for (int mangle = 0; mangle < 2; mangle++) {
            int top = lua_gettop(L);
            push(L, h.api_version, m);
            if (mangle) {
                /* the first field of the table turned into a boolean */
                lua_pushnil(L);
                if (lua_next(L, -2)) {
                    lua_pop(L, 1);
                    lua_pushboolean(L, 1);
                    lua_settable(L, -3);
                }
            }
            void *back = kiq_arena_alloc(&a, c->request_size);
            c->request_init(back);
            round_t r = {check, h.api_version, &a, back};
            lua_pushcfunction(L, check_table);
            lua_pushlightuserdata(L, &r);
            lua_pushvalue(L, -3);
            if (lua_pcall(L, 2, 0, 0) == 0) {
                kiq_wr_t w;
                kiq_wr_init(&w);
                if (c->request_encode(&w, h.api_version, back) == 0 && !w.err) {
                    void *again = kiq_arena_alloc(&a, c->request_size);
                    c->request_init(again);
                    kiq_rd_t r2;
                    kiq_rd_init(&r2, w.buf, w.len);
                    if (c->request_decode(&r2, h.api_version, &a, again) != 0) abort();
                }
                kiq_wr_free(&w);
            }
            lua_settop(L, top);
        }
    }
    kiq_arena_reset(&a);
    return 0;
}
