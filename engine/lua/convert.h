/* Lua <-> protocol values, for the generated message converters
 * (messages_lua.c) and the Lua module. Runs on whichever thread owns the
 * lua_State. A value of the wrong type raises a Lua error naming the field:
 * this is the Lua boundary, where misuse becomes error(msg). */
#ifndef KIQ_LUA_CONVERT_H
#define KIQ_LUA_CONVERT_H

#include <lauxlib.h>
#include <lua.h>

#include "core/arena.h"
#include "proto/types.h"

void kiq_lua_push_str(lua_State *L, kiq_str_t s);
void kiq_lua_push_bytes(lua_State *L, kiq_bytes_t b);
/* uuids travel as Kafka prints them: 22 characters of URL-safe base64 */
void kiq_lua_push_uuid(lua_State *L, const kiq_uuid_t *u);
void kiq_lua_push_int64(lua_State *L, int64_t v);

/* Readers of the value at idx (a field named `field` for error messages).
 * Strings and bytes are copied into the arena so the message does not
 * depend on the Lua value staying alive. nil gives null. */
kiq_str_t kiq_lua_to_str(lua_State *L, int idx, kiq_arena_t *a, const char *field);
kiq_bytes_t kiq_lua_to_bytes(lua_State *L, int idx, kiq_arena_t *a, const char *field);
kiq_uuid_t kiq_lua_to_uuid(lua_State *L, int idx, const char *field);
int64_t kiq_lua_to_int(lua_State *L, int idx, int64_t min, int64_t max, const char *field);
double kiq_lua_to_double(lua_State *L, int idx, const char *field);
bool kiq_lua_to_bool(lua_State *L, int idx, const char *field);
/* Length of the array at idx, or raises when it is not a table. */
int32_t kiq_lua_array_len(lua_State *L, int idx, const char *field);

#endif
