/* Published ACL snapshots; see acl_snapshot.h. */
#include "security/acl_snapshot.h"

#include <stdlib.h>

#include "core/error.h"

static kiq_acl_snapshot_t *snapshot_of(const kiq_acl_store_t *s)
{
    kiq_acl_snapshot_t *snap = calloc(1, sizeof *snap);
    if (!snap) return kiq_error_set("out of memory"), NULL;
    atomic_init(&snap->refs, 1);
    for (size_t i = 0; s && i < s->n; i++)
        if (kiq_acl_store_add(&snap->store, &s->acls[i]) != 0) {
            kiq_acl_store_clear(&snap->store);
            free(snap);
            return kiq_error_set("out of memory"), NULL;
        }
    return snap;
}

int kiq_acl_published_init(kiq_acl_published_t *p)
{
    if (!(p->cur = snapshot_of(NULL))) return -1;
    pthread_mutex_init(&p->mu, NULL);
    return 0;
}

void kiq_acl_published_destroy(kiq_acl_published_t *p)
{
    if (!p->cur) return;
    kiq_acl_snapshot_release(p->cur);
    p->cur = NULL;
    pthread_mutex_destroy(&p->mu);
}

int kiq_acl_published_set(kiq_acl_published_t *p, const kiq_acl_store_t *s)
{
    kiq_acl_snapshot_t *snap = snapshot_of(s); /* copied outside mu: readers never wait on it */
    if (!snap) return -1;
    pthread_mutex_lock(&p->mu);
    kiq_acl_snapshot_t *old = p->cur;
    p->cur = snap;
    pthread_mutex_unlock(&p->mu);
    kiq_acl_snapshot_release(old);
    return 0;
}

kiq_acl_snapshot_t *kiq_acl_published_get(kiq_acl_published_t *p)
{
    pthread_mutex_lock(&p->mu);
    kiq_acl_snapshot_t *s = p->cur;
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->mu);
    return s;
}

void kiq_acl_snapshot_release(kiq_acl_snapshot_t *s)
{
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    kiq_acl_store_clear(&s->store);
    free(s);
}
