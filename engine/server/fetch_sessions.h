/* Incremental fetch sessions (KIP-227, Kafka's FetchSessionCache): a
 * client that fetches the same partitions again and again (a follower, a
 * Java or franz-go consumer) names them once; later fetches carry only the
 * partitions whose fetch position changed, and their answers only the
 * partitions with something new (records, an error, a moved high
 * watermark or log start). What every fetch of the session reads is still
 * all its partitions: a follower's position is recorded for each, and the
 * fetch waits on each.
 *
 * Session fields of a Fetch (v7+), as Kafka reads them:
 *   epoch -1: a sessionless full fetch; a session id given is closed;
 *   epoch 0: a full fetch opening a new session (a session id given is
 *            closed), whose id the answer carries, 0 when the cache has no
 *            slot for it (max.incremental.fetch.session.cache.slots);
 *   epoch > 0: an incremental fetch of that session, which must be the
 *            session's next epoch (INVALID_FETCH_SESSION_EPOCH) of a session
 *            the cache still holds (FETCH_SESSION_ID_NOT_FOUND).
 * A full cache makes room by evicting its least recently used session when
 * that one is idle past min.incremental.fetch.session.eviction.ms, or, for
 * a follower, the least recently used consumer's session.
 *
 * Any thread; one mutex guards the sessions. */
#ifndef KIQ_SERVER_FETCH_SESSIONS_H
#define KIQ_SERVER_FETCH_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "proto/messages.h"

typedef struct kiq_fetch_sessions kiq_fetch_sessions_t;

/* What a fetch's session fields decided, carried to its answer. */
typedef struct kiq_fetch_session_ticket {
    int32_t id;       /* the session the answer belongs to; 0: none */
    bool incremental; /* only partitions with news go out */
    bool by_id;       /* the session names topics by id (Fetch v13+) */
} kiq_fetch_session_ticket_t;

typedef struct kiq_fetch_session_limits {
    int slots;           /* max.incremental.fetch.session.cache.slots; 0: no sessions */
    int64_t eviction_ms; /* min.incremental.fetch.session.eviction.ms */
    int64_t now_ms;      /* monotonic */
} kiq_fetch_session_limits_t;

typedef struct kiq_fetch_sessions_stats {
    int sessions;       /* held now */
    int64_t partitions; /* cached in them */
    uint64_t evictions; /* sessions evicted for a new one */
} kiq_fetch_sessions_stats_t;

kiq_fetch_sessions_t *kiq_fetch_sessions_new(void);
void kiq_fetch_sessions_free(kiq_fetch_sessions_t *s);

/* Applies req's session fields (Fetch `version`, from a follower or not).
 * Returns 0 with *read the fetch to read, req itself or, for an
 * incremental fetch, every partition of the session (in arena), and *t;
 * or the top-level error the answer carries alone. */
int16_t kiq_fetch_sessions_begin(kiq_fetch_sessions_t *s, int16_t version, bool follower,
                                 const kiq_fetch_session_limits_t *limits, const kiq_fetch_request_t *req,
                                 kiq_arena_t *arena, const kiq_fetch_request_t **read,
                                 kiq_fetch_session_ticket_t *t);

/* Once per answer, just before it goes out: sets its session id and
 * remembers what each partition's answer said; an incremental answer
 * keeps only the partitions with news. Partitions that returned records
 * move to the end of the session, so the next fetch's max_bytes reaches
 * the others first (Kafka's round robin). */
void kiq_fetch_sessions_answer(kiq_fetch_sessions_t *s, const kiq_fetch_session_ticket_t *t,
                               kiq_fetch_response_t *resp);

void kiq_fetch_sessions_stats(kiq_fetch_sessions_t *s, kiq_fetch_sessions_stats_t *out);

#endif
