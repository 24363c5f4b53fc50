/* Lua helpers every interceptor state loads: engine/lua/hook_answers.lua,
 * embedded at build time (scripts/embed.lua): which topics a decoded
 * request names, and the error response that mirrors a request. */
#ifndef KIQ_LUA_HOOK_ANSWERS_H
#define KIQ_LUA_HOOK_ANSWERS_H

#include <stddef.h>

/* A chunk returning { topics = function(api_name, request) -> { names },
 * error_response = function(api_name, request, code) -> response table }. */
extern const char kiq_hook_answers_lua[];
extern const size_t kiq_hook_answers_lua_len;

#endif
