/* Observer points (DESIGN §9): the pipeline announces what happens to a
 * request and its records at named points, each with what it knows there,
 * to whatever observers a broker has (event counters, the journey
 * recorder, metrics). Language-neutral: an observer is a function and a
 * context; engine/lua and the rest implement it.
 *
 * A broker's observers are registered before it starts and fixed after, so
 * emitting reads them without a lock; a point nobody listens to costs one
 * branch (kiq_observers_want). Observers run on the emitting thread (a
 * processor, an I/O thread, the purgatory, a replica fetcher, the flusher),
 * must be quick and must not block, and copy what they keep: the event and
 * everything it points to live only for the call. */
#ifndef KIQ_CORE_OBSERVER_H
#define KIQ_CORE_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kiq_point {
    KIQ_POINT_RECEIVED,        /* a whole request frame read: thread = processor, bytes = frame size */
    KIQ_POINT_ENQUEUED,        /* on the request queue: before = depth, after = bound (0 control plane),
                                * extra = connections muted then for want of room, flags
                                * KIQ_EVENT_MUTED when this one was (the queue was full when it came) */
    KIQ_POINT_DEQUEUED,        /* taken by I/O thread `thread` */
    KIQ_POINT_HANDLED,         /* its handler returned, or parked it to answer later */
    KIQ_POINT_VALIDATED,       /* one partition's produced batches checked: bytes, records (their
                                * count), payload = the batches, extra = the request's acks */
    KIQ_POINT_APPENDED,        /* written to the log: first/last offset, before/after = LEO,
                                * file = segment, position = where in it, bytes; on a follower
                                * (flags KIQ_EVENT_FOLLOWER) peer = the leader it came from */
    KIQ_POINT_FLUSHED,         /* fsynced up to after (the recovery point), before = where it was,
                                * extra = how long the fsync took (µs), t_ns = when it ended; flags
                                * KIQ_EVENT_FLUSHER when the background flusher did it (flush.ms), none
                                * after an append (flush.messages, then in records) */
    KIQ_POINT_FOLLOWER_FETCHED, /* a follower's fetch returned records: peer = its id,
                                * first_offset = the fetch offset, bytes, flags */
    KIQ_POINT_FOLLOWER_LEO,    /* what the leader knows of follower `peer`'s LEO moved before -> after */
    KIQ_POINT_HW_ADVANCED,     /* the high watermark moved before -> after, records = ISR size */
    KIQ_POINT_RESPONSE_QUEUED, /* its response is on the processor's queue: bytes; flags
                                * KIQ_EVENT_NO_RESPONSE when it has none (acks=0, or a connection
                                * closed on it) */
    KIQ_POINT_SENT,            /* its response's last byte written (KIQ_EVENT_NO_RESPONSE: none was) */
    KIQ_POINT_RECORDS_FETCHED, /* a consumer fetch returned records: first_offset = the fetch offset,
                                * last_offset = the high watermark, bytes, flags = KIQ_EVENT_SENDFILE;
                                * KIQ_EVENT_HELD when it waited in the purgatory first: before = its
                                * min_bytes, extra = its max_wait_ms, after = how long it waited (µs) */
    KIQ_POINT_ANSWERED,        /* one partition of a produce answered: first_offset = its base offset,
                                * error, extra = acks */
    KIQ_POINT_TXN_MARKER,      /* a transaction's COMMIT (extra 1) or ABORT (0) marker appended by its
                                * leader: producer_id, before = the transaction's first offset in the
                                * partition (-1: none), after = the marker's offset */
    KIQ_POINT_ISR_SHRUNK,      /* the controller accepted the leader's AlterPartition taking follower
                                * `peer` out of the ISR: records = the ISR's size now, first_offset =
                                * what the leader knew of its LEO (-1: nothing), after = the leader's
                                * LEO, extra = ms since its last caught-up fetch, before = the high
                                * watermark then (the batches from there on waited for it), flags
                                * KIQ_EVENT_LAGGED when it lagged (not: the controller's doing) */
    KIQ_POINT_ISR_EXPANDED,    /* ... putting follower `peer` back: the same fields; before = where the
                                * high watermark was when it left (the batches from there on were
                                * written or committed without it) */
    KIQ_POINT_SHARE_ACQUIRED,  /* a share group member (KIP-932) acquired records first_offset..last_offset:
                                * records = their delivery count, extra = the lock's ms, file = the
                                * group id, request = its ShareFetch */
    KIQ_POINT_SHARE_ACKNOWLEDGED, /* ... acknowledged them: extra = the type (0 gap, 1 accept, 2 release, 3
                                * reject), error, file = the group id, request = its ShareFetch or
                                * ShareAcknowledge */
    KIQ_POINT_SHARE_LOCK_EXPIRED, /* the lock on records first_offset..last_offset ran out: records = their
                                * delivery count, flags KIQ_EVENT_ARCHIVED when that reached the delivery
                                * limit (else available again), file = the group id */
    KIQ_POINT_AUTHORIZATION_DENIED, /* the authorizer (or a Lua authorizer) refused request an operation:
                                * topic = the resource's name (any type), extra = the operation's code,
                                * records = the resource type's, file = the reason */
    KIQ__POINTS
};

/* Point names: "received", "enqueued", ... */
extern const char *const kiq_point_names[KIQ__POINTS];

#define KIQ_EVENT_SENDFILE 1 /* the records go out with sendfile(), not copied */
#define KIQ_EVENT_FOLLOWER 2 /* a follower's append of what its leader sent */
#define KIQ_EVENT_HEADERS 4  /* VALIDATED: some of the records carry headers */
#define KIQ_EVENT_MUTED 8    /* ENQUEUED: the request waited, its connection muted, for room */
#define KIQ_EVENT_NO_RESPONSE 16 /* RESPONSE_QUEUED, SENT: the request finished without a response */
#define KIQ_EVENT_FLUSHER 32     /* FLUSHED: by the background flusher (flush.ms) */
#define KIQ_EVENT_LAGGED 64      /* ISR_SHRUNK: it had not caught up for longer than replica.lag.time.max.ms */
#define KIQ_EVENT_ARCHIVED 128   /* SHARE_LOCK_EXPIRED, SHARE_ACKNOWLEDGED: the records are archived */
/* FOLLOWER_FETCHED, RECORDS_FETCHED: answered from the files but over TLS,
 * so read and encrypted in user space (no kernel TLS to sendfile through) */
#define KIQ_EVENT_TLS_COPY 256
#define KIQ_EVENT_HELD 512 /* RECORDS_FETCHED: the fetch was parked for min_bytes / max_wait_ms */

/* What one point knows; fields it does not know are -1 (numbers) or NULL. */
typedef struct kiq_event {
    enum kiq_point point;
    int64_t t_ns;        /* monotonic */
    int32_t broker;      /* where it happened */
    const void *request; /* the request it is part of (net/request.h), or NULL */
    const char *topic;   /* NUL-terminated, or NULL */
    int32_t partition;
    int64_t first_offset, last_offset;
    int64_t before, after;
    int32_t peer;   /* a follower's broker id */
    int32_t thread; /* which processor or I/O thread */
    const char *file;
    int64_t position, bytes, records;
    int16_t error;
    int flags;
    int32_t extra;
    int64_t producer_id; /* APPENDED (leader), TXN_MARKER: a transactional producer's; -1 */
    const void *payload; /* VALIDATED: the batches, payload_len bytes */
    size_t payload_len;
} kiq_event_t;

/* An event at point with nothing known yet but the time and broker. */
kiq_event_t kiq_event(enum kiq_point point, int32_t broker);

typedef struct kiq_observer {
    void (*on_event)(void *ctx, const kiq_event_t *e);
    void *ctx;
    uint32_t points; /* a bit per kiq_point it wants */
} kiq_observer_t;

#define KIQ_MAX_OBSERVERS 8

/* A broker's observers. Written only before the threads that emit start. */
typedef struct kiq_observers {
    uint32_t wanted; /* the union of the observers' points */
    int n;
    kiq_observer_t list[KIQ_MAX_OBSERVERS];
} kiq_observers_t;

/* Adds one (before the emitters start); -1 when full. */
int kiq_observers_add(kiq_observers_t *o, const kiq_observer_t *observer);

/* Whether anyone listens at point; NULL observers listen to nothing. */
static inline bool kiq_observers_want(const kiq_observers_t *o, enum kiq_point point)
{
    return o && (o->wanted >> point & 1u);
}

/* Gives e to every observer that wants its point. */
void kiq_observers_emit(const kiq_observers_t *o, const kiq_event_t *e);

#endif
