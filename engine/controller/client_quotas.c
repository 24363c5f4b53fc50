/* Client quotas kept in an array; see client_quotas.h. */
#include "controller/client_quotas.h"

#include <stdlib.h>
#include <string.h>

const char *const kiq_quota_key_names[KIQ_QUOTA__COUNT] = {
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"};

int kiq_quota_key_of(const char *name, size_t len)
{
    for (int k = 0; k < KIQ_QUOTA__COUNT; k++)
        if (strlen(kiq_quota_key_names[k]) == len && memcmp(kiq_quota_key_names[k], name, len) == 0) return k;
    return -1;
}

static bool same_name(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

static bool same_entity(const kiq_quota_entity_t *a, const kiq_quota_entity_t *b)
{
    return a->has_user == b->has_user && a->has_client == b->has_client &&
           (!a->has_user || same_name(a->user, b->user)) && (!a->has_client || same_name(a->client_id, b->client_id));
}

static void entity_free(kiq_quota_entity_t *e)
{
    free(e->user);
    free(e->client_id);
}

void kiq_client_quota_store_clear(kiq_client_quota_store_t *s)
{
    for (size_t i = 0; i < s->n; i++) entity_free(&s->entries[i].entity);
    free(s->entries);
    *s = (kiq_client_quota_store_t){0};
}

const kiq_client_quota_entry_t *kiq_client_quota_store_find(const kiq_client_quota_store_t *s,
                                                            const kiq_quota_entity_t *e)
{
    for (size_t i = 0; i < s->n; i++)
        if (same_entity(&s->entries[i].entity, e)) return &s->entries[i];
    return NULL;
}

int kiq_client_quota_store_set(kiq_client_quota_store_t *s, const kiq_quota_entity_t *e, int key, double value,
                               bool remove)
{
    if (key < 0 || key >= KIQ_QUOTA__COUNT) return -1;
    kiq_client_quota_entry_t *found = (kiq_client_quota_entry_t *)kiq_client_quota_store_find(s, e);
    if (remove) {
        if (!found) return 0;
        found->set &= ~(1u << key);
        if (!found->set) {
            entity_free(&found->entity);
            size_t at = (size_t)(found - s->entries);
            memmove(found, found + 1, (s->n - at - 1) * sizeof *found);
            s->n--;
        }
        return 0;
    }
    if (!found) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 8;
            kiq_client_quota_entry_t *more = realloc(s->entries, cap * sizeof *more);
            if (!more) return -1;
            s->entries = more;
            s->cap = cap;
        }
        kiq_quota_entity_t copy = {e->has_user, e->has_client, NULL, NULL};
        if ((e->has_user && e->user && !(copy.user = strdup(e->user))) ||
            (e->has_client && e->client_id && !(copy.client_id = strdup(e->client_id)))) {
            entity_free(&copy);
            return -1;
        }
        found = &s->entries[s->n++];
        *found = (kiq_client_quota_entry_t){.entity = copy};
    }
    found->set |= 1u << key;
    found->value[key] = value;
    return 0;
}

int kiq_client_quota_resolve(const kiq_client_quota_store_t *s, const char *user, const char *client_id, int key,
                             double *bound, kiq_quota_entity_t *match)
{
    /* Kafka's order: the user's own entries, then the default user's, then the client's alone */
    const kiq_quota_entity_t order[] = {
        {true, true, (char *)user, (char *)client_id},
        {true, true, (char *)user, NULL},
        {true, false, (char *)user, NULL},
        {true, true, NULL, (char *)client_id},
        {true, true, NULL, NULL},
        {true, false, NULL, NULL},
        {false, true, NULL, (char *)client_id},
        {false, true, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const kiq_quota_entity_t *e = &order[i];
        /* a named part with no name to match (no user) is skipped, not taken for the default */
        if ((i < 3 && !user) || ((i == 0 || i == 3 || i == 6) && !client_id)) continue;
        const kiq_client_quota_entry_t *q = kiq_client_quota_store_find(s, e);
        if (!q || !(q->set & (1u << key))) continue;
        *bound = q->value[key];
        if (match) *match = *e;
        return 1;
    }
    return 0;
}

bool kiq_client_quota_store_sets(const kiq_client_quota_store_t *s, int key)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].set & (1u << key)) return true;
    return false;
}
