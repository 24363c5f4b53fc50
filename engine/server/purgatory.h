/* Delayed operations (Fetch waiting for min_bytes or max_wait; acks=all will
 * wait here for the ISR): parked by a handler, retried when data is appended
 * and expired at their deadline, both on the purgatory's own thread. The
 * list is guarded by the purgatory's mutex; an operation belongs to the
 * purgatory from park until its completion callback returns true. */
#ifndef KIQ_SERVER_PURGATORY_H
#define KIQ_SERVER_PURGATORY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct kiq_delayed_op kiq_delayed_op_t;

/* Returns true when the operation finished (answered and freed itself);
 * `expired` true means it must finish now. */
typedef bool (*kiq_delayed_fn)(kiq_delayed_op_t *op, bool expired);

struct kiq_delayed_op {
    int64_t deadline_ns; /* monotonic */
    kiq_delayed_fn try_complete;
    kiq_delayed_op_t *next;
};

typedef struct kiq_purgatory kiq_purgatory_t;

kiq_purgatory_t *kiq_purgatory_new(void);
int kiq_purgatory_start(kiq_purgatory_t *p);
/* Any thread: completes everything parked (as expired) and joins. */
void kiq_purgatory_stop(kiq_purgatory_t *p);
void kiq_purgatory_free(kiq_purgatory_t *p);
/* Any thread. */
void kiq_purgatory_park(kiq_purgatory_t *p, kiq_delayed_op_t *op);
/* Any thread: something changed; retry parked operations soon. */
void kiq_purgatory_poke(void *purgatory);
int kiq_purgatory_size(kiq_purgatory_t *p);

#endif
