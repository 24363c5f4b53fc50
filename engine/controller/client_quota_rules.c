/* Kafka's rules for client quotas (its ClientQuotaControlManager and
 * ClientQuotasImage); see client_quota_rules.h. */
#include "controller/client_quota_rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controller/metadata_image.h"
#include "core/error.h"
#include "proto/errors.h"

static kiq_str_t astr(kiq_arena_t *a, const char *s)
{
    return s ? (kiq_str_t){kiq_arena_strndup(a, s, strlen(s)), (int32_t)strlen(s)} : KIQ_STR_NULL;
}

static bool str_is(kiq_str_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.p && (size_t)s.len == n && memcmp(s.p, lit, n) == 0;
}

static kiq_str_t fmt(kiq_arena_t *a, const char *f, ...) __attribute__((format(printf, 2, 3)));
static kiq_str_t fmt(kiq_arena_t *a, const char *f, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return astr(a, buf);
}

/* Kafka's validateEntity and configKeysForEntityType: 0, or
 * INVALID_REQUEST with *why. The entity's parts as record entries in
 * *parts (user first). */
static int16_t check_entity(const kiq_alter_client_quotas_request_entries_t *e, kiq_arena_t *a, kiq_str_t *why,
                            kiq_client_quota_record_entity_t **parts, int32_t *nparts)
{
    if (e->entity_n <= 0) {
        *why = astr(a, "Invalid empty client quota entity");
        return KIQ_ERR_INVALID_REQUEST;
    }
    bool user = false, client = false, ip = false;
    kiq_str_t names[2] = {KIQ_STR_NULL, KIQ_STR_NULL};
    for (int32_t i = 0; i < e->entity_n; i++) {
        kiq_str_t t = e->entity[i].entity_type, n = e->entity[i].entity_name;
        bool *has = str_is(t, "user") ? &user : str_is(t, "client-id") ? &client : str_is(t, "ip") ? &ip : NULL;
        if (!has) {
            *why = fmt(a, "Unhandled client quota entity type: %.*s", (int)t.len, t.p ? t.p : "");
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (*has) {
            *why = fmt(a, "Invalid empty client quota entity, duplicate entity entry %.*s", (int)t.len, t.p);
            return KIQ_ERR_INVALID_REQUEST;
        }
        *has = true;
        if (n.p && n.len == 0) {
            *why = fmt(a, "Empty %.*s not supported", (int)t.len, t.p);
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (has == &user) names[0] = n;
        else if (has == &client) names[1] = n;
    }
    if (ip && (user || client)) {
        *why = astr(a, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId");
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (ip) {
        *why = astr(a, "ip quotas (connection_creation_rate) are not served");
        return KIQ_ERR_INVALID_REQUEST;
    }
    *parts = kiq_arena_calloc(a, 2, sizeof **parts);
    *nparts = 0;
    for (int k = 0; k < 2; k++) {
        if (!(k == 0 ? user : client)) continue;
        kiq_client_quota_record_entity_t *p = &(*parts)[(*nparts)++];
        kiq_client_quota_record_entity_init(p);
        p->entity_type = KIQ_STR(k == 0 ? "user" : "client-id");
        p->entity_name = names[k];
    }
    return 0;
}

/* Kafka's validateQuotaKeyValue: the byte rates are LONGs (whole), the
 * others DOUBLEs. */
static int16_t check_value(kiq_str_t key, double v, kiq_arena_t *a, kiq_str_t *why, int *k)
{
    *k = key.p ? kiq_quota_key_of(key.p, (size_t)key.len) : -1;
    if (*k < 0) {
        *why = fmt(a, "Invalid configuration key %.*s", (int)key.len, key.p ? key.p : "");
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (v <= 0.0) {
        *why = fmt(a, "Quota %s must be greater than 0", kiq_quota_key_names[*k]);
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (*k == KIQ_QUOTA_PRODUCER_BYTE_RATE || *k == KIQ_QUOTA_CONSUMER_BYTE_RATE) {
        if (v > 9.223372036854775807e18) {
            *why = fmt(a, "Proposed value for %s is too large for a LONG.", kiq_quota_key_names[*k]);
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (v - floor(v) > 1e-16) {
            *why = fmt(a, "Proposed value for %s is not an integer.", kiq_quota_key_names[*k]);
            return KIQ_ERR_INVALID_REQUEST;
        }
    }
    return 0;
}

static bool same_entity(const kiq_alter_client_quotas_request_entries_t *x,
                        const kiq_alter_client_quotas_request_entries_t *y)
{
    if (x->entity_n != y->entity_n) return false;
    for (int32_t i = 0; i < x->entity_n; i++) {
        bool found = false;
        for (int32_t j = 0; j < y->entity_n && !found; j++) {
            kiq_str_t a = x->entity[i].entity_type, b = y->entity[j].entity_type;
            kiq_str_t an = x->entity[i].entity_name, bn = y->entity[j].entity_name;
            found = a.len == b.len && memcmp(a.p, b.p, (size_t)a.len) == 0 && !an.p == !bn.p &&
                    (!an.p || (an.len == bn.len && memcmp(an.p, bn.p, (size_t)an.len) == 0));
        }
        if (!found) return false;
    }
    return true;
}

void kiq_client_quotas_plan(const kiq_client_quota_store_t *store, const kiq_alter_client_quotas_request_t *req,
                            kiq_arena_t *a, kiq_alter_client_quotas_response_t *out, kiq_client_quota_change_t **changes,
                            size_t *nchanges)
{
    int n = req->entries_n > 0 ? req->entries_n : 0;
    out->entries = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->entries);
    out->entries_n = 0;
    size_t cap = 1;
    for (int i = 0; i < n; i++) cap += req->entries[i].ops_n > 0 ? (size_t)req->entries[i].ops_n : 0;
    kiq_client_quota_change_t *ch = kiq_arena_calloc(a, cap, sizeof *ch);
    size_t nch = 0;
    for (int i = 0; i < n; i++) {
        const kiq_alter_client_quotas_request_entries_t *e = &req->entries[i];
        kiq_alter_client_quotas_response_entries_t *o = &out->entries[out->entries_n++];
        kiq_alter_client_quotas_response_entries_init(o);
        o->entity = kiq_arena_calloc(a, (size_t)(e->entity_n > 0 ? e->entity_n : 0) + 1, sizeof *o->entity);
        for (int32_t j = 0; j < e->entity_n; j++) {
            kiq_alter_client_quotas_response_entries_entity_init(&o->entity[j]);
            o->entity[j].entity_type = e->entity[j].entity_type;
            o->entity[j].entity_name = e->entity[j].entity_name;
        }
        o->entity_n = e->entity_n > 0 ? e->entity_n : 0;
        bool dup = false;
        for (int j = 0; j < i && !dup; j++) dup = same_entity(&req->entries[j], e);
        bool dup_key = false;
        for (int32_t x = 0; x < e->ops_n && !dup_key; x++)
            for (int32_t y = 0; y < x && !dup_key; y++)
                dup_key = e->ops[x].key.len == e->ops[y].key.len &&
                          memcmp(e->ops[x].key.p, e->ops[y].key.p, (size_t)e->ops[x].key.len) == 0;
        if (dup || dup_key) {
            /* Kafka answers a repeated key as it answers a repeated entity */
            o->error_code = KIQ_ERR_INVALID_REQUEST;
            o->error_message = astr(a, "Ignoring duplicate entity");
            continue;
        }
        kiq_client_quota_record_entity_t *parts = NULL;
        int32_t nparts = 0;
        kiq_str_t why = KIQ_STR_NULL;
        int16_t err = check_entity(e, a, &why, &parts, &nparts);
        kiq_quota_entity_t ent;
        if (!err && kiq_client_quota_entity_of(parts, nparts, a, &ent) != 0) {
            err = KIQ_ERR_INVALID_REQUEST;
            why = astr(a, kiq_error_get());
        }
        const kiq_client_quota_entry_t *cur = err ? NULL : kiq_client_quota_store_find(store, &ent);
        size_t first = nch;
        for (int32_t x = 0; !err && x < e->ops_n; x++) {
            const kiq_alter_client_quotas_request_entries_ops_t *op = &e->ops[x];
            int k = op->key.p ? kiq_quota_key_of(op->key.p, (size_t)op->key.len) : -1;
            if (op->remove) {
                /* removing what is not there changes nothing */
                if (k < 0 || !cur || !(cur->set & (1u << k))) continue;
            } else {
                err = check_value(op->key, op->value, a, &why, &k);
                if (err) break;
                if (cur && (cur->set & (1u << k)) && cur->value[k] == op->value) continue; /* unchanged */
            }
            kiq_client_quota_change_t *c = &ch[nch++];
            kiq_client_quota_record_init(&c->record);
            c->record.entity = parts;
            c->record.entity_n = nparts;
            c->record.key = KIQ_STR(kiq_quota_key_names[k]);
            c->record.value = op->remove ? 0 : op->value;
            c->record.remove = op->remove;
            c->entity = ent;
            c->entry = i;
        }
        if (err) {
            nch = first; /* an entity's changes go all or none */
            o->error_code = err;
            o->error_message = why;
        }
    }
    *changes = ch;
    *nchanges = nch;
}

/* One filter component: which entity type, and what it asks of it. */
typedef struct filter {
    bool user, client;               /* the types named */
    bool exact_user, exact_client;   /* a name (or the default: NULL) is asked */
    kiq_str_t user_name, client_name;
    bool none; /* an ip filter: matches none of the entities kept (no ip quotas) */
} filter_t;

static int16_t read_filter(const kiq_describe_client_quotas_request_t *req, kiq_arena_t *a, filter_t *f,
                           kiq_str_t *why)
{
    *f = (filter_t){0};
    bool ip = false;
    for (int32_t i = 0; i < req->components_n; i++) {
        const kiq_describe_client_quotas_request_components_t *co = &req->components[i];
        kiq_str_t t = co->entity_type;
        if (!t.p || t.len == 0) {
            *why = astr(a, "Invalid empty entity type.");
            return KIQ_ERR_INVALID_REQUEST;
        }
        bool is_user = str_is(t, "user"), is_client = str_is(t, "client-id"), is_ip = str_is(t, "ip");
        if ((is_user && f->user) || (is_client && f->client) || (is_ip && ip)) {
            *why = fmt(a, "Entity type %.*s cannot appear more than once in the filter.", (int)t.len, t.p);
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (!is_user && !is_client && !is_ip) {
            *why = fmt(a, "Unsupported entity type %.*s", (int)t.len, t.p);
            return KIQ_ERR_UNSUPPORTED_VERSION;
        }
        bool exact;
        switch (co->match_type) {
        case 0:
            if (!co->match.p) {
                *why = astr(a, "Request specified MATCH_TYPE_EXACT, but set match string to null.");
                return KIQ_ERR_INVALID_REQUEST;
            }
            exact = true;
            break;
        case 1:
        case 2:
            if (co->match.p) {
                *why = astr(a, co->match_type == 1
                                           ? "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                                           : "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.");
                return KIQ_ERR_INVALID_REQUEST;
            }
            exact = co->match_type == 1;
            break;
        default:
            *why = fmt(a, "Unknown match type %d", co->match_type);
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (is_user) {
            f->user = true;
            f->exact_user = exact;
            f->user_name = co->match;
        } else if (is_client) {
            f->client = true;
            f->exact_client = exact;
            f->client_name = co->match;
        } else
            ip = true;
    }
    if (ip && (f->user || f->client)) {
        *why = astr(a, "Invalid entity filter component combination. IP filter component should not be "
                               "used with user or clientId filter component.");
        return KIQ_ERR_INVALID_REQUEST;
    }
    f->none = ip;
    return 0;
}

static bool name_is(const char *have, kiq_str_t want)
{
    if (!want.p) return !have;
    return have && strlen(have) == (size_t)want.len && memcmp(have, want.p, (size_t)want.len) == 0;
}

static bool matches(const kiq_quota_entity_t *e, const filter_t *f, bool strict)
{
    if (f->none) return false;
    if (strict && (int)e->has_user + (int)e->has_client != (int)f->user + (int)f->client) return false;
    if (f->user && (!e->has_user || (f->exact_user && !name_is(e->user, f->user_name)))) return false;
    if (f->client && (!e->has_client || (f->exact_client && !name_is(e->client_id, f->client_name)))) return false;
    return true;
}


void kiq_client_quotas_describe(const kiq_client_quota_store_t *s, const kiq_describe_client_quotas_request_t *req,
                                kiq_arena_t *a, kiq_describe_client_quotas_response_t *out)
{
    filter_t f;
    kiq_str_t why = KIQ_STR_NULL;
    int16_t err = read_filter(req, a, &f, &why);
    if (err) {
        out->error_code = err;
        out->error_message = why;
        out->entries_n = -1;
        return;
    }
    out->entries = kiq_arena_calloc(a, s->n + 1, sizeof *out->entries);
    out->entries_n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_client_quota_entry_t *q = &s->entries[i];
        if (!matches(&q->entity, &f, req->strict)) continue;
        kiq_describe_client_quotas_response_entries_t *o = &out->entries[out->entries_n++];
        kiq_describe_client_quotas_response_entries_init(o);
        o->entity = kiq_arena_calloc(a, 2, sizeof *o->entity);
        if (q->entity.has_user) {
            kiq_describe_client_quotas_response_entries_entity_init(&o->entity[o->entity_n]);
            o->entity[o->entity_n].entity_type = KIQ_STR("user");
            o->entity[o->entity_n++].entity_name = astr(a, q->entity.user);
        }
        if (q->entity.has_client) {
            kiq_describe_client_quotas_response_entries_entity_init(&o->entity[o->entity_n]);
            o->entity[o->entity_n].entity_type = KIQ_STR("client-id");
            o->entity[o->entity_n++].entity_name = astr(a, q->entity.client_id);
        }
        o->values = kiq_arena_calloc(a, KIQ_QUOTA__COUNT, sizeof *o->values);
        for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
            if (!(q->set & (1u << k))) continue;
            kiq_describe_client_quotas_response_entries_values_init(&o->values[o->values_n]);
            o->values[o->values_n].key = KIQ_STR(kiq_quota_key_names[k]);
            o->values[o->values_n++].value = q->value[k];
        }
    }
}

