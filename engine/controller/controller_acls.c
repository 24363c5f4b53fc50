/* ACL bindings kept by the controller: CreateAcls and DeleteAcls decided
 * as Kafka's AclControlManager does and written as AccessControlEntryRecords
 * and RemoveAccessControlEntryRecords; DescribeAcls and the authorizer's
 * reads answered from the image. */
#include <string.h>

#include "controller/controller_internal.h"
#include "core/error.h"
#include "core/uuid.h"

static kiq_str_t or_empty(kiq_str_t s) { return s.p ? s : KIQ_STR(""); }

static bool same(kiq_str_t x, kiq_str_t y)
{
    return x.len == y.len && (x.len == 0 || memcmp(x.p, y.p, (size_t)x.len) == 0);
}

int kiq_controller_create_acls(kiq_controller_t *c, const kiq_create_acls_request_t *req, kiq_arena_t *a,
                               kiq_create_acls_response_t *out)
{
    int n = req->creations_n > 0 ? req->creations_n : 0;
    out->results = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->results);
    out->results_n = n;
    batch_t b = {.a = a};
    pthread_mutex_lock(&c->mu);
    const kiq_acl_store_t *s = kiq_metadata_image_acls(c->image);
    for (int i = 0; i < n; i++) {
        const kiq_create_acls_request_creations_t *cr = &req->creations[i];
        kiq_create_acls_response_results_t *o = &out->results[i];
        kiq_create_acls_response_results_init(o);
        if (!c->active) {
            o->error_code = KIQ_ERR_NOT_CONTROLLER;
            o->error_message = kiq_ctl_astr(a, "this node is not the active controller");
            continue;
        }
        kiq_str_t name = or_empty(cr->resource_name), principal = or_empty(cr->principal), host = or_empty(cr->host);
        const char *bad = kiq_acl_invalid(cr->resource_type, name, cr->resource_pattern_type, principal, host,
                                          cr->operation, cr->permission_type);
        if (bad) {
            o->error_code = KIQ_ERR_INVALID_REQUEST;
            o->error_message = kiq_ctl_astr(a, bad);
            continue;
        }
        /* a binding that exists already (or earlier in this request) is no change */
        bool known = false;
        for (size_t j = 0; j < s->n && !known; j++)
            known = kiq_acl_same(&s->acls[j], cr->resource_type, name, cr->resource_pattern_type, principal, host,
                                 cr->operation, cr->permission_type);
        for (size_t j = 0; j < b.n && !known; j++) {
            const kiq_access_control_entry_record_t *r = &b.r[j].m.access_control_entry;
            known = r->resource_type == cr->resource_type && r->pattern_type == cr->resource_pattern_type &&
                    r->operation == cr->operation && r->permission_type == cr->permission_type &&
                    same(r->resource_name, name) && same(r->principal, principal) && same(r->host, host);
        }
        if (known) continue;
        kiq_access_control_entry_record_t *r = &kiq_ctl_add_record(&b, KIQ_MR_ACCESS_CONTROL_ENTRY)->m.access_control_entry;
        kiq_uuid_random(&r->id);
        r->resource_type = cr->resource_type;
        r->resource_name = name;
        r->pattern_type = cr->resource_pattern_type;
        r->principal = principal;
        r->host = host;
        r->operation = cr->operation;
        r->permission_type = cr->permission_type;
    }
    int rc = 0;
    if (b.n && kiq_ctl_commit(c, &b) != 0) {
        rc = c->commit_error;
        for (int i = 0; i < n; i++)
            if (!out->results[i].error_code) {
                out->results[i].error_code = (int16_t)rc;
                out->results[i].error_message = kiq_ctl_astr(a, "the ACLs were not written");
            }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static kiq_acl_filter_t filter_of(int8_t type, kiq_str_t name, int8_t pattern, kiq_str_t principal, kiq_str_t host,
                                  int8_t op, int8_t perm)
{
    return (kiq_acl_filter_t){type, pattern, op, perm, name, principal, host};
}

int kiq_controller_delete_acls(kiq_controller_t *c, const kiq_delete_acls_request_t *req, kiq_arena_t *a,
                               kiq_delete_acls_response_t *out)
{
    int n = req->filters_n > 0 ? req->filters_n : 0;
    out->filter_results = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->filter_results);
    out->filter_results_n = n;
    batch_t b = {.a = a};
    pthread_mutex_lock(&c->mu);
    const kiq_acl_store_t *s = kiq_metadata_image_acls(c->image);
    bool *gone = kiq_arena_calloc(a, s->n + 1, sizeof *gone);
    for (int i = 0; i < n; i++) {
        const kiq_delete_acls_request_filters_t *f = &req->filters[i];
        kiq_delete_acls_response_filter_results_t *o = &out->filter_results[i];
        kiq_delete_acls_response_filter_results_init(o);
        kiq_acl_filter_t flt = filter_of(f->resource_type_filter, f->resource_name_filter, f->pattern_type_filter,
                                         f->principal_filter, f->host_filter, f->operation, f->permission_type);
        const char *bad = kiq_acl_filter_invalid(&flt);
        if (!c->active || bad) {
            o->error_code = c->active ? KIQ_ERR_INVALID_REQUEST : KIQ_ERR_NOT_CONTROLLER;
            o->error_message = kiq_ctl_astr(a, c->active ? bad : "this node is not the active controller");
            continue;
        }
        o->matching_acls = kiq_arena_calloc(a, s->n + 1, sizeof *o->matching_acls);
        for (size_t j = 0; j < s->n; j++) {
            const kiq_acl_t *acl = &s->acls[j];
            if (gone[j] || !kiq_acl_filter_matches(&flt, acl)) continue;
            gone[j] = true;
            kiq_delete_acls_response_filter_results_matching_acls_t *m = &o->matching_acls[o->matching_acls_n++];
            kiq_delete_acls_response_filter_results_matching_acls_init(m);
            m->resource_type = acl->resource_type;
            m->resource_name = kiq_ctl_astr(a, acl->resource_name);
            m->pattern_type = acl->pattern_type;
            m->principal = kiq_ctl_astr(a, acl->principal);
            m->host = kiq_ctl_astr(a, acl->host);
            m->operation = acl->operation;
            m->permission_type = acl->permission;
            kiq_ctl_add_record(&b, KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY)->m.remove_access_control_entry.id = acl->id;
        }
    }
    int rc = 0;
    if (b.n && kiq_ctl_commit(c, &b) != 0) {
        rc = c->commit_error;
        for (int i = 0; i < n; i++)
            if (!out->filter_results[i].error_code) {
                out->filter_results[i].error_code = (int16_t)rc;
                out->filter_results[i].error_message = kiq_ctl_astr(a, "the ACLs were not removed");
                out->filter_results[i].matching_acls_n = 0;
            }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void kiq_controller_describe_acls(kiq_controller_t *c, const kiq_describe_acls_request_t *req, kiq_arena_t *a,
                                  kiq_describe_acls_response_t *out)
{
    kiq_acl_filter_t flt = filter_of(req->resource_type_filter, req->resource_name_filter, req->pattern_type_filter,
                                     req->principal_filter, req->host_filter, req->operation, req->permission_type);
    const char *bad = kiq_acl_filter_invalid(&flt);
    if (bad) {
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        out->error_message = kiq_ctl_astr(a, bad);
        return;
    }
    pthread_mutex_lock(&c->mu);
    const kiq_acl_store_t *s = kiq_metadata_image_acls(c->image);
    out->resources = kiq_arena_calloc(a, s->n + 1, sizeof *out->resources);
    out->resources_n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_acl_t *acl = &s->acls[i];
        if (!kiq_acl_filter_matches(&flt, acl)) continue;
        /* one entry per resource pattern, its bindings under it */
        kiq_describe_acls_response_resources_t *res = NULL;
        for (int j = 0; j < out->resources_n && !res; j++) {
            kiq_describe_acls_response_resources_t *e = &out->resources[j];
            if (e->resource_type == acl->resource_type && e->pattern_type == acl->pattern_type &&
                kiq_str_eq(e->resource_name, acl->resource_name))
                res = e;
        }
        if (!res) {
            res = &out->resources[out->resources_n++];
            kiq_describe_acls_response_resources_init(res);
            res->resource_type = acl->resource_type;
            res->resource_name = kiq_ctl_astr(a, acl->resource_name);
            res->pattern_type = acl->pattern_type;
            res->acls = kiq_arena_calloc(a, s->n + 1, sizeof *res->acls);
        }
        kiq_describe_acls_response_resources_acls_t *e = &res->acls[res->acls_n++];
        kiq_describe_acls_response_resources_acls_init(e);
        e->principal = kiq_ctl_astr(a, acl->principal);
        e->host = kiq_ctl_astr(a, acl->host);
        e->operation = acl->operation;
        e->permission_type = acl->permission;
    }
    pthread_mutex_unlock(&c->mu);
}

void kiq_ctl_build_acls(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    const kiq_acl_store_t *s = kiq_metadata_image_acls(c->image);
    um->kafkaiq_acls = kiq_arena_calloc(a, s->n + 1, sizeof *um->kafkaiq_acls);
    um->kafkaiq_acls_n = (int32_t)s->n;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_acl_t *e = &s->acls[i];
        kiq_update_metadata_request_kafkaiq_acls_t *o = &um->kafkaiq_acls[i];
        kiq_update_metadata_request_kafkaiq_acls_init(o);
        o->id = e->id;
        o->resource_type = e->resource_type;
        o->resource_name = kiq_ctl_astr(a, e->resource_name);
        o->pattern_type = e->pattern_type;
        o->principal = kiq_ctl_astr(a, e->principal);
        o->host = kiq_ctl_astr(a, e->host);
        o->operation = e->operation;
        o->permission_type = e->permission;
    }
}

kiq_acl_snapshot_t *kiq_controller_acls(kiq_controller_t *c) { return kiq_acl_published_get(&c->acls); }
