/* The broker's topics and their partition logs (Kafka's LogManager and
 * partition registry in one). The registry is guarded by its rwlock; each
 * topic is reference-counted so a Fetch or Produce holding one is unaffected
 * by a concurrent DeleteTopics: the files go when the last holder lets go.
 * Every function is callable from any thread. */
#ifndef KIQ_SERVER_TOPICS_H
#define KIQ_SERVER_TOPICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/topic_config.h"

#include "log/log_config.h"
#include "log/partition_log.h"
#include "proto/types.h"
#include "replica/partition_replica.h"

typedef struct kiq_topic kiq_topic_t;

/* A partition; its log has its own lock, its replication state (role,
 * leader epoch, ISR, followers' progress) its own mutex. leader_epoch is
 * what a standalone broker stamps (the replica state holds the current
 * one). dir and dir_index are fixed once the topic is shared. */
typedef struct kiq_partition {
    kiq_topic_t *topic;
    int32_t index;
    int32_t leader_epoch;
    kiq_partition_replica_t replica;
    kiq_partition_log_t *log;
    int dir_index; /* which of the registry's log directories holds it */
    char *dir;     /* that directory's path (owned by the topic) */
} kiq_partition_t;

/* Immutable after creation except the refcount, the deleted flag, the
 * links below, which the registry's lock guards, and the configs. */
struct kiq_topic {
    char *name;
    kiq_uuid_t id;
    int32_t npartitions;
    int16_t replication_factor;
    kiq_partition_t *partitions;
    atomic_int refs;
    atomic_bool deleted;
    /* Once deleted and until its files are gone: the registry listing it
     * (so the name cannot be re-created over directories still in use). */
    struct kiq_topics *doomed_in;
    kiq_topic_t *next_doomed;
    /* Guards configs and serialises their changes with the store. */
    pthread_mutex_t config_mu;
    kiq_topic_configs_t configs; /* the dynamic (topic-set) configs */
    /* The configs the request path reads per batch, kept in step with
     * configs: -1 when the broker's value applies. */
    atomic_int max_message_bytes;
    atomic_int log_append_time; /* 1 LogAppendTime, 0 CreateTime */
};

typedef struct kiq_topics kiq_topics_t;

/* One log directory of the registry (Kafka's JBOD log.dirs). */
typedef struct kiq_topics_dir_spec {
    const char *path;
    bool clean_shutdown;   /* its clean-shutdown marker was there: less recovery */
    kiq_log_dir_t *health; /* kept by the caller until after kiq_topics_free; NULL: none */
} kiq_topics_dir_spec_t;

/* Loads every partition directory found in the log directories, with each
 * topic's saved configs. The config store lives in the first directory
 * only (Kafka keeps them in ZooKeeper/KRaft; one place keeps them in one
 * piece); configs of topics no longer there are dropped. Each directory
 * has its own checkpoints, listing only its partitions; a partition found
 * in two directories refuses the open. A new partition goes to the online
 * directory with the fewest partitions (the first on a tie), as in Kafka.
 * A failed write or fsync takes only its directory offline. */
kiq_topics_t *kiq_topics_open_dirs(const kiq_topics_dir_spec_t *dirs, int ndirs,
                                   const kiq_log_config_t *log_cfg);
/* One directory, its clean_shutdown from log_cfg and no health yet. */
kiq_topics_t *kiq_topics_open(const char *log_dir, const kiq_log_config_t *log_cfg);
/* Ties every log of the first directory, and those created there later,
 * to its health (kept by the caller until after kiq_topics_free): a failed
 * write or fsync takes it offline, and then its partitions answer
 * KAFKA_STORAGE_ERROR and no partition is placed in it. Call right after
 * open. */
void kiq_topics_set_log_dir(kiq_topics_t *t, kiq_log_dir_t *health);
/* This broker's id, for the replica state of every partition (loaded and
 * created later): a standalone broker leads them all. Call right after open. */
void kiq_topics_set_node_id(kiq_topics_t *t, int32_t node_id);
/* Closes every log cleanly (the caller has stopped all request handling);
 * logs in an offline directory are not flushed. */
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
/* The same with the topic's dynamic configs (already checked; NULL for
 * none), saved to the config store before the logs are made. */
int kiq_topics_create_with_configs(kiq_topics_t *t, kiq_str_t name, int32_t partitions,
                                   int16_t replication_factor, const kiq_topic_configs_t *configs,
                                   bool validate_only);

/* A copy of the topic's dynamic configs into an empty *out; -1 when out
 * of memory. */
int kiq_topic_configs_snapshot(kiq_topic_t *topic, kiq_topic_configs_t *out);
/* Changes the topic's dynamic configs: edit gets a copy of them and returns
 * a Kafka error code; when it returns 0 (and not validate_only) the new set
 * is saved to the store, then applied to the topic and its logs. Runs with
 * the topic's config lock held, so read-modify-write edits do not race.
 * Kafka error code: edit's, UNKNOWN_TOPIC_OR_PARTITION for a deleted topic,
 * KAFKA_STORAGE_ERROR when the store fails (nothing changed then). */
int kiq_topics_update_configs(kiq_topics_t *t, kiq_topic_t *topic,
                              int (*edit)(kiq_topic_configs_t *cfg, void *ctx), void *ctx,
                              bool validate_only);
/* Removes the topic from the registry and deletes its files once unused
 * (by the thread dropping the last reference, which must not hold the
 * registry). Kafka error code: 0 or UNKNOWN_TOPIC_OR_PARTITION. */
int kiq_topics_delete(kiq_topics_t *t, kiq_topic_t *topic);

/* A referenced snapshot of all topics, sorted by name; free with
 * kiq_topics_list_free. */
kiq_topic_t **kiq_topics_list(kiq_topics_t *t, int *count);
void kiq_topics_list_free(kiq_topic_t **list, int count);

/* Writes every partition's log start offset to its log directory's
 * `log-start-offset-checkpoint` (Kafka's format: a version line "0", a
 * count line, then "topic partition offset" lines), atomically by rename.
 * Read back by kiq_topics_open. Callable from any thread; -1 when any
 * directory's file could not be written (the others still are). */
int kiq_topics_checkpoint_log_start(kiq_topics_t *t);
/* The same for every partition's recovery point (the offset below which
 * its log is known flushed) into `recovery-point-offset-checkpoint`; read
 * back by kiq_topics_open after an unclean shutdown, where recovery starts
 * from it. kiq_topics_free flushes every log and writes it. Any thread. */
int kiq_topics_checkpoint_recovery_points(kiq_topics_t *t);
/* The same for every partition's high watermark into Kafka's
 * `replication-offset-checkpoint`; read back by kiq_topics_open (after the
 * log start offsets; each value clamped to its log's [log start, LEO]) so
 * the high watermark survives a restart. A partition the file does not
 * name starts at its LEO. Written by kiq_topics_free too. Any thread. */
int kiq_topics_checkpoint_high_watermarks(kiq_topics_t *t);

/* Lets waiters know data arrived (set by the broker to its purgatory). */
void kiq_topics_set_append_listener(kiq_topics_t *t, void (*fn)(void *ctx), void *ctx);
void kiq_topics_notify_append(kiq_topics_t *t);

#endif
