#include "lua/hook_records.h"

#include <lauxlib.h>
#include <string.h>

#include "core/error.h"
#include "lua/convert.h"

typedef struct push_ctx {
    lua_State *L;
    int n;
    bool fetched;
} push_ctx_t;

static int push_record(const kiq_record_t *rec, void *arg)
{
    push_ctx_t *pc = arg;
    lua_State *L = pc->L;
    lua_createtable(L, 0, 5);
    kiq_lua_push_int64(L, pc->fetched ? rec->offset : rec->offset_delta);
    lua_setfield(L, -2, pc->fetched ? "offset" : "offset_delta");
    kiq_lua_push_int64(L, rec->timestamp);
    lua_setfield(L, -2, "timestamp");
    if (pc->fetched) {
        lua_pushinteger(L, rec->batch->partition_leader_epoch);
        lua_setfield(L, -2, "leader_epoch");
    }
    kiq_lua_push_bytes(L, rec->key);
    lua_setfield(L, -2, "key");
    kiq_lua_push_bytes(L, rec->value);
    lua_setfield(L, -2, "value");
    lua_createtable(L, rec->header_count > 0 ? rec->header_count : 0, 0);
    kiq_record_header_iter_t it;
    kiq_record_headers_init(&it, rec);
    kiq_record_header_t h;
    int i = 0;
    while (kiq_record_headers_next(&it, &h) == 1) {
        lua_createtable(L, 2, 0);
        kiq_lua_push_str(L, h.key);
        lua_rawseti(L, -2, 1);
        kiq_lua_push_bytes(L, h.value);
        lua_rawseti(L, -2, 2);
        lua_rawseti(L, -2, ++i);
    }
    lua_setfield(L, -2, "headers");
    lua_rawseti(L, -2, ++pc->n);
    return 0;
}

void kiq_hook_push_records(lua_State *L, const uint8_t *data, size_t len, bool fetched)
{
    lua_newtable(L);
    push_ctx_t pc = {L, 0, fetched};
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, data, len, fetched);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC || kiq_batch_is_control(&h)) continue;
        if (kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, push_record, &pc) != 0)
            luaL_error(L, "cannot read the records: %s", kiq_error_get());
    }
    if (rc < 0) luaL_error(L, "cannot read the records: %s", kiq_error_get());
}

void kiq_hook_push_committed_records(lua_State *L, const uint8_t *data, size_t len, const kiq_hook_aborted_t *ab,
                                     int n)
{
    /* producers inside an aborted transaction at this point of the data
     * (below the result table, so records are set into that) */
    int64_t *open = lua_newuserdata(L, (size_t)(n ? n : 1) * sizeof *open);
    lua_newtable(L);
    push_ctx_t pc = {L, 0, true};
    int nopen = 0, next = 0;
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, data, len, true);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC) continue;
        while (next < n && ab[next].first_offset <= kiq_batch_last_offset(&h)) open[nopen++] = ab[next++].producer_id;
        int at = -1;
        for (int i = 0; i < nopen && at < 0; i++)
            if (open[i] == h.producer_id) at = i;
        if (kiq_batch_is_control(&h)) {
            if (at >= 0 && kiq_batch_control_type(batch, blen) == KIQ_CONTROL_ABORT) open[at] = open[--nopen];
            continue;
        }
        if (at >= 0 && kiq_batch_is_transactional(&h)) continue;
        if (kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, push_record, &pc) != 0)
            luaL_error(L, "cannot read the records: %s", kiq_error_get());
    }
    if (rc < 0) luaL_error(L, "cannot read the records: %s", kiq_error_get());
    lua_remove(L, -2);
}

/* A record read from Lua, copied into the arena. */
typedef struct lua_record {
    kiq_bytes_t key, value;
    int64_t timestamp;
    kiq_record_header_t *headers;
    int32_t nheaders;
} lua_record_t;

/* Raw reads only: a table with metamethods gets no say here. */
static void raw_field(lua_State *L, int idx, const char *name)
{
    lua_pushstring(L, name);
    lua_rawget(L, idx);
}

static void read_record(lua_State *L, int idx, int32_t i, const kiq_batch_header_t *like,
                        kiq_arena_t *a, lua_record_t *out)
{
    lua_rawgeti(L, idx, i + 1);
    int rec = lua_gettop(L);
    if (!lua_istable(L, rec))
        luaL_error(L, "records[%d]: table expected, got %s", i + 1, luaL_typename(L, rec));
    raw_field(L, rec, "key");
    out->key = kiq_lua_to_bytes(L, -1, a, "key");
    raw_field(L, rec, "value");
    out->value = kiq_lua_to_bytes(L, -1, a, "value");
    raw_field(L, rec, "timestamp");
    out->timestamp = lua_isnil(L, -1) ? like->base_timestamp
                                      : kiq_lua_to_int(L, -1, 0, INT64_MAX / 2, "timestamp");
    raw_field(L, rec, "headers");
    int hidx = lua_gettop(L);
    out->nheaders = lua_isnil(L, hidx) ? 0 : kiq_lua_array_len(L, hidx, "headers");
    out->headers = out->nheaders ? kiq_arena_calloc(a, (size_t)out->nheaders, sizeof *out->headers) : NULL;
    for (int32_t h = 0; h < out->nheaders; h++) {
        lua_rawgeti(L, hidx, h + 1);
        if (!lua_istable(L, -1))
            luaL_error(L, "records[%d].headers[%d]: {name, value} expected", i + 1, h + 1);
        lua_rawgeti(L, -1, 1);
        out->headers[h].key = kiq_lua_to_str(L, -1, a, "header name");
        if (!out->headers[h].key.p) luaL_error(L, "records[%d].headers[%d]: no name", i + 1, h + 1);
        lua_rawgeti(L, -2, 2);
        out->headers[h].value = kiq_lua_to_bytes(L, -1, a, "header value");
        lua_pop(L, 3);
    }
    lua_settop(L, rec - 1);
}

uint8_t *kiq_hook_build_batch(lua_State *L, int idx, const kiq_batch_header_t *like,
                              kiq_arena_t *a, size_t *len)
{
    *len = 0;
    if (!lua_istable(L, idx)) luaL_error(L, "records: table expected, got %s", luaL_typename(L, idx));
    size_t n = lua_objlen(L, idx);
    if (n == 0) return NULL;
    if (n > INT32_MAX / 2) luaL_error(L, "records: too many");
    /* Everything that can raise happens before the builder owns memory. */
    lua_record_t *recs = kiq_arena_calloc(a, n, sizeof *recs);
    int64_t base = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        read_record(L, idx, (int32_t)i, like, a, &recs[i]);
        if (recs[i].timestamp < base) base = recs[i].timestamp;
    }
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, kiq_batch_codec(like), base);
    if (like->producer_id >= 0)
        kiq_batch_builder_set_producer(&bb, like->producer_id, like->producer_epoch,
                                       like->base_sequence);
    bb.transactional = kiq_batch_is_transactional(like);
    kiq_wr_t w;
    kiq_wr_init(&w);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = kiq_batch_builder_add(&bb, recs[i].key.p, recs[i].key.p ? recs[i].key.len : -1,
                                   recs[i].value.p, recs[i].value.p ? recs[i].value.len : -1,
                                   recs[i].headers, recs[i].nheaders, recs[i].timestamp);
    if (rc == 0) rc = kiq_batch_builder_finish(&bb, &w);
    kiq_batch_builder_free(&bb);
    if (rc != 0 || w.err) {
        kiq_wr_free(&w);
        luaL_error(L, "cannot build the batch: %s", kiq_error_get());
    }
    uint8_t *out = kiq_arena_alloc(a, w.len);
    memcpy(out, w.buf, w.len);
    *len = w.len;
    kiq_wr_free(&w);
    return out;
}
