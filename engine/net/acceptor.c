#include "net/acceptor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "net/connection_quotas.h"

/* Seconds without accepting after accept() fails for want of resources. */
#define ACCEPT_PAUSE 0.1
/* Seconds between looks while max.connections are open. */
#define FULL_PAUSE 0.05

/* The loop and listening socket belong to the acceptor thread once started. */
struct kiq_acceptor {
    int fd;
    int port;
    struct ev_loop *loop;
    ev_io accept_io;
    ev_timer resume; /* restarts accepting after an accept error */
    ev_async stop_async;
    ev_async open_async;
    atomic_bool held; /* set before the start; cleared once, by whoever opens */
    pthread_t thread;
    bool started;
    kiq_processor_t **processors;
    int nprocessors;
    int next;
    kiq_connection_quotas_t *quotas; /* NULL: no quotas on this listener */
    /* A descriptor kept open to give up at the fd limit, so a connection
     * can still be accepted, told off and closed: the pending ones do not
     * wedge the listener. -1 when it could not be had back. */
    int reserve_fd;
    atomic_uint_fast64_t accepted; /* written by the acceptor thread, read by any */
    atomic_uint_fast64_t refused_fd_limit;
};

/* Out of descriptors: accepts one pending connection with the reserve
 * descriptor and closes it, so it learns at once rather than hanging in
 * the backlog. False when the reserve is gone. */
static bool shed_at_fd_limit(kiq_acceptor_t *a, int err)
{
    if (a->reserve_fd < 0) return false;
    close(a->reserve_fd);
    int fd = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        atomic_store_explicit(&a->refused_fd_limit,
                              atomic_load_explicit(&a->refused_fd_limit, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        KIQ_WARN_LIMITED("accept: %s: a new connection was closed at once (raise the open files limit, ulimit -n)",
                         strerror(err));
    }
    a->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0 && a->reserve_fd >= 0;
}

static void pause_accepting(kiq_acceptor_t *a, struct ev_loop *loop, double seconds)
{
    ev_io_stop(loop, &a->accept_io);
    ev_timer_set(&a->resume, seconds, 0.); /* a fired one-shot timer restarts at once */
    ev_timer_start(loop, &a->resume);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    kiq_acceptor_t *a = w->data;
    for (;;) {
        /* max.connections: new ones wait in the backlog, as Kafka's acceptor makes them */
        if (a->quotas && kiq_connection_quotas_full(a->quotas)) {
            pause_accepting(a, loop, FULL_PAUSE);
            return;
        }
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(a->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int err = errno;
            if (err == EINTR || err == ECONNABORTED) continue;
            if (err == EAGAIN || err == EWOULDBLOCK) return;
            if ((err == EMFILE || err == ENFILE) && shed_at_fd_limit(a, err)) continue;
            /* Out of memory (or of the reserve), the pending connection
             * stays readable: pause rather than spin and flood the log. */
            KIQ_WARN_LIMITED("accept: %s; pausing accepts for %.0f ms", strerror(err), ACCEPT_PAUSE * 1e3);
            pause_accepting(a, loop, ACCEPT_PAUSE);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char host[INET6_ADDRSTRLEN] = "?", peer[64];
        int port = 0;
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
            port = ntohs(in6->sin6_port);
        }
        snprintf(peer, sizeof peer, "%s:%d", host, port);
        if (a->quotas && kiq_connection_quotas_admit(a->quotas, host) != KIQ_CONNECTION_ADMITTED) {
            KIQ_WARN_LIMITED("connection from %s closed at once: max.connections.per.ip reached for %s", peer,
                             host);
            close(fd);
            continue;
        }
        kiq_processor_add_socket(a->processors[a->next], fd, peer, host);
        atomic_store_explicit(&a->accepted, atomic_load_explicit(&a->accepted, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        a->next = (a->next + 1) % a->nprocessors;
    }
}

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    kiq_acceptor_t *a = w->data;
    ev_io_start(loop, &a->accept_io);
}

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents) { ev_break(loop, EVBREAK_ALL); }

static void open_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    kiq_acceptor_t *a = w->data;
    if (!ev_is_active(&a->resume)) ev_io_start(loop, &a->accept_io);
}

kiq_acceptor_t *kiq_acceptor_new(const char *host, int port, kiq_processor_t **processors, int nprocessors,
                                 kiq_connection_quotas_t *quotas)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(*host ? host : NULL, service, &hints, &res);
    if (rc != 0) {
        kiq_error_set("listener %s:%d: %s", host, port, gai_strerror(rc));
        return NULL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        kiq_error_errno("listener %s:%d: socket", host, port);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        kiq_error_errno("listener %s:%d: cannot bind", host, port);
        freeaddrinfo(res);
        close(fd);
        return NULL;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    kiq_acceptor_t *a = calloc(1, sizeof *a);
    if (!a) {
        close(fd);
        return NULL;
    }
    a->fd = fd;
    a->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                            : ((struct sockaddr_in6 *)&ss)->sin6_port);
    a->processors = processors;
    a->nprocessors = nprocessors;
    a->quotas = quotas;
    a->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    a->loop = ev_loop_new(EVFLAG_AUTO);
    if (!a->loop) {
        kiq_acceptor_free(a);
        kiq_error_set("acceptor: cannot create event loop");
        return NULL;
    }
    ev_io_init(&a->accept_io, accept_cb, fd, EV_READ);
    a->accept_io.data = a;
    ev_io_start(a->loop, &a->accept_io);
    ev_timer_init(&a->resume, resume_cb, ACCEPT_PAUSE, 0.);
    a->resume.data = a;
    ev_async_init(&a->stop_async, stop_cb);
    ev_async_start(a->loop, &a->stop_async);
    ev_async_init(&a->open_async, open_cb);
    a->open_async.data = a;
    ev_async_start(a->loop, &a->open_async);
    return a;
}

int kiq_acceptor_port(const kiq_acceptor_t *a) { return a->port; }

uint64_t kiq_acceptor_accepted(kiq_acceptor_t *a)
{
    return atomic_load_explicit(&a->accepted, memory_order_relaxed);
}

uint64_t kiq_acceptor_refused_fd_limit(kiq_acceptor_t *a)
{
    return atomic_load_explicit(&a->refused_fd_limit, memory_order_relaxed);
}

static void *acceptor_main(void *arg)
{
    kiq_acceptor_t *a = arg;
    kiq_say_thread_name("acceptor");
    ev_run(a->loop, 0);
    return NULL;
}

void kiq_acceptor_hold(kiq_acceptor_t *a)
{
    atomic_store(&a->held, true);
    ev_io_stop(a->loop, &a->accept_io);
}

bool kiq_acceptor_open(kiq_acceptor_t *a)
{
    if (!atomic_exchange(&a->held, false)) return false;
    ev_async_send(a->loop, &a->open_async);
    return true;
}

int kiq_acceptor_start(kiq_acceptor_t *a)
{
    if (pthread_create(&a->thread, NULL, acceptor_main, a) != 0)
        return kiq_error_errno("acceptor: cannot start thread");
    a->started = true;
    return 0;
}

void kiq_acceptor_stop(kiq_acceptor_t *a)
{
    if (!a || !a->started) return;
    ev_async_send(a->loop, &a->stop_async);
    pthread_join(a->thread, NULL);
    a->started = false;
}

void kiq_acceptor_free(kiq_acceptor_t *a)
{
    if (!a) return;
    kiq_acceptor_stop(a);
    if (a->loop) ev_loop_destroy(a->loop);
    close(a->fd);
    if (a->reserve_fd >= 0) close(a->reserve_fd);
    free(a);
}
