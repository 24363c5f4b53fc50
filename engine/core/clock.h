/* Clocks: monotonic nanoseconds for durations and request timing, wall-clock
 * milliseconds for Kafka timestamps. Callable from any thread. */
#ifndef KIQ_CORE_CLOCK_H
#define KIQ_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t kiq_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t kiq_clock_mono_ms(void) { return kiq_clock_mono_ns() / 1000000; }

static inline int64_t kiq_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
