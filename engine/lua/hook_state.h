/* The Lua states hooks run in, and their calls under a budget: at most so
 * many instructions and a second of wall-clock time, so a hook that loops
 * cannot hold a broker thread. Each state belongs to one thread. */
#ifndef KIQ_LUA_HOOK_STATE_H
#define KIQ_LUA_HOOK_STATE_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a state made with helpers keeps them (the registry). */
#define KIQ_HOOK_HELPERS_KEY "kafkaiq.hook_helpers"

/* A fresh state with the standard libraries, interpreter only (the count
 * hook does not fire inside compiled traces), without debug.sethook and
 * jit; with the hook helpers when asked. NULL with kiq_error_set. */
lua_State *kiq_hook_state_new(bool helpers);
/* lua_pcall with a traceback handler and at most `budget` instructions. */
int kiq_hook_pcall(lua_State *L, int nargs, int nresults, int64_t budget);
/* Calls f(ud [, the value at arg]) in protected mode under the budget (f
 * reads values hooks returned, which may carry metamethods); leaves nresults
 * or the error. arg 0: no second argument. */
int kiq_hook_pcall_c(lua_State *L, lua_CFunction f, void *ud, int arg, int nresults, int64_t budget);
/* Runs a hook chunk; leaves the function it returns. 0, or -1 with the
 * reason in kiq_error_set. */
int kiq_hook_load_chunk(lua_State *L, const char *src, size_t len, const char *name, int64_t budget);

#endif
