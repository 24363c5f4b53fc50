/* The cluster controls of kafkaiq.core: what the controller knows, and a
 * free port to put a controller on. Values are copied out of the engine
 * before anything is pushed, so no engine lock is held while Lua may
 * raise. */
#include <lauxlib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "controller/controller.h"
#include "core/error.h"
#include "lua/module.h"
#include "net/free_port.h"
#include "server/broker.h"
#include "server/broker_set.h"

static void push_ids(lua_State *L, const int32_t *ids, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushinteger(L, ids[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* b:controller([any]) -> nil when this broker does not host the active
 * controller (with any: no voter's controller at all), else
 * { metadata_offset, brokers = { [id] = { epoch, fenced, host, port } },
 *   topics = { [name] = { [p] = { leader, leader_epoch, partition_epoch,
 *   replicas = {...}, isr = {...} } } } } */
int kiq_lua_broker_controller(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    struct kiq_controller *ctl = lua_toboolean(L, 2) ? b->controller : kiq_broker_active_controller(b);
    if (!ctl) {
        lua_pushnil(L);
        return 1;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_controller_info_t info;
    kiq_controller_describe(ctl, &a, &info);
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, (double)info.metadata_offset);
    lua_setfield(L, -2, "metadata_offset");
    lua_createtable(L, 0, info.nbrokers);
    for (int i = 0; i < info.nbrokers; i++) {
        const kiq_controller_broker_info_t *bi = &info.brokers[i];
        lua_createtable(L, 0, 4);
        lua_pushnumber(L, (double)bi->epoch);
        lua_setfield(L, -2, "epoch");
        lua_pushboolean(L, bi->fenced);
        lua_setfield(L, -2, "fenced");
        lua_pushstring(L, bi->host);
        lua_setfield(L, -2, "host");
        lua_pushinteger(L, bi->port);
        lua_setfield(L, -2, "port");
        lua_rawseti(L, -2, bi->id);
    }
    lua_setfield(L, -2, "brokers");
    lua_createtable(L, 0, info.ntopics);
    for (int t = 0; t < info.ntopics; t++) {
        const kiq_controller_topic_info_t *ti = &info.topics[t];
        lua_createtable(L, ti->npartitions, 0);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_controller_partition_info_t *pi = &ti->partitions[p];
            lua_createtable(L, 0, 5);
            lua_pushinteger(L, pi->leader);
            lua_setfield(L, -2, "leader");
            lua_pushinteger(L, pi->leader_epoch);
            lua_setfield(L, -2, "leader_epoch");
            lua_pushinteger(L, pi->partition_epoch);
            lua_setfield(L, -2, "partition_epoch");
            push_ids(L, pi->replicas, pi->nreplicas);
            lua_setfield(L, -2, "replicas");
            push_ids(L, pi->isr, pi->nisr);
            lua_setfield(L, -2, "isr");
            lua_rawseti(L, -2, p);
        }
        lua_setfield(L, -2, ti->name);
    }
    lua_setfield(L, -2, "topics");
    kiq_arena_reset(&a);
    return 1;
}

/* free_port() -> a port free on loopback now (net/free_port.h). */
int kiq_lua_free_port(lua_State *L)
{
    int port = kiq_free_port();
    if (port < 0) return luaL_error(L, "free_port: %s", kiq_error_get());
    lua_pushinteger(L, port);
    return 1;
}

/* b:pause_heartbeats(bool): a paused broker stops heartbeating, and the
 * controller fences it after broker.session.timeout.ms (nothing in a
 * standalone broker). */
int kiq_lua_broker_pause_heartbeats(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    luaL_checktype(L, 2, LUA_TBOOLEAN);
    kiq_broker_pause_heartbeats(b, lua_toboolean(L, 2));
    return 0;
}

/* b:pause_fetching(leader_id, bool): this broker stops (or resumes)
 * replicating from that leader: the link from it is cut. */
int kiq_lua_broker_pause_fetching(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    int32_t leader = (int32_t)luaL_checkinteger(L, 2);
    luaL_checktype(L, 3, LUA_TBOOLEAN);
    kiq_broker_pause_fetching(b, leader, lua_toboolean(L, 3));
    return 0;
}

/* b:snapshot_metadata() -> { end_offset, epoch, file } of the metadata
 * snapshot this voter's controller wrote now (the latest one when nothing
 * was committed since), or nil, err. */
int kiq_lua_broker_snapshot_metadata(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    kiq_raft_epoch_end_t id;
    if (kiq_broker_snapshot_metadata(b, &id) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, kiq_error_get());
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "%020lld-%010d.checkpoint", (long long)id.end_offset, (int)id.epoch);
    lua_createtable(L, 0, 3);
    lua_pushnumber(L, (lua_Number)id.end_offset);
    lua_setfield(L, -2, "end_offset");
    lua_pushinteger(L, id.epoch);
    lua_setfield(L, -2, "epoch");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "file");
    return 1;
}

/* b:elect_preferred_leaders() -> how many leaderships moved back to their
 * preferred replica (nil on a broker without the controller). */
int kiq_lua_broker_elect_preferred(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    struct kiq_controller *ctl = lua_toboolean(L, 2) ? b->controller : kiq_broker_active_controller(b);
    if (!ctl) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, kiq_controller_elect_preferred(ctl));
    return 1;
}

/* b:move_leader(topic, partition, to) -> true, or nil and why (on a broker
 * without the controller, or when `to` holds no in-sync replica). */
int kiq_lua_broker_move_leader(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    const char *topic = luaL_checkstring(L, 2);
    int32_t p = (int32_t)luaL_checkinteger(L, 3), to = (int32_t)luaL_checkinteger(L, 4);
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (!ctl) return kiq_lua_fail(L, "the controller is on another broker");
    if (kiq_controller_move_leader(ctl, topic, p, to) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* A Lua cluster's broker set (server/broker_set.h), so each broker's HTTP
 * listener takes /api/brokers and /api/links for all of them as serve's do. */
typedef struct lua_set {
    kiq_broker_set_t *s;
} lua_set_t;

static lua_set_t *check_set(lua_State *L)
{
    lua_set_t *us = luaL_checkudata(L, 1, KIQ_LUA_BROKER_SET_MT);
    if (!us->s) luaL_error(L, "broker set already freed");
    return us;
}

/* core.broker_set_new() -> a set the brokers join before they start. Its
 * supervisor must stop before any member is freed: free it first (as
 * Cluster:stop does), and make it after its brokers, whose __gc then runs
 * later (finalizers run newest first). */
int kiq_lua_broker_set_new(lua_State *L)
{
    kiq_broker_set_t *s = kiq_broker_set_new();
    if (!s) return kiq_lua_fail(L, kiq_error_get());
    lua_set_t *us = lua_newuserdata(L, sizeof *us);
    us->s = s;
    luaL_getmetatable(L, KIQ_LUA_BROKER_SET_MT);
    lua_setmetatable(L, -2);
    return 1;
}

/* set:add(broker) -> true | nil, err (a running broker, or one already in) */
static int l_set_add(lua_State *L)
{
    lua_set_t *us = check_set(L);
    lua_remove(L, 1);
    kiq_broker_t *b = kiq_lua_check_broker(L);
    if (b->running) return kiq_lua_fail(L, "a broker joins a set before it starts");
    if (kiq_broker_set_add(us->s, b) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* set:pause(id, paused) -> true | nil, err: the broker stops (or resumes)
 * heartbeating, replicating and its Raft traffic, as a stopped process. */
static int l_set_pause(lua_State *L)
{
    lua_set_t *us = check_set(L);
    int32_t id = (int32_t)luaL_checkinteger(L, 2);
    if (kiq_broker_set_do(us->s, id, lua_toboolean(L, 3) ? KIQ_BROKER_PAUSE : KIQ_BROKER_RESUME) != 0)
        return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* set:cut(from, to, cut) -> true | nil, err: `to` stops (or resumes)
 * replicating from `from`; the two voters' Raft traffic goes with it. */
static int l_set_cut(lua_State *L)
{
    lua_set_t *us = check_set(L);
    int32_t from = (int32_t)luaL_checkinteger(L, 2), to = (int32_t)luaL_checkinteger(L, 3);
    if (kiq_broker_set_cut(us->s, from, to, lua_toboolean(L, 4)) != 0) return kiq_lua_fail(L, kiq_error_get());
    lua_pushboolean(L, 1);
    return 1;
}

/* set:free(), also its __gc: operations queued and not begun are dropped. */
int kiq_lua_broker_set_free(lua_State *L)
{
    lua_set_t *us = luaL_checkudata(L, 1, KIQ_LUA_BROKER_SET_MT);
    kiq_broker_set_free(us->s);
    us->s = NULL;
    return 0;
}

const luaL_Reg kiq_lua_broker_set_methods[] = {
    {"add", l_set_add},
    {"pause", l_set_pause},
    {"cut", l_set_cut},
    {"free", kiq_lua_broker_set_free},
    {NULL, NULL},
};
