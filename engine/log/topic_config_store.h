/* Where topics' dynamic configs live durably. An interface (a table of
 * operations) so the controller's metadata log can take over later; the
 * implementation here keeps one properties file per topic in
 * `<log.dir>/.topic-configs/<topic>.properties` — the layout of Kafka's
 * ZooKeeper /config/topics/<topic> znodes, on disk. The leading dot keeps
 * the directory out of the partition-directory scan, and topic names never
 * contain '/', so `<topic>.properties` cannot collide.
 *
 * Thread safety: the operations are callable from any thread; callers
 * serialise writes to one topic (the topic's config lock does). */
#ifndef KIQ_LOG_TOPIC_CONFIG_STORE_H
#define KIQ_LOG_TOPIC_CONFIG_STORE_H

#include "config/topic_config.h"

typedef struct kiq_topic_config_store kiq_topic_config_store_t;

typedef struct kiq_topic_config_store_ops {
    /* The topic's saved configs into an empty *out (nothing saved: stays
     * empty). Entries that no longer validate are skipped with a warning. */
    int (*load)(kiq_topic_config_store_t *s, const char *topic, kiq_topic_configs_t *out);
    /* Replaces the topic's saved configs atomically; an empty set removes them. */
    int (*save)(kiq_topic_config_store_t *s, const char *topic, const kiq_topic_configs_t *cfg);
    /* Forgets the topic (nothing saved is fine). */
    int (*remove)(kiq_topic_config_store_t *s, const char *topic);
    /* Drops the configs of topics `exists` says are gone (a crash between
     * deleting a topic and its configs); called once at start. */
    void (*prune)(kiq_topic_config_store_t *s, bool (*exists)(const char *topic, void *ctx), void *ctx);
    void (*free)(kiq_topic_config_store_t *s);
} kiq_topic_config_store_ops_t;

struct kiq_topic_config_store {
    const kiq_topic_config_store_ops_t *ops;
};

/* The file store under log_dir (its directory is created when first
 * written). NULL when out of memory. */
kiq_topic_config_store_t *kiq_topic_config_store_files_new(const char *log_dir);

/* 0 or -1 with the reason. */
static inline int kiq_topic_config_store_load(kiq_topic_config_store_t *s, const char *topic,
                                              kiq_topic_configs_t *out)
{
    return s->ops->load(s, topic, out);
}
static inline int kiq_topic_config_store_save(kiq_topic_config_store_t *s, const char *topic,
                                              const kiq_topic_configs_t *cfg)
{
    return s->ops->save(s, topic, cfg);
}
static inline int kiq_topic_config_store_remove(kiq_topic_config_store_t *s, const char *topic)
{
    return s->ops->remove(s, topic);
}
static inline void kiq_topic_config_store_free(kiq_topic_config_store_t *s)
{
    if (s) s->ops->free(s);
}

#endif
