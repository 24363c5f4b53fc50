/* The StandardAuthorizer's rules over the cluster's bindings; see authorizer.h. */
#include "security/authorizer.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct kiq_authorizer {
    char **super_users;
    size_t nsuper;
    bool allow_if_none;
    kiq_acl_snapshot_fn snapshot;
    void *snapshot_ctx;
};

static int add_super(kiq_authorizer_t *a, const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (!n) return 0;
    if (!memchr(p, ':', n)) return kiq_error_set("super.users: '%.*s' is no principal (Type:name)", (int)n, p);
    char **more = realloc(a->super_users, (a->nsuper + 1) * sizeof *more);
    if (!more) return kiq_error_set("out of memory");
    a->super_users = more;
    if (!(a->super_users[a->nsuper] = strndup(p, n))) return kiq_error_set("out of memory");
    a->nsuper++;
    return 0;
}

int kiq_authorizer_new(const kiq_config_t *c, kiq_acl_snapshot_fn snapshot, void *ctx, kiq_authorizer_t **out)
{
    *out = NULL;
    const char *cls = kiq_config_str(c, KIQ_CFG_AUTHORIZER_CLASS_NAME);
    if (!*cls) return 0;
    if (strcmp(cls, KIQ_STANDARD_AUTHORIZER) != 0)
        return kiq_error_set("authorizer.class.name: only %s is served, not %s", KIQ_STANDARD_AUTHORIZER, cls);
    kiq_authorizer_t *a = calloc(1, sizeof *a);
    if (!a) return kiq_error_set("out of memory");
    a->allow_if_none = kiq_config_bool(c, KIQ_CFG_ALLOW_EVERYONE_IF_NO_ACL_FOUND);
    a->snapshot = snapshot;
    a->snapshot_ctx = ctx;
    /* Kafka splits super.users on ';' (principals may hold commas) */
    for (const char *p = kiq_config_str(c, KIQ_CFG_SUPER_USERS); *p;) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (add_super(a, p, n) != 0) {
            kiq_authorizer_free(a);
            return -1;
        }
        p += n + (end != NULL);
    }
    *out = a;
    return 0;
}

void kiq_authorizer_free(kiq_authorizer_t *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->nsuper; i++) free(a->super_users[i]);
    free(a->super_users);
    free(a);
}

bool kiq_authorizer_is_super(const kiq_authorizer_t *a, const char *principal)
{
    for (size_t i = 0; i < a->nsuper; i++)
        if (strcmp(a->super_users[i], principal) == 0) return true;
    return false;
}

enum kiq_acl_decision kiq_authorizer_authorize(const kiq_authorizer_t *a, const kiq_acl_request_t *q,
                                               const char **reason)
{
    if (kiq_authorizer_is_super(a, q->principal)) {
        if (reason) *reason = "a super user";
        return KIQ_ACL_ALLOWED;
    }
    const char *why = "no bindings";
    kiq_acl_snapshot_t *s = a->snapshot(a->snapshot_ctx);
    enum kiq_acl_decision d = kiq_acl_authorize(&s->store, q, a->allow_if_none, &why);
    kiq_acl_snapshot_release(s);
    if (reason) *reason = why;
    return d;
}

bool kiq_authorizer_authorize_any(const kiq_authorizer_t *a, const kiq_acl_request_t *q)
{
    if (kiq_authorizer_is_super(a, q->principal)) return true;
    kiq_acl_snapshot_t *s = a->snapshot(a->snapshot_ctx);
    bool any = kiq_acl_authorize_any(&s->store, q, a->allow_if_none);
    kiq_acl_snapshot_release(s);
    return any;
}

int32_t kiq_authorizer_operations(const kiq_authorizer_t *a, const kiq_acl_request_t *q, const int8_t *ops,
                                  size_t nops)
{
    if (kiq_authorizer_is_super(a, q->principal)) {
        int32_t bits = 0;
        for (size_t i = 0; i < nops; i++) bits |= (int32_t)1 << ops[i];
        return bits;
    }
    kiq_acl_snapshot_t *s = a->snapshot(a->snapshot_ctx);
    int32_t bits = kiq_acl_operations(&s->store, q, a->allow_if_none, ops, nops);
    kiq_acl_snapshot_release(s);
    return bits;
}
