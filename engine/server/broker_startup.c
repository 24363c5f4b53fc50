#include "server/broker_startup.h"

#include "core/clock.h"

const char *const kiq_startup_phase_names[KIQ__STARTUP_PHASES] = {
    "config", "logs", "listeners", "controller", "registered", "metadata", "replication", "ready",
};

void kiq_broker_startup_begin(kiq_broker_startup_t *s)
{
    for (int i = 0; i < KIQ__STARTUP_PHASES; i++) {
        atomic_store(&s->at_ns[i], 0);
        atomic_store(&s->detail[i], 0);
    }
    atomic_store(&s->clean, true);
    atomic_store(&s->recovered_batches, 0);
    atomic_store(&s->truncated_bytes, 0);
    atomic_store(&s->began_ns, kiq_clock_mono_ns());
}

bool kiq_broker_startup_reached(kiq_broker_startup_t *s, enum kiq_startup_phase phase)
{
    return atomic_load(&s->at_ns[phase]) != 0;
}

void kiq_broker_startup_mark(kiq_broker_startup_t *s, enum kiq_startup_phase phase, int64_t detail)
{
    int_fast64_t unset = 0;
    /* the detail first, so a reader who sees the time sees it too */
    if (atomic_load(&s->at_ns[phase]) != 0) return;
    atomic_store(&s->detail[phase], detail);
    atomic_compare_exchange_strong(&s->at_ns[phase], &unset, kiq_clock_mono_ns());
}
