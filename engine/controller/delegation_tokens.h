/* Delegation tokens (KIP-48) as the metadata image keeps them, from
 * DelegationTokenRecords and RemoveDelegationTokenRecords: sorted by token
 * id. A kiq_dtoken_store_t is part of the image that holds it, guarded as
 * that image is; kiq_dtoken_hmac is pure. */
#ifndef KIQ_CONTROLLER_DELEGATION_TOKENS_H
#define KIQ_CONTROLLER_DELEGATION_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "proto/messages.h"
#include "security/sasl_scram.h"

enum { KIQ_DTOKEN_HMAC_LEN = 64 };

typedef struct kiq_dtoken {
    char *id, *owner, *requester; /* principals as Type:name */
    char **renewers;
    int nrenewers;
    int64_t issue_ms, max_ms, expiry_ms;
} kiq_dtoken_t;

typedef struct kiq_dtoken_store {
    kiq_dtoken_t *tokens;
    size_t n, cap;
} kiq_dtoken_store_t;

void kiq_dtoken_store_clear(kiq_dtoken_store_t *s);
/* The record's token, added or replacing the one of its id: 0, or -1 with
 * the reason (a record without an id, out of memory). */
int kiq_dtoken_store_put(kiq_dtoken_store_t *s, const kiq_delegation_token_record_t *r);
/* 0, or 1 when there is no such token */
int kiq_dtoken_store_remove(kiq_dtoken_store_t *s, const char *id, size_t len);
const kiq_dtoken_t *kiq_dtoken_store_get(const kiq_dtoken_store_t *s, const char *id, size_t len);
/* The token whose HMAC under secret is hmac, NULL when none. */
const kiq_dtoken_t *kiq_dtoken_store_by_hmac(const kiq_dtoken_store_t *s, const char *secret, const uint8_t *hmac,
                                             size_t len);

/* Kafka's token HMAC: HMAC-SHA512 of the token id keyed by
 * delegation.token.secret.key; its base64 is the token's SCRAM password. */
void kiq_dtoken_hmac(const char *secret, const char *id, uint8_t out[KIQ_DTOKEN_HMAC_LEN]);
/* A principal, Type:name (a bare name is a User), as the wire's two strings in a */
void kiq_dtoken_principal_split(kiq_arena_t *a, const char *principal, kiq_str_t *type, kiq_str_t *name);
/* The wire's two strings as Type:name */
void kiq_dtoken_principal_join(char *out, size_t cap, kiq_str_t type, kiq_str_t name);
/* The SCRAM credential a client signing in with token_id proves (its
 * password the base64 of the token's HMAC; a fresh salt, Kafka's minimum
 * iterations): 0, or -1. */
int kiq_dtoken_scram_credential(const char *secret, enum kiq_scram_mech m, const char *token_id,
                                kiq_scram_credential_t *out);
/* principal is owner, requester or a renewer of t */
int kiq_dtoken_may_renew(const kiq_dtoken_t *t, const char *principal);

#endif
