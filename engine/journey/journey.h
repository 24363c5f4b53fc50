/* Record journeys: for every produced batch, each stage of its way through
 * this broker — received, queued, taken by an I/O thread, validated,
 * given its offsets, appended to a segment, fetched by each follower,
 * committed by the high watermark, acknowledged, sent, read by consumers —
 * with a monotonic time and what is known there. A follower keeps its own
 * part (its append of the batch); a cluster's journey is the parts of its
 * brokers merged by time (the monotonic clock is the machine's).
 *
 * The recorder is an observer (core/observer.h) of one broker. It keeps the
 * newest kafkaiq.journey.max.batches journeys in one ring, each slot under
 * its own mutex; indexes striped by partition (a mutex each) find a
 * partition's journeys, so threads recording different partitions do not
 * meet; the stages of one request wait in a striped table until its
 * batches' journeys exist. Any thread. */
#ifndef KIQ_JOURNEY_JOURNEY_H
#define KIQ_JOURNEY_JOURNEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/observer.h"

#define KIQ_JOURNEY_STAGES 28
#define KIQ_JOURNEY_CONSUMERS 4 /* consumer fetches kept per journey */
#define KIQ_JOURNEY_SHARES 8    /* share group stages kept per journey (acquired, acknowledged, expired) */
#define KIQ_JOURNEY_TOPIC 250
#define KIQ_JOURNEY_TRACE 64
#define KIQ_JOURNEY_TRACES 8 /* trace ids a batch is found by (its first records') */
#define KIQ_JOURNEY_TEXT 320 /* a stage's sentence, at most */
#define KIQ_JOURNEY_PEERS 16 /* ISR members a verdict names */
/* The record header a producer sets to find its record's journey by id. */
#define KIQ_JOURNEY_TRACEPARENT_HEADER "traceparent" /* W3C trace context: links the OTLP trace */
#define KIQ_JOURNEY_TRACE_HEADER "kafkaiq-trace"

/* One stage: the point's event, as much of it as the journey keeps. */
typedef struct kiq_journey_stage {
    enum kiq_point point;
    int64_t t_ns;
    int64_t wall_ns; /* t_ns on the wall clock (since the epoch): what merges parts from other machines */
    int32_t broker, thread, peer;
    int16_t version, error; /* version: RECEIVED's API version */
    int flags;
    int32_t extra; /* VALIDATED, ANSWERED: the produce's acks; ENQUEUED: connections muted */
    int64_t first_offset, before, after, position, bytes, records;
    char who[24];   /* RECEIVED, RECORDS_FETCHED, SHARE_*: the client id (cut to fit) */
    char where[40]; /* RECEIVED, RECORDS_FETCHED: the client address; APPENDED: the segment file;
                     * SHARE_*: the share group (cut to fit) */
    int64_t last_offset; /* SHARE_*: the last of the records, first_offset the first */
} kiq_journey_stage_t;

typedef struct kiq_journey {
    char topic[KIQ_JOURNEY_TOPIC];
    int32_t partition;
    int64_t first_offset, last_offset;
    char trace[KIQ_JOURNEY_TRACE]; /* the first trace id its records carried, "" for none */
    bool otel_linked;              /* its first record carried a W3C traceparent header: */
    uint8_t otel_trace[16], otel_parent[8]; /* its trace id and the producer's span id */
    int64_t txn_producer; /* the transactional producer that wrote it; -1 */
    uint64_t traces[KIQ_JOURNEY_TRACES]; /* hashes of the first ones; 0: none */
    int nstages;
    kiq_journey_stage_t stages[KIQ_JOURNEY_STAGES]; /* in the order they happened here */
} kiq_journey_t;

/* The bytes of jr in use: its head and the stages it has (what a copy of
 * it, the journal's records and the exporter's queue take). */
#define KIQ_JOURNEY_HEAD_SIZE offsetof(kiq_journey_t, stages)
static inline size_t kiq_journey_size(const kiq_journey_t *jr)
{
    int n = jr->nstages < 0 ? 0 : jr->nstages > KIQ_JOURNEY_STAGES ? KIQ_JOURNEY_STAGES : jr->nstages;
    return KIQ_JOURNEY_HEAD_SIZE + (size_t)n * sizeof(kiq_journey_stage_t);
}

typedef struct kiq_journeys kiq_journeys_t;

/* A recorder keeping the newest max_batches journeys of broker `broker`;
 * NULL when out of memory. */
kiq_journeys_t *kiq_journeys_new(int32_t broker, int max_batches);
void kiq_journeys_free(kiq_journeys_t *j);
struct kiq_journal;
struct kiq_otlp;
/* Hands the recorder an OTLP exporter (journey/otlp.h): each batch led here
 * is offered to it once its produce's answer went out. */
void kiq_journeys_export(kiq_journeys_t *j, struct kiq_otlp *otlp);
/* Hands the recorder a journal (journey/journal.h): the journeys its ring
 * lets go of are offered to it, and lookups that miss the ring look there. */
void kiq_journeys_keep(kiq_journeys_t *j, struct kiq_journal *journal);
/* Closes the journal and the exporter it was handed, first saving the
 * ring's journeys into the journal when save. The three only while no
 * event is emitted and no lookup runs (a broker's start and stop);
 * kiq_journeys_free lets go too, saving. */
void kiq_journeys_let_go(kiq_journeys_t *j, bool save);
/* The observer to register on the broker (the recorder outlives it). */
kiq_observer_t kiq_journeys_observer(kiq_journeys_t *j);

/* A copy of the journey of the batch holding offset of the partition,
 * from the ring, else the journal; false when none is kept. */
bool kiq_journeys_find(kiq_journeys_t *j, const char *topic, int32_t partition, int64_t offset, kiq_journey_t *out);
/* The same for the newest batch that carried a record with the trace
 * header `trace`. */
bool kiq_journeys_find_trace(kiq_journeys_t *j, const char *trace, kiq_journey_t *out);
/* The same for the newest batch appended as leader here, of topic (NULL:
 * of any topic but the internal ones, named "__..."). */
bool kiq_journeys_latest(kiq_journeys_t *j, const char *topic, kiq_journey_t *out);

typedef struct kiq_journeys_stats {
    uint64_t recorded; /* journeys begun */
    uint64_t kept;     /* journeys in the ring now */
    size_t bytes;      /* the ring's and its indexes' memory, at most (pages are taken as they fill) */
    bool journal;      /* whether it has one; then: */
    uint64_t journal_written, journal_dropped; /* journeys written there, lost (its queue full) */
    int64_t journal_bytes;                     /* its files' size */
    bool otlp;         /* whether it exports; then traces: */
    uint64_t otlp_exported, otlp_dropped, otlp_failed;
} kiq_journeys_stats_t;
void kiq_journeys_stats(kiq_journeys_t *j, kiq_journeys_stats_t *out);

/* Walks stage i's fields as JSON and Lua show them: stage (its name),
 * point, t_ns, wall_us, broker, text (its sentence,
 * kiq_journey_stage_text), why (kiq_journey_stage_why, when it says
 * something), then those it knows
 * (thread, peer, acks, version, error, first_offset, before, after,
 * position, bytes, records, sendfile, fsync_us, flusher, client_id,
 * address or file); an ISR change has peer, follower_leo, lag,
 * leader_leo, isr_size, since_caught_up_ms, from_offset and (a shrink)
 * lagged instead. */
typedef struct kiq_journey_fields {
    void (*number)(void *ctx, const char *name, double value);
    void (*string)(void *ctx, const char *name, const char *value);
    void (*boolean)(void *ctx, const char *name, bool value);
    void *ctx;
} kiq_journey_fields_t;
void kiq_journey_stage_fields(const kiq_journey_t *jr, int i, const kiq_journey_fields_t *f);

/* This process's id, the same for all its brokers ("<pid>-<start µs>"):
 * parts of a journey from one process share a monotonic clock and merge
 * by t_ns; parts from several merge by wall time (wall_us). */
const char *kiq_journey_process(void);

/* The stage's name for people and JSON: the point's, except that a high
 * watermark crossing the batch is "committed", a produce answer
 * "acknowledged" ("no_response" for acks=0, which gets none) and a
 * follower's append "replicated". */
const char *kiq_journey_stage_name(const kiq_journey_stage_t *s);
/* Stage i's sentence into out: the one wording of every stage, served
 * with it as `text` (kiq_journey_stage_fields) to the JSON, Lua, the
 * command and the page, which print it as it is. */
void kiq_journey_stage_text(const kiq_journey_t *jr, int i, char *out, size_t n);

/* Why stage i's wait happened, in words, into out; false (out empty) when
 * there is nothing to say. The wait is the time since the stage before:
 * the queue's depth for a dequeue, the muted connection for an enqueue
 * that found the queue full, the follower the high watermark waited for,
 * the config that asked for an fsync, the purgatory's hold of a fetch. */
bool kiq_journey_stage_why(const kiq_journey_t *jr, int i, char *out, size_t n);

/* A partition as the broker asked sees it now, for a verdict. */
typedef struct kiq_journey_partition {
    bool leads;
    int32_t self, leader;
    int64_t high_watermark;
    int nisr;
    const int32_t *isr;
} kiq_journey_partition_t;

/* Where a batch led here stands: "committed" (below the high watermark),
 * "stuck" (appended, not yet committed: waiting lists the ISR's followers
 * the leader has not seen take it) or "leader_moved" (not committed while
 * this broker led; another leads now); text says it for people. A value. */
typedef struct kiq_journey_verdict {
    const char *state;
    int64_t high_watermark;
    int nisr, nwaiting;
    int32_t isr[KIQ_JOURNEY_PEERS];
    int32_t waiting[KIQ_JOURNEY_PEERS];
    char text[KIQ_JOURNEY_TEXT + KIQ_JOURNEY_PEERS * 24];
} kiq_journey_verdict_t;
/* The verdict on journey jr given its partition p; false (no verdict) for
 * a follower's part. */
bool kiq_journey_verdict(const kiq_journey_t *jr, const kiq_journey_partition_t *p, kiq_journey_verdict_t *out);

#endif
