/* ACL bindings and StandardAuthorizer's rules; see acl.h. */
#include "security/acl.h"

#include <stdlib.h>
#include <string.h>

static bool str_is(kiq_str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.p && (size_t)s.len == n && memcmp(s.p, c, n) == 0;
}

static bool starts_with(kiq_str_t s, const char *prefix)
{
    size_t n = strlen(prefix);
    return s.p && (size_t)s.len >= n && memcmp(s.p, prefix, n) == 0;
}

static bool valid_code(int8_t v, int8_t lo, int8_t hi) { return v >= lo && v <= hi; }

const char *kiq_acl_invalid(int8_t resource_type, kiq_str_t resource_name, int8_t pattern_type, kiq_str_t principal,
                            kiq_str_t host, int8_t operation, int8_t permission)
{
    if (!valid_code(resource_type, KIQ_RES_TOPIC, KIQ_RES_USER)) return "Invalid resourceType";
    if (pattern_type != KIQ_PAT_LITERAL && pattern_type != KIQ_PAT_PREFIXED) return "Invalid patternType";
    if (!valid_code(operation, KIQ_OP_ALL, KIQ_OP_TWO_PHASE_COMMIT)) return "Invalid operation";
    if (permission != KIQ_PERM_DENY && permission != KIQ_PERM_ALLOW) return "Invalid permissionType";
    if (!resource_name.p || resource_name.len == 0) return "Resource name should not be empty";
    /* a principal is Type:name */
    if (!principal.p || !memchr(principal.p, ':', (size_t)principal.len)) return "Could not parse principal";
    if (!host.p || host.len == 0) return "Invalid host";
    return NULL;
}

const char *kiq_acl_filter_invalid(const kiq_acl_filter_t *f)
{
    if (!valid_code(f->resource_type, KIQ_RES_ANY, KIQ_RES_USER)) return "Invalid resourceType filter";
    if (!valid_code(f->pattern_type, KIQ_PAT_ANY, KIQ_PAT_PREFIXED)) return "Invalid patternType filter";
    if (!valid_code(f->operation, KIQ_OP_ANY, KIQ_OP_TWO_PHASE_COMMIT)) return "Invalid operation filter";
    if (!valid_code(f->permission, KIQ_PERM_ANY, KIQ_PERM_ALLOW)) return "Invalid permissionType filter";
    return NULL;
}

/* Whether the binding's pattern applies to the resource named n. */
static bool pattern_covers(const kiq_acl_t *a, kiq_str_t n)
{
    if (a->pattern_type == KIQ_PAT_LITERAL) return strcmp(a->resource_name, KIQ_ACL_WILDCARD) == 0 || str_is(n, a->resource_name);
    return a->pattern_type == KIQ_PAT_PREFIXED && starts_with(n, a->resource_name);
}

bool kiq_acl_filter_matches(const kiq_acl_filter_t *f, const kiq_acl_t *a)
{
    if (f->resource_type != KIQ_RES_ANY && f->resource_type != a->resource_type) return false;
    switch (f->pattern_type) {
    case KIQ_PAT_ANY:
        if (f->resource_name.p && !str_is(f->resource_name, a->resource_name)) return false;
        break;
    case KIQ_PAT_MATCH:
        if (f->resource_name.p && !pattern_covers(a, f->resource_name)) return false;
        break;
    default:
        if (f->pattern_type != a->pattern_type) return false;
        if (f->resource_name.p && !str_is(f->resource_name, a->resource_name)) return false;
    }
    if (f->principal.p && !str_is(f->principal, a->principal)) return false;
    if (f->host.p && !str_is(f->host, a->host)) return false;
    if (f->operation != KIQ_OP_ANY && f->operation != a->operation) return false;
    return f->permission == KIQ_PERM_ANY || f->permission == a->permission;
}

bool kiq_acl_same(const kiq_acl_t *a, int8_t resource_type, kiq_str_t resource_name, int8_t pattern_type,
                  kiq_str_t principal, kiq_str_t host, int8_t operation, int8_t permission)
{
    return a->resource_type == resource_type && a->pattern_type == pattern_type && a->operation == operation &&
           a->permission == permission && str_is(resource_name, a->resource_name) &&
           str_is(principal, a->principal) && str_is(host, a->host);
}

static void acl_free(kiq_acl_t *a)
{
    free(a->resource_name);
    free(a->principal);
    free(a->host);
}

void kiq_acl_store_clear(kiq_acl_store_t *s)
{
    for (size_t i = 0; i < s->n; i++) acl_free(&s->acls[i]);
    free(s->acls);
    *s = (kiq_acl_store_t){0};
}

int kiq_acl_store_add(kiq_acl_store_t *s, const kiq_acl_t *a)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        kiq_acl_t *more = realloc(s->acls, cap * sizeof *more);
        if (!more) return -1;
        s->acls = more;
        s->cap = cap;
    }
    kiq_acl_t c = *a;
    c.resource_name = strdup(a->resource_name);
    c.principal = strdup(a->principal);
    c.host = strdup(a->host);
    if (!c.resource_name || !c.principal || !c.host) {
        acl_free(&c);
        return -1;
    }
    s->acls[s->n++] = c;
    return 0;
}

int kiq_acl_store_remove(kiq_acl_store_t *s, const kiq_uuid_t *id)
{
    for (size_t i = 0; i < s->n; i++) {
        if (memcmp(s->acls[i].id.b, id->b, sizeof id->b) != 0) continue;
        acl_free(&s->acls[i]);
        memmove(&s->acls[i], &s->acls[i + 1], (s->n - i - 1) * sizeof *s->acls);
        s->n--;
        return 0;
    }
    return 1;
}

static bool principal_matches(const kiq_acl_t *a, const char *principal)
{
    return strcmp(a->principal, KIQ_ACL_ANY_USER) == 0 || strcmp(a->principal, principal) == 0;
}

static bool host_matches(const kiq_acl_t *a, const char *host)
{
    return strcmp(a->host, KIQ_ACL_WILDCARD) == 0 || strcmp(a->host, host) == 0;
}

/* Whether the binding speaks to op: its own operation or ALL; an ALLOW
 * also grants what its operation implies. */
static bool operation_matches(const kiq_acl_t *a, int8_t op)
{
    if (a->operation == KIQ_OP_ALL || a->operation == op) return true;
    if (a->permission != KIQ_PERM_ALLOW) return false;
    if (op == KIQ_OP_DESCRIBE)
        return a->operation == KIQ_OP_READ || a->operation == KIQ_OP_WRITE || a->operation == KIQ_OP_DELETE ||
               a->operation == KIQ_OP_ALTER;
    return op == KIQ_OP_DESCRIBE_CONFIGS && a->operation == KIQ_OP_ALTER_CONFIGS;
}

enum kiq_acl_decision kiq_acl_authorize(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none,
                                        const char **why)
{
    bool named = false, allowed = false;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_acl_t *a = &s->acls[i];
        if (a->resource_type != q->resource_type || !pattern_covers(a, q->resource_name)) continue;
        named = true;
        if (!principal_matches(a, q->principal) || !host_matches(a, q->host) || !operation_matches(a, q->operation))
            continue;
        if (a->permission == KIQ_PERM_DENY) {
            if (why) *why = "denied by a DENY binding";
            return KIQ_ACL_DENIED;
        }
        allowed |= a->permission == KIQ_PERM_ALLOW;
    }
    if (allowed) {
        if (why) *why = "allowed by an ALLOW binding";
        return KIQ_ACL_ALLOWED;
    }
    if (!named && allow_if_none) {
        if (why) *why = "no binding names the resource (allow.everyone.if.no.acl.found)";
        return KIQ_ACL_ALLOWED;
    }
    if (why) *why = named ? "no ALLOW binding matches" : "no binding names the resource";
    return KIQ_ACL_DENIED;
}

static bool speaks_to(const kiq_acl_t *a, const kiq_acl_request_t *q)
{
    return a->resource_type == q->resource_type && principal_matches(a, q->principal) && host_matches(a, q->host) &&
           (a->operation == KIQ_OP_ALL || a->operation == q->operation);
}

/* Whether a DENY binding d takes away everything the ALLOW binding a gives. */
static bool deny_covers(const kiq_acl_t *d, const kiq_acl_t *a)
{
    if (d->pattern_type == KIQ_PAT_LITERAL && strcmp(d->resource_name, KIQ_ACL_WILDCARD) == 0) return true;
    if (d->pattern_type == KIQ_PAT_PREFIXED)
        return strncmp(a->resource_name, d->resource_name, strlen(d->resource_name)) == 0;
    return a->pattern_type == KIQ_PAT_LITERAL && strcmp(a->resource_name, d->resource_name) == 0;
}

bool kiq_acl_authorize_any(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none)
{
    bool typed = false;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_acl_t *a = &s->acls[i];
        typed |= a->resource_type == q->resource_type;
        if (a->permission != KIQ_PERM_ALLOW || !speaks_to(a, q)) continue;
        bool denied = false;
        for (size_t j = 0; j < s->n && !denied; j++) {
            const kiq_acl_t *d = &s->acls[j];
            denied = d->permission == KIQ_PERM_DENY && speaks_to(d, q) && deny_covers(d, a);
        }
        if (!denied) return true;
    }
    return !typed && allow_if_none;
}

int32_t kiq_acl_operations(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none,
                           const int8_t *ops, size_t nops)
{
    int32_t bits = 0;
    for (size_t i = 0; i < nops; i++) {
        kiq_acl_request_t one = *q;
        one.operation = ops[i];
        if (kiq_acl_authorize(s, &one, allow_if_none, NULL) == KIQ_ACL_ALLOWED) bits |= (int32_t)1 << ops[i];
    }
    return bits;
}

const char *kiq_acl_resource_name(int8_t t)
{
    static const char *const names[] = {"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER",
                                        "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
    return t >= 0 && t <= KIQ_RES_USER ? names[t] : "UNKNOWN";
}

const char *kiq_acl_operation_name(int8_t op)
{
    static const char *const names[] = {"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
                                        "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                                        "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"};
    return op >= 0 && op <= KIQ_OP_TWO_PHASE_COMMIT ? names[op] : "UNKNOWN";
}
