/* A fault rule: which requests it picks (API and versions, client id,
 * topic and partition) and what it does to them (answer with a Kafka
 * error, delay, disconnect, or handle and drop the response), how often
 * (`after` picked requests let through first, at most `times` firings, each
 * with `probability` from a generator seeded with `seed`). Language-neutral:
 * the control API (HTTP) and Lua both give its fields as name = text pairs,
 * so one parser reads both. A plain value: whoever holds it owns it. */
#ifndef KIQ_SERVER_FAULT_RULE_H
#define KIQ_SERVER_FAULT_RULE_H

#include <stdint.h>

#include "core/view.h"

enum kiq_fault_action {
    KIQ_FAULT_ERROR,         /* answer with error_code, mirroring the request */
    KIQ_FAULT_DELAY,         /* handle it delay_ms later */
    KIQ_FAULT_DISCONNECT,    /* close the connection; no handler, no response */
    KIQ_FAULT_DROP_RESPONSE, /* handle it, then close without responding */
};

typedef struct kiq_fault_rule {
    int16_t api_key;                  /* -1: any */
    int16_t min_version, max_version; /* inclusive */
    char client_id[256];              /* "": any */
    char topic[250];                  /* "": any */
    int32_t partition;                /* -1: any (a topic is named) */
    enum kiq_fault_action action;
    int16_t error_code;
    int32_t delay_ms; /* the delay, or how long before the error, disconnect or drop */
    int64_t times;    /* firings at most; -1: no limit */
    int64_t after;    /* picked requests let through before the first firing */
    double probability;
    uint64_t seed;
} kiq_fault_rule_t;

/* Any request, no action yet (a rule needs error, delay_ms or action). */
void kiq_fault_rule_init(kiq_fault_rule_t *r);
/* One field by name, from text: api (a name such as "Produce", or a key),
 * version, min_version, max_version, client_id, topic, partition, error
 * (Kafka's name such as "NOT_LEADER_OR_FOLLOWER", or a code), delay_ms,
 * action ("error", "delay", "disconnect", "drop_response"), times, after,
 * probability (0 to 1), seed. 0, or -1 with the reason (kiq_error_set). */
int kiq_fault_rule_set(kiq_fault_rule_t *r, const char *name, const char *value);
/* After the fields: 0 when the rule says what to do, else -1 with why. */
int kiq_fault_rule_check(kiq_fault_rule_t *r);
/* The rule's fields by the names kiq_fault_rule_set reads (those set). */
void kiq_fault_rule_view(const kiq_fault_rule_t *r, const kiq_view_t *v);
/* "error", "delay", "disconnect", "drop_response". */
const char *kiq_fault_action_name(enum kiq_fault_action a);

#endif
