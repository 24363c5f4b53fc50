/* kafkaiq.core's records: building a RecordBatch v2 from Lua records
 * (any codec, idempotent producer fields) and parsing batches back into
 * them. */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "lua/convert.h"
#include "lua/hook_records.h"
#include "lua/module.h"
#include "record/batch.h"
#include "record/compression.h"

/* ---- records ----------------------------------------------------------- */

/* core.build_batch{ codec=, base_timestamp=, producer_id=, producer_epoch=,
 *   base_sequence=, transactional=, records = { {key=, value=, headers={{k, v}, ...}, timestamp=}, ... } }
 * -> bytes | nil, err */
static int l_build_batch(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "codec");
    int codec = lua_isnil(L, -1) ? KIQ_CODEC_NONE : kiq_codec_parse(luaL_checkstring(L, -1));
    if (codec < 0) return luaL_error(L, "unknown codec '%s'", lua_tostring(L, -1));
    lua_getfield(L, 1, "records");
    int records = lua_gettop(L);
    int32_t n = kiq_lua_array_len(L, records, "records");
    if (n == 0) return luaL_error(L, "build_batch needs at least one record");
    lua_getfield(L, 1, "base_timestamp");
    int64_t base_ts = lua_isnil(L, -1) ? kiq_clock_wall_ms() : kiq_lua_to_int(L, -1, INT64_MIN, INT64_MAX, "base_timestamp");
    lua_pop(L, 1);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, codec, base_ts);
    lua_getfield(L, 1, "producer_id");
    if (!lua_isnil(L, -1)) {
        lua_getfield(L, 1, "producer_epoch");
        lua_getfield(L, 1, "base_sequence");
        kiq_batch_builder_set_producer(&bb, (int64_t)lua_tonumber(L, -3), (int16_t)lua_tointeger(L, -2),
                                       (int32_t)lua_tointeger(L, -1));
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "transactional");
    bb.transactional = lua_toboolean(L, -1);
    lua_pop(L, 1);
    for (int32_t i = 1; i <= n; i++) {
        lua_rawgeti(L, records, i);
        int rec = lua_gettop(L);
        if (!lua_istable(L, rec)) {
            kiq_batch_builder_free(&bb);
            kiq_arena_reset(&a);
            return luaL_error(L, "records[%d]: table expected", i);
        }
        lua_getfield(L, rec, "key");
        kiq_bytes_t key = kiq_lua_to_bytes(L, -1, &a, "key");
        lua_getfield(L, rec, "value");
        kiq_bytes_t value = kiq_lua_to_bytes(L, -1, &a, "value");
        lua_getfield(L, rec, "timestamp");
        int64_t ts = lua_isnil(L, -1) ? base_ts : kiq_lua_to_int(L, -1, INT64_MIN, INT64_MAX, "timestamp");
        lua_getfield(L, rec, "headers");
        int hidx = lua_gettop(L);
        int32_t nh = lua_isnil(L, hidx) ? 0 : kiq_lua_array_len(L, hidx, "headers");
        kiq_record_header_t *hs = nh ? kiq_arena_calloc(&a, (size_t)nh, sizeof *hs) : NULL;
        for (int32_t h = 0; h < nh; h++) {
            lua_rawgeti(L, hidx, h + 1);
            lua_rawgeti(L, -1, 1);
            hs[h].key = kiq_lua_to_str(L, -1, &a, "header key");
            if (!hs[h].key.p) hs[h].key = KIQ_STR("");
            lua_rawgeti(L, -2, 2);
            hs[h].value = kiq_lua_to_bytes(L, -1, &a, "header value");
            lua_pop(L, 3);
        }
        int rc = kiq_batch_builder_add(&bb, key.p, key.p ? key.len : -1, value.p,
                                       value.p ? value.len : -1, hs, nh, ts);
        lua_settop(L, records);
        if (rc != 0) {
            kiq_batch_builder_free(&bb);
            kiq_arena_reset(&a);
            return kiq_lua_fail(L, kiq_error_get());
        }
    }
    kiq_wr_t w;
    kiq_wr_init(&w);
    int rc = kiq_batch_builder_finish(&bb, &w);
    kiq_batch_builder_free(&bb);
    kiq_arena_reset(&a);
    if (rc != 0) {
        kiq_wr_free(&w);
        return kiq_lua_fail(L, kiq_error_get());
    }
    lua_pushlstring(L, (const char *)w.buf, w.len);
    kiq_wr_free(&w);
    return 1;
}

static int push_records_protected(lua_State *L)
{
    size_t len;
    const uint8_t *p = (const uint8_t *)lua_tolstring(L, 1, &len);
    if (lua_isnoneornil(L, 2)) {
        kiq_hook_push_records(L, p, len, true);
        return 1;
    }
    int n = (int)lua_objlen(L, 2);
    kiq_hook_aborted_t *ab = lua_newuserdata(L, (size_t)(n ? n : 1) * sizeof *ab);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        if (!lua_istable(L, -1)) luaL_error(L, "aborted[%d]: {producer_id, first_offset} expected", i + 1);
        lua_getfield(L, -1, "producer_id");
        lua_getfield(L, -2, "first_offset");
        ab[i].producer_id = (int64_t)luaL_checknumber(L, -2);
        ab[i].first_offset = (int64_t)luaL_checknumber(L, -1);
        lua_pop(L, 3);
        /* Fetch names them by first offset; keep that order */
        for (int j = i; j > 0 && ab[j - 1].first_offset > ab[j].first_offset; j--) {
            kiq_hook_aborted_t t = ab[j];
            ab[j] = ab[j - 1];
            ab[j - 1] = t;
        }
    }
    kiq_hook_push_committed_records(L, p, len, ab, n);
    return 1;
}

/* core.parse_records(bytes[, aborted]) -> { {offset, timestamp, leader_epoch,
 * key, value, headers}, ... } | nil, err. Every whole batch's CRC is checked
 * first; a truncated trailing batch (as a Fetch may return) is ignored.
 * aborted: a read_committed Fetch's aborted_transactions ({producer_id,
 * first_offset} each), whose records are left out. */
static int l_parse_records(lua_State *L)
{
    size_t len;
    const uint8_t *p = (const uint8_t *)luaL_checklstring(L, 1, &len);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, true);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC) return kiq_lua_fail(L, "unsupported message format");
        if (kiq_batch_check(batch, blen, &h) != 0) return kiq_lua_fail(L, kiq_error_get());
    }
    if (rc < 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushcfunction(L, push_records_protected);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    if (lua_pcall(L, 2, 1, 0) != 0) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    return 1;
}

const luaL_Reg kiq_lua_record_functions[] = {
    {"build_batch", l_build_batch},
    {"parse_records", l_parse_records},
    {NULL, NULL},
};
