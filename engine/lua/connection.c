/* kafkaiq.core's connections: a blocking client socket with deadlines,
 * for the Lua Kafka client (lua/kafkaiq/client), framing size-prefixed
 * requests and responses. */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "lua/module.h"
#include "proto/writer.h"

/* ---- connections: a blocking client socket for the Lua client --------- */

typedef struct lua_conn {
    int fd;
} lua_conn_t;

static lua_conn_t *check_conn(lua_State *L)
{
    lua_conn_t *c = luaL_checkudata(L, 1, KIQ_LUA_CONN_MT);
    if (c->fd < 0) luaL_error(L, "connection is closed");
    return c;
}

/* Waits for the socket; 0 when ready, -1 with the reason. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    for (;;) {
        /* a deadline already passed still looks once: readable(0) polls */
        int64_t left = deadline_ms - kiq_clock_mono_ns() / 1000000;
        if (left < 0) left = 0;
        struct pollfd p = {fd, events, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc > 0) return 0;
        if (rc < 0 && errno != EINTR) return kiq_error_errno("poll");
        if (rc == 0 && left == 0) return kiq_error_set("timed out");
    }
}

/* core.connect(host, port, timeout_ms) -> conn | nil, err */
int kiq_lua_connect(lua_State *L)
{
    const char *host = luaL_checkstring(L, 1);
    int port = (int)luaL_checkinteger(L, 2);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 3, 10000);
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) return kiq_lua_fail(L, gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return kiq_lua_fail(L, strerror(errno));
    }
    rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0 && errno != EINPROGRESS) {
        lua_pushnil(L);
        lua_pushfstring(L, "connect %s:%d: %s", host, port, strerror(errno));
        close(fd);
        return 2;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (wait_fd(fd, POLLOUT, deadline) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err) {
        lua_pushnil(L);
        lua_pushfstring(L, "connect %s:%d: %s", host, port, err ? strerror(err) : kiq_error_get());
        close(fd);
        return 2;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    lua_conn_t *c = lua_newuserdata(L, sizeof *c);
    c->fd = fd;
    luaL_getmetatable(L, KIQ_LUA_CONN_MT);
    lua_setmetatable(L, -2);
    return 1;
}

/* conn:send(bytes[, timeout_ms]) -> true | nil, err */
static int l_conn_send(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    size_t len, off = 0;
    const char *p = luaL_checklstring(L, 2, &len);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 3, 10000);
    while (off < len) {
        ssize_t n = send(c->fd, p + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(c->fd, POLLOUT, deadline) != 0) return kiq_lua_fail(L, kiq_error_get());
        } else {
            return kiq_lua_fail(L, n < 0 ? strerror(errno) : "connection closed");
        }
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int read_full(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = recv(fd, buf + off, len - off, 0);
        if (n > 0) {
            off += (size_t)n;
        } else if (n == 0) {
            return kiq_error_set("connection closed by the broker");
        } else if (errno == EAGAIN || errno == EINTR) {
            if (wait_fd(fd, POLLIN, deadline) != 0) return -1;
        } else {
            return kiq_error_errno("recv");
        }
    }
    return 0;
}

/* conn:receive([timeout_ms]) -> frame (without its size) | nil, err */
static int l_conn_receive(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_optinteger(L, 2, 30000);
    uint8_t size[4];
    if (read_full(c->fd, size, 4, deadline) != 0) return kiq_lua_fail(L, kiq_error_get());
    int32_t n = (int32_t)kiq_be32(size);
    if (n < 0 || n > 1024 * 1024 * 1024) return kiq_lua_fail(L, "bad response size");
    uint8_t *buf = malloc(n ? (size_t)n : 1);
    if (!buf) return kiq_lua_fail(L, "out of memory");
    if (read_full(c->fd, buf, (size_t)n, deadline) != 0) {
        free(buf);
        return kiq_lua_fail(L, kiq_error_get());
    }
    lua_pushlstring(L, (const char *)buf, (size_t)n);
    free(buf);
    return 1;
}

/* conn:readable(timeout_ms) -> true when a response has started to arrive
 * (or the peer closed), false after timeout_ms: lets a client wait for an
 * answer the broker may hold back (JoinGroup) without reading half a frame. */
static int l_conn_readable(lua_State *L)
{
    lua_conn_t *c = check_conn(L);
    int64_t deadline = kiq_clock_mono_ns() / 1000000 + luaL_checkinteger(L, 2);
    lua_pushboolean(L, wait_fd(c->fd, POLLIN, deadline) == 0);
    return 1;
}

int kiq_lua_conn_close(lua_State *L)
{
    lua_conn_t *c = luaL_checkudata(L, 1, KIQ_LUA_CONN_MT);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    return 0;
}

const luaL_Reg kiq_lua_conn_methods[] = {
        {"send", l_conn_send}, {"receive", l_conn_receive}, {"readable", l_conn_readable}, {"close", kiq_lua_conn_close}, {NULL, NULL},
};
