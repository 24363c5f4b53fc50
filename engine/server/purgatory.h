/* Delayed operations (Kafka's DelayedOperationPurgatory): a Fetch waiting
 * for min_bytes or max_wait, an acks=all produce waiting for the ISR, a
 * commit waiting for __consumer_offsets' high watermark, a request an
 * interceptor delays. A handler parks one under the keys it waits for
 * (partitions, by kiq_purgatory_key); an append or a high watermark move
 * notifies its partition's key, and only the operations watching that key
 * are tried again. Each is also completed, as expired, at its deadline
 * (a heap of deadlines). Trying runs on the purgatory's own thread, or in
 * the thread that notifies (kiq_purgatory_notify_here) or parks
 * (kiq_purgatory_park_here), as Kafka's checkAndComplete runs in the
 * thread whose event completes the operation.
 *
 * The purgatory's mutex guards its watch lists, heap and pending keys; a
 * count per bucket of the keys parked operations wait for, kept in
 * atomics, lets a notifier that finds none skip the mutex. An operation
 * belongs to the purgatory from park until its try_complete returns true
 * (it then answered and freed itself). */
#ifndef KIQ_SERVER_PURGATORY_H
#define KIQ_SERVER_PURGATORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kiq_delayed_op kiq_delayed_op_t;

/* Returns true when the operation finished (answered and freed itself);
 * `expired` true means it must finish now. */
typedef bool (*kiq_delayed_fn)(kiq_delayed_op_t *op, bool expired);

/* What an operation is, for the purgatory's sizes by kind (Kafka's
 * DelayedOperationPurgatory names). */
enum kiq_delayed_kind { KIQ_DELAYED_FETCH, KIQ_DELAYED_PRODUCE, KIQ_DELAYED_COMMIT, KIQ_DELAYED_REQUEST, KIQ_DELAYED__KINDS };
extern const char *const kiq_delayed_kind_names[KIQ_DELAYED__KINDS];

struct kiq_delayed_op {
    enum kiq_delayed_kind kind;
    int64_t deadline_ns; /* monotonic */
    kiq_delayed_fn try_complete;
    const uint64_t *keys; /* what it waits for, in the op's own memory; none: only its deadline */
    int nkeys;
    /* the purgatory's, from park on */
    size_t heap_index;
    struct kiq_watch *watches;
    uint64_t round;
    kiq_delayed_op_t *next_fresh;
};

/* The key of partition `partition` of the topic named (len bytes). */
uint64_t kiq_purgatory_key(const char *topic, size_t len, int32_t partition);

/* The key notified whenever this broker applies the controller's metadata
 * (a partition -1 no real partition has). */
uint64_t kiq_purgatory_metadata_key(void);
/* The key notified when the controller quorum's log grows, its high
 * watermark moves or its leader changes: voters' held Fetches wait on it. */
uint64_t kiq_purgatory_quorum_key(void);
/* The key notified when a block of producer ids comes from the controller. */
uint64_t kiq_purgatory_producer_ids_key(void);

/* What the purgatory has done, for benchmarks and tests. */
typedef struct kiq_purgatory_stats {
    uint64_t parked;   /* operations parked */
    uint64_t notified; /* keys notified */
    uint64_t tried;    /* try_complete calls */
    uint64_t expired;  /* operations completed at their deadline */
    int waiting;       /* operations parked now */
    int waiting_by_kind[KIQ_DELAYED__KINDS];
} kiq_purgatory_stats_t;

typedef struct kiq_purgatory kiq_purgatory_t;

kiq_purgatory_t *kiq_purgatory_new(void);
int kiq_purgatory_start(kiq_purgatory_t *p);
/* Any thread: completes everything parked (as expired) and joins. */
void kiq_purgatory_stop(kiq_purgatory_t *p);
void kiq_purgatory_free(kiq_purgatory_t *p);
/* Any thread. The operation is tried once soon (what it waits for may have
 * happened between the handler's look and the park), then on its keys. */
void kiq_purgatory_park(kiq_purgatory_t *p, kiq_delayed_op_t *op);
/* The same from a thread that holds no lock (a handler about to return):
 * the first try is made in this thread, and the purgatory thread is woken
 * only when the deadline comes before it would wake anyway (it is given
 * the operation to try when a round is under way). */
void kiq_purgatory_park_here(kiq_purgatory_t *p, kiq_delayed_op_t *op);
/* Any thread: what waiters of key wait for may have happened. */
void kiq_purgatory_notify(kiq_purgatory_t *p, uint64_t key);
/* The same from a thread that holds no lock (an I/O thread once its
 * handler's work is done): the key's waiters are tried in this thread,
 * which saves waking the purgatory thread for them; while another round
 * is under way, or with many waiters, they are left to the thread. */
void kiq_purgatory_notify_here(kiq_purgatory_t *p, uint64_t key);
/* Any thread: something every parked operation may care about changed
 * (roles moved, topics went away). */
void kiq_purgatory_notify_all(kiq_purgatory_t *p);
void kiq_purgatory_stats(kiq_purgatory_t *p, kiq_purgatory_stats_t *out);

#endif
