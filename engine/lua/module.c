/* kafkaiq.core: the C side of the Lua module (DESIGN §6). Brokers run on
 * their own threads; everything here runs on the thread of the calling
 * lua_State and reaches the engine only through its thread-safe calls.
 * Expected failures return nil, err; misuse raises. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "include/kafkaiq.h"
#include "lua/convert.h"
#include "lua/hook_records.h"
#include "lua/hooks.h"
#include "lua/module.h"
#include "proto/header.h"
#include "proto/messages_lua.h"
#include "record/batch.h"
#include "record/compression.h"
#include "server/broker.h"

#define BROKER_MT "kafkaiq.broker"
#define CONN_MT "kafkaiq.connection"

static int fail(lua_State *L, const char *msg)
{
    lua_pushnil(L);
    lua_pushstring(L, msg);
    return 2;
}

/* ---- brokers ---------------------------------------------------------- */

typedef struct lua_broker {
    kiq_broker_t *b;
} lua_broker_t;

kiq_broker_t *kiq_lua_check_broker(lua_State *L)
{
    lua_broker_t *ub = luaL_checkudata(L, 1, BROKER_MT);
    if (!ub->b) luaL_error(L, "broker already freed");
    return ub->b;
}

#define check_broker kiq_lua_check_broker

/* core.broker_new{ [kafka name] = value, ... } -> broker | nil, err */
static int l_broker_new(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    kiq_config_t *cfg = kiq_config_new();
    if (!cfg) return fail(L, "out of memory");
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
            return fail(L, kiq_error_get());
        }
        lua_pop(L, 1);
    }
    kiq_broker_t *b = kiq_broker_new(cfg);
    kiq_hooks_t *hooks = b ? kiq_hooks_new(kiq_config_int(cfg, KIQ_CFG_HOOK_MAX_INSTRUCTIONS)) : NULL;
    kiq_config_free(cfg);
    if (!b) return fail(L, kiq_error_get());
    if (!hooks) {
        kiq_broker_free(b);
        return fail(L, "out of memory");
    }
    /* the broker's interceptors are this module's Lua functions */
    kiq_broker_set_interceptors(b, &kiq_hooks_ops, hooks, hooks->active);
    lua_broker_t *ub = lua_newuserdata(L, sizeof *ub);
    ub->b = b;
    luaL_getmetatable(L, BROKER_MT);
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
        return fail(L, err);
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

static int l_broker_gc(lua_State *L)
{
    lua_broker_t *ub = luaL_checkudata(L, 1, BROKER_MT);
    kiq_broker_free(ub->b);
    ub->b = NULL;
    return 0;
}

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void push_partition_state(lua_State *L, kiq_partition_t *p)
{
    lua_newtable(L);
    kiq_partition_log_t *log = atomic_load(&p->log);
    lua_pushboolean(L, log != NULL);
    lua_setfield(L, -2, "hosted");
    kiq_replica_view_t *v = malloc(sizeof *v); /* large: keep it off the stack */
    if (v) kiq_partition_replica_view(p->replica, v);
    set_num(L, "leader_epoch", v ? v->leader_epoch : p->leader_epoch);
    if (!log || !v) { /* a cluster broker not replicating it: no log, no offsets */
        free(v);
        return;
    }
    int64_t leo = kiq_partition_log_end_offset(log);
    set_num(L, "log_start_offset", (double)kiq_partition_log_start_offset(log));
    set_num(L, "log_end_offset", (double)leo);
    set_num(L, "high_watermark", (double)kiq_partition_log_high_watermark(log));
    /* the replication state: role, leader, replica set and ISR, and on a
     * leader each follower's log end offset as its fetches showed it */
    static const char *const roles[] = {"none", "leader", "follower"};
    lua_pushstring(L, roles[v->role]);
    lua_setfield(L, -2, "role");
    set_num(L, "leader", v->leader);
    set_num(L, "partition_epoch", v->partition_epoch);
    lua_createtable(L, v->nreplicas, 0);
    for (int i = 0; i < v->nreplicas; i++) {
        lua_pushinteger(L, v->replicas[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "replicas");
    lua_createtable(L, v->nisr, 0);
    for (int i = 0; i < v->nisr; i++) {
        lua_pushinteger(L, v->isr[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "isr");
    if (v->role == KIQ_REPLICA_LEADER) {
        lua_createtable(L, 0, v->nfollowers);
        for (int i = 0; i < v->nfollowers; i++) {
            lua_createtable(L, 0, 1);
            set_num(L, "leo", (double)v->followers[i].leo);
            lua_rawseti(L, -2, v->followers[i].broker_id);
        }
        lua_setfield(L, -2, "followers");
    }
    free(v);
    lua_pushboolean(L, kiq_partition_log_offline(log));
    lua_setfield(L, -2, "offline");
    int n = kiq_partition_log_segments(log, NULL, 0);
    kiq_log_segment_info_t *segs = n > 0 ? calloc((size_t)n, sizeof *segs) : NULL;
    if (segs) n = kiq_partition_log_segments(log, segs, n);
    lua_createtable(L, n > 0 ? n : 0, 0);
    for (int i = 0; segs && i < n; i++) {
        lua_createtable(L, 0, 4);
        set_num(L, "base_offset", (double)segs[i].base_offset);
        set_num(L, "next_offset", (double)segs[i].next_offset);
        set_num(L, "size", (double)segs[i].size);
        set_num(L, "max_timestamp", (double)segs[i].max_timestamp);
        lua_rawseti(L, -2, i + 1);
    }
    free(segs);
    lua_setfield(L, -2, "segments");
}

/* b:state() -> { node_id, port, cluster_id, running, queue_depth,
 *   log_dirs = { { path, offline, error } }, offline_log_dirs = { path... },
 *   topics = { [name] = { id, partitions = { [0..n-1] = {...} } } } }
 * A partition is { hosted, leader_epoch } and, when hosted here, its
 * offsets (high_watermark is the real one), offline flag, segments, and
 * replication state: role ("leader", "follower", "none"), leader,
 * partition_epoch, replicas, isr and, on the leader, followers =
 * { [broker id] = { leo } }. */
static int l_broker_state(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    lua_newtable(L);
    set_num(L, "node_id", b->node_id);
    set_num(L, "port", kiq_broker_port(b));
    if (b->has_control_plane) set_num(L, "control_port", b->control_port);
    lua_pushstring(L, b->cluster_id);
    lua_setfield(L, -2, "cluster_id");
    lua_pushboolean(L, b->running);
    lua_setfield(L, -2, "running");
    lua_createtable(L, b->nlog_dirs, 0);
    for (int i = 0; i < b->nlog_dirs; i++) {
        int dir_err = kiq_log_dir_error(b->log_dirs[i].health);
        lua_createtable(L, 0, 3);
        lua_pushstring(L, b->log_dirs[i].path);
        lua_setfield(L, -2, "path");
        lua_pushboolean(L, dir_err != 0);
        lua_setfield(L, -2, "offline");
        if (dir_err) {
            lua_pushstring(L, strerror(dir_err));
            lua_setfield(L, -2, "error");
        }
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "log_dirs");
    lua_newtable(L);
    for (int i = 0, n = 0; i < b->nlog_dirs; i++)
        if (kiq_log_dir_offline(b->log_dirs[i].health)) {
            lua_pushstring(L, b->log_dirs[i].path);
            lua_rawseti(L, -2, ++n);
        }
    lua_setfield(L, -2, "offline_log_dirs");
    if (!b->running) return 1;
    set_num(L, "queue_depth", (double)kiq_request_queue_depth(b->queue));
    kiq_purgatory_stats_t ps;
    kiq_purgatory_stats(b->purgatory, &ps);
    set_num(L, "parked", ps.waiting);
    lua_newtable(L);
    int count;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    for (int i = 0; i < count; i++) {
        kiq_topic_t *t = list[i];
        lua_newtable(L);
        kiq_lua_push_uuid(L, &t->id);
        lua_setfield(L, -2, "id");
        lua_newtable(L);
        for (int32_t p = 0; p < t->npartitions; p++) {
            push_partition_state(L, t->partitions[p]);
            lua_rawseti(L, -2, p);
        }
        lua_setfield(L, -2, "partitions");
        set_num(L, "partition_count", t->npartitions);
        lua_setfield(L, -2, t->name);
    }
    kiq_topics_list_free(list, count);
    lua_setfield(L, -2, "topics");
    return 1;
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    if (!v) return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
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
        set_str(L, "id", g->id);
        set_str(L, "state", g->state);
        set_num(L, "generation", g->generation);
        set_str(L, "protocol_type", g->protocol_type);
        set_str(L, "protocol", g->protocol);
        set_str(L, "leader", g->leader);
        set_num(L, "offsets_partition", g->offsets_partition);
        lua_createtable(L, g->nmembers, 0);
        for (int j = 0; j < g->nmembers; j++) {
            const kiq_group_info_member_t *m = &g->members[j];
            lua_createtable(L, 0, 7);
            set_str(L, "id", m->id);
            set_str(L, "instance_id", m->instance_id);
            set_str(L, "client_id", m->client_id);
            set_str(L, "client_host", m->client_host);
            set_num(L, "session_timeout_ms", m->session_timeout_ms);
            set_num(L, "rebalance_timeout_ms", m->rebalance_timeout_ms);
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
            set_num(L, "offset", (double)o->offset);
            set_num(L, "leader_epoch", o->leader_epoch);
            if (o->metadata) {
                lua_pushlstring(L, o->metadata, (size_t)o->metadata_len);
                lua_setfield(L, -2, "metadata");
            }
            set_num(L, "commit_timestamp", (double)o->commit_ts_ms);
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
        set_num(L, "count", (double)n);
        for (int s = 0; s < KIQ_STAGE__COUNT; s++) {
            char key[32];
            snprintf(key, sizeof key, "%s_ms", kiq_request_stage_names[s]);
            set_num(L, key, (double)ns[s] / 1e6);
        }
        uint64_t bytes, trailing = kiq_request_stats_get_trailing(&b->stats, kiq_api_codecs[i].key, &bytes);
        set_num(L, "trailing_requests", (double)trailing);
        set_num(L, "trailing_bytes", (double)bytes);
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
        set_num(L, kiq_point_names[p], (double)kiq_event_counts_get(&b->event_counts, (enum kiq_point)p));
    return 1;
}

/* b:purgatory_stats() -> { parked, notified, tried, expired, waiting }:
 * what the purgatory (server/purgatory.h) did since the broker started. */
static int l_broker_purgatory_stats(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    if (!b->purgatory) return fail(L, "broker not running");
    kiq_purgatory_stats_t s;
    kiq_purgatory_stats(b->purgatory, &s);
    lua_createtable(L, 0, 5);
    set_num(L, "parked", (double)s.parked);
    set_num(L, "notified", (double)s.notified);
    set_num(L, "tried", (double)s.tried);
    set_num(L, "expired", (double)s.expired);
    set_num(L, "waiting", s.waiting);
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

/* b:intercept{ on = "request"|"produce"|"fetch", source = "<chunk returning a function>",
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
    if (id < 0) return fail(L, kiq_error_get());
    lua_pushinteger(L, id);
    return 1;
}

/* b:remove_intercept(id) -> true | nil, err */
static int l_broker_remove_intercept(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    int id = (int)luaL_checkinteger(L, 2);
    if (kiq_hooks_remove(broker_hooks(b), id) != 0) return fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* b:intercepts() -> { { id, on, api, client_id, topic, failures, last_error }, ... } */
static int l_broker_intercepts(lua_State *L)
{
    kiq_broker_t *b = check_broker(L);
    kiq_hook_info_t *list;
    int n = kiq_hooks_list(broker_hooks(b), &list);
    if (n < 0) return fail(L, kiq_error_get());
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_createtable(L, 0, 7);
        set_num(L, "id", list[i].id);
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
        set_num(L, "failures", (double)list[i].failures);
        if (list[i].last_error) {
            lua_pushstring(L, list[i].last_error);
            lua_setfield(L, -2, "last_error");
        }
        lua_rawseti(L, -2, i + 1);
    }
    kiq_hooks_list_free(list, n);
    return 1;
}

/* ---- connections: a blocking client socket for the Lua client --------- */

typedef struct lua_conn {
    int fd;
} lua_conn_t;

static lua_conn_t *check_conn(lua_State *L)
{
    lua_conn_t *c = luaL_checkudata(L, 1, CONN_MT);
    if (c->fd < 0) luaL_error(L, "connection is closed");
    return c;
}

/* Waits for the socket; 0 when ready, -1 with the reason. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        int64_t left = deadline_ms - kiq_clock_mono_ns() / 1000000;
        if (left <= 0) return kiq_error_set("timed out");
        struct pollfd p = {fd, events, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0) return 0;
        if (rc < 0 && errno != EINTR) return kiq_error_errno("poll");
    }
}

/* core.connect(host, port, timeout_ms) -> conn | nil, err */
static int l_connect(lua_State *L)
{
    const char *host = luaL_checkstring(L, 1);
    int port = (int)luaL_checkinteger(L, 2);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 3, 10000);
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) return fail(L, gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return fail(L, strerror(errno));
    }
    rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        lua_pushnil(L);
        lua_pushfstring(L, "connect %s:%d: %s", host, port, strerror(errno));
        close(fd);
        return 2;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (wait_fd(fd, POLLOUT, deadline) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
        lua_pushnil(L);
        lua_pushfstring(L, "connect %s:%d: %s", host, port, err ? strerror(err) : kiq_error_get());
        close(fd);
        return 2;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    lua_conn_t *c = lua_newuserdata(L, sizeof *c);
    c->fd = fd;
    luaL_getmetatable(L, CONN_MT);
    lua_setmetatable(L, -2);
    return 1;
}

/* conn:send(bytes[, timeout_ms]) -> true | nil, err */
static int l_conn_send(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    size_t len, off = 0;
    const char *p = luaL_checklstring(L, 2, &len);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 3, 10000);
    while (off < len) {
        ssize_t n = send(c->fd, p + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(c->fd, POLLOUT, deadline) != 0) return fail(L, kiq_error_get());
        } else {
            return fail(L, n < 0 ? strerror(errno) : "connection closed");
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int read_full(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = recv(fd, buf + off, len - off, 0);
        if (n > 0) {
            off += (size_t)n;
        } else if (n == 0) {
            return kiq_error_set("connection closed by the broker");
        } else if (errno == EAGAIN || errno == EINTR) {
            if (wait_fd(fd, POLLIN, deadline) != 0) return -1;
        } else {
            return kiq_error_errno("recv");
        }
    }
    return 0;
}

/* conn:receive([timeout_ms]) -> frame (without its size) | nil, err */
static int l_conn_receive(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 2, 30000);
    uint8_t size[4];
    if (read_full(c->fd, size, 4, deadline) != 0) return fail(L, kiq_error_get());
    int32_t n = (int32_t)kiq_be32(size);
    if (n < 0 || n > 1024 * 1024 * 1024) return fail(L, "bad response size");
    uint8_t *buf = malloc(n ? (size_t)n : 1);
    if (!buf) return fail(L, "out of memory");
    if (read_full(c->fd, buf, (size_t)n, deadline) != 0) {
        free(buf);
        return fail(L, kiq_error_get());
    }
    lua_pushlstring(L, (const char *)buf, (size_t)n);
    free(buf);
    return 1;
}

/* conn:readable(timeout_ms) -> true when a response has started to arrive
 * (or the peer closed), false after timeout_ms: lets a client wait for an
 * answer the broker may hold back (JoinGroup) without reading half a frame. */
static int l_conn_readable(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_checkinteger(L, 2);
    lua_pushboolean(L, wait_fd(c->fd, POLLIN, deadline) == 0);
    return 1;
}

static int l_conn_close(lua_State *L)
{
    lua_conn_t *c = luaL_checkudata(L, 1, CONN_MT);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    return 0;
}

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
        return fail(L, "cannot encode the request (a value too large for its field?)");
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
    if (kiq_request_header_decode(&r, &h) != 0) return fail(L, "malformed request header");
    const kiq_api_codec_t *c = kiq_api_codec(h.api_key);
    if (!c || h.api_version < c->min_version || h.api_version > c->max_version)
        return fail(L, "unsupported api key or version");
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->request_size);
    if (c->request_decode(&r, h.api_version, &a, m) != 0) {
        kiq_arena_reset(&a);
        return fail(L, "malformed request body");
    }
    lua_createtable(L, 0, 5);
    set_num(L, "api_key", h.api_key);
    lua_pushstring(L, c->name);
    lua_setfield(L, -2, "api_name");
    set_num(L, "api_version", h.api_version);
    set_num(L, "correlation_id", h.correlation_id);
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
        set_num(L, "key", c->key);
        lua_pushstring(L, c->name);
        lua_setfield(L, -2, "name");
        set_num(L, "min_version", c->min_version);
        set_num(L, "max_version", c->max_version);
        set_num(L, "flexible_min", c->flexible_min);
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
        return fail(L, "cannot encode the data message (a value too large for its field?)");
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

/* ---- records ----------------------------------------------------------- */

/* core.build_batch{ codec=, base_timestamp=, producer_id=, producer_epoch=,
 *   base_sequence=, records = { {key=, value=, headers={{k, v}, ...}, timestamp=}, ... } }
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
            return fail(L, kiq_error_get());
        }
    }
    kiq_wr_t w;
    kiq_wr_init(&w);
    int rc = kiq_batch_builder_finish(&bb, &w);
    kiq_batch_builder_free(&bb);
    kiq_arena_reset(&a);
    if (rc != 0) {
        kiq_wr_free(&w);
        return fail(L, kiq_error_get());
    }
    lua_pushlstring(L, (const char *)w.buf, w.len);
    kiq_wr_free(&w);
    return 1;
}

static int push_records_protected(lua_State *L)
{
    size_t len;
    const uint8_t *p = (const uint8_t *)lua_tolstring(L, 1, &len);
    kiq_hook_push_records(L, p, len, true);
    return 1;
}

/* core.parse_records(bytes) -> { {offset, timestamp, leader_epoch, key, value,
 * headers}, ... } | nil, err. Every whole batch's CRC is checked first; a
 * truncated trailing batch (as a Fetch may return) is ignored. */
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
        if (h.magic != KIQ_BATCH_MAGIC) return fail(L, "unsupported message format");
        if (kiq_batch_check(batch, blen, &h) != 0) return fail(L, kiq_error_get());
    }
    if (rc < 0) return fail(L, kiq_error_get());
    lua_pushcfunction(L, push_records_protected);
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    return 1;
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

static int l_now_ms(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)kiq_clock_wall_ms());
    return 1;
}

static int l_sleep_ms(lua_State *L)
{
    lua_Number ms = luaL_checknumber(L, 1);
    if (ms > 0) usleep((useconds_t)(ms * 1000));
    return 0;
}

int luaopen_kafkaiq_core(lua_State *L)
{
    static const luaL_Reg broker_methods[] = {
        {"start", l_broker_start},     {"stop", l_broker_stop},   {"kill", l_broker_kill},
        {"running", l_broker_running}, {"port", l_broker_port},   {"state", l_broker_state},
        {"groups", l_broker_groups},   {"controller", kiq_lua_broker_controller},
        {"pause_heartbeats", kiq_lua_broker_pause_heartbeats}, {"pause_fetching", kiq_lua_broker_pause_fetching},
        {"elect_preferred_leaders", kiq_lua_broker_elect_preferred},
        {"inject_disk_fault", l_broker_inject_disk_fault}, {"clear_disk_fault", l_broker_clear_disk_fault},
        {"request_stats", l_broker_request_stats},                {"event_counts", l_broker_event_counts},
        {"purgatory_stats", l_broker_purgatory_stats},
        {"intercept", l_broker_intercept},
        {"remove_intercept", l_broker_remove_intercept},          {"intercepts", l_broker_intercepts},
        {NULL, NULL},
    };
    static const luaL_Reg conn_methods[] = {
        {"send", l_conn_send}, {"receive", l_conn_receive}, {"readable", l_conn_readable}, {"close", l_conn_close}, {NULL, NULL},
    };
    static const luaL_Reg functions[] = {
        {"broker_new", l_broker_new},         {"connect", l_connect},
        {"encode_request", l_encode_request}, {"decode_response", l_decode_response},
        {"decode_request", l_decode_request}, {"apis", l_apis},
        {"encode_data", l_encode_data},       {"decode_data", l_decode_data},
        {"build_batch", l_build_batch},       {"parse_records", l_parse_records},
        {"murmur2", l_murmur2},               {"crc32", l_crc32},
        {"log_level", l_log_level},           {"now_ms", l_now_ms},
        {"sleep_ms", l_sleep_ms},             {"free_port", kiq_lua_free_port},
        {NULL, NULL},
    };
    luaL_newmetatable(L, BROKER_MT);
    lua_newtable(L);
    luaL_register(L, NULL, broker_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_broker_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newmetatable(L, CONN_MT);
    lua_newtable(L);
    luaL_register(L, NULL, conn_methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_conn_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_newtable(L);
    luaL_register(L, NULL, functions);
    lua_pushstring(L, KIQ_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
