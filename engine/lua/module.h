/* The kafkaiq.core Lua module (engine/lua/module.c) and what its files
 * share. Everything runs on the thread of the calling lua_State. */
#ifndef KIQ_LUA_MODULE_H
#define KIQ_LUA_MODULE_H

#include <lauxlib.h>
#include <lua.h>

#define KIQ_LUA_BROKER_MT "kafkaiq.broker"
#define KIQ_LUA_CONN_MT "kafkaiq.connection"
#define KIQ_LUA_BROKER_SET_MT "kafkaiq.broker_set"

int luaopen_kafkaiq_core(lua_State *L);

/* nil, msg: an expected failure. */
int kiq_lua_fail(lua_State *L, const char *msg);
/* t[k] = v on the table on top of the stack (set_str: nothing for NULL). */
void kiq_lua_set_num(lua_State *L, const char *k, double v);
void kiq_lua_set_str(lua_State *L, const char *k, const char *v);

/* The broker objects (lua/broker.c): core.broker_new, their __gc and methods. */
int kiq_lua_broker_new(lua_State *L);
int kiq_lua_broker_gc(lua_State *L);
extern const luaL_Reg kiq_lua_broker_methods[];
/* Connections (lua/connection.c): core.connect, close (also __gc), methods. */
int kiq_lua_connect(lua_State *L);
int kiq_lua_conn_close(lua_State *L);
extern const luaL_Reg kiq_lua_conn_methods[];
/* The codec's and the records' module functions (lua/codec.c, lua/records.c). */
extern const luaL_Reg kiq_lua_codec_functions[];
extern const luaL_Reg kiq_lua_record_functions[];

/* The broker a method was called on (argument 1); raises when it is not
 * one or was freed. */
struct kiq_broker *kiq_lua_check_broker(lua_State *L);

/* Cluster controls (engine/lua/cluster_controls.c), broker methods. */
int kiq_lua_broker_controller(lua_State *L);
int kiq_lua_broker_pause_heartbeats(lua_State *L);
int kiq_lua_broker_pause_fetching(lua_State *L);
int kiq_lua_broker_elect_preferred(lua_State *L);
int kiq_lua_broker_snapshot_metadata(lua_State *L);
int kiq_lua_broker_move_leader(lua_State *L);
/* core.broker_set_new(), the set's free (also __gc) and methods. */
int kiq_lua_broker_set_new(lua_State *L);
int kiq_lua_broker_set_free(lua_State *L);
extern const luaL_Reg kiq_lua_broker_set_methods[];
/* core.free_port() -> a loopback port that was free a moment ago, below
 * the ephemeral range when one is free there */
int kiq_lua_free_port(lua_State *L);

#endif
