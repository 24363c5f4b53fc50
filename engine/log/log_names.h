/* Kafka's on-disk names: a partition lives in `<topic>-<partition>/`, a
 * segment is `<base offset, 20 digits zero-padded><suffix>` in it. Pure
 * functions but the directory listing, callable from any thread. */
#ifndef KIQ_LOG_LOG_NAMES_H
#define KIQ_LOG_LOG_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/types.h"

#define KIQ_LOG_SUFFIX ".log"
#define KIQ_INDEX_SUFFIX ".index"
#define KIQ_TIMEINDEX_SUFFIX ".timeindex"
#define KIQ_TXNINDEX_SUFFIX ".txnindex"

/* The controller's metadata log, in a log directory like a partition but
 * never one of the broker's topics. */
#define KIQ_METADATA_TOPIC "__cluster_metadata"
/* The group coordinator's internal topic (group/offsets_topic.h). */
#define KIQ_OFFSETS_TOPIC "__consumer_offsets"
/* The transaction coordinator's (txn/txn_log.h). */
#define KIQ_TXN_TOPIC "__transaction_state"

/* "<topic>-<partition>" into buf. -1 (with the reason) when the topic is not
 * a legal Kafka topic name (so it can never escape the log directory), the
 * partition is negative, or buf is too small. */
int kiq_log_dir_name(char *buf, size_t n, const char *topic, int32_t partition);
/* The reverse: splits a directory name at its last '-'. -1 when it is not a
 * partition directory. */
int kiq_log_dir_parse(const char *name, char *topic, size_t n, int32_t *partition);
/* "<dir>/<20-digit base><suffix>" into buf; -1 when it does not fit. */
int kiq_log_segment_path(char *buf, size_t n, const char *dir, int64_t base_offset, const char *suffix);
/* True when name is exactly 20 digits followed by suffix; *base_offset gets the number. */
bool kiq_log_segment_name_parse(const char *name, const char *suffix, int64_t *base_offset);
/* The base offsets of the files named <base><suffix> in dir, sorted, into
 * *bases (malloc'd; NULL when none) and *n. 0, or -1 with the reason. */
int kiq_log_segment_bases(const char *dir, const char *suffix, int64_t **bases, size_t *n);
/* qsort/bsearch order of int64_t. */
int kiq_log_cmp_offsets(const void *a, const void *b);
/* Kafka's rules for a topic name: 1-249 chars of [a-zA-Z0-9._-], not "."
 * or ".."; false with the reason in *why. */
bool kiq_topic_name_valid(kiq_str_t name, const char **why);

#endif
