/* Lua states for hooks and calls under a budget of instructions and time. */
#include "lua/hook_state.h"

#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/error.h"
#include "lua/hook_answers.h"

/* Instructions between two looks at the budget. */
#define BUDGET_STEP 1000
/* Wall-clock bound of one call, for time spent inside C functions (a
 * string search over a huge string), which the instruction count misses. */
#define CALL_MAX_NS (1000 * (int64_t)1000000)

/* The budget of the call running on this thread (a thread runs one Lua call
 * at a time, and the count hook fires on the thread running the code). */
static _Thread_local int64_t budget_left;
static _Thread_local int64_t budget_total;
static _Thread_local int64_t budget_deadline_ns;

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    budget_left -= BUDGET_STEP;
    bool late = kiq_clock_mono_ns() >= budget_deadline_ns;
    if (budget_left > 0 && !late) return;
    /* From now on every instruction raises, so a pcall inside the hook
     * cannot swallow the stop and carry on. */
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    char msg[96];
    if (late)
        snprintf(msg, sizeof msg, "stopped: ran over %lld ms", (long long)(CALL_MAX_NS / 1000000));
    else
        snprintf(msg, sizeof msg, "stopped: over its budget of %lld instructions",
                 (long long)budget_total);
    luaL_where(L, 0); /* the running function: a hook has no frame of its own */
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    lua_error(L);
}

/* Message handler: the error with a traceback. */
static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int kiq_hook_pcall(lua_State *L, int nargs, int nresults, int64_t budget)
{
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    budget_total = budget_left = budget;
    budget_deadline_ns = kiq_clock_mono_ns() + CALL_MAX_NS;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, budget < BUDGET_STEP ? (int)budget : BUDGET_STEP);
    int rc = lua_pcall(L, nargs, nresults, base);
    lua_sethook(L, NULL, 0, 0);
    lua_remove(L, base);
    return rc;
}

int kiq_hook_pcall_c(lua_State *L, lua_CFunction f, void *ud, int arg, int nresults, int64_t budget)
{
    if (arg) arg = arg > 0 ? arg : lua_gettop(L) + arg + 1;
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, ud);
    if (arg) lua_pushvalue(L, arg);
    return kiq_hook_pcall(L, arg ? 2 : 1, nresults, budget);
}

/* Protected (lua_cpcall): the argument points to whether to load the helpers. */
static int open_state(lua_State *L)
{
    bool helpers = *(const bool *)lua_touserdata(L, 1);
    luaL_openlibs(L);
    /* Hooks must not lift their own budget: no debug.sethook, and no jit
     * module to turn the compiler (which skips count hooks) back on. */
    lua_getglobal(L, "debug");
    lua_pushnil(L);
    lua_setfield(L, -2, "sethook");
    lua_pop(L, 1);
    lua_pushnil(L);
    lua_setglobal(L, "jit");
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_pushnil(L);
    lua_setfield(L, -2, "jit");
    lua_pop(L, 2);
    if (helpers) {
        if (luaL_loadbuffer(L, kiq_hook_answers_lua, kiq_hook_answers_lua_len, "=hook helpers") != 0)
            return lua_error(L);
        lua_call(L, 0, 1);
        lua_setfield(L, LUA_REGISTRYINDEX, KIQ_HOOK_HELPERS_KEY);
    }
    return 0;
}

lua_State *kiq_hook_state_new(bool helpers)
{
    lua_State *L = luaL_newstate();
    if (!L) {
        kiq_error_set("cannot create a Lua state (out of memory)");
        return NULL;
    }
    if (lua_cpcall(L, open_state, &helpers) != 0) {
        kiq_error_set("cannot set up a Lua state: %s", lua_tostring(L, -1));
        lua_close(L);
        return NULL;
    }
    /* after luaL_openlibs, whose jit library switches the compiler on */
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    return L;
}

int kiq_hook_load_chunk(lua_State *L, const char *src, size_t len, const char *name, int64_t budget)
{
    int rc = luaL_loadbuffer(L, src, len, name);
    if (rc == 0) rc = kiq_hook_pcall(L, 0, 1, budget);
    if (rc != 0) {
        const char *msg = lua_tostring(L, -1);
        kiq_error_set("%s", msg ? msg : "unknown Lua error");
        lua_pop(L, 1);
        return -1;
    }
    if (!lua_isfunction(L, -1)) {
        kiq_error_set("%s: the chunk must return the hook function, not a %s", name + 1,
                      luaL_typename(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}
