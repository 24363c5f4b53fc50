#include "net/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

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
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = htons(port)};
    socklen_t len = sizeof sa;
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
              getsockname(fd, (struct sockaddr *)&sa, &len) == 0;
    if (fd >= 0) close(fd);
    if (ok) *got = ntohs(sa.sin_port);
    return ok;
}

int kiq_free_port(void)
{
    int low = ephemeral_low(), got = 0;
    unsigned seed = (unsigned)getpid() ^ (unsigned)kiq_clock_system_mono_ns();
    for (int i = 0; i < 64 && low > 10000; i++) {
        int port = 10000 + (int)(rand_r(&seed) % (unsigned)(low - 10000));
        if (bindable(port, &got)) return got;
    }
    if (!bindable(0, &got)) return kiq_error_set("no free port on loopback");
    return got;
}
