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
        atomic_store(&s->early[i], 0);
    }
    atomic_store(&s->clean, true);
    atomic_store(&s->recovered_batches, 0);
    atomic_store(&s->truncated_bytes, 0);
    atomic_store(&s->nservices, 0);
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

/* Each side stores its own fact before reading the other's (sequentially
 * consistent), so at least one of them sees both and marks the phase. */
void kiq_broker_startup_registered(kiq_broker_startup_t *s, int64_t epoch)
{
    kiq_broker_startup_mark(s, KIQ_STARTUP_REGISTERED, epoch);
    for (int i = KIQ_STARTUP_REGISTERED + 1; i < KIQ__STARTUP_PHASES; i++) {
        int64_t early = atomic_load(&s->early[i]);
        if (early != 0) kiq_broker_startup_mark(s, (enum kiq_startup_phase)i, early - 1);
    }
}

void kiq_broker_startup_from_controller(kiq_broker_startup_t *s, enum kiq_startup_phase phase, int64_t detail)
{
    atomic_store(&s->early[phase], detail + 1);
    if (kiq_broker_startup_reached(s, KIQ_STARTUP_REGISTERED)) kiq_broker_startup_mark(s, phase, detail);
}

void kiq_broker_startup_service(kiq_broker_startup_t *s, const char *name)
{
    int n = atomic_load(&s->nservices);
    if (n >= KIQ_STARTUP_MAX_SERVICES) return;
    s->service_names[n] = name;
    atomic_store(&s->service_ns[n], kiq_clock_mono_ns());
    atomic_store(&s->nservices, n + 1);
}

void kiq_broker_startup_view(kiq_broker_startup_t *s, const kiq_view_t *v)
{
    int64_t began = atomic_load(&s->began_ns);
    v->boolean(v->ctx, "clean", atomic_load(&s->clean));
    v->number(v->ctx, "recovered_batches", (double)atomic_load(&s->recovered_batches));
    v->number(v->ctx, "truncated_bytes", (double)atomic_load(&s->truncated_bytes));
    int order[KIQ__STARTUP_PHASES], n = 0;
    int64_t at[KIQ__STARTUP_PHASES];
    for (int i = 0; i < KIQ__STARTUP_PHASES; i++)
        if ((at[i] = atomic_load(&s->at_ns[i])) != 0) order[n++] = i;
    for (int i = 1; i < n; i++) /* a handful: insertion sort by time */
        for (int k = i; k > 0 && at[order[k]] < at[order[k - 1]]; k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    v->open(v->ctx, "phases", true);
    for (int i = 0; i < n; i++) {
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "phase", kiq_startup_phase_names[order[i]]);
        v->number(v->ctx, "ms", (double)(at[order[i]] - began) / 1e6);
        v->number(v->ctx, "detail", (double)atomic_load(&s->detail[order[i]]));
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->open(v->ctx, "services", true);
    int ns = atomic_load(&s->nservices);
    for (int i = 0; i < ns; i++) {
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "name", s->service_names[i]);
        v->number(v->ctx, "ms", (double)(atomic_load(&s->service_ns[i]) - began) / 1e6);
        v->close(v->ctx);
    }
    v->close(v->ctx);
}
