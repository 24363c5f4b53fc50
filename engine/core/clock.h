/* Clocks: monotonic nanoseconds for durations, deadlines and request
 * timing, wall-clock milliseconds for Kafka timestamps. Callable from any
 * thread.
 *
 * The engine's clocks are the system's plus `ahead`, 0 unless a test moved
 * them forward (kafkaiq.clock=manual, the control API's POST /api/clock):
 * retention, time-based rolls, session and transaction timeouts, offset
 * expiry, delayed requests and LogAppendTime stamps all read these, so a
 * jump of a day is a day to all of them. One clock per process: its
 * brokers jump together. */
#ifndef KIQ_CORE_CLOCK_H
#define KIQ_CORE_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

extern atomic_int_fast64_t kiq_clock_ahead_ns;
extern atomic_bool kiq_clock_manual;

/* The system's monotonic clock, not moved by an advance (timed waits). */
static inline int64_t kiq_clock_system_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t kiq_clock_ahead(void)
{
    return atomic_load_explicit(&kiq_clock_ahead_ns, memory_order_relaxed);
}

static inline int64_t kiq_clock_mono_ns(void) { return kiq_clock_system_mono_ns() + kiq_clock_ahead(); }

static inline int64_t kiq_clock_mono_ms(void) { return kiq_clock_mono_ns() / 1000000; }

static inline int64_t kiq_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + kiq_clock_ahead() / 1000000;
}

/* kafkaiq.clock=manual: the clock may be advanced (once set, for the
 * process's life); timed waits then look at it often enough to see a jump. */
void kiq_clock_set_manual(void);
/* Moves the clocks ms ahead (manual only): 0, or -1 with the reason. */
int kiq_clock_advance_ms(int64_t ms);

#endif
