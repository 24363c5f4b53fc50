/* Kafka-style request metrics per API: how many requests, and the time they
 * spent in each stage (queue, local, remote, response queue, send). Updated
 * by processor threads with relaxed atomics, read by anyone. */
#ifndef KIQ_SERVER_REQUEST_STATS_H
#define KIQ_SERVER_REQUEST_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "metrics/histogram.h"
#include "net/request.h"

enum { KIQ_STATS_MAX_API = 128 };
/* Error codes counted one by one, from -1 (UNKNOWN_SERVER_ERROR) up; a
 * larger code is counted as UNKNOWN_SERVER_ERROR. */
enum { KIQ_STATS_MAX_ERROR = 160 };
/* Versions counted one by one (Kafka's RequestsPerSec has a version tag):
 * which a client speaks tells, say, transactions v2 from v1. */
enum { KIQ_STATS_MAX_VERSION = 32 };

enum kiq_request_stage {
    KIQ_STAGE_QUEUE,          /* waiting for an I/O thread */
    KIQ_STAGE_LOCAL,          /* the handler running */
    KIQ_STAGE_REMOTE,         /* parked in a purgatory */
    KIQ_STAGE_RESPONSE_QUEUE, /* waiting for the processor */
    KIQ_STAGE_SEND,           /* being written to the socket */
    KIQ_STAGE_TOTAL,
    KIQ_STAGE__COUNT
};

extern const char *const kiq_request_stage_names[KIQ_STAGE__COUNT];

typedef struct kiq_request_stats {
    atomic_uint_fast64_t count[KIQ_STATS_MAX_API];
    atomic_uint_fast64_t by_version[KIQ_STATS_MAX_API][KIQ_STATS_MAX_VERSION];
    atomic_int_fast64_t ns[KIQ_STATS_MAX_API][KIQ_STAGE__COUNT];
    /* Requests served with bytes after their last field, and those bytes. */
    atomic_uint_fast64_t trailing_requests[KIQ_STATS_MAX_API];
    atomic_uint_fast64_t trailing_bytes[KIQ_STATS_MAX_API];
    /* Each API's stage times for percentiles, made on its first request
     * (NULL: none yet) and freed by kiq_request_stats_clear. */
    _Atomic(kiq_histogram_t *) times[KIQ_STATS_MAX_API];
    /* Each API's responses' error codes (index code + 1), made on its first
     * response as times are. */
    _Atomic(atomic_uint_fast64_t *) errors[KIQ_STATS_MAX_API];
} kiq_request_stats_t;

/* Any thread. */
void kiq_request_stats_record(kiq_request_stats_t *s, const kiq_request_t *r);
/* Any thread: a request of api_key carried n bytes its fields did not use. */
void kiq_request_stats_trailing(kiq_request_stats_t *s, int16_t api_key, size_t n);
/* Any thread: totals for one api key (ns per stage). */
uint64_t kiq_request_stats_get(kiq_request_stats_t *s, int16_t api_key,
                               int64_t ns[KIQ_STAGE__COUNT]);
/* Any thread: how many requests of api_key at version were served. */
uint64_t kiq_request_stats_version(kiq_request_stats_t *s, int16_t api_key, int16_t version);
/* Any thread: how many times api_key's responses carried error_code `code`
 * (NONE included), as Kafka's ErrorsPerSec counts them. */
uint64_t kiq_request_stats_errors(kiq_request_stats_t *s, int16_t api_key, int code);
/* Any thread: api_key's histogram of a stage, NULL when it had no request. */
kiq_histogram_t *kiq_request_stats_times(kiq_request_stats_t *s, int16_t api_key, enum kiq_request_stage stage);
/* Frees the histograms and zeroes everything; no thread may record. */
void kiq_request_stats_clear(kiq_request_stats_t *s);
/* Any thread: how many requests of api_key had trailing bytes; *bytes
 * gets their total. */
uint64_t kiq_request_stats_get_trailing(kiq_request_stats_t *s, int16_t api_key, uint64_t *bytes);

#endif
