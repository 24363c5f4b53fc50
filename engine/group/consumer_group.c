/* Consumer groups of the new protocol: the data and reconciliation; see
 * consumer_group.h. Guarded by the coordinator's lock. */
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "group/consumer_group.h"

/* ---- partition sets ---- */

static int tp_cmp(const kiq_uuid_t *t, int32_t p, const kiq_cg_tp_t *e)
{
    int c = memcmp(t->b, e->topic.b, sizeof t->b);
    if (c) return c;
    return p < e->partition ? -1 : p > e->partition;
}

/* The index of (t, p), or where it would go (*found false). */
static int tp_find(const kiq_cg_set_t *s, const kiq_uuid_t *t, int32_t p, bool *found)
{
    int lo = 0, hi = s->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = tp_cmp(t, p, &s->v[mid]);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    *found = false;
    return lo;
}

int kiq_cg_set_add(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    return kiq_cg_set_add_at(s, topic, partition, 0);
}

int kiq_cg_set_add_at(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition, int32_t epoch)
{
    bool found;
    int i = tp_find(s, topic, partition, &found);
    if (found) return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        kiq_cg_tp_t *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    memmove(&s->v[i + 1], &s->v[i], (size_t)(s->n - i) * sizeof *s->v);
    s->v[i].topic = *topic;
    s->v[i].partition = partition;
    s->v[i].epoch = epoch;
    s->n++;
    return 0;
}

bool kiq_cg_set_has(const kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    bool found;
    tp_find(s, topic, partition, &found);
    return found;
}

const kiq_cg_tp_t *kiq_cg_set_get(const kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    bool found;
    int i = tp_find(s, topic, partition, &found);
    return found ? &s->v[i] : NULL;
}

bool kiq_cg_set_remove(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition)
{
    bool found;
    int i = tp_find(s, topic, partition, &found);
    if (!found) return false;
    memmove(&s->v[i], &s->v[i + 1], (size_t)(s->n - i - 1) * sizeof *s->v);
    s->n--;
    return true;
}

bool kiq_cg_set_eq(const kiq_cg_set_t *a, const kiq_cg_set_t *b)
{
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (tp_cmp(&a->v[i].topic, a->v[i].partition, &b->v[i])) return false;
    return true;
}

int kiq_cg_set_copy(kiq_cg_set_t *dst, const kiq_cg_set_t *src)
{
    if (dst->cap < src->n) {
        kiq_cg_tp_t *v = realloc(dst->v, (size_t)src->n * sizeof *v);
        if (!v) return -1;
        dst->v = v;
        dst->cap = src->n;
    }
    if (src->n) memcpy(dst->v, src->v, (size_t)src->n * sizeof *src->v);
    dst->n = src->n;
    return 0;
}

void kiq_cg_set_free(kiq_cg_set_t *s)
{
    free(s->v);
    *s = (kiq_cg_set_t){0};
}

/* ---- groups and members ---- */

kiq_cgroup_t *kiq_cgroup_new(void) { return calloc(1, sizeof(kiq_cgroup_t)); }

void kiq_cg_member_free(kiq_cg_member_t *m)
{
    if (!m) return;
    free(m->id);
    free(m->instance_id);
    free(m->rack_id);
    free(m->client_id);
    free(m->client_host);
    free(m->server_assignor);
    for (int i = 0; i < m->ntopics; i++) free(m->topics[i]);
    free(m->topics);
    free(m->regex);
    pcre2_code_free(m->regex_code);
    kiq_cg_set_free(&m->assigned);
    kiq_cg_set_free(&m->revoking);
    kiq_cg_set_free(&m->target);
    kiq_cg_classic_free(m->classic);
    free(m);
}

static void free_protocols(kiq_cg_classic_protocol_t *p, int n)
{
    for (int i = 0; i < n; i++) {
        free(p[i].name);
        free(p[i].metadata);
    }
    free(p);
}

int kiq_cg_classic_set_protocols(kiq_cg_classic_t *c, const kiq_cg_classic_protocol_t *p, int n)
{
    kiq_cg_classic_protocol_t *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++) {
        v[i].name = strdup(p[i].name);
        v[i].metadata = malloc((size_t)(p[i].metadata_len > 0 ? p[i].metadata_len : 1));
        v[i].metadata_len = p[i].metadata_len > 0 ? p[i].metadata_len : 0;
        if (!v[i].name || !v[i].metadata) {
            free_protocols(v, i + 1);
            return -1;
        }
        if (v[i].metadata_len) memcpy(v[i].metadata, p[i].metadata, (size_t)v[i].metadata_len);
    }
    free_protocols(c->protocols, c->nprotocols);
    c->protocols = v;
    c->nprotocols = n;
    return 0;
}

void kiq_cg_classic_free(kiq_cg_classic_t *c)
{
    if (!c) return;
    free_protocols(c->protocols, c->nprotocols);
    free(c);
}

void kiq_cgroup_free(kiq_cgroup_t *cg)
{
    if (!cg) return;
    for (kiq_cg_member_t *m = cg->members, *next; m; m = next) {
        next = m->next;
        kiq_cg_member_free(m);
    }
    free(cg);
}

static bool str_is(const char *s, const char *p, size_t len)
{
    return s && p && strlen(s) == len && memcmp(s, p, len) == 0;
}

kiq_cg_member_t *kiq_cgroup_member(const kiq_cgroup_t *cg, const char *id, size_t len)
{
    for (kiq_cg_member_t *m = cg->members; m; m = m->next)
        if (str_is(m->id, id, len)) return m;
    return NULL;
}

kiq_cg_member_t *kiq_cgroup_instance(const kiq_cgroup_t *cg, const char *instance_id, size_t len)
{
    for (kiq_cg_member_t *m = cg->members; m; m = m->next)
        if (str_is(m->instance_id, instance_id, len)) return m;
    return NULL;
}

kiq_cg_member_t *kiq_cgroup_add_member(kiq_cgroup_t *cg, const char *id, size_t len)
{
    kiq_cg_member_t *m = calloc(1, sizeof *m);
    if (!m || !(m->id = strndup(id, len))) {
        free(m);
        return NULL;
    }
    m->state = KIQ_CG_STABLE;
    m->rebalance_timeout_ms = -1;
    kiq_cg_member_t **tail = &cg->members;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
    cg->nmembers++;
    return m;
}

void kiq_cgroup_remove_member(kiq_cgroup_t *cg, kiq_cg_member_t *m)
{
    for (kiq_cg_member_t **pp = &cg->members; *pp; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            cg->nmembers--;
            kiq_cg_member_free(m);
            return;
        }
    }
}

int kiq_cg_member_set_topics(kiq_cg_member_t *m, const char *const *names, const int32_t *lens, int n)
{
    bool same = n == m->ntopics;
    for (int i = 0; same && i < n; i++) same = str_is(m->topics[i], names[i], (size_t)lens[i]);
    if (same) return 0;
    char **t = calloc((size_t)(n ? n : 1), sizeof *t);
    if (!t) return -1;
    for (int i = 0; i < n; i++) {
        if (!(t[i] = strndup(names[i], (size_t)lens[i]))) {
            for (int j = 0; j < i; j++) free(t[j]);
            free(t);
            return -1;
        }
    }
    for (int i = 0; i < m->ntopics; i++) free(m->topics[i]);
    free(m->topics);
    m->topics = t;
    m->ntopics = n;
    return 1;
}

int kiq_cg_member_set_regex(kiq_cg_member_t *m, const char *re, size_t len)
{
    if (len == 0 ? !m->regex : m->regex && str_is(m->regex, re, len)) return 0;
    pcre2_code *code = NULL;
    char *text = NULL;
    if (len > 0) {
        int err;
        PCRE2_SIZE at;
        /* anchored both ends: Kafka matches the whole topic name */
        code = pcre2_compile((PCRE2_SPTR)re, len, PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF, &err, &at, NULL);
        if (!code) {
            PCRE2_UCHAR why[120];
            pcre2_get_error_message(err, why, sizeof why);
            return kiq_error_set("Invalid regular expression %.*s: %s at offset %zu", (int)len, re, (char *)why,
                                 (size_t)at);
        }
        if (!(text = strndup(re, len))) {
            pcre2_code_free(code);
            return kiq_error_set("out of memory");
        }
    }
    free(m->regex);
    pcre2_code_free(m->regex_code);
    m->regex = text;
    m->regex_code = code;
    return 1;
}

bool kiq_cg_member_subscribes(const kiq_cg_member_t *m, const char *topic)
{
    for (int i = 0; i < m->ntopics; i++)
        if (strcmp(m->topics[i], topic) == 0) return true;
    if (!m->regex_code) return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(m->regex_code, NULL);
    int rc = md ? pcre2_match(m->regex_code, (PCRE2_SPTR)topic, strlen(topic), 0, 0, md, NULL) : -1;
    pcre2_match_data_free(md);
    return rc >= 0;
}

const char *kiq_cgroup_state_name(const kiq_cgroup_t *cg)
{
    if (cg->nmembers == 0) return "Empty";
    if (cg->assignment_epoch != cg->epoch) return "Assigning";
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        if (m->epoch >= 0 && (m->epoch != cg->assignment_epoch || m->state != KIQ_CG_STABLE)) return "Reconciling";
    return "Stable";
}

bool kiq_cgroup_partition_taken(const kiq_cgroup_t *cg, const kiq_cg_member_t *except, const kiq_uuid_t *topic,
                                int32_t partition)
{
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        if (m != except &&
            (kiq_cg_set_has(&m->assigned, topic, partition) || kiq_cg_set_has(&m->revoking, topic, partition)))
            return true;
    return false;
}

/* ---- reconciliation ---- */

/* Whether the member still lists any of partitions (it did not say what
 * it owns: it may). */
static bool owns_any(const kiq_cg_set_t *partitions, const kiq_cg_set_t *owned)
{
    if (!owned) return true;
    for (int i = 0; i < partitions->n; i++)
        if (kiq_cg_set_has(owned, &partitions->v[i].topic, partitions->v[i].partition)) return true;
    return false;
}

int kiq_cgroup_reconcile(kiq_cgroup_t *cg, kiq_cg_member_t *m, const kiq_cg_set_t *owned, int64_t now_ns)
{
    if (m->state == KIQ_CG_UNREVOKED_PARTITIONS) {
        if (owns_any(&m->revoking, owned)) return 0;
        m->revoking.n = 0;
    } else if (m->state == KIQ_CG_STABLE && m->epoch == cg->assignment_epoch) {
        return 0;
    }
    kiq_cg_set_t keep = {0}, revoke = {0};
    int rc = 0;
    for (int i = 0; i < m->assigned.n && rc == 0; i++) {
        const kiq_cg_tp_t *tp = &m->assigned.v[i];
        rc = kiq_cg_set_add_at(kiq_cg_set_has(&m->target, &tp->topic, tp->partition) ? &keep : &revoke, &tp->topic,
                               tp->partition, tp->epoch);
    }
    /* what it must give up and no longer lists (a classic member that
     * revoked all before rejoining) needs no revocation step */
    if (rc == 0 && revoke.n > 0 && owns_any(&revoke, owned)) {
        /* give up first, under the old epoch; the rest comes after */
        kiq_cg_set_free(&m->assigned);
        kiq_cg_set_free(&m->revoking);
        m->assigned = keep;
        m->revoking = revoke;
        m->state = KIQ_CG_UNREVOKED_PARTITIONS;
        m->revoke_deadline_ns = now_ns + (int64_t)(m->rebalance_timeout_ms > 0 ? m->rebalance_timeout_ms : 0) * 1000000;
        return 1;
    }
    bool unreleased = false;
    for (int i = 0; i < m->target.n && rc == 0; i++) {
        const kiq_cg_tp_t *tp = &m->target.v[i];
        if (kiq_cg_set_has(&keep, &tp->topic, tp->partition)) continue;
        if (kiq_cgroup_partition_taken(cg, m, &tp->topic, tp->partition)) unreleased = true;
        else rc = kiq_cg_set_add_at(&keep, &tp->topic, tp->partition, cg->assignment_epoch);
    }
    kiq_cg_set_free(&revoke);
    if (rc != 0) {
        kiq_cg_set_free(&keep);
        return -1;
    }
    enum kiq_cg_member_state state = unreleased ? KIQ_CG_UNRELEASED_PARTITIONS : KIQ_CG_STABLE;
    bool changed = !kiq_cg_set_eq(&keep, &m->assigned) || m->epoch != cg->assignment_epoch || m->state != state;
    kiq_cg_set_free(&m->assigned);
    m->assigned = keep;
    if (m->epoch != cg->assignment_epoch) {
        m->previous_epoch = m->epoch;
        m->epoch = cg->assignment_epoch;
    }
    m->state = state;
    return changed;
}

/* ---- assignors by name ---- */

kiq_cg_assign_fn kiq_cg_assignor(const char *name, size_t len)
{
    if (!name) return NULL;
    /* Kafka's class names end in UniformAssignor / RangeAssignor */
    const char *dot = memrchr(name, '.', len);
    const char *base = dot ? dot + 1 : name;
    size_t blen = len - (size_t)(base - name);
    if ((blen == 7 && strncasecmp(base, "uniform", 7) == 0) || (blen == 15 && memcmp(base, "UniformAssignor", 15) == 0))
        return kiq_cg_assign_uniform;
    if ((blen == 5 && strncasecmp(base, "range", 5) == 0) || (blen == 13 && memcmp(base, "RangeAssignor", 13) == 0))
        return kiq_cg_assign_range;
    return NULL;
}

int64_t kiq_cg_topics_hash(const kiq_cg_topic_t *t, int n)
{
    if (n == 0) return 0;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (int k = 0; k < n; k++) {
        for (const uint8_t *p = (const uint8_t *)t[k].name; *p; p++) h = (h ^ *p) * 1099511628211ULL;
        for (int j = 0; j < 16; j++) h = (h ^ t[k].id.b[j]) * 1099511628211ULL;
        h = (h ^ (uint64_t)(uint32_t)t[k].npartitions) * 1099511628211ULL;
    }
    return (int64_t)h;
}
