/* The broker's topics and their partition logs (Kafka's LogManager and
 * partition registry in one). The registry is guarded by its rwlock; each
 * topic is reference-counted so a Fetch or Produce holding one is unaffected
 * by a concurrent DeleteTopics: the files go when the last holder lets go.
 * Every function is callable from any thread. */
#ifndef KIQ_SERVER_TOPICS_H
#define KIQ_SERVER_TOPICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "log/log_config.h"
#include "log/partition_log.h"
#include "proto/types.h"

typedef struct kiq_topic kiq_topic_t;

/* A partition; its log has its own lock. leader_epoch is fixed for now
 * (single broker) and bumps with leadership when replication arrives. */
typedef struct kiq_partition {
    kiq_topic_t *topic;
    int32_t index;
    int32_t leader_epoch;
    kiq_partition_log_t *log;
} kiq_partition_t;

/* Immutable after creation except the refcount, the deleted flag and the
 * links below, which the registry's lock guards. */
struct kiq_topic {
    char *name;
    kiq_uuid_t id;
    int32_t npartitions;
    int16_t replication_factor;
    kiq_partition_t *partitions;
    atomic_int refs;
    atomic_bool deleted;
    char *dir; /* log directory holding the partition directories */
    /* Once deleted and until its files are gone: the registry listing it
     * (so the name cannot be re-created over directories still in use). */
    struct kiq_topics *doomed_in;
    kiq_topic_t *next_doomed;
};

typedef struct kiq_topics kiq_topics_t;

/* Loads every partition directory found in log_dir. clean_shutdown tells the
 * logs how much recovery they need. */
kiq_topics_t *kiq_topics_open(const char *log_dir, const kiq_log_config_t *log_cfg);
/* Closes every log cleanly (the caller has stopped all request handling). */
void kiq_topics_free(kiq_topics_t *t);

/* A referenced topic or NULL; release with kiq_topic_unref. */
kiq_topic_t *kiq_topics_get(kiq_topics_t *t, kiq_str_t name);
kiq_topic_t *kiq_topics_get_by_id(kiq_topics_t *t, const kiq_uuid_t *id);
void kiq_topic_unref(kiq_topic_t *topic);

/* Kafka's rules: 1-249 chars of [a-zA-Z0-9._-], not "." or "..". */
bool kiq_topic_name_valid(kiq_str_t name, const char **why);

/* Creates a topic and its partition logs. Returns a Kafka error code:
 * 0, TOPIC_ALREADY_EXISTS (also while a deleted topic of that name still
 * has its files, as Kafka's "marked for deletion"), INVALID_TOPIC_EXCEPTION,
 * or KAFKA_STORAGE_ERROR (the reason in the error slot). validate_only
 * checks without creating. */
int kiq_topics_create(kiq_topics_t *t, kiq_str_t name, int32_t partitions,
                      int16_t replication_factor, bool validate_only);
/* Removes the topic from the registry and deletes its files once unused
 * (by the thread dropping the last reference, which must not hold the
 * registry). Kafka error code: 0 or UNKNOWN_TOPIC_OR_PARTITION. */
int kiq_topics_delete(kiq_topics_t *t, kiq_topic_t *topic);

/* A referenced snapshot of all topics, sorted by name; free with
 * kiq_topics_list_free. */
kiq_topic_t **kiq_topics_list(kiq_topics_t *t, int *count);
void kiq_topics_list_free(kiq_topic_t **list, int count);

/* Lets waiters know data arrived (set by the broker to its purgatory). */
void kiq_topics_set_append_listener(kiq_topics_t *t, void (*fn)(void *ctx), void *ctx);
void kiq_topics_notify_append(kiq_topics_t *t);

#endif
