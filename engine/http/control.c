/* The control API: what Lua can do to a broker, over HTTP, for test suites
 * in any language (README, "Control API"). The listener serves it to
 * loopback clients only and takes bodies as application/json, which a
 * browser page from elsewhere cannot send without asking first. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "controller/controller.h"
#include "core/error.h"
#include "proto/errors.h"
#include "http/views.h"
#include "server/broker_set.h"

#define FAULTS "/api/faults"
#define BROKERS "/api/brokers"
#define LINKS "/api/links"
#define CLOCK "/api/clock"
#define LEADERS "/api/leaders"

static int faults_of(void *b, const kiq_view_t *v) { return kiq_broker_faults_view(b, v); }

static void list_faults(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_t *j = kiq_http_json_of(faults_of, b);
    if (j)
        kiq_http_take_json(v, 200, j);
    else
        kiq_http_error(v, 500, kiq_error_get());
}

/* A JSON value as the text a fault rule's field takes. */
static const char *field_text(json_t *value, char *buf, size_t size)
{
    if (json_is_string(value)) return json_string_value(value);
    if (json_is_integer(value)) snprintf(buf, size, "%lld", (long long)json_integer_value(value));
    else if (json_is_real(value)) snprintf(buf, size, "%.17g", json_real_value(value));
    else if (json_is_boolean(value)) snprintf(buf, size, "%s", json_is_true(value) ? "true" : "false");
    else return NULL;
    return buf;
}

static void add_fault(kiq_broker_t *b, const char *body, kiq_http_view_t *v)
{
    json_error_t jerr;
    json_t *rule_json = body ? json_loads(body, 0, &jerr) : NULL;
    if (!json_is_object(rule_json)) {
        char msg[256];
        snprintf(msg, sizeof msg, "a fault rule is a JSON object%s%s", rule_json || !body ? "" : ": ",
                 rule_json || !body ? "" : jerr.text);
        json_decref(rule_json);
        kiq_http_error(v, 400, msg);
        return;
    }
    kiq_fault_rule_t rule;
    kiq_fault_rule_init(&rule);
    const char *key;
    json_t *value;
    int rc = 0;
    json_object_foreach(rule_json, key, value)
    {
        char buf[64];
        const char *text = field_text(value, buf, sizeof buf);
        rc = text ? kiq_fault_rule_set(&rule, key, text)
                  : kiq_error_set("fault rule: %s must be a string, number or boolean", key);
        if (rc != 0) break;
    }
    json_decref(rule_json);
    int id = rc == 0 ? kiq_broker_fault_add(b, &rule) : -1;
    if (id < 0) {
        kiq_http_error(v, 400, kiq_error_get());
        return;
    }
    kiq_http_take_json(v, 201, json_pack("{si}", "id", id));
}

/* DELETE /api/faults/{id}, or every rule with DELETE /api/faults. */
static void remove_faults(kiq_broker_t *b, const char *rest, kiq_http_view_t *v)
{
    json_t *removed = json_array();
    if (*rest) {
        char *end;
        errno = 0;
        long id = strtol(rest + 1, &end, 10);
        if (rest[0] != '/' || !rest[1] || *end || errno || id <= 0 || id > INT32_MAX) {
            json_decref(removed);
            kiq_http_error(v, 404, "no such path (DELETE /api/faults/{id})");
            return;
        }
        if (kiq_broker_fault_remove(b, (int)id) != 0) {
            json_decref(removed);
            kiq_http_error(v, 404, kiq_error_get());
            return;
        }
        json_array_append_new(removed, json_integer(id));
    } else {
        json_t *all = kiq_http_json_of(faults_of, b);
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(all, "faults"), i, f)
        {
            json_int_t id = json_integer_value(json_object_get(f, "id"));
            if (kiq_broker_fault_remove(b, (int)id) == 0) json_array_append_new(removed, json_integer(id));
        }
        json_decref(all);
    }
    kiq_http_take_json(v, 200, json_pack("{so}", "removed", removed));
}

/* ---- brokers and links ---- */

static int set_of(void *b, const kiq_view_t *v)
{
    kiq_broker_set_view(((kiq_broker_t *)b)->set, v);
    return 0;
}

/* A broker alone is a set of one that nothing can be done to. */
static int alone(kiq_broker_t *b, kiq_http_view_t *v)
{
    if (b->set) return 0;
    kiq_http_error(v, 409, "this broker runs alone: kill, restart, pause and links need serve --brokers N or a "
                           "Lua cluster");
    return -1;
}

static void list_brokers(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_t *j = b->set ? kiq_http_json_of(set_of, b)
                       : json_pack("{s[{sisbsb}]s[]}", "brokers", "id", b->node_id, "running", b->running, "ready",
                                   kiq_broker_ready(b), "links");
    if (j)
        kiq_http_take_json(v, 200, j);
    else
        kiq_http_error(v, 500, "out of memory");
}

/* POST /api/brokers/{id}/{op} */
static void broker_op(kiq_broker_t *b, const char *rest, kiq_http_view_t *v)
{
    char op[16];
    int id, end = 0;
    if (sscanf(rest, "/%d/%15[a-z]%n", &id, op, &end) != 2 || rest[end] || kiq_broker_op_parse(op) < 0) {
        kiq_http_error(v, 404, "POST " BROKERS "/{id}/kill|stop|restart|pause|resume");
        return;
    }
    if (alone(b, v) != 0) return;
    enum kiq_broker_op o = (enum kiq_broker_op)kiq_broker_op_parse(op);
    if (kiq_broker_set_do(b->set, id, o) != 0) {
        kiq_http_error(v, 404, kiq_error_get());
        return;
    }
    /* kill, stop and restart are the supervisor's, done after this answer
     * (the broker answering may be the one stopped) */
    bool queued = o != KIQ_BROKER_PAUSE && o != KIQ_BROKER_RESUME;
    kiq_http_take_json(v, queued ? 202 : 200, json_pack("{sisssb}", "broker", id, "op", op, "queued", queued));
}

/* POST /api/links {"from", "to", "action": "cut" | "heal" | "slow" |
 * "drop", "delay_ms"}: replication from leader `from` to follower `to`.
 * slow and drop are fault rules on the leader for that follower's fetches
 * (their id answered; DELETE it there to end them). */
static void link_op(kiq_broker_t *b, const char *body, kiq_http_view_t *v)
{
    if (alone(b, v) != 0) return;
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    json_int_t from = -1, to = -1, delay = 0;
    const char *action = NULL;
    if (json_unpack(j, "{sIsIss s?I}", "from", &from, "to", &to, "action", &action, "delay_ms", &delay) != 0 ||
        from < 0 || to < 0 || from > INT32_MAX || to > INT32_MAX) {
        json_decref(j);
        kiq_http_error(v, 400, "a link is {\"from\": leader id, \"to\": follower id, \"action\": \"cut\" | \"heal\" | "
                               "\"slow\" | \"drop\", \"delay_ms\": n (slow)}");
        return;
    }
    json_t *answer = NULL;
    int rc = 0;
    if (strcmp(action, "cut") == 0 || strcmp(action, "heal") == 0) {
        rc = kiq_broker_set_cut(b->set, (int32_t)from, (int32_t)to, action[0] == 'c');
        if (rc == 0) answer = json_pack("{sIsIss}", "from", from, "to", to, "action", action);
    } else if (strcmp(action, "slow") == 0 || strcmp(action, "drop") == 0) {
        kiq_broker_t *leader = kiq_broker_set_find(b->set, (int32_t)from);
        kiq_fault_rule_t rule;
        char client[64], ms[24];
        kiq_fault_rule_init(&rule);
        snprintf(client, sizeof client, "kafkaiq-replica-fetcher-%d", (int)to);
        snprintf(ms, sizeof ms, "%lld", (long long)delay);
        rc = !leader ? kiq_error_set("no broker %d in this process", (int)from)
             : kiq_fault_rule_set(&rule, "api", "Fetch") || kiq_fault_rule_set(&rule, "client_id", client) ||
                     kiq_fault_rule_set(&rule, "delay_ms", ms) ||
                     (action[0] == 'd' && kiq_fault_rule_set(&rule, "action", "drop_response"))
                 ? -1
                 : 0;
        int id = rc == 0 ? kiq_broker_fault_add(leader, &rule) : -1;
        if (id < 0) rc = -1;
        else answer = json_pack("{sIsIsssisI}", "from", from, "to", to, "action", action, "fault", id, "on_broker", from);
    } else {
        rc = kiq_error_set("action must be cut, heal, slow or drop, not '%s'", action);
    }
    json_decref(j);
    if (rc != 0 || !answer)
        kiq_http_error(v, 400, kiq_error_get());
    else
        kiq_http_take_json(v, 200, answer);
}

/* ---- leadership ---- */

typedef struct leader_move {
    const char *topic;
    int32_t partition, to;
} leader_move_t;

static int move_leader(kiq_controller_t *c, void *arg)
{
    const leader_move_t *m = arg;
    return m->topic ? kiq_controller_move_leader(c, m->topic, m->partition, m->to) : kiq_controller_elect_preferred(c);
}

/* The controller of this process (through the set, which keeps it from
 * stopping meanwhile), else this broker's own when it is the controller. */
static int on_controller(kiq_broker_t *b, leader_move_t *m, int *result)
{
    if (b->set) return kiq_broker_set_on_controller(b->set, move_leader, m, result);
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (!ctl) return kiq_error_set("the controller is not in this process: ask its broker's listener");
    *result = move_leader(ctl, m);
    return 0;
}

/* POST /api/leaders {"topic", "partition", "to"}: that replica leads from
 * now on (first in the replicas, so a preferred election keeps it); or
 * {"preferred": true}: every partition's first replica leads again where
 * it can. The brokers learn it from the controller: wait for leader=ID. */
static void leaders_op(kiq_broker_t *b, const char *body, kiq_http_view_t *v)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    json_int_t partition = -1, to = -1;
    int preferred = 0;
    leader_move_t m = {0};
    if (json_unpack(j, "{s?ss?Is?Is?b}", "topic", &m.topic, "partition", &partition, "to", &to, "preferred",
                    &preferred) != 0 ||
        (preferred ? m.topic != NULL : !m.topic || partition < 0 || partition > INT32_MAX || to < 0 || to > INT32_MAX)) {
        json_decref(j);
        kiq_http_error(v, 400, "leaders take {\"topic\": t, \"partition\": p, \"to\": broker id} or "
                               "{\"preferred\": true}");
        return;
    }
    m.partition = (int32_t)partition;
    m.to = (int32_t)to;
    int result = 0;
    if (on_controller(b, &m, &result) != 0)
        kiq_http_error(v, 409, kiq_error_get());
    else if (preferred && result >= 0)
        kiq_http_take_json(v, 200, json_pack("{si}", "moved", result));
    else if (!preferred && result == KIQ_ERR_NONE)
        kiq_http_take_json(v, 200, json_pack("{sssisi}", "topic", m.topic, "partition", m.partition, "leader", m.to));
    else
        kiq_http_error(v,
                       result == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION ? 404
                       : result == KIQ_ERR_INVALID_REPLICA_ASSIGNMENT || result == KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE
                           ? 409
                           : 500,
                       kiq_error_get());
    json_decref(j);
}

/* ---- the clock ---- */

static json_t *clock_json(void)
{
    return json_pack("{sssIsIsI}", "clock", atomic_load(&kiq_clock_manual) ? "manual" : "system", "ahead_ms",
                     (json_int_t)(kiq_clock_ahead() / 1000000), "wall_ms", (json_int_t)kiq_clock_wall_ms(),
                     "mono_ms", (json_int_t)kiq_clock_mono_ms());
}

/* POST /api/clock {"advance_ms": n}: the process's clock n ms ahead. */
static void advance_clock(const char *body, kiq_http_view_t *v)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    json_int_t ms = -1;
    if (json_unpack(j, "{sI}", "advance_ms", &ms) != 0) {
        json_decref(j);
        kiq_http_error(v, 400, "the clock takes {\"advance_ms\": n}");
        return;
    }
    json_decref(j);
    if (kiq_clock_advance_ms(ms) != 0)
        kiq_http_error(v, atomic_load(&kiq_clock_manual) ? 400 : 409, kiq_error_get());
    else
        kiq_http_take_json(v, 200, clock_json());
}

/* "/api/faults" or "/api/faults/..." */
static const char *under(const char *url, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(url, prefix, n) == 0 && (!url[n] || url[n] == '/') ? url + n : NULL;
}

bool kiq_http_control_path(const char *url)
{
    return under(url, FAULTS) || under(url, BROKERS) || under(url, LINKS) || under(url, CLOCK) || under(url, LEADERS);
}

void kiq_http_control(kiq_broker_t *b, const char *method, const char *url, const char *body, kiq_http_view_t *v)
{
    const char *rest;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if ((rest = under(url, BROKERS))) {
        if (get && !*rest)
            list_brokers(b, v);
        else if (post && *rest)
            broker_op(b, rest, v);
        else
            kiq_http_error(v, 405, "GET " BROKERS ", POST " BROKERS "/{id}/{op}");
    } else if ((rest = under(url, CLOCK))) {
        if (get && !*rest)
            kiq_http_take_json(v, 200, clock_json());
        else if (post && !*rest)
            advance_clock(body, v);
        else
            kiq_http_error(v, 405, "GET or POST " CLOCK);
    } else if ((rest = under(url, LEADERS))) {
        if (post && !*rest)
            leaders_op(b, body, v);
        else
            kiq_http_error(v, 405, "POST " LEADERS);
    } else if ((rest = under(url, LINKS))) {
        if (post && !*rest)
            link_op(b, body, v);
        else
            kiq_http_error(v, 405, "POST " LINKS);
    } else {
        rest = under(url, FAULTS);
        if (get && !*rest)
            list_faults(b, v);
        else if (post && !*rest)
            add_fault(b, body, v);
        else if (strcmp(method, "DELETE") == 0)
            remove_faults(b, rest, v);
        else
            kiq_http_error(v, 405, "GET or POST " FAULTS ", DELETE " FAULTS " or " FAULTS "/{id}");
    }
}
