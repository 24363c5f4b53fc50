/* The kafkaiq.core Lua module (engine/lua/module.c). */
#ifndef KIQ_LUA_MODULE_H
#define KIQ_LUA_MODULE_H

#include <lua.h>

int luaopen_kafkaiq_core(lua_State *L);

#endif
