/* The brokers of one process (serve --brokers N, a Lua cluster) and what
 * may be done to one of them from outside, by id: kill, stop, restart,
 * pause, resume, and cutting the replication link between two. Starting
 * and stopping a broker joins its threads, its HTTP listener's among them,
 * so those run on the set's own supervisor (a core/worker round): a
 * request on one broker's listener can kill or restart that very broker.
 *
 * The set is its owner's (made, filled and freed on one thread, before
 * and after the brokers run); `lock` guards the queue of operations and
 * what each broker last had done to it; the brokers are read by any
 * thread. */
#ifndef KIQ_SERVER_BROKER_SET_H
#define KIQ_SERVER_BROKER_SET_H

#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"
#include "include/kafkaiq.h"

enum kiq_broker_op {
    KIQ_BROKER_KILL,    /* unclean: no clean-shutdown marker, recovery at the next start */
    KIQ_BROKER_STOP,    /* clean shutdown (a controlled one in a cluster) */
    KIQ_BROKER_RESTART, /* stopped cleanly if running, then started on the same ports */
    KIQ_BROKER_PAUSE,   /* serves its clients but stops heartbeating and replicating, as SIGSTOP looks to the others */
    KIQ_BROKER_RESUME,
    KIQ__BROKER_OPS
};

typedef struct kiq_broker_set kiq_broker_set_t;
struct kiq_controller;

/* "kill", "stop", "restart", "pause", "resume". */
extern const char *const kiq_broker_op_names[KIQ__BROKER_OPS];
/* The op of a name, or -1. */
int kiq_broker_op_parse(const char *name);

kiq_broker_set_t *kiq_broker_set_new(void);
/* The owner, before the brokers run: b joins the set (its id must be new). */
int kiq_broker_set_add(kiq_broker_set_t *s, kiq_broker_t *b);
/* The owner: the supervisor stops (an operation in progress ends first);
 * the brokers are not freed. NULL is fine. */
void kiq_broker_set_free(kiq_broker_set_t *s);
/* Any thread: the broker of that id, or NULL. */
kiq_broker_t *kiq_broker_set_find(kiq_broker_set_t *s, int32_t id);
/* Any thread: op on broker id. Pause and resume are done when this
 * returns; kill, stop and restart are queued for the supervisor (done in
 * order). 0, or -1 with the reason (no such broker). */
int kiq_broker_set_do(kiq_broker_set_t *s, int32_t id, enum kiq_broker_op op);
/* Any thread: follower `to` stops (cut) or resumes replicating from leader
 * `from`. A paused broker stays paused whatever its links. */
int kiq_broker_set_cut(kiq_broker_set_t *s, int32_t from, int32_t to, bool cut);
/* Any thread: *result = fn(controller, arg) on the set's controller, under
 * the set's lock so the supervisor cannot stop it meanwhile. 0, or -1 with
 * the reason when no broker of the set runs one now. */
int kiq_broker_set_on_controller(kiq_broker_set_t *s, int (*fn)(struct kiq_controller *c, void *arg), void *arg,
                                 int *result);
/* Any thread: why a broker of the set cannot go on (kiq_broker_failed),
 * *id its id; NULL when none. Skips one the supervisor is stopping or
 * starting. */
const char *kiq_broker_set_failed(kiq_broker_set_t *s, int32_t *id);
/* Any thread: the brokers as an array "brokers" of {id, running, ready,
 * paused, pending (operations queued), last (the last one done), error
 * (why it failed)}, and the cut links as "links" [{from, to}]. */
void kiq_broker_set_view(kiq_broker_set_t *s, const kiq_view_t *v);

#endif
