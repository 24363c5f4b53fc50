/* The ACL bindings as handler threads read them: an immutable, refcounted
 * copy published by the one thread that changes them (this node's
 * controller replaying its log, or the metadata cache taking the
 * controller's push) and swapped whole, so that an authorization never
 * takes the controller's lock nor waits on a writer copying bindings.
 *
 * kiq_acl_published_t: its mu guards only the pointer swap and the
 * reference a reader takes on the current copy (a few instructions); a
 * snapshot is read-only once published and freed by its last release. */
#ifndef KIQ_SECURITY_ACL_SNAPSHOT_H
#define KIQ_SECURITY_ACL_SNAPSHOT_H

#include <pthread.h>
#include <stdatomic.h>

#include "security/acl.h"

typedef struct kiq_acl_snapshot {
    atomic_int refs;
    kiq_acl_store_t store; /* never changed once published */
} kiq_acl_snapshot_t;

typedef struct kiq_acl_published {
    pthread_mutex_t mu; /* guards cur and the reference taken on it */
    kiq_acl_snapshot_t *cur;
} kiq_acl_published_t;

/* An empty store published. 0, or -1 when out of memory. */
int kiq_acl_published_init(kiq_acl_published_t *p);
void kiq_acl_published_destroy(kiq_acl_published_t *p);
/* A copy of s made current; readers holding the previous one keep it
 * until they release it. 0, or -1 when out of memory (the old one stays). */
int kiq_acl_published_set(kiq_acl_published_t *p, const kiq_acl_store_t *s);
/* The current snapshot, referenced: release it when done. */
kiq_acl_snapshot_t *kiq_acl_published_get(kiq_acl_published_t *p);
void kiq_acl_snapshot_release(kiq_acl_snapshot_t *s);

#endif
