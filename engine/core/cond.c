#include "core/cond.h"

#include <errno.h>
#include <time.h>

#include "core/clock.h"

void kiq_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

bool kiq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    return pthread_cond_timedwait(c, mu, &ts) != ETIMEDOUT;
}

bool kiq_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *mu, int64_t ms)
{
    if (ms < 0) return pthread_cond_wait(c, mu) == 0;
    return kiq_cond_wait_until(c, mu, kiq_clock_mono_ns() + ms * 1000000);
}
