/* The control API: what Lua can do to a broker, over HTTP, for test suites
 * in any language (README, "Control API"). The listener serves it to
 * loopback clients only and takes bodies as application/json, which a
 * browser page from elsewhere cannot send without asking first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "http/views.h"

#define FAULTS "/api/faults"

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

/* "/api/faults" or "/api/faults/..." */
static const char *under(const char *url, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(url, prefix, n) == 0 && (!url[n] || url[n] == '/') ? url + n : NULL;
}

bool kiq_http_control_path(const char *url) { return under(url, FAULTS) != NULL; }

void kiq_http_control(kiq_broker_t *b, const char *method, const char *url, const char *body, kiq_http_view_t *v)
{
    const char *rest = under(url, FAULTS);
    if (strcmp(method, "GET") == 0 && !*rest)
        list_faults(b, v);
    else if (strcmp(method, "POST") == 0 && !*rest)
        add_fault(b, body, v);
    else if (strcmp(method, "DELETE") == 0)
        remove_faults(b, rest, v);
    else
        kiq_http_error(v, 405, "GET or POST " FAULTS ", DELETE " FAULTS " or " FAULTS "/{id}");
}
