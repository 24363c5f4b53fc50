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

/* With a manual clock, how long a wait sleeps before it looks whether the
 * clock jumped past its deadline. */
#define MANUAL_SLICE_NS (20 * 1000000)

/* The deadline is by the engine's clock (core/clock.h), the sleep by the
 * system's. */
bool kiq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t deadline_ns)
{
    int64_t until = deadline_ns - kiq_clock_ahead();
    bool sliced = false;
    if (atomic_load_explicit(&kiq_clock_manual, memory_order_relaxed)) {
        int64_t look = kiq_clock_system_mono_ns() + MANUAL_SLICE_NS;
        sliced = until > look;
        if (sliced) until = look;
    }
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    if (pthread_cond_timedwait(c, mu, &ts) != ETIMEDOUT) return true;
    return sliced && kiq_clock_mono_ns() < deadline_ns; /* a slice ended: looked, not timed out */
}

bool kiq_cond_wait_until_system(pthread_cond_t *c, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    return pthread_cond_timedwait(c, mu, &ts) != ETIMEDOUT;
}

bool kiq_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *mu, int64_t ms)
{
    if (ms < 0) return pthread_cond_wait(c, mu) == 0;
    return kiq_cond_wait_until(c, mu, kiq_clock_mono_ns() + ms * 1000000);
}
