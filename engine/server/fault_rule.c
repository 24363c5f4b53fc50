#include "server/fault_rule.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"
#include "proto/messages.h"

#define NO_ACTION (-1)

static const char *const action_names[] = {"error", "delay", "disconnect", "drop_response"};

const char *kiq_fault_action_name(enum kiq_fault_action a) { return action_names[a]; }

void kiq_fault_rule_init(kiq_fault_rule_t *r)
{
    memset(r, 0, sizeof *r);
    r->api_key = -1;
    r->max_version = INT16_MAX;
    r->partition = -1;
    r->action = (enum kiq_fault_action)NO_ACTION;
    r->times = -1;
    r->probability = 1;
}

/* A whole decimal integer in [lo, hi]. */
static int integer(const char *name, const char *value, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(value, &end, 10);
    if (!*value || *end || errno || n < lo || n > hi)
        return kiq_error_set("fault rule: %s must be an integer from %lld to %lld, not '%s'", name, (long long)lo,
                             (long long)hi, value);
    *out = n;
    return 0;
}

static int copy(const char *name, const char *value, char *out, size_t size)
{
    if (strlen(value) >= size) return kiq_error_set("fault rule: %s is longer than %zu bytes", name, size - 1);
    memcpy(out, value, strlen(value) + 1);
    return 0;
}

static int set_api(kiq_fault_rule_t *r, const char *value)
{
    for (size_t i = 0; i < kiq_api_codec_count; i++)
        if (strcmp(kiq_api_codecs[i].name, value) == 0) {
            r->api_key = kiq_api_codecs[i].key;
            return 0;
        }
    int64_t key;
    if (integer("api", value, 0, INT16_MAX, &key) != 0 || !kiq_api_codec((int16_t)key))
        return kiq_error_set("fault rule: unknown api '%s' (a name such as Produce, or a key)", value);
    r->api_key = (int16_t)key;
    return 0;
}

static int set_error(kiq_fault_rule_t *r, const char *value)
{
    int code = kiq_error_code_of(value);
    int64_t n;
    if (code == INT32_MIN) {
        if (integer("error", value, INT16_MIN, INT16_MAX, &n) != 0)
            return kiq_error_set("fault rule: unknown error '%s' (Kafka's name, such as NOT_LEADER_OR_FOLLOWER, "
                                 "or a code)", value);
        code = (int)n;
    }
    if (code == 0) return kiq_error_set("fault rule: error NONE is no error");
    r->error_code = (int16_t)code;
    if (r->action == (enum kiq_fault_action)NO_ACTION) r->action = KIQ_FAULT_ERROR;
    return 0;
}

static int set_action(kiq_fault_rule_t *r, const char *value)
{
    for (int i = 0; i < (int)(sizeof action_names / sizeof action_names[0]); i++)
        if (strcmp(action_names[i], value) == 0) {
            r->action = (enum kiq_fault_action)i;
            return 0;
        }
    return kiq_error_set("fault rule: action must be error, delay, disconnect or drop_response, not '%s'", value);
}

int kiq_fault_rule_set(kiq_fault_rule_t *r, const char *name, const char *value)
{
    int64_t n;
    if (strcmp(name, "api") == 0) return set_api(r, value);
    if (strcmp(name, "client_id") == 0) return copy(name, value, r->client_id, sizeof r->client_id);
    if (strcmp(name, "topic") == 0) return copy(name, value, r->topic, sizeof r->topic);
    if (strcmp(name, "error") == 0) return set_error(r, value);
    if (strcmp(name, "action") == 0) return set_action(r, value);
    if (strcmp(name, "probability") == 0) {
        char *end;
        double p = strtod(value, &end);
        if (!*value || *end || !(p >= 0 && p <= 1))
            return kiq_error_set("fault rule: probability must be a number from 0 to 1, not '%s'", value);
        r->probability = p;
        return 0;
    }
    if (strcmp(name, "seed") == 0) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(value, &end, 10);
        if (!*value || *end || errno || *value == '-')
            return kiq_error_set("fault rule: seed must be a non-negative integer, not '%s'", value);
        r->seed = s;
        return 0;
    }
    static const struct {
        const char *name;
        int64_t lo, hi;
    } ints[] = {
        {"version", 0, INT16_MAX},    {"min_version", 0, INT16_MAX}, {"max_version", 0, INT16_MAX},
        {"partition", 0, INT32_MAX},  {"delay_ms", 0, INT32_MAX},    {"times", -1, INT64_MAX},
        {"after", 0, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(name, ints[i].name) != 0) continue;
        if (integer(name, value, ints[i].lo, ints[i].hi, &n) != 0) return -1;
        switch (i) {
        case 0: r->min_version = r->max_version = (int16_t)n; break;
        case 1: r->min_version = (int16_t)n; break;
        case 2: r->max_version = (int16_t)n; break;
        case 3: r->partition = (int32_t)n; break;
        case 4:
            r->delay_ms = (int32_t)n;
            if (r->action == (enum kiq_fault_action)NO_ACTION) r->action = KIQ_FAULT_DELAY;
            break;
        case 5: r->times = n; break;
        default: r->after = n; break;
        }
        return 0;
    }
    return kiq_error_set("fault rule: unknown field '%s' (api, version, min_version, max_version, client_id, "
                         "topic, partition, error, delay_ms, action, times, after, probability, seed)", name);
}

int kiq_fault_rule_check(kiq_fault_rule_t *r)
{
    if (r->action == (enum kiq_fault_action)NO_ACTION)
        return kiq_error_set("fault rule: says nothing to do (give error, delay_ms or action)");
    if (r->action == KIQ_FAULT_ERROR && !r->error_code)
        return kiq_error_set("fault rule: action error needs an error");
    if (r->action == KIQ_FAULT_DELAY && !r->delay_ms) return kiq_error_set("fault rule: action delay needs delay_ms");
    if (r->action != KIQ_FAULT_ERROR && r->error_code)
        return kiq_error_set("fault rule: an error goes with action error, not %s", action_names[r->action]);
    if (r->min_version > r->max_version) return kiq_error_set("fault rule: min_version is above max_version");
    if (r->partition >= 0 && !r->topic[0]) return kiq_error_set("fault rule: a partition needs its topic");
    return 0;
}

void kiq_fault_rule_view(const kiq_fault_rule_t *r, const kiq_view_t *v)
{
    if (r->api_key >= 0) {
        const kiq_api_codec_t *c = kiq_api_codec(r->api_key);
        v->string(v->ctx, "api", c ? c->name : "?");
    }
    if (r->min_version > 0) v->number(v->ctx, "min_version", r->min_version);
    if (r->max_version < INT16_MAX) v->number(v->ctx, "max_version", r->max_version);
    if (r->client_id[0]) v->string(v->ctx, "client_id", r->client_id);
    if (r->topic[0]) v->string(v->ctx, "topic", r->topic);
    if (r->partition >= 0) v->number(v->ctx, "partition", r->partition);
    v->string(v->ctx, "action", action_names[r->action]);
    if (r->error_code) v->string(v->ctx, "error", kiq_error_name(r->error_code));
    if (r->delay_ms) v->number(v->ctx, "delay_ms", r->delay_ms);
    if (r->times >= 0) v->number(v->ctx, "times", (double)r->times);
    if (r->after) v->number(v->ctx, "after", (double)r->after);
    if (r->probability < 1) {
        v->number(v->ctx, "probability", r->probability);
        v->number(v->ctx, "seed", (double)r->seed);
    }
}
