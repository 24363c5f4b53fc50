/* The kafkaiq.core Lua module (engine/lua/module.c). */
#ifndef KIQ_LUA_MODULE_H
#define KIQ_LUA_MODULE_H

#include <lua.h>

int luaopen_kafkaiq_core(lua_State *L);

/* The broker a method was called on (argument 1); raises when it is not
 * one or was freed. */
struct kiq_broker *kiq_lua_check_broker(lua_State *L);

/* Cluster controls (engine/lua/cluster_controls.c), broker methods. */
int kiq_lua_broker_controller(lua_State *L);
int kiq_lua_broker_pause_heartbeats(lua_State *L);
int kiq_lua_broker_pause_fetching(lua_State *L);
int kiq_lua_broker_elect_preferred(lua_State *L);
/* core.free_port() -> a loopback port that was free a moment ago */
int kiq_lua_free_port(lua_State *L);

#endif
