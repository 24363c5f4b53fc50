/* The cluster controls of kafkaiq.core: what the controller knows, and a
 * free port to put a controller on. Values are copied out of the engine
 * before anything is pushed, so no engine lock is held while Lua may
 * raise. */
#include <arpa/inet.h>
#include <lauxlib.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "controller/controller.h"
#include "core/clock.h"
#include "lua/module.h"
#include "server/broker.h"

static void push_ids(lua_State *L, const int32_t *ids, int32_t n)
{
    lua_createtable(L, n, 0);
    for (int32_t i = 0; i < n; i++) {
        lua_pushinteger(L, ids[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

/* b:controller() -> nil when this broker does not host the controller, else
 * { metadata_offset, brokers = { [id] = { epoch, fenced, host, port } },
 *   topics = { [name] = { [p] = { leader, leader_epoch, partition_epoch,
 *   replicas = {...}, isr = {...} } } } } */
int kiq_lua_broker_controller(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    if (!b->controller) {
        lua_pushnil(L);
        return 1;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_controller_info_t info;
    kiq_controller_describe(b->controller, &a, &info);
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

/* The low end of the range the kernel takes connect()'s local ports from. */
static int ephemeral_low(void)
{
    int low = 32768;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &low) != 1) low = 32768;
        fclose(f);
    }
    return low;
}

/* Whether port (0: any) can be bound on loopback now; *got is the port. */
static bool bindable(int port, int *got)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons(port)};
    socklen_t len = sizeof sa;
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
              getsockname(fd, (struct sockaddr *)&sa, &len) == 0;
    if (fd >= 0) close(fd);
    if (ok) *got = ntohs(sa.sin_port);
    return ok;
}

/* A port below the ephemeral range when one is free there: between this
 * check and the caller's bind, an outgoing connection (of any broker or
 * client on the machine) can be given a port of the ephemeral range, and
 * the bind then fails with EADDRINUSE. */
int kiq_lua_free_port(lua_State *L)
{
    int low = ephemeral_low(), got = 0;
    unsigned seed = (unsigned)getpid() ^ (unsigned)kiq_clock_mono_ns();
    for (int i = 0; i < 64 && low > 10000; i++) {
        int port = 10000 + (int)(rand_r(&seed) % (unsigned)(low - 10000));
        if (bindable(port, &got)) {
            lua_pushinteger(L, got);
            return 1;
        }
    }
    if (!bindable(0, &got)) return luaL_error(L, "free_port: no port available");
    lua_pushinteger(L, got);
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

/* b:elect_preferred_leaders() -> how many leaderships moved back to their
 * preferred replica (nil on a broker without the controller). */
int kiq_lua_broker_elect_preferred(lua_State *L)
{
    kiq_broker_t *b = kiq_lua_check_broker(L);
    if (!b->controller) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, kiq_controller_elect_preferred(b->controller));
    return 1;
}
