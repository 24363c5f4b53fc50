/* The client quotas of a metadata image (ClientQuotaRecord): per entity —
 * a user, a client id, or both, either part naming one or being its
 * default — the values set for Kafka's quota keys. Part of the image that
 * holds it, guarded as that image is. */
#ifndef KIQ_CONTROLLER_CLIENT_QUOTAS_H
#define KIQ_CONTROLLER_CLIENT_QUOTAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's quota keys, in the order they are described. */
enum kiq_quota_key {
    KIQ_QUOTA_PRODUCER_BYTE_RATE,
    KIQ_QUOTA_CONSUMER_BYTE_RATE,
    KIQ_QUOTA_REQUEST_PERCENTAGE,
    KIQ_QUOTA_CONTROLLER_MUTATION_RATE,
    KIQ_QUOTA__COUNT
};

extern const char *const kiq_quota_key_names[KIQ_QUOTA__COUNT];

/* The key of a name ("producer_byte_rate"); -1 when not a client quota. */
int kiq_quota_key_of(const char *name, size_t len);

/* An entity: which parts it has, and for each a name or NULL for the
 * default ("<default>" in Kafka's tools). */
typedef struct kiq_quota_entity {
    bool has_user, has_client;
    char *user, *client_id;
} kiq_quota_entity_t;

typedef struct kiq_client_quota_entry {
    kiq_quota_entity_t entity;
    unsigned set; /* bit per key holding a value */
    double value[KIQ_QUOTA__COUNT];
} kiq_client_quota_entry_t;

typedef struct kiq_client_quota_store {
    kiq_client_quota_entry_t *entries; /* in the order first set */
    size_t n, cap;
} kiq_client_quota_store_t;

void kiq_client_quota_store_clear(kiq_client_quota_store_t *s);
/* Sets key's value for the entity (remove: takes it away; an entity left
 * with none goes). Names are copied; -1 when out of memory. */
int kiq_client_quota_store_set(kiq_client_quota_store_t *s, const kiq_quota_entity_t *e, int key, double value,
                               bool remove);
const kiq_client_quota_entry_t *kiq_client_quota_store_find(const kiq_client_quota_store_t *s,
                                                            const kiq_quota_entity_t *e);

/* The quota that applies to user and client_id for key, by Kafka's
 * precedence: user and client id, user and default client, user, default
 * user and client id, default user and default client, default user,
 * client id, default client. 1 and *bound set, with *match the entity it
 * came from; 0 when none applies. */
int kiq_client_quota_resolve(const kiq_client_quota_store_t *s, const char *user, const char *client_id, int key,
                             double *bound, kiq_quota_entity_t *match);
/* Whether any entity has a quota for key. */
bool kiq_client_quota_store_sets(const kiq_client_quota_store_t *s, int key);

#endif
