/* What the log manager's two files share (log/topics.c: the registry of
 * topics and their partitions, their lifetimes, lookups and configs;
 * log/log_manager.c: the log directories and the partition logs in them,
 * placing, loading, recovering, hosting and checkpointing them). Internal
 * to engine/log. */
#ifndef KIQ_LOG_TOPICS_INTERNAL_H
#define KIQ_LOG_TOPICS_INTERNAL_H

#include "log/topics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "log/file_io.h"
#include "log/log_names.h"
#include "log/topic_config_store.h"
#include "proto/errors.h"

/* The engine's floors (log_config.c): a smaller Kafka value behaves the
 * same here, rolling before every batch or indexing one entry. */
#define LOG_MIN_SEGMENT_BYTES 61
#define LOG_MIN_INDEX_BYTES 12
#define LOG_START_CHECKPOINT "log-start-offset-checkpoint"
#define RECOVERY_POINT_CHECKPOINT "recovery-point-offset-checkpoint"
#define HIGH_WATERMARK_CHECKPOINT "replication-offset-checkpoint"

/* One line of the recovery point checkpoint, read before the logs open. */
typedef struct recovery_point {
    char topic[256];
    int32_t partition;
    int dir; /* whose checkpoint named it */
    int64_t offset;
} recovery_point_t;

/* A log out of its slot (kiq_topics_unhost_partition): offline, so it
 * writes nothing, until freed or taken back. */
struct kiq_retired_log {
    kiq_partition_log_t *log;
    int32_t partition;
    int dir;              /* the registry's directory it was in */
    kiq_log_dir_t *home;  /* that directory's health, given back on close */
    bool deleted;         /* its files are gone */
    kiq_retired_log_t *next;
};

/* An array of partition pointers a topic has had (kiq_topic_t.partitions
 * points at p of the newest); older ones stay until the topic goes, since
 * a reader may still index one it loaded. */
struct kiq_partition_slots {
    struct kiq_partition_slots *older;
    kiq_partition_t *p[];
};

/* One log directory of the registry. */
typedef struct topics_dir {
    char *path;
    kiq_log_dir_t *health; /* the broker's, outliving the registry; NULL: none */
    bool clean_shutdown;
    int npartitions; /* placed here, for placement; the registry's lock */
} topics_dir_t;

/* A partition's log directory named before it is hosted here. */
struct preferred_dir {
    char *topic;
    int32_t partition;
    int dir;
};

struct kiq_topics {
    pthread_rwlock_t lock; /* guards topics/count/cap, doomed and its links */
    kiq_topic_t **topics;  /* sorted by name */
    int count, cap;
    kiq_topic_t *doomed; /* deleted, files not yet removed */
    topics_dir_t *dirs;  /* fixed after open but the counts and health */
    int ndirs;
    kiq_log_config_t log_cfg; /* the broker's log settings; log_cfg_mu */
    pthread_mutex_t log_cfg_mu;
    kiq_topic_config_store_t *store; /* its own thread safety; writes under each topic's config_mu */
    void (*on_append)(void *ctx, const char *topic, int32_t partition);
    void *on_append_ctx;
    pthread_mutex_t checkpoint_mu; /* one writer of a checkpoint file at a time */
    kiq_partition_state_ops_t states; /* set once after open, before the registry is shared */
    const kiq_observers_t *observers; /* likewise */
    int32_t broker;
    bool partial;                     /* fixed at open: a cluster broker's partial topics */
    /* Always offline: what retired logs are tied to. Made on the first
     * unhost, under lock. */
    kiq_log_dir_t *retired_health;
    /* Where partitions not hosted yet go when they come
     * (AlterReplicaLogDirs before the replica exists, log_mover.c);
     * under lock. */
    struct preferred_dir *preferred;
    int npreferred;
    /* The saved recovery points, only during kiq_topics_open. */
    recovery_point_t *rps;
    size_t nrps;
};

/* log_manager.c */
/* Frees the topic's retired logs: closed cleanly when kept on disk
 * (their directory's health given back first, so the close writes what a
 * clean close writes), their files removed too when remove. */
void kiq_lm_free_retired(kiq_topic_t *topic, bool remove);
/* Under the registry's write lock (or before it is shared): Kafka's rule,
 * the online directory with the fewest partitions, the first on a tie;
 * -1 when every directory is offline. */
int kiq_lm_pick_dir(const kiq_topics_t *t);
/* Same lock (and the topic's host_mu once it is shared): puts the
 * partition in directory d and counts it there. */
int kiq_lm_place_partition(kiq_topics_t *t, kiq_partition_t *p, int d);
/* Same lock: the topic's partitions no longer count for placement. */
void kiq_lm_unplace_topic(kiq_topics_t *t, const kiq_topic_t *topic);
/* The broker's log settings with the topic's own on top. */
void kiq_lm_topic_log_config(kiq_topics_t *t, const kiq_topic_configs_t *c, kiq_log_config_t *out);
/* Under the topic's config_mu (or before the topic is shared): the values
 * the request path reads without the lock. */
void kiq_lm_apply_hot_configs(kiq_topic_t *topic);
/* Opens the log of every placed partition (the others stay unhosted).
 * Also sets the topic's hot config values (before the topic is shared). */
int kiq_lm_open_partition_logs(kiq_topics_t *t, kiq_topic_t *topic, bool create);

/* "<log dir of p>/<topic>-<partition>" into buf; -1 when it does not fit. */
int kiq_lm_partition_path(char *buf, size_t n, const kiq_partition_t *p);
/* partition.metadata (the topic id) in pdir, written whole by rename. */
int kiq_lm_write_partition_metadata(const char *pdir, const kiq_uuid_t *id);
/* rm -r of a partition directory (files only), its parent synced; a
 * missing one is fine. */
int kiq_lm_remove_partition_dir(const char *dir);
/* The always-offline health retired logs are tied to (NULL: out of memory). */
kiq_log_dir_t *kiq_lm_retired_health(kiq_topics_t *t);
/* Under the registry's write lock and host_mu: p no longer counts for
 * placement in its directory. */
void kiq_lm_unplace_partition(kiq_topics_t *t, kiq_partition_t *p);
/* Under host_mu, the caller holding one reference: frees the retired logs
 * once no reader can hold one. */
void kiq_lm_reap_retired(kiq_topic_t *topic);

/* log_mover.c */
/* At open, before the partitions are scanned: finishes a move cut short
 * by a stop (its `-future` copy takes the partition's name where the old
 * copy was already renamed `-delete`) and removes what is left of others
 * (`-delete` directories, `-future` copies of partitions still in place). */
void kiq_lm_finish_moves(kiq_topics_t *t);
/* Under the registry's lock (read or write): the directory named for
 * topic's partition before it was hosted, -1 when none. */
int kiq_lm_preferred_dir(const kiq_topics_t *t, const char *topic, int32_t partition);
/* Frees the preferred directories (kiq_topics_free). */
void kiq_lm_free_preferred(kiq_topics_t *t);

/* topics.c */
int kiq_lm_find_index(kiq_topics_t *t, kiq_str_t name, bool *found);
void kiq_lm_topic_destroy(kiq_topic_t *topic);
/* Partition slots from..n-1 of topic, new and unplaced, into slots->p
 * (whose first `from` entries the caller fills). -1 when out of memory,
 * with nothing allocated. */
struct kiq_partition_slots *kiq_lm_slots_alloc(const kiq_topics_t *t, kiq_topic_t *topic, int32_t from, int32_t n);
kiq_topic_t *kiq_lm_topic_alloc(const kiq_topics_t *t, const char *name, int32_t npartitions);
int kiq_lm_insert_topic(kiq_topics_t *t, kiq_topic_t *topic, int at);

#endif
