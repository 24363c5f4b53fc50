/* The broker's topics and their partition logs (Kafka's LogManager and
 * partition registry in one). The registry is guarded by its rwlock; each
 * topic is reference-counted so a Fetch or Produce holding one is unaffected
 * by a concurrent DeleteTopics: the files go when the last holder lets go.
 * Every function is callable from any thread. */
#ifndef KIQ_LOG_TOPICS_H
#define KIQ_LOG_TOPICS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/topic_config.h"
#include "core/observer.h"

#include "log/log_config.h"
#include "log/partition_log.h"
#include "proto/types.h"

typedef struct kiq_topic kiq_topic_t;
/* Replication's state of a partition (replica/partition_replica.h): the
 * log manager only keeps it beside the partition, made and freed by the
 * ops its owner gave (kiq_topics_set_partition_states). */
struct kiq_partition_replica;

/* A partition; its log has its own lock, its replication state (role,
 * leader epoch, ISR, followers' progress) its own mutex. leader_epoch is
 * what a standalone broker stamps (the replica state holds the current
 * one); replica is NULL when no states were asked for (a registry of logs
 * alone, as the unit tests open one), else set when the partition is made
 * and fixed for its life.
 *
 * log is NULL while this broker does not host the partition (cluster
 * mode: it is not one of its replicas), and changes when
 * kiq_topics_host_partition/_unhost_partition run. A reader loads it once
 * per use, into a local, and checks for NULL; the log it loaded stays
 * valid as long as the reader holds its topic reference (see
 * kiq_topics_unhost_partition). A standalone broker hosts every partition.
 * dir_index is -1 while unhosted; dir changes only with the topic's
 * host_mu held (or before the topic is shared). */
typedef struct kiq_partition {
    kiq_topic_t *topic;
    int32_t index;
    int32_t leader_epoch;
    struct kiq_partition_replica *replica;
    _Atomic(kiq_partition_log_t *) log;
    atomic_int dir_index; /* which of the registry's log directories holds it */
    char *dir;            /* that directory's path (owned by the topic), NULL if never placed */
} kiq_partition_t;

/* How partitions get their replication state: create makes one for a new
 * partition (NULL: out of memory), destroy frees it with the partition.
 * Called with the registry's or the topic's locks held, from any thread. */
typedef struct kiq_partition_state_ops {
    struct kiq_partition_replica *(*create)(void *ctx, const kiq_partition_t *p);
    void (*destroy)(void *ctx, struct kiq_partition_replica *state);
    void *ctx; /* outlives the registry */
} kiq_partition_state_ops_t;
/* A log taken out of its slot by kiq_topics_unhost_partition, kept until
 * no reader can hold it; guarded by the topic's host_mu. */
typedef struct kiq_retired_log kiq_retired_log_t;

/* Immutable after creation except the refcount, the deleted flag, the
 * links below, which the registry's lock guards, the configs, which
 * partitions are hosted, and how many there are.
 *
 * Partitions are added (CreatePartitions) but never removed, and a
 * partition never moves: partitions is an array of pointers that is
 * replaced whole when it grows (kiq_topics_add_partitions, under host_mu),
 * the old array kept until the topic goes, and npartitions is raised only
 * after the new array is in place. So a reader indexes partitions[i] for
 * any i below an npartitions it read, without a lock; a loop over the
 * partitions reads npartitions once. */
struct kiq_topic {
    char *name;
    /* Fixed, except that a topic loaded without partition.metadata
     * (id_guessed) takes the id a controller names, once, under the
     * registry's lock (kiq_topics_adopt_id). */
    kiq_uuid_t id;
    bool id_guessed;
    _Atomic int32_t npartitions;
    int16_t replication_factor;
    _Atomic(kiq_partition_t **) partitions;
    struct kiq_partition_slots *slots; /* the arrays partitions pointed to, newest first; host_mu */
    /* Serialises hosting and unhosting on this topic; guards retired and
     * the partitions' dir. Taken before the registry's lock and config_mu. */
    pthread_mutex_t host_mu;
    kiq_retired_log_t *retired;
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
    /* message.timestamp.before.max.ms and after.max.ms */
    atomic_llong timestamp_before_max_ms, timestamp_after_max_ms;
    /* min.insync.replicas (an acks=all produce reads it twice) and
     * max.decompressed.message.bytes: a lock here would be one every
     * producer to the topic takes per batch */
    atomic_llong min_insync_replicas, max_decompressed_message_bytes;
    /* cleanup.policy names compact (keyless records refused): 1 or 0, -1
     * when the broker's log.cleanup.policy applies */
    atomic_int compacted;
    /* The registry's, for the partitions' states when the topic goes
     * (maybe after the registry). */
    struct kiq_partition_state_ops states;
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
/* kiq_topics_open_dirs for a cluster broker when partial: it hosts only
 * the partitions it replicates, so a partition missing on disk stays
 * unhosted (log NULL, no directory) instead of being created; a topic
 * gets as many partitions as the highest one found + 1 (the controller's
 * metadata says more later). partial false is kiq_topics_open_dirs. */
kiq_topics_t *kiq_topics_open_dirs_ex(const kiq_topics_dir_spec_t *dirs, int ndirs,
                                      const kiq_log_config_t *log_cfg, bool partial);
/* One directory, its clean_shutdown from log_cfg and no health yet. */
kiq_topics_t *kiq_topics_open(const char *log_dir, const kiq_log_config_t *log_cfg);
/* Gives every partition loaded, and every one made later, a state by ops
 * (copied). Call right after open, before the registry is shared; -1 when
 * out of memory. */
int kiq_topics_set_partition_states(kiq_topics_t *t, const kiq_partition_state_ops_t *ops);
/* Closes every log cleanly (the caller has stopped all request handling);
 * logs in an offline directory are not flushed. */
void kiq_topics_free(kiq_topics_t *t);

/* A referenced topic or NULL; release with kiq_topic_unref. */
kiq_topic_t *kiq_topics_get(kiq_topics_t *t, kiq_str_t name);
kiq_topic_t *kiq_topics_get_by_id(kiq_topics_t *t, const kiq_uuid_t *id);

/* Any thread: when topic's id was guessed at load (no partition.metadata
 * on disk), takes id as its own and writes it next to each hosted log.
 * 0 when the id is topic's now; -1 when it was not guessed and differs,
 * or cannot be written. */
int kiq_topics_adopt_id(kiq_topics_t *t, kiq_topic_t *topic, const kiq_uuid_t *id);
void kiq_topic_unref(kiq_topic_t *topic);

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

/* A topic the controller created, as a cluster broker makes it: with the
 * controller's topic id (written to each hosted partition's
 * partition.metadata) and npartitions slots of which only those with
 * hosted[i] get a log (placed as kiq_topics_create places them); the
 * others stay unhosted. configs as kiq_topics_create_with_configs (NULL:
 * none). Kafka error code: 0, TOPIC_ALREADY_EXISTS (the name exists or
 * is marked for deletion), INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS
 * (npartitions < 1) or KAFKA_STORAGE_ERROR. The caller then applies the
 * broker's retention and flush settings (kiq_log_retention_apply_topic). */
int kiq_topics_create_hosted(kiq_topics_t *t, kiq_str_t name, const kiq_uuid_t *id, int32_t npartitions,
                             int16_t replication_factor, const bool *hosted, const kiq_topic_configs_t *configs);
/* Hosts one partition of an existing topic: gives its slot a log, opened
 * (recovering whatever its directory holds) in the online log directory
 * with the fewest partitions, with the topic's configs and the topic id in
 * partition.metadata; a log unhosted earlier without deleting its files is
 * taken back as it was. The replica state is left as it is. The caller
 * holds exactly one reference to topic (retired logs may be freed here,
 * see below), and then applies the broker's retention and flush settings
 * (kiq_log_retention_apply_topic). Kafka error code: 0
 * (also when already hosted), INVALID_PARTITIONS for an index outside
 * [0, npartitions) (kiq_topics_add_partitions grows a topic first),
 * UNKNOWN_TOPIC_OR_PARTITION for a deleted topic,
 * KAFKA_STORAGE_ERROR (every directory offline, or the open failed). */
int kiq_topics_host_partition(kiq_topics_t *t, kiq_topic_t *topic, int32_t partition);
/* Where topic's partition goes when it is hosted here later, if that
 * directory is online then (AlterReplicaLogDirs before the replica
 * exists, as Kafka's preferred log directory); dir is the registry's
 * index. 0, or -1 when out of memory. */
int kiq_topics_prefer_dir(kiq_topics_t *t, kiq_str_t topic, int32_t partition, int dir);
/* Grows the topic to npartitions partitions (nothing when it has as many
 * already): the new ones are unhosted slots, or with host hosted as
 * kiq_topics_host_partition hosts them (a standalone broker's
 * CreatePartitions; a cluster broker hosts what LeaderAndIsr names). The
 * caller holds exactly one reference to topic and then applies the
 * broker's retention and flush settings. Kafka error code: 0,
 * UNKNOWN_TOPIC_OR_PARTITION for a deleted topic, KAFKA_STORAGE_ERROR when
 * a new partition could not be hosted (the topic has grown all the same;
 * that partition stays unhosted), UNKNOWN_SERVER_ERROR when out of memory
 * (nothing changed). */
int kiq_topics_add_partitions(kiq_topics_t *t, kiq_topic_t *topic, int32_t npartitions, bool host);
/* Stops hosting one partition: its slot's log becomes NULL at once, so
 * new readers see it unhosted. Readers that loaded the log just before may
 * still be using it, so the log object is not freed here but retired: it
 * is flushed, then refuses appends and skips flushes, retention and
 * cleaning (it reports offline: a late Produce gets KAFKA_STORAGE_ERROR
 * and is never acknowledged by a broker that dropped the partition), and
 * reads keep working on its open files. With delete_files its directory
 * is removed now (open files stay readable). A retired log is freed once
 * no reader can hold it: by a later host/unhost call on the topic when
 * only the registry and the caller hold references, or when the topic is
 * destroyed; one kept on disk is closed cleanly then, or taken back by
 * kiq_topics_host_partition. (A reader that loaded the log before the
 * unhost and truncates it or moves its log start after the same partition
 * was deleted and hosted again would unlink files by name in the new
 * directory: callers check leadership first, which the controller removes
 * before it stops a replica.) delete_files on an unhosted partition still
 * removes what an earlier unhost kept. The caller holds exactly one
 * reference to topic. Kafka error code: 0 (also when not hosted),
 * UNKNOWN_TOPIC_OR_PARTITION for an index outside [0, npartitions),
 * KAFKA_STORAGE_ERROR when files could not be removed (the partition is
 * unhosted all the same), UNKNOWN_SERVER_ERROR when out of memory
 * (nothing changed). */
int kiq_topics_unhost_partition(kiq_topics_t *t, kiq_topic_t *topic, int32_t partition, bool delete_files);

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
/* The broker's log settings changed (dynamic broker configs): every log
 * takes them, with its topic's own configs on top. Any thread. */
void kiq_topics_set_log_config(kiq_topics_t *t, const kiq_log_config_t *cfg);
/* Whether this broker hosts any partition of the topic. Any thread. */
bool kiq_topic_hosts_any(kiq_topic_t *topic);
/* Removes the topic from the registry and deletes its files once unused
 * (by the thread dropping the last reference, which must not hold the
 * registry). Kafka error code: 0 or UNKNOWN_TOPIC_OR_PARTITION. */
int kiq_topics_delete(kiq_topics_t *t, kiq_topic_t *topic);

/* A referenced snapshot of all topics, sorted by name; free with
 * kiq_topics_list_free. */
kiq_topic_t **kiq_topics_list(kiq_topics_t *t, int *count);
void kiq_topics_list_free(kiq_topic_t **list, int count);

/* Writes every hosted partition's log start offset to its log directory's
 * `log-start-offset-checkpoint` (Kafka's format: a version line "0", a
 * count line, then "topic partition offset" lines), atomically by rename.
 * Read back by kiq_topics_open. Callable from any thread; -1 when any
 * directory's file could not be written (the others still are). */
int kiq_topics_checkpoint_log_start(kiq_topics_t *t);
/* The same for every hosted partition's recovery point (the offset below which
 * its log is known flushed) into `recovery-point-offset-checkpoint`; read
 * back by kiq_topics_open after an unclean shutdown, where recovery starts
 * from it. kiq_topics_free flushes every log and writes it. Any thread. */
int kiq_topics_checkpoint_recovery_points(kiq_topics_t *t);
/* The same for every hosted partition's high watermark into Kafka's
 * `replication-offset-checkpoint`; read back by kiq_topics_open (after the
 * log start offsets; each value clamped to its log's [log start, LEO]) so
 * the high watermark survives a restart. A partition the file does not
 * name starts at its LEO. Written by kiq_topics_free too. Any thread. */
int kiq_topics_checkpoint_high_watermarks(kiq_topics_t *t);

/* Where the log's own points (FLUSHED by the flusher) are announced, as
 * broker `broker`: right after open, before the registry is shared. */
void kiq_topics_set_observers(kiq_topics_t *t, const kiq_observers_t *observers, int32_t broker);
/* Those observers (NULL: none) and that broker id. */
const kiq_observers_t *kiq_topics_observers(const kiq_topics_t *t, int32_t *broker);

/* Lets waiters know data arrived (set by the broker to its purgatory). */
void kiq_topics_set_append_listener(kiq_topics_t *t, void (*fn)(void *ctx, const char *topic, int32_t partition),
                                    void *ctx);
/* Any thread: partition `partition` of topic got data or moved its high
 * watermark (topic NULL: something every partition's waiters care about). */
void kiq_topics_notify_append(kiq_topics_t *t, const char *topic, int32_t partition);

#endif
