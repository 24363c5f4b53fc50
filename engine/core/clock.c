#include "core/clock.h"

#include "core/error.h"

atomic_int_fast64_t kiq_clock_ahead_ns;
atomic_bool kiq_clock_manual;

void kiq_clock_set_manual(void) { atomic_store(&kiq_clock_manual, true); }

int kiq_clock_advance_ms(int64_t ms)
{
    if (!atomic_load(&kiq_clock_manual)) return kiq_error_set("the clock is the system's (kafkaiq.clock=system)");
    if (ms < 0) return kiq_error_set("the clock only goes forward");
    if (ms > (int64_t)100 * 365 * 86400 * 1000) return kiq_error_set("at most a hundred years at a time");
    atomic_fetch_add(&kiq_clock_ahead_ns, ms * 1000000);
    return 0;
}
