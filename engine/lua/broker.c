/* kafkaiq.core's broker objects (DESIGN §6): making, starting and
 * stopping brokers, reading their state, groups and counters, injecting
 * disk faults, and installing interceptors. Everything runs on the thread
 * of the calling lua_State and reaches the engine only through its
 * thread-safe calls. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "core/error.h"
#include "lua/convert.h"
#include "http/http_server.h"
#include "lua/hooks.h"
#include "lua/module.h"
#include "proto/messages.h"
#include "server/client_telemetry.h"
#include "server/broker_config_view.h"
#include "server/broker_messages.h"
#include "server/broker_state.h"
#include "server/broker.h"

/* ---- brokers ---------------------------------------------------------- */

typedef struct lua_broker {
    kiq_broker_t *b;
} lua_broker_t;

kiq_broker_t *kiq_lua_check_broker(lua_State *L)
{
    lua_broker_t *ub = luaL_checkudata(L, 1, KIQ_LUA_BROKER_MT);
    if (!ub->b) luaL_error(L, "broker already freed");
    return ub->b;
}

#define check_broker kiq_lua_check_broker

/* core.broker_new({ [kafka name] = value, ... } [, sharing]) -> broker |
 * nil, err. sharing: how many brokers share the process's cores (its
 * thread counts are sized for its share where the config leaves them out). */
int kiq_lua_broker_new(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int sharing = (int)luaL_optinteger(L, 2, 1);
    kiq_config_t *cfg = kiq_config_new();
    if (!cfg) return kiq_lua_fail(L, "out of memory");
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            kiq_config_free(cfg);
            return luaL_error(L, "broker config keys must be strings");
        }
        const char *key = lua_tostring(L, -2);
        const char *value;
        if (lua_type(L, -1) == LUA_TBOOLEAN)
            value = lua_toboolean(L, -1) ? "true" : "false";
        else if (lua_type(L, -1) == LUA_TNUMBER || lua_type(L, -1) == LUA_TSTRING)
            value = lua_tostring(L, -1); /* converts numbers in place: fine, key is kept */
        else {
            kiq_config_free(cfg);
            return luaL_error(L, "config '%s': string, number or boolean expected", key);
        }
        if (kiq_config_find(key) < 0 && strcmp(key, "message.timestamp.type") != 0 &&
            strcmp(key, "log.dir") != 0) {
            kiq_config_free(cfg);
            lua_pushnil(L);
            lua_pushfstring(L, "unknown config '%s'", key);
            return 2;
        }
        if (kiq_config_set(cfg, key, value) != 0) {
            kiq_config_free(cfg);
            return kiq_lua_fail(L, kiq_error_get());
        }
        lua_pop(L, 1);
    }
    if (kiq_config_share_cores(cfg, sharing) != 0) {
        kiq_config_free(cfg);
        return kiq_lua_fail(L, kiq_error_get());
    }
    kiq_broker_t *b = kiq_broker_new(cfg);
    kiq_config_free(cfg);
    if (!b) return kiq_lua_fail(L, kiq_error_get());
    /* the broker's interceptors are this module's Lua functions and fault rules */
    if (kiq_hooks_attach(b) != 0) {
        kiq_broker_free(b);
        return kiq_lua_fail(L, kiq_error_get());
    }
    lua_broker_t *ub = lua_newuserdata(L, sizeof *ub);
    ub->b = b;
    luaL_getmetatable(L, KIQ_LUA_BROKER_MT);
    lua_setmetatable(L, -2);
    return 1;
}

static int l_broker_start(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (b->running) return luaL_error(L, "broker already running");
    if (kiq_broker_start(b) != 0) {
        const char *err = kiq_error_get();
        kiq_broker_kill(b); /* release whatever the failed start opened */
        return kiq_lua_fail(L, err);
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_broker_stop(lua_State *L)
{
    kiq_broker_stop(check_broker(L));
    return 0;
}

static int l_broker_kill(lua_State *L)
{
    kiq_broker_kill(check_broker(L));
    return 0;
}

static int l_broker_running(lua_State *L)
{
    lua_pushboolean(L, check_broker(L)->running);
    return 1;
}

static int l_broker_port(lua_State *L)
{
    lua_pushinteger(L, kiq_broker_port(check_broker(L)));
    return 1;
}

/* b:http_port() -> the HTTP listener's bound port | nil when there is none */
static int l_broker_http_port(lua_State *L)
{
    int port = kiq_http_port(check_broker(L));
    if (port < 0) return 0;
    lua_pushinteger(L, port);
    return 1;
}

int kiq_lua_broker_gc(lua_State *L)
{
    lua_broker_t *ub = luaL_checkudata(L, 1, KIQ_LUA_BROKER_MT);
    kiq_broker_free(ub->b);
    ub->b = NULL;
    return 0;
}

/* A view (core/view.h) building Lua tables on the stack: an array's
 * values go at 1, 2, ...; a name that is a decimal number (a broker id)
 * becomes that integer key, as Lua tables of ids are indexed. */
typedef struct lua_view {
    lua_State *L;
    int depth;
    bool array[8];
    int next[8];
    char name[8][256]; /* an open table's own name (a topic's, at most 249), set when it closes */
} lua_view_t;

static void lv_set(lua_view_t *lv, const char *name)
{
    lua_State *L = lv->L;
    char *end;
    long id = name ? strtol(name, &end, 10) : 0;
    if (lv->array[lv->depth])
        lua_rawseti(L, -2, ++lv->next[lv->depth]);
    else if (name && *name && !*end)
        lua_rawseti(L, -2, (int)id);
    else
        lua_setfield(L, -2, name);
}

static void lv_number(void *ctx, const char *name, double v)
{
    lua_view_t *lv = ctx;
    lua_pushnumber(lv->L, v);
    lv_set(lv, name);
}

static void lv_string(void *ctx, const char *name, const char *v)
{
    lua_view_t *lv = ctx;
    lua_pushstring(lv->L, v);
    lv_set(lv, name);
}

static void lv_boolean(void *ctx, const char *name, bool v)
{
    lua_view_t *lv = ctx;
    lua_pushboolean(lv->L, v);
    lv_set(lv, name);
}

static void lv_open(void *ctx, const char *name, bool array)
{
    lua_view_t *lv = ctx;
    lua_newtable(lv->L);
    if (lv->depth + 1 >= (int)(sizeof lv->array / sizeof lv->array[0])) return;
    lv->depth++;
    lv->array[lv->depth] = array;
    lv->next[lv->depth] = 0;
    snprintf(lv->name[lv->depth], sizeof lv->name[lv->depth], "%s", name ? name : "");
}

static void lv_close(void *ctx)
{
    lua_view_t *lv = ctx;
    char name[sizeof lv->name[0]];
    snprintf(name, sizeof name, "%s", lv->name[lv->depth]);
    lv->depth--;
    lv_set(lv, name);
}

/* A view (core/view.h) filling a new table pushed on L; lv is its state. */
static kiq_view_t view_on_new_table(lua_State *L, lua_view_t *lv)
{
    *lv = (lua_view_t){.L = L};
    lua_newtable(L);
    return (kiq_view_t){lv_number, lv_string, lv_boolean, lv_open, lv_close, lv};
}

/* b:state(): the broker's state (server/broker_state.h, the same as
 * /api/state's), every segment listed; partitions and followers keyed by
 * number (0-based, broker ids). */
static int l_broker_state(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    kiq_broker_state_view(b, -1, &v);
    return 1;
}

/* b:messages(topic, partition [, offset [, limit]]): the partition's
 * records as /api/messages has them (server/broker_messages.h), the newest
 * limit (20) without offset; nil, err when the partition is not here. */
static int l_broker_messages(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    const char *topic = luaL_checkstring(L, 2);
    int32_t partition = (int32_t)luaL_checkinteger(L, 3);
    int64_t offset = (int64_t)luaL_optnumber(L, 4, -1);
    lua_Integer limit = luaL_optinteger(L, 5, 20);
    if (offset < -1 || limit < 1 || limit > KIQ_MESSAGES_MAX) return kiq_lua_fail(L, "offset >= 0, limit 1-100");
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    if (kiq_broker_messages_view(b, topic, partition, offset, (int)limit, &v) != 0) {
        lua_pop(L, 1);
        return kiq_lua_fail(L, kiq_error_get());
    }
    return 1;
}

/* b:configs([topic]): a topic's configs, or the broker's, each with its
 * source, as /api/configs has them (server/broker_config_view.h); nil, err
 * for an unknown topic. */
static int l_broker_configs(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    const char *topic = luaL_optstring(L, 2, NULL);
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    if (kiq_broker_configs_view(b, topic, &v) != 0) {
        lua_pop(L, 1);
        return kiq_lua_fail(L, kiq_error_get());
    }
    return 1;
}

/* b:groups() -> { { id, state, generation, protocol_type, protocol, leader,
 *   offsets_partition, members = { { id, instance_id, client_id,
 *   client_host, session_timeout_ms, rebalance_timeout_ms, assignment } },
 *   offsets = { [topic] = { [partition] = { offset, leader_epoch,
 *   metadata, commit_timestamp } } } } }, sorted by id; the copy is taken
 * under the coordinator's lock and pushed after it is released. */
static int l_broker_groups(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_newtable(L);
    if (!b->running) return 1;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_group_info_t *gs;
    int n = kiq_group_coordinator_snapshot(b->groups, &a, &gs);
    for (int i = 0; i < n; i++) {
        const kiq_group_info_t *g = &gs[i];
        lua_createtable(L, 0, 9);
        kiq_lua_set_str(L, "id", g->id);
        kiq_lua_set_str(L, "state", g->state);
        kiq_lua_set_num(L, "generation", g->generation);
        kiq_lua_set_str(L, "protocol_type", g->protocol_type);
        kiq_lua_set_str(L, "protocol", g->protocol);
        kiq_lua_set_str(L, "leader", g->leader);
        kiq_lua_set_num(L, "offsets_partition", g->offsets_partition);
        lua_createtable(L, g->nmembers, 0);
        for (int j = 0; j < g->nmembers; j++) {
            const kiq_group_info_member_t *m = &g->members[j];
            lua_createtable(L, 0, 7);
            kiq_lua_set_str(L, "id", m->id);
            kiq_lua_set_str(L, "instance_id", m->instance_id);
            kiq_lua_set_str(L, "client_id", m->client_id);
            kiq_lua_set_str(L, "client_host", m->client_host);
            kiq_lua_set_num(L, "session_timeout_ms", m->session_timeout_ms);
            kiq_lua_set_num(L, "rebalance_timeout_ms", m->rebalance_timeout_ms);
            if (m->assignment) {
                lua_pushlstring(L, (const char *)m->assignment, (size_t)m->assignment_len);
                lua_setfield(L, -2, "assignment");
            }
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, "members");
        lua_newtable(L);
        for (int j = 0; j < g->noffsets; j++) {
            const kiq_group_info_offset_t *o = &g->offsets[j];
            lua_getfield(L, -1, o->topic);
            if (lua_isnil(L, -1)) {
                lua_pop(L, 1);
                lua_newtable(L);
                lua_pushvalue(L, -1);
                lua_setfield(L, -3, o->topic);
            }
            lua_createtable(L, 0, 4);
            kiq_lua_set_num(L, "offset", (double)o->offset);
            kiq_lua_set_num(L, "leader_epoch", o->leader_epoch);
            if (o->metadata) {
                lua_pushlstring(L, o->metadata, (size_t)o->metadata_len);
                lua_setfield(L, -2, "metadata");
            }
            kiq_lua_set_num(L, "commit_timestamp", (double)o->commit_ts_ms);
            lua_rawseti(L, -2, o->partition);
            lua_pop(L, 1);
        }
        lua_setfield(L, -2, "offsets");
        lua_rawseti(L, -2, i + 1);
    }
    kiq_arena_reset(&a);
    return 1;
}

/* The errno names a disk fault may be given as. */
static const struct {
    const char *name;
    int value;
} disk_errnos[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT}};

/* b:inject_disk_fault{ errno = "ENOSPC" | "EIO" | "EROFS" | "EDQUOT",
 *   after_bytes = n (0), fsync = bool (false), dir = path (the first of
 *   log.dirs) } -> true: writes to that log directory fail with that errno
 * once after_bytes more bytes went in (the write crossing the limit is
 * torn), fsyncs too when fsync is set; nil, err for an unknown dir. */
static int l_broker_inject_disk_fault(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "errno");
    const char *name = luaL_optstring(L, -1, "EIO");
    int err = 0;
    for (size_t i = 0; i < sizeof disk_errnos / sizeof *disk_errnos; i++)
        if (strcmp(name, disk_errnos[i].name) == 0) err = disk_errnos[i].value;
    if (!err) return luaL_error(L, "inject_disk_fault: errno must be ENOSPC, EIO, EROFS or EDQUOT, not '%s'", name);
    lua_getfield(L, 2, "after_bytes");
    lua_Number after = luaL_optnumber(L, -1, 0);
    if (after < 0 || after > 9007199254740992.0)
        return luaL_error(L, "inject_disk_fault: after_bytes must be a count of bytes");
    lua_getfield(L, 2, "fsync");
    bool fsyncs = lua_toboolean(L, -1);
    lua_getfield(L, 2, "dir");
    const char *dir = luaL_optstring(L, -1, NULL);
    if (kiq_broker_inject_disk_fault(b, dir, err, (int64_t)after, fsyncs) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, kiq_error_get());
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* b:slow_disk{ fsync_ms = n, dir = path (the first of log.dirs) } -> true:
 * each fsync in that log directory takes n ms longer (0: as fast as the
 * disk; b:clear_disk_fault() too); nil, err for an unknown dir. */
static int l_broker_slow_disk(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "fsync_ms");
    lua_Number ms = luaL_checknumber(L, -1);
    if (ms < 0 || ms > 3600000) return luaL_error(L, "slow_disk: fsync_ms must be 0..3600000");
    lua_getfield(L, 2, "dir");
    const char *dir = luaL_optstring(L, -1, NULL);
    if (kiq_broker_slow_disk(b, dir, (int64_t)ms) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* b:scrub() -> n: one scrubber pass now (kiq_log_scrub), on the caller's
 * thread; how many damaged segments it newly found. */
static int l_broker_scrub(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (!b->running) return luaL_error(L, "scrub: the broker is not running");
    lua_pushinteger(L, kiq_log_scrub(b->topics));
    return 1;
}

/* b:clear_disk_fault([{ dir = path }]): writes to that directory (every
 * one without dir) work again; an offline directory comes back with the
 * next start. nil, err for an unknown dir. */
static int l_broker_clear_disk_fault(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    const char *dir = NULL;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_getfield(L, 2, "dir");
        dir = luaL_optstring(L, -1, NULL);
    }
    if (kiq_broker_clear_disk_fault(b, dir) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, kiq_error_get());
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* b:request_stats() -> { [api name] = { count, queue_ms, local_ms, ...,
 * trailing_requests, trailing_bytes } } */
static int l_broker_request_stats(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_newtable(L);
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        int64_t ns[KIQ_STAGE__COUNT];
        uint64_t n = kiq_request_stats_get(&b->stats, kiq_api_codecs[i].key, ns);
        if (!n) continue;
        lua_newtable(L);
        kiq_lua_set_num(L, "count", (double)n);
        for (int s = 0; s < KIQ_STAGE__COUNT; s++) {
            char key[32];
            snprintf(key, sizeof key, "%s_ms", kiq_request_stage_names[s]);
            kiq_lua_set_num(L, key, (double)ns[s] / 1e6);
        }
        uint64_t bytes, trailing = kiq_request_stats_get_trailing(&b->stats, kiq_api_codecs[i].key, &bytes);
        kiq_lua_set_num(L, "trailing_requests", (double)trailing);
        kiq_lua_set_num(L, "trailing_bytes", (double)bytes);
        lua_setfield(L, -2, kiq_api_codecs[i].name);
    }
    return 1;
}

/* b:event_counts() -> { received = n, enqueued = n, ... }: how often each
 * observer point (core/observer.h) fired since the broker was made. */
static int l_broker_event_counts(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_createtable(L, 0, KIQ__POINTS);
    for (int p = 0; p < KIQ__POINTS; p++)
        kiq_lua_set_num(L, kiq_point_names[p], (double)kiq_event_counts_get(&b->event_counts, (enum kiq_point)p));
    return 1;
}

/* b:metrics() -> { [family] = { type, help, samples = { { labels = {...},
 * value, suffix? }, ... } } }: the broker's metrics registry, the same
 * families /metrics and /api/metrics serve. */
typedef struct lua_sink {
    lua_State *L;
    int result; /* stack index of the result table */
    bool open;  /* a family and its samples are on top */
} lua_sink_t;

static void lua_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    lua_sink_t *k = ctx;
    lua_State *L = k->L;
    if (k->open) lua_pop(L, 2);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, kiq_metric_type_name(type));
    lua_setfield(L, -2, "type");
    lua_pushstring(L, help);
    lua_setfield(L, -2, "help");
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "samples");
    lua_pushvalue(L, -2);
    lua_setfield(L, k->result, name);
    k->open = true;
}

static void lua_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels,
                       int nlabels, double value)
{
    lua_State *L = ((lua_sink_t *)ctx)->L;
    lua_createtable(L, 0, 3);
    lua_createtable(L, 0, nlabels);
    for (int i = 0; i < nlabels; i++) {
        lua_pushstring(L, labels[i].value);
        lua_setfield(L, -2, labels[i].name);
    }
    lua_setfield(L, -2, "labels");
    kiq_lua_set_num(L, "value", value);
    if (*suffix) {
        lua_pushstring(L, suffix);
        lua_setfield(L, -2, "suffix");
    }
    lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
}

static int l_broker_metrics(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_newtable(L);
    lua_sink_t k = {L, lua_gettop(L), false};
    kiq_metric_sink_t sink = {lua_family, lua_sample, &k};
    int rc = kiq_metrics_collect(b->metrics, &sink);
    if (k.open) lua_pop(L, 2);
    if (rc != 0) return luaL_error(L, "out of memory");
    return 1;
}

/* b:startup() -> { clean, recovered_batches, truncated_bytes, phases = {
 * { phase, ms, detail }, ... }, services = { { name, ms }, ... } }: this
 * start so far (server/broker_startup.h). */
static int l_broker_startup(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    kiq_broker_startup_view(&b->startup, &v);
    return 1;
}

static void set_number(void *L, const char *name, double v) { kiq_lua_set_num(L, name, v); }
static void set_string(void *L, const char *name, const char *v) { kiq_lua_set_str(L, name, v); }
static void set_boolean(void *L, const char *name, bool v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, name);
}

/* A verdict (kiq_journey_verdict) as a Lua table: state, text,
 * high_watermark, isr = { ids }, waiting_for = { ids }. */
static void push_verdict(lua_State *L, const kiq_journey_verdict_t *v)
{
    lua_createtable(L, 0, 5);
    kiq_lua_set_str(L, "state", v->state);
    kiq_lua_set_str(L, "text", v->text);
    kiq_lua_set_num(L, "high_watermark", (double)v->high_watermark);
    lua_createtable(L, v->nisr, 0);
    for (int i = 0; i < v->nisr; i++) {
        lua_pushinteger(L, v->isr[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "isr");
    lua_createtable(L, v->nwaiting, 0);
    for (int i = 0; i < v->nwaiting; i++) {
        lua_pushinteger(L, v->waiting[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "waiting_for");
}

/* A journey as a Lua table: topic, partition, first_offset, last_offset,
 * trace, process (kiq_journey_process), stages = { { stage, point, t_ns, broker, ... } } (numbers it does
 * not know are left out), and on the leader's part the verdict. */
static void push_journey(lua_State *L, kiq_broker_t *b, const kiq_journey_t *jr)
{
    lua_createtable(L, 0, 6);
    kiq_lua_set_str(L, "topic", jr->topic);
    kiq_lua_set_num(L, "partition", jr->partition);
    kiq_lua_set_num(L, "first_offset", (double)jr->first_offset);
    kiq_lua_set_num(L, "last_offset", (double)jr->last_offset);
    if (jr->trace[0]) kiq_lua_set_str(L, "trace", jr->trace);
    kiq_lua_set_str(L, "process", kiq_journey_process());
    lua_createtable(L, jr->nstages, 0);
    kiq_journey_fields_t f = {set_number, set_string, set_boolean, L};
    for (int i = 0; i < jr->nstages; i++) {
        lua_createtable(L, 0, 12);
        kiq_journey_stage_fields(jr, i, &f);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "stages");
    kiq_journey_verdict_t *v = malloc(sizeof *v);
    if (v && kiq_broker_journey_verdict(b, jr, v)) {
        push_verdict(L, v);
        lua_setfield(L, -2, "verdict");
    }
    free(v);
}

/* b:journey(topic, partition, offset) | b:journey{ trace = id } -> this
 * broker's part of the journey | nil, err */
static int l_broker_journey(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (!b->journeys) return kiq_lua_fail(L, "journeys are off (kafkaiq.journey.enable=false)");
    kiq_journey_t *jr = malloc(sizeof *jr);
    if (!jr) return kiq_lua_fail(L, "out of memory");
    bool found;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "trace");
        const char *trace = luaL_checkstring(L, -1);
        found = kiq_journeys_find_trace(b->journeys, trace, jr);
    } else {
        const char *topic = luaL_checkstring(L, 2);
        int32_t partition = (int32_t)luaL_checkinteger(L, 3);
        int64_t offset = (int64_t)luaL_checknumber(L, 4);
        found = kiq_journeys_find(b->journeys, topic, partition, offset, jr);
    }
    if (found) push_journey(L, b, jr);
    free(jr);
    if (!found) return kiq_lua_fail(L, "no journey kept for it");
    return 1;
}

/* b:purgatory_stats() -> { parked, notified, tried, expired, waiting }:
 * what the purgatory (server/purgatory.h) did since the broker started. */
static int l_broker_purgatory_stats(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (!b->purgatory) return kiq_lua_fail(L, "broker not running");
    kiq_purgatory_stats_t s;
    kiq_purgatory_stats(b->purgatory, &s);
    lua_createtable(L, 0, 5);
    kiq_lua_set_num(L, "parked", (double)s.parked);
    kiq_lua_set_num(L, "notified", (double)s.notified);
    kiq_lua_set_num(L, "tried", (double)s.tried);
    kiq_lua_set_num(L, "expired", (double)s.expired);
    kiq_lua_set_num(L, "waiting", s.waiting);
    return 1;
}

/* ---- interceptors (engine/lua/hooks.h) -------------------------------- */

/* The registry this module installed on every broker it made. */
static kiq_hooks_t *broker_hooks(kiq_broker_t *b) { return b->interceptors.ctx; }

/* An api given by name ("Produce", any case) or key. */
static int check_api_key(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TNUMBER) {
        lua_Number n = lua_tonumber(L, idx);
        if (!(n >= 0 && n <= INT16_MAX) || n != (lua_Number)(int16_t)n || !kiq_api_codec((int16_t)n))
            return luaL_error(L, "intercept: unknown api key %s", lua_tostring(L, idx));
        return (int)n;
    }
    if (lua_type(L, idx) != LUA_TSTRING) return luaL_error(L, "intercept: api must be a name or a key");
    const char *name = lua_tostring(L, idx);
    for (size_t i = 0; i < kiq_api_codec_count; i++)
        if (strcasecmp(kiq_api_codecs[i].name, name) == 0) return kiq_api_codecs[i].key;
    return luaL_error(L, "intercept: unknown api '%s'", name);
}

static const char *opt_string(lua_State *L, int t, const char *key, size_t *len)
{
    lua_getfield(L, t, key);
    if (lua_isnil(L, -1)) return NULL;
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "intercept: %s must be a string", key);
    return lua_tolstring(L, -1, len); /* the options table keeps it alive */
}

/* b:intercept{ on = "request"|"produce"|"fetch"|"authorize", source = "<chunk returning a function>",
 *   api = name or key (request only), client_id =, topic = } -> id | nil, err */
static int l_broker_intercept(lua_State *L)
{
    static const char *const options[] = {"on", "source", "api", "client_id", "topic", NULL};
    kiq_broker_t *b = check_broker(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; options[i] && !known; i++) known = strcmp(lua_tostring(L, -1), options[i]) == 0;
        if (!known)
            return luaL_error(L, "intercept: unknown option '%s'",
                              lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
    }
    const char *on = opt_string(L, 2, "on", NULL);
    int point = on ? kiq_hook_point_parse(on) : -1;
    if (point < 0) return luaL_error(L, "intercept: on must be \"request\", \"produce\" or \"fetch\"");
    kiq_hook_spec_t spec = {.point = (enum kiq_hook_point)point, .api_key = -1};
    spec.source = opt_string(L, 2, "source", &spec.source_len);
    if (!spec.source) return luaL_error(L, "intercept: source (a Lua chunk returning a function) is required");
    lua_getfield(L, 2, "api");
    if (!lua_isnil(L, -1)) {
        if (point != KIQ_HOOK_REQUEST) return luaL_error(L, "intercept: api selects request interceptors only");
        spec.api_key = check_api_key(L, lua_gettop(L));
    }
    spec.client_id = opt_string(L, 2, "client_id", NULL);
    spec.topic = opt_string(L, 2, "topic", NULL);
    int id = kiq_hooks_add(broker_hooks(b), &spec);
    if (id < 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushinteger(L, id);
    return 1;
}

/* b:remove_intercept(id) -> true | nil, err */
static int l_broker_remove_intercept(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    int id = (int)luaL_checkinteger(L, 2);
    if (kiq_hooks_remove(broker_hooks(b), id) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* b:intercepts() -> { { id, on, api, client_id, topic, failures, last_error }, ... } */
static int l_broker_intercepts(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    kiq_hook_info_t *list;
    int n = kiq_hooks_list(broker_hooks(b), &list);
    if (n < 0) return kiq_lua_fail(L, kiq_error_get());
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 7);
        kiq_lua_set_num(L, "id", list[i].id);
        lua_pushstring(L, kiq_hook_point_names[list[i].point]);
        lua_setfield(L, -2, "on");
        const kiq_api_codec_t *c = list[i].api_key >= 0 ? kiq_api_codec((int16_t)list[i].api_key) : NULL;
        if (c) {
            lua_pushstring(L, c->name);
            lua_setfield(L, -2, "api");
        }
        if (list[i].client_id) {
            lua_pushstring(L, list[i].client_id);
            lua_setfield(L, -2, "client_id");
        }
        if (list[i].topic) {
            lua_pushstring(L, list[i].topic);
            lua_setfield(L, -2, "topic");
        }
        kiq_lua_set_num(L, "failures", (double)list[i].failures);
        if (list[i].last_error) {
            lua_pushstring(L, list[i].last_error);
            lua_setfield(L, -2, "last_error");
        }
        lua_rawseti(L, -2, i + 1);
    }
    kiq_hooks_list_free(list, n);
    return 1;
}

/* b:fault{ api =, version =, min_version =, max_version =, client_id =,
 *   topic =, partition =, error = name or code, delay_ms =, action =,
 *   times =, after =, probability =, seed = } -> id | nil, err: the same
 * rule POST /api/faults takes (server/fault_rule.h). */
static int l_broker_fault(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    kiq_fault_rule_t rule;
    kiq_fault_rule_init(&rule);
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        int kt = lua_type(L, -2), vt = lua_type(L, -1);
        if (kt != LUA_TSTRING || (vt != LUA_TSTRING && vt != LUA_TNUMBER && vt != LUA_TBOOLEAN))
            return luaL_error(L, "fault: fields are names with string, number or boolean values");
        char num[32];
        const char *value = vt == LUA_TBOOLEAN ? (lua_toboolean(L, -1) ? "true" : "false") : NULL;
        if (vt == LUA_TNUMBER) {
            snprintf(num, sizeof num, "%.17g", lua_tonumber(L, -1));
            value = num;
        }
        if (!value) value = lua_tostring(L, -1);
        if (kiq_fault_rule_set(&rule, lua_tostring(L, -2), value) != 0) return kiq_lua_fail(L, kiq_error_get());
        lua_pop(L, 1);
    }
    int id = kiq_broker_fault_add(b, &rule);
    if (id < 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushinteger(L, id);
    return 1;
}

/* b:remove_fault(id) -> true | nil, err */
static int l_broker_remove_fault(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (kiq_broker_fault_remove(b, (int)luaL_checkinteger(L, 2)) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* b:faults() -> { { id, <the rule's fields>, matched, fired }, ... } */
static int l_broker_faults(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    if (kiq_broker_faults_view(b, &v) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_getfield(L, -1, "faults");
    return 1;
}

/* b:clients([client_id]) -> { { client_instance_id, client_id, address,
 *   last_push_ms, pushes, terminating, resource = {...}, metrics = { { name,
 *   kind, value, attributes = {...} } } }, ... }: the metrics clients pushed
 * (KIP-714), newest push first, as /api/clients shows them. */
static int l_broker_clients(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    const char *client_id = luaL_optstring(L, 2, NULL);
    lua_view_t lv;
    kiq_view_t v = view_on_new_table(L, &lv);
    v.open(v.ctx, "clients", true);
    int rc = kiq_client_telemetry_view(b->telemetry, client_id, false, true, &v);
    v.close(v.ctx);
    if (rc != 0) return kiq_lua_fail(L, "out of memory");
    lua_getfield(L, -1, "clients");
    return 1;
}

const luaL_Reg kiq_lua_broker_methods[] = {
        {"start", l_broker_start},     {"stop", l_broker_stop},   {"kill", l_broker_kill},
        {"running", l_broker_running}, {"port", l_broker_port},   {"state", l_broker_state},
        {"groups", l_broker_groups},   {"controller", kiq_lua_broker_controller},
        {"pause_heartbeats", kiq_lua_broker_pause_heartbeats}, {"pause_fetching", kiq_lua_broker_pause_fetching},
        {"elect_preferred_leaders", kiq_lua_broker_elect_preferred},
        {"snapshot_metadata", kiq_lua_broker_snapshot_metadata},
        {"move_leader", kiq_lua_broker_move_leader},
        {"inject_disk_fault", l_broker_inject_disk_fault}, {"clear_disk_fault", l_broker_clear_disk_fault},
        {"scrub", l_broker_scrub},
        {"request_stats", l_broker_request_stats},                {"event_counts", l_broker_event_counts},
        {"startup", l_broker_startup},                            {"metrics", l_broker_metrics},
        {"purgatory_stats", l_broker_purgatory_stats},
        {"journey", l_broker_journey},
        {"messages", l_broker_messages},                          {"configs", l_broker_configs},
        {"slow_disk", l_broker_slow_disk},
        {"http_port", l_broker_http_port},
        {"intercept", l_broker_intercept},
        {"remove_intercept", l_broker_remove_intercept},          {"intercepts", l_broker_intercepts},
        {"fault", l_broker_fault}, {"remove_fault", l_broker_remove_fault}, {"faults", l_broker_faults},
        {"clients", l_broker_clients},
        {NULL, NULL},
};
