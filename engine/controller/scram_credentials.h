/* The SCRAM credentials of a metadata image (UserScramCredentialRecord,
 * RemoveUserScramCredentialRecord): one per user and mechanism. Part of
 * the image that holds it, guarded as that image is. */
#ifndef KIQ_CONTROLLER_SCRAM_CREDENTIALS_H
#define KIQ_CONTROLLER_SCRAM_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "security/sasl_scram.h"

/* Kafka's ScramMechanism ids on the wire and in records */
enum { KIQ_SCRAM_WIRE_SHA_256 = 1, KIQ_SCRAM_WIRE_SHA_512 = 2 };

typedef struct kiq_scram_entry {
    char *user;
    int8_t mechanism; /* Kafka's id */
    kiq_scram_credential_t cred;
} kiq_scram_entry_t;

typedef struct kiq_scram_store {
    kiq_scram_entry_t *entries; /* by user, then mechanism */
    size_t n, cap;
} kiq_scram_store_t;

/* The mechanism of a Kafka id; -1 for an unknown one. */
int kiq_scram_mech_of_wire(int8_t id);

void kiq_scram_store_clear(kiq_scram_store_t *s);
/* Sets (or replaces) user's credential for mechanism; -1 when out of memory. */
int kiq_scram_store_put(kiq_scram_store_t *s, const char *user, size_t len, int8_t mechanism,
                        const kiq_scram_credential_t *cred);
/* 0 when removed, 1 when there was none. */
int kiq_scram_store_remove(kiq_scram_store_t *s, const char *user, size_t len, int8_t mechanism);
const kiq_scram_entry_t *kiq_scram_store_get(const kiq_scram_store_t *s, const char *user, size_t len,
                                             int8_t mechanism);

#endif
