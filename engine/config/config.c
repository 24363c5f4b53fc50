#include "config/config.h"
#include "config/listeners.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"

const kiq_config_def_t kiq_config_defs[KIQ_CFG__COUNT] = {
#define KIQ_CFG_DEF(id, name, type, def, min, max, valid, doc) \
    [KIQ_CFG_##id] = {name, KIQ_CFG_##type, def, min, max, valid, doc},
    KIQ_BROKER_CONFIGS(KIQ_CFG_DEF)
#undef KIQ_CFG_DEF
};

/* One config: its static value (built before the config is shared), its
 * dynamic values (mu), and the value in effect, which readers load without
 * the lock. */
typedef struct config_value {
    char *text; /* static */
    int64_t num;
    bool set;   /* static value given explicitly */
    char *dyn[KIQ_CFG_LEVELS];
    _Atomic(const char *) eff_text; /* the broker's dynamic, else the cluster's, else the static */
    _Atomic int64_t eff_num;
} config_value_t;

struct kiq_config {
    config_value_t v[KIQ_CFG__COUNT];
    pthread_mutex_t mu; /* serialises dynamic changes; guards dyn and retired */
    /* Dynamic texts replaced while readers may still hold them; freed with
     * the config. */
    char **retired;
    size_t nretired, retired_cap;
};

/* Kafka's dynamic broker configs (DynamicBrokerConfig) that take effect
 * here at once. */
static const enum kiq_config_id dynamic_ids[] = {
    KIQ_CFG_MESSAGE_MAX_BYTES,       KIQ_CFG_MIN_INSYNC_REPLICAS,   KIQ_CFG_MESSAGE_TIMESTAMP_TYPE,
    KIQ_CFG_LOG_CLEANUP_POLICY,      KIQ_CFG_LOG_RETENTION_MS,      KIQ_CFG_LOG_RETENTION_BYTES,
    KIQ_CFG_LOG_ROLL_MS,             KIQ_CFG_LOG_SEGMENT_BYTES,     KIQ_CFG_LOG_INDEX_INTERVAL_BYTES,
    KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES, KIQ_CFG_UNCLEAN_LEADER_ELECTION_ENABLE,
    KIQ_CFG_LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS, KIQ_CFG_LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS,
};

bool kiq_config_dynamic(enum kiq_config_id id)
{
    for (size_t i = 0; i < sizeof dynamic_ids / sizeof dynamic_ids[0]; i++)
        if (dynamic_ids[i] == id) return true;
    return false;
}

int kiq_config_find(const char *name)
{
    for (int i = 0; i < KIQ_CFG__COUNT; i++)
        if (strcmp(kiq_config_defs[i].name, name) == 0) return i;
    return -1;
}

static bool in_list(const char *list, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0) return true;
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

static int parse_value(int id, const char *text, int64_t *num)
{
    const kiq_config_def_t *d = &kiq_config_defs[id];
    switch (d->type) {
    case KIQ_CFG_INT:
    case KIQ_CFG_LONG: {
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno || end == text || *end)
            return kiq_error_set("%s: '%s' is not a number", d->name, text);
        if (v < d->min || v > d->max)
            return kiq_error_set("%s: %lld is out of range [%lld, %lld]", d->name, v,
                                 (long long)d->min, (long long)d->max);
        *num = v;
        return 0;
    }
    case KIQ_CFG_BOOL:
        if (strcmp(text, "true") == 0) *num = 1;
        else if (strcmp(text, "false") == 0) *num = 0;
        else return kiq_error_set("%s: '%s' is not true or false", d->name, text);
        return 0;
    case KIQ_CFG_STRING:
        if (d->valid && !in_list(d->valid, text))
            return kiq_error_set("%s: '%s' is not one of %s", d->name, text, d->valid);
        *num = 0;
        return 0;
    }
    return kiq_error_set("%s: unknown type", d->name);
}

/* Before the config is shared: the static value. */
static int assign(kiq_config_t *c, int id, const char *text, bool explicit)
{
    int64_t num = 0;
    if (parse_value(id, text, &num) != 0) return -1;
    char *copy = strdup(text);
    if (!copy) return kiq_error_set("out of memory");
    config_value_t *v = &c->v[id];
    free(v->text);
    v->text = copy;
    v->num = num;
    v->set = explicit;
    atomic_store(&v->eff_text, copy);
    atomic_store(&v->eff_num, num);
    return 0;
}

/* The cores this process may run on (its affinity, as taskset or a
 * container's cpuset leave it). */
static int usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* num.network.threads and num.io.threads by default follow the cores, as
 * Kafka's fixed 3 and 8 do not: one processor per core (2 to 8) and two
 * I/O threads per core (4 to 16). Too few threads for the cores made a
 * 16-core machine's throughput fall as producers were added. Brokers that
 * share the process share its cores: each is sized from its share (at
 * least 1 processor and 2 I/O threads), as more threads than cores only
 * add hand-offs between them. A value the user set stays. */
int kiq_config_share_cores(kiq_config_t *c, int brokers)
{
    if (brokers < 1) brokers = 1;
    int cores = usable_cores();
    int lo = brokers > 1 ? 1 : 2;
    char text[16];
    if (!c->v[KIQ_CFG_NUM_NETWORK_THREADS].set) {
        snprintf(text, sizeof text, "%d", clamp(cores / brokers, lo, 8));
        if (assign(c, KIQ_CFG_NUM_NETWORK_THREADS, text, false) != 0) return -1;
    }
    if (!c->v[KIQ_CFG_NUM_IO_THREADS].set) {
        snprintf(text, sizeof text, "%d", clamp(2 * cores / brokers, 2 * lo, 16));
        if (assign(c, KIQ_CFG_NUM_IO_THREADS, text, false) != 0) return -1;
    }
    return 0;
}

kiq_config_t *kiq_config_new(void)
{
    kiq_config_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        if (assign(c, i, kiq_config_defs[i].default_value, false) != 0) {
            kiq_config_free(c);
            return NULL;
        }
    }
    if (kiq_config_share_cores(c, 1) != 0) {
        kiq_config_free(c);
        return NULL;
    }
    return c;
}

void kiq_config_free(kiq_config_t *c)
{
    if (!c) return;
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        free(c->v[i].text);
        for (int l = 0; l < KIQ_CFG_LEVELS; l++) free(c->v[i].dyn[l]);
    }
    for (size_t i = 0; i < c->nretired; i++) free(c->retired[i]);
    free(c->retired);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The static values only: a copy starts without dynamic ones. */
kiq_config_t *kiq_config_copy(const kiq_config_t *src)
{
    kiq_config_t *c = kiq_config_new();
    if (!c) return NULL;
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        if (assign(c, i, src->v[i].text, src->v[i].set) != 0) {
            kiq_config_free(c);
            return NULL;
        }
    }
    return c;
}

int kiq_config_check(enum kiq_config_id id, const char *value)
{
    int64_t num;
    return parse_value(id, value, &num);
}

int kiq_config_set_dynamic(kiq_config_t *c, enum kiq_config_level level, enum kiq_config_id id, const char *value)
{
    if (!kiq_config_dynamic(id)) return kiq_error_set("%s cannot be updated dynamically", kiq_config_defs[id].name);
    int64_t num = 0;
    char *copy = NULL;
    if (value && (parse_value(id, value, &num) != 0 || !(copy = strdup(value)))) {
        if (!copy && value) kiq_error_set("out of memory");
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    config_value_t *v = &c->v[id];
    char *old = v->dyn[level];
    if (old && c->nretired == c->retired_cap) {
        size_t cap = c->retired_cap ? c->retired_cap * 2 : 16;
        char **more = realloc(c->retired, cap * sizeof *more);
        if (!more) {
            pthread_mutex_unlock(&c->mu);
            free(copy);
            return kiq_error_set("out of memory");
        }
        c->retired = more;
        c->retired_cap = cap;
    }
    v->dyn[level] = copy;
    /* the broker's own wins over the cluster's, which wins over the static */
    const char *text = v->text;
    int64_t n = v->num;
    for (int l = KIQ_CFG_LEVELS - 1; l >= 0; l--)
        if (v->dyn[l]) {
            text = v->dyn[l];
            parse_value(id, text, &n);
        }
    atomic_store(&v->eff_num, n);
    atomic_store(&v->eff_text, text);
    if (old) c->retired[c->nretired++] = old; /* a reader may still hold it */
    pthread_mutex_unlock(&c->mu);
    return 0;
}

const char *kiq_config_dynamic_value(const kiq_config_t *c, enum kiq_config_level level, enum kiq_config_id id)
{
    pthread_mutex_lock((pthread_mutex_t *)&c->mu);
    const char *v = c->v[id].dyn[level];
    pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
    return v;
}

enum kiq_config_source kiq_config_source(const kiq_config_t *c, enum kiq_config_id id)
{
    if (kiq_config_dynamic_value(c, KIQ_CFG_LEVEL_BROKER, id)) return KIQ_CONFIG_SOURCE_DYNAMIC_BROKER;
    if (kiq_config_dynamic_value(c, KIQ_CFG_LEVEL_CLUSTER, id)) return KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER;
    return c->v[id].set ? KIQ_CONFIG_SOURCE_STATIC_BROKER : KIQ_CONFIG_SOURCE_DEFAULT;
}

const char *kiq_config_static_text(const kiq_config_t *c, enum kiq_config_id id, bool *is_default)
{
    if (is_default) *is_default = !c->v[id].set;
    return c->v[id].text;
}

bool kiq_config_sensitive(enum kiq_config_id id)
{
    const char *n = kiq_config_defs[id].name;
    size_t len = strlen(n);
    return (len > 9 && strcmp(n + len - 9, ".password") == 0) || id == KIQ_CFG_SSL_KEYSTORE_KEY ||
           strstr(n, "jaas.config") != NULL || id == KIQ_CFG_ADD_SCRAM || id == KIQ_CFG_HTTP_TOKEN ||
           id == KIQ_CFG_HTTP_BASIC ||
           id == KIQ_CFG_DELEGATION_TOKEN_SECRET_KEY;
}

/* Names Kafka spells more than one way: the one KafkaIQ keeps. */
static const char *canonical_name(const char *name)
{
    /* listener.name.<listener>.ssl.*: KafkaIQ's one client listener has the broker-wide ones */
    if (strncmp(name, "listener.name.", 14) == 0) {
        const char *dot = strchr(name + 14, '.');
        if (dot && kiq_config_find(dot + 1) >= 0) return dot + 1;
    }
    if (strcmp(name, "message.timestamp.type") == 0) return "log.message.timestamp.type";
    if (strcmp(name, "log.dir") == 0) return "log.dirs";
    /* KRaft's names, as Kafka's tools and KRaft properties files write them */
    if (strcmp(name, "node.id") == 0) return "broker.id";
    if (strcmp(name, "controller.listener.names") == 0) return "control.plane.listener.name";
    return name;
}

int kiq_config_set(kiq_config_t *c, const char *name, const char *value)
{
    int id = kiq_config_find(canonical_name(name));
    if (id < 0) {
        KIQ_WARN("the configuration '%s' was supplied but is not a known config", name);
        return 0;
    }
    return assign(c, id, value, true);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

static int set_assignment(kiq_config_t *c, char *line, const char *where, int lineno)
{
    char *sep = strpbrk(line, "=:");
    if (!sep) {
        if (lineno) return kiq_error_set("%s:%d: expected key=value", where, lineno);
        return kiq_error_set("%s: expected key=value, got '%s'", where, line);
    }
    *sep = '\0';
    char *key = trim(line), *value = trim(sep + 1);
    if (!*key) return kiq_error_set("%s:%d: empty key", where, lineno);
    return kiq_config_set(c, key, value);
}

int kiq_config_load_file(kiq_config_t *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return kiq_error_errno("cannot open %s", path);
    char line[4096];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == '!') continue;
        rc = set_assignment(c, s, path, lineno);
    }
    fclose(f);
    return rc;
}

int kiq_config_override(kiq_config_t *c, const char *assignment)
{
    char buf[4096];
    if (strlen(assignment) >= sizeof buf) return kiq_error_set("--override: value too long");
    strcpy(buf, assignment);
    if (!strchr(buf, '=')) return kiq_error_set("--override: expected key=value, got '%s'", buf);
    return set_assignment(c, buf, "--override", 0);
}

int kiq_config_validate(const kiq_config_t *c)
{
    kiq_listener_t ls[KIQ_MAX_LISTENERS];
    const kiq_listener_t *data, *control;
    int nl;
    kiq_roles_t roles;
    if (kiq_roles_parse(c, &roles) != 0 ||
        kiq_listeners_parse(kiq_config_str(c, KIQ_CFG_LISTENERS), ls, KIQ_MAX_LISTENERS, &nl) != 0 ||
        kiq_listeners_pick(c, ls, nl, roles.broker, &data, &control) != 0)
        return -1;
    kiq_voter_t voters[KIQ_MAX_VOTERS];
    int nvoters;
    int vrc = kiq_voters_parse(kiq_config_str(c, KIQ_CFG_CONTROLLER_QUORUM_VOTERS), voters, KIQ_MAX_VOTERS, &nvoters);
    if (vrc < 0) return -1;
    if (vrc == 0 && !control)
        return kiq_error_set("controller.quorum.voters is set: a control-plane listener is needed "
                             "(listeners=...,CONTROLLER://host:port and control.plane.listener.name=CONTROLLER)");
    if (!*kiq_config_str(c, KIQ_CFG_LOG_DIRS)) return kiq_error_set("log.dirs: must not be empty");
    /* A comma list is Kafka's JBOD: every entry a path, none twice. */
    const char *dirs = kiq_config_str(c, KIQ_CFG_LOG_DIRS);
    for (const char *p = dirs; ; ) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *s = p, *e = end;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if (s == e) return kiq_error_set("log.dirs: '%s' has an empty entry", dirs);
        for (const char *q = end; *q; ) {
            q++;
            const char *qe = strchr(q, ',');
            if (!qe) qe = q + strlen(q);
            const char *qs = q, *qt = qe;
            while (qs < qt && (*qs == ' ' || *qs == '\t')) qs++;
            while (qt > qs && (qt[-1] == ' ' || qt[-1] == '\t')) qt--;
            if (qt - qs == e - s && memcmp(qs, s, (size_t)(e - s)) == 0)
                return kiq_error_set("log.dirs: '%.*s' is listed twice", (int)(e - s), s);
            q = qe;
        }
        if (!*end) break;
        p = end + 1;
    }
    return 0;
}

int64_t kiq_config_int(const kiq_config_t *c, enum kiq_config_id id) { return atomic_load(&c->v[id].eff_num); }

bool kiq_config_bool(const kiq_config_t *c, enum kiq_config_id id) { return atomic_load(&c->v[id].eff_num) != 0; }

const char *kiq_config_str(const kiq_config_t *c, enum kiq_config_id id) { return atomic_load(&c->v[id].eff_text); }

const char *kiq_config_text(const kiq_config_t *c, enum kiq_config_id id, bool *is_default)
{
    if (is_default) *is_default = kiq_config_source(c, id) == KIQ_CONFIG_SOURCE_DEFAULT;
    return atomic_load(&c->v[id].eff_text);
}
