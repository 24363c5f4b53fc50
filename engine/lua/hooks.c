/* The interceptor registry and the per-thread Lua states that run it; see
 * hooks.h for which thread does what. */
#include "lua/hooks.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "config/config.h"
#include "lua/convert.h"
#include "lua/hook_records.h"
#include "lua/hook_state.h"
#include "proto/errors.h"
#include "lua/messages_lua.h"
#include "server/broker.h"


const char *const kiq_hook_point_names[KIQ_HOOK__POINTS] = {"request", "produce", "fetch", "authorize"};

int kiq_hook_point_parse(const char *name)
{
    for (int i = 0; i < KIQ_HOOK__POINTS; i++)
        if (strcmp(name, kiq_hook_point_names[i]) == 0) return i;
    return -1;
}

/* A registry entry. Immutable once listed, except failures and last_error
 * (under the registry's lock). */
struct kiq_hook_def {
    int id;
    enum kiq_hook_point point;
    int api_key;
    char *client_id, *topic;
    char *source;
    size_t source_len;
    uint64_t failures;
    char *last_error;
    kiq_fault_rule_t *fault; /* a fault rule instead of a source */
    uint64_t matched, fired, rng; /* a fault's counts and generator */
    kiq_hook_def_t *next;
};

static atomic_uint_fast64_t next_serial = 1;

/* ---- the registry ------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void def_free(kiq_hook_def_t *d)
{
    if (!d) return;
    free(d->client_id);
    free(d->topic);
    free(d->source);
    free(d->last_error);
    free(d->fault);
    free(d);
}

kiq_hooks_t *kiq_hooks_new(int64_t max_instructions)
{
    kiq_hooks_t *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    for (int i = 0; i < KIQ_HOOK__POINTS; i++) atomic_init(&h->active[i], 0);
    atomic_init(&h->generation, 0);
    h->serial = atomic_fetch_add(&next_serial, 1);
    h->max_instructions = max_instructions >= 1 ? max_instructions : 1;
    h->next_id = 1;
    pthread_mutex_init(&h->lock, NULL);
    return h;
}

void kiq_hooks_free(kiq_hooks_t *h)
{
    if (!h) return;
    while (h->list) {
        kiq_hook_def_t *d = h->list;
        h->list = d->next;
        def_free(d);
    }
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* A fault rule's entry: no Lua to check; what it picks comes from the rule. */
static kiq_hook_def_t *fault_def(const kiq_fault_rule_t *rule)
{
    kiq_hook_def_t *d = calloc(1, sizeof *d);
    if (!d || !(d->fault = malloc(sizeof *d->fault))) {
        free(d);
        kiq_error_set("out of memory");
        return NULL;
    }
    *d->fault = *rule;
    d->point = KIQ_HOOK_REQUEST;
    d->api_key = rule->api_key;
    d->client_id = rule->client_id[0] ? strdup(rule->client_id) : NULL;
    d->topic = rule->topic[0] ? strdup(rule->topic) : NULL;
    d->rng = rule->seed * 0x9E3779B97F4A7C15ull + 1; /* xorshift needs a non-zero state */
    if ((rule->client_id[0] && !d->client_id) || (rule->topic[0] && !d->topic)) {
        def_free(d);
        kiq_error_set("out of memory");
        return NULL;
    }
    return d;
}

/* Lists d under the lock; its id. */
static int def_insert(kiq_hooks_t *h, kiq_hook_def_t *d)
{
    pthread_mutex_lock(&h->lock);
    d->id = h->next_id++;
    kiq_hook_def_t **tail = &h->list;
    while (*tail) tail = &(*tail)->next;
    *tail = d;
    atomic_fetch_add(&h->active[d->point], 1);
    atomic_fetch_add(&h->generation, 1);
    int id = d->id;
    pthread_mutex_unlock(&h->lock);
    return id;
}

int kiq_hooks_add(kiq_hooks_t *h, const kiq_hook_spec_t *spec)
{
    if (spec->fault) {
        if (kiq_fault_rule_check((kiq_fault_rule_t *)spec->fault) != 0) return -1;
        kiq_hook_def_t *d = fault_def(spec->fault);
        return d ? def_insert(h, d) : -1;
    }
    if ((int)spec->point < 0 || spec->point >= KIQ_HOOK__POINTS)
        return kiq_error_set("unknown interceptor point %d", (int)spec->point);
    if (spec->point != KIQ_HOOK_REQUEST && spec->api_key >= 0)
        return kiq_error_set("only request interceptors select by api");
    if (!spec->source) return kiq_error_set("an interceptor needs a source");
    /* A fresh state like the ones the handlers use: what loads here loads
     * there, and the caller's globals are not touched. */
    lua_State *L = kiq_hook_state_new(false);
    if (!L) return -1;
    int rc = kiq_hook_load_chunk(L, spec->source, spec->source_len, "=interceptor", h->max_instructions);
    lua_close(L);
    if (rc != 0) return -1;
    kiq_hook_def_t *d = calloc(1, sizeof *d);
    if (!d) return kiq_error_set("out of memory");
    d->point = spec->point;
    d->api_key = spec->point == KIQ_HOOK_REQUEST ? spec->api_key : -1;
    d->client_id = dup_or_null(spec->client_id);
    d->topic = dup_or_null(spec->topic);
    d->source = malloc(spec->source_len ? spec->source_len : 1);
    if ((spec->client_id && !d->client_id) || (spec->topic && !d->topic) || !d->source) {
        def_free(d);
        return kiq_error_set("out of memory");
    }
    memcpy(d->source, spec->source, spec->source_len);
    d->source_len = spec->source_len;
    return def_insert(h, d);
}

int kiq_hooks_remove(kiq_hooks_t *h, int id)
{
    pthread_mutex_lock(&h->lock);
    kiq_hook_def_t **p = &h->list;
    while (*p && (*p)->id != id) p = &(*p)->next;
    kiq_hook_def_t *d = *p;
    if (d) {
        *p = d->next;
        atomic_fetch_sub(&h->active[d->point], 1);
        atomic_fetch_add(&h->generation, 1);
    }
    pthread_mutex_unlock(&h->lock);
    if (!d) return kiq_error_set("no interceptor %d", id);
    def_free(d);
    return 0;
}

void kiq_hooks_list_free(kiq_hook_info_t *list, int n)
{
    for (int i = 0; list && i < n; i++) {
        free(list[i].client_id);
        free(list[i].topic);
        free(list[i].last_error);
    }
    free(list);
}

int kiq_hooks_list(kiq_hooks_t *h, kiq_hook_info_t **out)
{
    pthread_mutex_lock(&h->lock);
    int n = 0;
    for (kiq_hook_def_t *d = h->list; d; d = d->next) n++;
    kiq_hook_info_t *list = calloc(n ? (size_t)n : 1, sizeof *list);
    bool oom = !list;
    int i = 0;
    for (kiq_hook_def_t *d = h->list; d && !oom; d = d->next, i++) {
        list[i] = (kiq_hook_info_t){.id = d->id, .point = d->point, .api_key = d->api_key,
                                    .client_id = dup_or_null(d->client_id), .topic = dup_or_null(d->topic),
                                    .failures = d->failures, .last_error = dup_or_null(d->last_error)};
        if (d->fault) {
            list[i].is_fault = true;
            list[i].fault = *d->fault;
            list[i].matched = d->matched;
            list[i].fired = d->fired;
        }
        oom = (d->client_id && !list[i].client_id) || (d->topic && !list[i].topic) ||
              (d->last_error && !list[i].last_error);
    }
    pthread_mutex_unlock(&h->lock);
    if (oom) {
        kiq_hooks_list_free(list, i);
        return kiq_error_set("out of memory");
    }
    *out = list;
    return n;
}

/* Any thread: logs a hook's failure and keeps it on its entry. */
static void hook_failed(kiq_hooks_t *h, int id, const char *what)
{
    if (!what) what = "unknown Lua error";
    KIQ_WARN("interceptor %d failed; going on as without it: %s", id, what);
    pthread_mutex_lock(&h->lock);
    for (kiq_hook_def_t *d = h->list; d; d = d->next) {
        if (d->id != id) continue;
        d->failures++;
        char *copy = strdup(what);
        if (copy) {
            free(d->last_error);
            d->last_error = copy;
        }
        break;
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- per-thread states -------------------------------------------------- */

/* A hook as one thread has it loaded. */
typedef struct loaded_hook {
    int id;
    enum kiq_hook_point point;
    int api_key;
    char *client_id, *topic;
    int ref; /* the function in the state's registry; LUA_NOREF: did not load here; LUA_REFNIL: a fault rule */
    kiq_fault_rule_t fault; /* a fault rule's, read by this thread */
} loaded_hook_t;

/* Thread-specific data of a thread that ran hooks; only that thread uses it. */
typedef struct hook_thread {
    uint64_t serial;     /* the registry it mirrors */
    unsigned generation; /* of the registry when last loaded */
    lua_State *L;
    loaded_hook_t *hooks; /* in id order */
    int n;
} hook_thread_t;

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static void loaded_free(loaded_hook_t *hk)
{
    free(hk->client_id);
    free(hk->topic);
}

/* Runs at thread exit (and when a thread meets another registry). */
static void thread_state_free(void *arg)
{
    hook_thread_t *t = arg;
    if (!t) return;
    for (int i = 0; i < t->n; i++) loaded_free(&t->hooks[i]);
    free(t->hooks);
    if (t->L) lua_close(t->L);
    free(t);
}

static void make_thread_key(void) { pthread_key_create(&thread_key, thread_state_free); }

static loaded_hook_t *find_loaded(hook_thread_t *t, int id)
{
    for (int i = 0; i < t->n; i++)
        if (t->hooks[i].id == id) return &t->hooks[i];
    return NULL;
}

/* Brings the thread's hooks in line with the registry: keeps what it has
 * loaded, compiles new hooks (outside the lock: their chunks run user code),
 * drops removed ones. */
static int reload(hook_thread_t *t, kiq_hooks_t *h)
{
    pthread_mutex_lock(&h->lock);
    unsigned gen = atomic_load(&h->generation);
    int n = 0;
    for (kiq_hook_def_t *d = h->list; d; d = d->next) n++;
    loaded_hook_t *next = calloc(n ? (size_t)n : 1, sizeof *next);
    char **sources = calloc(n ? (size_t)n : 1, sizeof *sources);
    size_t *lens = calloc(n ? (size_t)n : 1, sizeof *lens);
    if (!next || !sources || !lens) {
        pthread_mutex_unlock(&h->lock);
        free(next);
        free(sources);
        free(lens);
        return kiq_error_set("out of memory");
    }
    int i = 0;
    for (kiq_hook_def_t *d = h->list; d; d = d->next, i++) {
        loaded_hook_t *old = find_loaded(t, d->id);
        if (old) {
            next[i] = *old;
            *old = (loaded_hook_t){.id = 0, .ref = LUA_NOREF}; /* moved */
            continue;
        }
        next[i] = (loaded_hook_t){.id = d->id, .point = d->point, .api_key = d->api_key,
                                  .client_id = dup_or_null(d->client_id), .topic = dup_or_null(d->topic),
                                  .ref = LUA_NOREF};
        bool ok = (!d->client_id || next[i].client_id) && (!d->topic || next[i].topic);
        if (d->fault) {
            next[i].fault = *d->fault;
            if (ok) next[i].ref = LUA_REFNIL;
            continue;
        }
        sources[i] = ok ? malloc(d->source_len ? d->source_len : 1) : NULL;
        if (sources[i]) {
            memcpy(sources[i], d->source, d->source_len);
            lens[i] = d->source_len;
        }
    }
    pthread_mutex_unlock(&h->lock);

    lua_State *L = t->L;
    for (int j = 0; j < t->n; j++) {
        luaL_unref(L, LUA_REGISTRYINDEX, t->hooks[j].ref); /* a no-op for LUA_NOREF and LUA_REFNIL */
        loaded_free(&t->hooks[j]);
    }
    free(t->hooks);
    for (i = 0; i < n; i++) {
        if (!sources[i]) continue;
        char name[32];
        snprintf(name, sizeof name, "=interceptor %d", next[i].id);
        if (kiq_hook_load_chunk(L, sources[i], lens[i], name, h->max_instructions) == 0)
            next[i].ref = luaL_ref(L, LUA_REGISTRYINDEX);
        else
            hook_failed(h, next[i].id, kiq_error_get());
        free(sources[i]);
    }
    free(sources);
    free(lens);
    t->hooks = next;
    t->n = n;
    t->generation = gen;
    return 0;
}

/* The calling thread's state for this registry, loaded up to date; NULL
 * (logged) when it cannot be made. */
static hook_thread_t *thread_state(kiq_hooks_t *h)
{
    pthread_once(&thread_key_once, make_thread_key);
    hook_thread_t *t = pthread_getspecific(thread_key);
    if (t && t->serial != h->serial) {
        thread_state_free(t);
        pthread_setspecific(thread_key, NULL);
        t = NULL;
    }
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t || !(t->L = kiq_hook_state_new(true))) {
            KIQ_ERROR("interceptors skipped: %s", t ? kiq_error_get() : "out of memory");
            free(t);
            return NULL;
        }
        t->serial = h->serial;
        t->generation = atomic_load(&h->generation) - 1; /* load on first use */
        pthread_setspecific(thread_key, t);
    }
    if (t->generation != atomic_load(&h->generation) && reload(t, h) != 0) {
        KIQ_ERROR("interceptors skipped: %s", kiq_error_get());
        return NULL;
    }
    return t;
}

/* Calls hk with the value on top of the stack; leaves its one result and
 * returns 0, or logs the failure, leaves nothing and returns -1. */
static int call_hook(kiq_hooks_t *h, lua_State *L, const loaded_hook_t *hk)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, hk->ref);
    lua_insert(L, -2);
    if (kiq_hook_pcall(L, 1, 1, h->max_instructions) == 0) return 0;
    hook_failed(h, hk->id, lua_tostring(L, -1));
    lua_pop(L, 1);
    return -1;
}

static bool selects(const loaded_hook_t *hk, enum kiq_hook_point p, kiq_str_t client_id)
{
    return hk->point == p && hk->ref != LUA_NOREF &&
           (!hk->client_id || kiq_str_eq(client_id, hk->client_id));
}

static void raw_field(lua_State *L, int idx, const char *name)
{
    lua_pushstring(L, name);
    lua_rawget(L, idx);
}

/* Keys of the result table at idx outside `allowed` (NULL-terminated):
 * the first one, or NULL. Hooks that misspell a field hear about it. */
static const char *unknown_key(lua_State *L, int idx, const char *const *allowed)
{
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        bool ok = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(lua_tostring(L, -1), *a) == 0;
        if (!ok) {
            const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
            lua_pop(L, 1);
            return k; /* interned by the table, which stays on the stack */
        }
    }
    return NULL;
}

/* An error code a hook returned, at the top of the stack: 1 with it, 0 for
 * nil or 0, -1 when it is no error code. */
static int read_error_code(lua_State *L, int16_t *code)
{
    if (lua_isnil(L, -1)) return 0;
    if (lua_type(L, -1) != LUA_TNUMBER) return -1;
    lua_Number n = lua_tonumber(L, -1);
    if (!(n >= INT16_MIN && n <= INT16_MAX) || n != (lua_Number)(int16_t)n) return -1;
    *code = (int16_t)n;
    return *code != 0;
}

/* ---- request hooks ------------------------------------------------------ */

typedef struct request_args {
    kiq_request_t *r;
    const void *request;
} request_args_t;

static void set_number(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static int push_request_ctx(lua_State *L)
{
    request_args_t *a = lua_touserdata(L, 1);
    kiq_request_t *r = a->r;
    lua_createtable(L, 0, 8);
    int ctx = lua_gettop(L);
    set_number(L, "api_key", r->header.api_key);
    lua_pushstring(L, r->codec->name);
    lua_setfield(L, ctx, "api_name");
    set_number(L, "api_version", r->header.api_version);
    set_number(L, "correlation_id", r->header.correlation_id);
    kiq_lua_push_str(L, r->header.client_id);
    lua_setfield(L, ctx, "client_id");
    lua_pushstring(L, r->peer);
    lua_setfield(L, ctx, "peer");
    kiq_api_lua_push(r->header.api_key, true)(L, r->header.api_version, a->request);
    lua_setfield(L, ctx, "request");
    lua_getfield(L, LUA_REGISTRYINDEX, KIQ_HOOK_HELPERS_KEY);
    lua_getfield(L, -1, "topics");
    lua_pushstring(L, r->codec->name);
    lua_getfield(L, ctx, "request");
    lua_call(L, 2, 1);
    lua_setfield(L, ctx, "topics");
    lua_settop(L, ctx);
    return 1;
}

static bool ctx_names_topic(lua_State *L, int ctx, const char *topic)
{
    raw_field(L, ctx, "topics");
    bool found = false;
    if (lua_istable(L, -1)) {
        size_t n = lua_objlen(L, -1);
        for (size_t i = 1; i <= n && !found; i++) {
            lua_rawgeti(L, -1, (int)i);
            found = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), topic) == 0;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    return found;
}

/* A request hook's result (top of the stack): 1 = an action, 0 = none,
 * -1 = not a valid result (why says what is wrong). */
static int read_request_result(lua_State *L, kiq_hook_action_t *act, char *why, size_t whylen)
{
    static const char *const fields[] = {"delay_ms", "drop", "error", NULL};
    int idx = lua_gettop(L);
    if (lua_isnil(L, idx)) return 0;
    if (!lua_istable(L, idx)) {
        snprintf(why, whylen, "returned a %s; expected nil or a table", luaL_typename(L, idx));
        return -1;
    }
    const char *bad = unknown_key(L, idx, fields);
    if (bad) {
        snprintf(why, whylen, "returned an unknown field '%s' (expected delay_ms, drop, error)", bad);
        return -1;
    }
    kiq_hook_action_t a = {KIQ_HOOK_PROCEED, 0, 0};
    raw_field(L, idx, "delay_ms");
    if (!lua_isnil(L, -1)) {
        lua_Number ms = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : -1;
        if (!(ms >= 0 && ms <= INT32_MAX)) {
            snprintf(why, whylen, "returned a bad delay_ms (a number of ms in [0, 2^31) expected)");
            return -1;
        }
        a.delay_ms = (int32_t)ms;
    }
    raw_field(L, idx, "drop");
    if (lua_type(L, -1) == LUA_TBOOLEAN) {
        if (lua_toboolean(L, -1)) a.verdict = KIQ_HOOK_DROP;
    } else if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "after") == 0) {
        a.verdict = KIQ_HOOK_DROP_AFTER;
    } else if (!lua_isnil(L, -1)) {
        snprintf(why, whylen, "returned a bad drop (true or \"after\" expected)");
        return -1;
    }
    raw_field(L, idx, "error");
    int rc = read_error_code(L, &a.error_code);
    if (rc < 0) {
        snprintf(why, whylen, "returned a bad error (a Kafka error code expected)");
        return -1;
    }
    if (rc > 0) {
        if (a.verdict != KIQ_HOOK_PROCEED) {
            snprintf(why, whylen, "returned both drop and error");
            return -1;
        }
        a.verdict = KIQ_HOOK_ANSWER;
    }
    lua_settop(L, idx);
    if (a.verdict == KIQ_HOOK_PROCEED && a.delay_ms == 0) return 0;
    *act = a;
    return 1;
}

typedef struct answer_args {
    kiq_request_t *r;
    void *response;
    int16_t code;
} answer_args_t;

/* (args, ctx): fills the response with the error the hook chose, mirroring
 * the request. */
static int build_answer(lua_State *L)
{
    answer_args_t *a = lua_touserdata(L, 1);
    kiq_request_t *r = a->r;
    lua_getfield(L, LUA_REGISTRYINDEX, KIQ_HOOK_HELPERS_KEY);
    lua_getfield(L, -1, "error_response");
    lua_pushstring(L, r->codec->name);
    raw_field(L, 2, "request");
    lua_pushnumber(L, a->code);
    lua_call(L, 3, 1);
    kiq_api_lua_check(r->header.api_key, false)(L, -1, r->header.api_version, &r->arena, a->response);
    return 0;
}

/* (args, ctx): whether the request names the fault's partition of its topic. */
static int ctx_names_partition(lua_State *L)
{
    const kiq_fault_rule_t *f = lua_touserdata(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, KIQ_HOOK_HELPERS_KEY);
    lua_getfield(L, -1, "names_partition");
    raw_field(L, 2, "api_name");
    raw_field(L, 2, "request");
    lua_pushstring(L, f->topic);
    lua_pushnumber(L, f->partition);
    lua_call(L, 4, 1);
    return 1;
}

/* A fault rule picked a request: whether it fires this time (after, times,
 * probability, under the registry's lock: the counts are shared by every
 * thread), and if so its action. */
static bool fault_fires(kiq_hooks_t *h, const loaded_hook_t *hk, kiq_hook_action_t *act)
{
    const kiq_fault_rule_t *f = &hk->fault;
    bool fire = false;
    pthread_mutex_lock(&h->lock);
    kiq_hook_def_t *d = h->list;
    while (d && d->id != hk->id) d = d->next;
    if (d && ++d->matched > (uint64_t)f->after && (f->times < 0 || d->fired < (uint64_t)f->times)) {
        fire = true;
        if (f->probability < 1) {
            d->rng ^= d->rng << 13; /* xorshift64 */
            d->rng ^= d->rng >> 7;
            d->rng ^= d->rng << 17;
            fire = (double)(d->rng >> 11) * 0x1.0p-53 < f->probability;
        }
        if (fire) d->fired++;
    }
    pthread_mutex_unlock(&h->lock);
    if (!fire) return false;
    static const enum kiq_hook_verdict verdicts[] = {
        [KIQ_FAULT_ERROR] = KIQ_HOOK_ANSWER, [KIQ_FAULT_DELAY] = KIQ_HOOK_PROCEED,
        [KIQ_FAULT_DISCONNECT] = KIQ_HOOK_DROP, [KIQ_FAULT_DROP_RESPONSE] = KIQ_HOOK_DROP_AFTER};
    *act = (kiq_hook_action_t){verdicts[f->action], f->error_code, f->delay_ms};
    return true;
}

static void on_request(void *registry, kiq_request_t *r, const void *request, void *response, kiq_hook_action_t *act)
{
    kiq_hooks_t *h = registry;
    *act = (kiq_hook_action_t){KIQ_HOOK_PROCEED, 0, 0};
    hook_thread_t *t = thread_state(h);
    if (!t) return;
    lua_State *L = t->L;
    int top = lua_gettop(L);
    int ctx = 0;
    for (int i = 0; i < t->n; i++) {
        const loaded_hook_t *hk = &t->hooks[i];
        bool fault = hk->ref == LUA_REFNIL;
        if (!selects(hk, KIQ_HOOK_REQUEST, r->header.client_id)) continue;
        if (hk->api_key >= 0 && hk->api_key != r->header.api_key) continue;
        if (fault && (r->header.api_version < hk->fault.min_version || r->header.api_version > hk->fault.max_version))
            continue;
        /* a fault rule needs the request's Lua view only to look for its
         * topic or to answer with its error */
        if (!ctx && (!fault || hk->topic || hk->fault.action == KIQ_FAULT_ERROR)) {
            request_args_t args = {r, request};
            if (kiq_hook_pcall_c(L, push_request_ctx, &args, 0, 1, h->max_instructions) != 0) {
                KIQ_ERROR("interceptors skipped for %s from %s: %s", r->codec->name, r->peer,
                          lua_tostring(L, -1));
                break;
            }
            ctx = lua_gettop(L);
        }
        if (hk->topic && !ctx_names_topic(L, ctx, hk->topic)) continue;
        int rc;
        if (fault) {
            if (hk->fault.partition >= 0) {
                bool named = kiq_hook_pcall_c(L, ctx_names_partition, (void *)&hk->fault, ctx, 1, h->max_instructions) == 0 &&
                             lua_toboolean(L, -1);
                lua_settop(L, ctx);
                if (!named) continue;
            }
            rc = fault_fires(h, hk, act);
        } else {
            lua_pushvalue(L, ctx);
            if (call_hook(h, L, hk) != 0) continue;
            char why[160];
            rc = read_request_result(L, act, why, sizeof why);
            lua_settop(L, ctx);
            if (rc < 0) hook_failed(h, hk->id, why);
        }
        if (rc <= 0) continue;
        if (act->verdict == KIQ_HOOK_ANSWER) {
            answer_args_t args = {r, response, act->error_code};
            if (kiq_hook_pcall_c(L, build_answer, &args, ctx, 0, h->max_instructions) != 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "cannot answer %s with error %d: %s", r->codec->name,
                         act->error_code, lua_tostring(L, -1));
                hook_failed(h, hk->id, msg);
                *act = (kiq_hook_action_t){KIQ_HOOK_PROCEED, 0, 0};
                lua_settop(L, ctx);
                continue;
            }
        }
        KIQ_DEBUG("interceptor %d: %s corr=%d from %s: verdict %d, error %d, delay %d ms", hk->id,
                  r->codec->name, r->header.correlation_id, r->peer, act->verdict, act->error_code,
                  act->delay_ms);
        break;
    }
    lua_settop(L, top);
}

/* ---- produce hooks ------------------------------------------------------ */

typedef struct produce_args {
    kiq_request_t *r;
    kiq_hook_produce_t *p;
    const kiq_batch_header_t *like;
} produce_args_t;

static int push_produce_ctx(lua_State *L)
{
    produce_args_t *a = lua_touserdata(L, 1);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, a->p->topic);
    lua_setfield(L, -2, "topic");
    set_number(L, "partition", a->p->partition);
    kiq_lua_push_str(L, a->r->header.client_id);
    lua_setfield(L, -2, "client_id");
    kiq_hook_push_records(L, a->p->records, a->p->len, false);
    lua_setfield(L, -2, "records");
    return 1;
}

/* (args, records): the batch the records make. */
static int rebuild_batch(lua_State *L)
{
    produce_args_t *a = lua_touserdata(L, 1);
    size_t len;
    uint8_t *batch = kiq_hook_build_batch(L, 2, a->like, &a->r->arena, &len);
    a->p->rewritten = batch;
    a->p->rewritten_len = len;
    return 0;
}

static void on_produce(void *registry, kiq_request_t *r, kiq_hook_produce_t *p)
{
    kiq_hooks_t *h = registry;
    static const char *const fields[] = {"error", "message", "records", NULL};
    p->error_code = 0;
    p->error_message = KIQ_STR_NULL;
    p->rewritten = NULL;
    p->rewritten_len = 0;
    kiq_batch_header_t like;
    if (kiq_batch_header_parse(p->records, p->len, &like) != 0) return; /* validated before */
    hook_thread_t *t = thread_state(h);
    if (!t) return;
    lua_State *L = t->L;
    int top = lua_gettop(L);
    int ctx = 0;
    produce_args_t args = {r, p, &like};
    for (int i = 0; i < t->n; i++) {
        const loaded_hook_t *hk = &t->hooks[i];
        if (!selects(hk, KIQ_HOOK_PRODUCE, r->header.client_id)) continue;
        if (hk->topic && strcmp(hk->topic, p->topic) != 0) continue;
        if (!ctx) {
            if (kiq_hook_pcall_c(L, push_produce_ctx, &args, 0, 1, h->max_instructions) != 0) {
                KIQ_ERROR("produce interceptors skipped for %s-%d: %s", p->topic, p->partition,
                          lua_tostring(L, -1));
                break;
            }
            ctx = lua_gettop(L);
        }
        lua_pushvalue(L, ctx);
        if (call_hook(h, L, hk) != 0) continue;
        int res = lua_gettop(L);
        if (lua_isnil(L, res)) {
            lua_settop(L, ctx);
            continue;
        }
        const char *bad = lua_istable(L, res) ? unknown_key(L, res, fields) : "?";
        if (bad) {
            char why[160];
            if (lua_istable(L, res))
                snprintf(why, sizeof why, "returned an unknown field '%s' (expected error, message, records)", bad);
            else
                snprintf(why, sizeof why, "returned a %s; expected nil or a table", luaL_typename(L, res));
            hook_failed(h, hk->id, why);
            lua_settop(L, ctx);
            continue;
        }
        raw_field(L, res, "error");
        int16_t code = 0;
        int rc = read_error_code(L, &code);
        raw_field(L, res, "message");
        bool message_ok = lua_isnil(L, -1) || lua_type(L, -1) == LUA_TSTRING;
        raw_field(L, res, "records");
        bool records_ok = lua_isnil(L, -1) || lua_istable(L, -1);
        if (rc < 0 || !message_ok || !records_ok || (rc > 0 && !lua_isnil(L, -1))) {
            hook_failed(h, hk->id, rc < 0 ? "returned a bad error (a Kafka error code expected)"
                                   : !message_ok ? "returned a message that is not a string"
                                   : !records_ok ? "returned records that are not a table"
                                                 : "returned both error and records");
            lua_settop(L, ctx);
            continue;
        }
        if (rc > 0) {
            p->error_code = code;
            p->rewritten = NULL;
            p->rewritten_len = 0;
            if (lua_type(L, -2) == LUA_TSTRING) {
                size_t n;
                const char *msg = lua_tolstring(L, -2, &n);
                p->error_message = (kiq_str_t){kiq_arena_strndup(&r->arena, msg, n), (int32_t)n};
            }
            KIQ_DEBUG("interceptor %d refused %s-%d from %s with error %d", hk->id, p->topic,
                      p->partition, r->peer, code);
            break;
        }
        if (lua_istable(L, -1)) {
            uint8_t *before = p->rewritten;
            size_t before_len = p->rewritten_len;
            int records = lua_gettop(L);
            if (kiq_hook_pcall_c(L, rebuild_batch, &args, records, 0, h->max_instructions) != 0) {
                hook_failed(h, hk->id, lua_tostring(L, -1));
                p->rewritten = before;
                p->rewritten_len = before_len;
                lua_settop(L, ctx);
                continue;
            }
            if (!p->rewritten) {
                char msg[96];
                int n = snprintf(msg, sizeof msg, "interceptor %d removed every record", hk->id);
                p->error_code = KIQ_ERR_INVALID_RECORD;
                p->error_message = (kiq_str_t){kiq_arena_strndup(&r->arena, msg, (size_t)n), n};
                break;
            }
            /* the next hook sees the records as this one left them */
            lua_pushvalue(L, records);
            lua_setfield(L, ctx, "records");
        }
        lua_settop(L, ctx);
    }
    lua_settop(L, top);
}

/* ---- fetch hooks -------------------------------------------------------- */

typedef struct fetch_args {
    kiq_request_t *r;
    kiq_hook_fetch_t *f;
} fetch_args_t;

static int push_fetch_ctx(lua_State *L)
{
    fetch_args_t *a = lua_touserdata(L, 1);
    kiq_hook_fetch_t *f = a->f;
    lua_createtable(L, 0, 7);
    kiq_lua_push_str(L, f->topic);
    lua_setfield(L, -2, "topic");
    set_number(L, "partition", f->partition);
    kiq_lua_push_str(L, a->r->header.client_id);
    lua_setfield(L, -2, "client_id");
    set_number(L, "fetch_offset", (double)f->fetch_offset);
    set_number(L, "high_watermark", (double)f->high_watermark);
    set_number(L, "log_start_offset", (double)f->log_start_offset);
    kiq_hook_push_records(L, f->records.p, f->records.p ? (size_t)f->records.len : 0, true);
    lua_setfield(L, -2, "records");
    return 1;
}

static void on_fetch(void *registry, kiq_request_t *r, kiq_hook_fetch_t *f)
{
    kiq_hooks_t *h = registry;
    static const char *const fields[] = {"error", NULL};
    f->error_code = 0;
    hook_thread_t *t = thread_state(h);
    if (!t) return;
    lua_State *L = t->L;
    int top = lua_gettop(L);
    int ctx = 0;
    for (int i = 0; i < t->n; i++) {
        const loaded_hook_t *hk = &t->hooks[i];
        if (!selects(hk, KIQ_HOOK_FETCH, r->header.client_id)) continue;
        if (hk->topic && !kiq_str_eq(f->topic, hk->topic)) continue;
        if (!ctx) {
            fetch_args_t args = {r, f};
            if (kiq_hook_pcall_c(L, push_fetch_ctx, &args, 0, 1, h->max_instructions) != 0) {
                KIQ_ERROR("fetch interceptors skipped for " KIQ_STR_FMT "-%d: %s",
                          KIQ_STR_ARG(f->topic), f->partition, lua_tostring(L, -1));
                break;
            }
            ctx = lua_gettop(L);
        }
        lua_pushvalue(L, ctx);
        if (call_hook(h, L, hk) != 0) continue;
        int res = lua_gettop(L);
        int16_t code = 0;
        int rc = 0;
        if (lua_istable(L, res) && !unknown_key(L, res, fields)) {
            raw_field(L, res, "error");
            rc = read_error_code(L, &code);
        } else if (!lua_isnil(L, res)) {
            rc = -1;
        }
        lua_settop(L, ctx);
        if (rc < 0) {
            hook_failed(h, hk->id, "returned something other than nil or { error = code }");
            continue;
        }
        if (rc > 0) {
            f->error_code = code;
            break;
        }
    }
    lua_settop(L, top);
}

typedef struct authorize_args {
    const kiq_request_t *r;
    const kiq_acl_request_t *q;
} authorize_args_t;

static int push_authorize_ctx(lua_State *L)
{
    authorize_args_t *a = lua_touserdata(L, 1);
    lua_createtable(L, 0, 7);
    lua_pushstring(L, a->q->principal);
    lua_setfield(L, -2, "principal");
    lua_pushstring(L, a->q->host);
    lua_setfield(L, -2, "host");
    lua_pushstring(L, kiq_acl_operation_name(a->q->operation));
    lua_setfield(L, -2, "operation");
    lua_pushstring(L, kiq_acl_resource_name(a->q->resource_type));
    lua_setfield(L, -2, "resource_type");
    kiq_lua_push_str(L, a->q->resource_name);
    lua_setfield(L, -2, "resource_name");
    kiq_lua_push_str(L, a->r->header.client_id);
    lua_setfield(L, -2, "client_id");
    lua_pushstring(L, a->r->codec ? a->r->codec->name : "");
    lua_setfield(L, -2, "api");
    return 1;
}

/* The first hook that answers { allow = bool, reason = "..." } decides;
 * nil leaves it to the next, then to the ACLs. */
static int on_authorize(void *registry, const kiq_request_t *r, const kiq_acl_request_t *q, const char **reason)
{
    kiq_hooks_t *h = registry;
    static const char *const fields[] = {"allow", "reason", NULL};
    static __thread char why[256];
    hook_thread_t *t = thread_state(h);
    if (!t) return -1;
    lua_State *L = t->L;
    int top = lua_gettop(L);
    int ctx = 0, decided = -1;
    for (int i = 0; i < t->n && decided < 0; i++) {
        const loaded_hook_t *hk = &t->hooks[i];
        if (!selects(hk, KIQ_HOOK_AUTHORIZE, r->header.client_id)) continue;
        if (!ctx) {
            authorize_args_t args = {r, q};
            if (kiq_hook_pcall_c(L, push_authorize_ctx, &args, 0, 1, h->max_instructions) != 0) {
                KIQ_ERROR("authorize interceptors skipped: %s", lua_tostring(L, -1));
                break;
            }
            ctx = lua_gettop(L);
        }
        lua_pushvalue(L, ctx);
        if (call_hook(h, L, hk) != 0) continue;
        int res = lua_gettop(L);
        if (lua_istable(L, res) && !unknown_key(L, res, fields)) {
            raw_field(L, res, "allow");
            raw_field(L, res, "reason");
            if (lua_isboolean(L, -2) && (lua_isnil(L, -1) || lua_isstring(L, -1))) {
                decided = lua_toboolean(L, -2) ? KIQ_ACL_ALLOWED : KIQ_ACL_DENIED;
                snprintf(why, sizeof why, "Lua authorizer (interceptor %d): %s", hk->id,
                         lua_isstring(L, -1) ? lua_tostring(L, -1) : "no reason given");
                *reason = why;
            }
        }
        bool bad = decided < 0 && !lua_isnil(L, res);
        lua_settop(L, ctx);
        if (bad) hook_failed(h, hk->id, "returned something other than nil or { allow = bool, reason = string }");
    }
    lua_settop(L, top);
    return decided;
}

static void registry_free(void *ctx) { kiq_hooks_free(ctx); }

static uint64_t registry_failures(void *ctx)
{
    kiq_hooks_t *h = ctx;
    uint64_t n = 0;
    pthread_mutex_lock(&h->lock);
    for (const kiq_hook_def_t *d = h->list; d; d = d->next) n += d->failures;
    pthread_mutex_unlock(&h->lock);
    return n;
}

static int fault_add(void *ctx, const kiq_fault_rule_t *rule)
{
    return kiq_hooks_add(ctx, &(kiq_hook_spec_t){.point = KIQ_HOOK_REQUEST, .fault = rule});
}

/* Only a fault rule's id: Lua hooks are removed from Lua. */
static int fault_remove(void *ctx, int id)
{
    kiq_hooks_t *h = ctx;
    pthread_mutex_lock(&h->lock);
    kiq_hook_def_t *d = h->list;
    while (d && d->id != id) d = d->next;
    bool is_fault = d && d->fault;
    pthread_mutex_unlock(&h->lock);
    if (!is_fault) return kiq_error_set("no fault rule %d", id);
    return kiq_hooks_remove(h, id);
}

static void faults_view(void *ctx, const kiq_view_t *v)
{
    kiq_hook_info_t *list = NULL;
    int n = kiq_hooks_list(ctx, &list);
    v->open(v->ctx, "faults", true);
    for (int i = 0; i < n; i++) {
        if (!list[i].is_fault) continue;
        v->open(v->ctx, NULL, false);
        v->number(v->ctx, "id", list[i].id);
        kiq_fault_rule_view(&list[i].fault, v);
        v->number(v->ctx, "matched", (double)list[i].matched);
        v->number(v->ctx, "fired", (double)list[i].fired);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    kiq_hooks_list_free(list, n);
}

const kiq_interceptor_ops_t kiq_hooks_ops = {
    on_request, on_produce, on_fetch, on_authorize, registry_failures, registry_free, fault_add, fault_remove, faults_view,
};

int kiq_hooks_attach(kiq_broker_t *b)
{
    kiq_hooks_t *h = kiq_hooks_new(kiq_config_int(b->config, KIQ_CFG_HOOK_MAX_INSTRUCTIONS));
    if (!h) return kiq_error_set("out of memory");
    kiq_broker_set_interceptors(b, &kiq_hooks_ops, h, h->active);
    return 0;
}
