/* The phases of a broker's start, the lesson's startup sequence: each is
 * stamped the first time it is reached in a start, by the thread that
 * reaches it (the starting thread, the lifecycle thread, an I/O thread
 * applying the controller's requests); read by any thread. */
#ifndef KIQ_SERVER_BROKER_STARTUP_H
#define KIQ_SERVER_BROKER_STARTUP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"

enum kiq_startup_phase {
    KIQ_STARTUP_CONFIG,      /* configs read, dynamic ones applied */
    KIQ_STARTUP_LOGS,        /* logs opened, recovered after an unclean stop; detail: partitions */
    KIQ_STARTUP_LISTENERS,   /* acceptor, processors and I/O threads running; detail: the port */
    KIQ_STARTUP_CONTROLLER,  /* the controller started here (its voter only) */
    KIQ_STARTUP_REGISTERED,  /* the controller took the registration; detail: broker epoch */
    KIQ_STARTUP_METADATA,    /* the first UpdateMetadata applied; detail: brokers it names */
    KIQ_STARTUP_REPLICATION, /* the first LeaderAndIsr applied; detail: partitions it names */
    KIQ_STARTUP_READY,       /* serving: unfenced in a cluster, started when alone */
    KIQ__STARTUP_PHASES
};

extern const char *const kiq_startup_phase_names[KIQ__STARTUP_PHASES];

/* the broker's services (its rows, then those added from outside) */
#define KIQ_STARTUP_MAX_SERVICES 24

typedef struct kiq_broker_startup {
    atomic_int_fast64_t began_ns;
    atomic_int_fast64_t at_ns[KIQ__STARTUP_PHASES]; /* 0: not reached in this start */
    atomic_int_fast64_t detail[KIQ__STARTUP_PHASES];
    /* per phase, the detail of a controller's request applied before the
     * registration was answered, plus one (0: none): the controller may
     * send UpdateMetadata and LeaderAndIsr first */
    atomic_int_fast64_t early[KIQ__STARTUP_PHASES];
    /* what opening the logs found */
    atomic_bool clean;                  /* every log directory had its clean-shutdown marker */
    atomic_int_fast64_t recovered_batches; /* batches rescanned by recovery */
    atomic_int_fast64_t truncated_bytes;   /* torn or corrupt bytes cut off */
    /* each service started so far, in the broker's order: its name (a
     * static string, set before the count grows) and when it was up */
    const char *service_names[KIQ_STARTUP_MAX_SERVICES];
    atomic_int_fast64_t service_ns[KIQ_STARTUP_MAX_SERVICES];
    atomic_int nservices;
} kiq_broker_startup_t;

/* A start begins: every phase unreached. */
void kiq_broker_startup_begin(kiq_broker_startup_t *s);
/* Any thread: phase reached now, unless it was already in this start. */
void kiq_broker_startup_mark(kiq_broker_startup_t *s, enum kiq_startup_phase phase, int64_t detail);
/* The lifecycle thread: registered with broker epoch epoch; the phases
 * the controller's requests reached before it follow at once. */
void kiq_broker_startup_registered(kiq_broker_startup_t *s, int64_t epoch);
/* An I/O thread: a controller's request reached phase (METADATA or
 * REPLICATION); it counts from the registration, never before it. */
void kiq_broker_startup_from_controller(kiq_broker_startup_t *s, enum kiq_startup_phase phase, int64_t detail);
/* The starting thread: the service name (a static string) is up. */
void kiq_broker_startup_service(kiq_broker_startup_t *s, const char *name);
/* Any thread: this start as a view (core/view.h): clean,
 * recovered_batches, truncated_bytes, phases = [{phase, ms, detail}] in
 * time order, services = [{name, ms}] in start order; ms after the start
 * began. */
void kiq_broker_startup_view(kiq_broker_startup_t *s, const kiq_view_t *v);
/* Any thread: whether phase was reached in this start. */
bool kiq_broker_startup_reached(kiq_broker_startup_t *s, enum kiq_startup_phase phase);

#endif
