/* The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC
 * 7677) without channel binding, as Kafka serves them: the client's first
 * message names the user, whose stored credential answers with salt and
 * iterations; the client's proof is checked against the stored key and
 * the server signs the exchange. A kiq_scram_server_t belongs to the one
 * connection it authenticates (see sasl.h for who holds it when). */
#ifndef KIQ_SECURITY_SASL_SCRAM_H
#define KIQ_SECURITY_SASL_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kiq_scram_mech { KIQ_SCRAM_SHA_256, KIQ_SCRAM_SHA_512 };
enum { KIQ_SCRAM_MAX_KEY = 64, KIQ_SCRAM_MAX_SALT = 64, KIQ_SCRAM_MIN_ITERATIONS = 4096,
       KIQ_SCRAM_MAX_ITERATIONS = 16384 };

/* What a server keeps of a password (Kafka's ScramCredential). A value. */
typedef struct kiq_scram_credential {
    int32_t iterations;
    uint8_t salt[KIQ_SCRAM_MAX_SALT];
    size_t salt_len;
    uint8_t stored_key[KIQ_SCRAM_MAX_KEY], server_key[KIQ_SCRAM_MAX_KEY]; /* the digest's size of each */
} kiq_scram_credential_t;

/* "SCRAM-SHA-256" / "SCRAM-SHA-512" */
const char *kiq_scram_mech_name(enum kiq_scram_mech m);
/* -1 when name is neither */
int kiq_scram_mech_of(const char *name, size_t len);
size_t kiq_scram_key_len(enum kiq_scram_mech m);
/* The credential of password with salt and iterations (PBKDF2); -1 with
 * the reason for a salt or count out of range. */
int kiq_scram_credential_make(enum kiq_scram_mech m, const char *password, size_t password_len, const uint8_t *salt,
                              size_t salt_len, int32_t iterations, kiq_scram_credential_t *out);

/* The same from the salted password (PBKDF2's output, the digest's size),
 * as AlterUserScramCredentials sends it. */
int kiq_scram_credential_from_salted(enum kiq_scram_mech m, const uint8_t *salted, size_t salted_len,
                                     const uint8_t *salt, size_t salt_len, int32_t iterations,
                                     kiq_scram_credential_t *out);

/* Each credential of a kafka-storage format --add-scram style text,
 * MECHANISM=[name=NAME,password=PASS(,iterations=N)] entries separated by
 * ';' (a fresh random salt each), through fn; -1 with the reason for an
 * entry that does not parse or a count out of range (before any fn call
 * is made for it), or fn's failure. */
int kiq_scram_add_spec(const char *spec,
                       int (*fn)(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred),
                       void *ctx);

/* A user's credential for the mechanism into *out: 0, or -1 when it has none.
 * With tokenauth set in the exchange, user is a delegation token's id. */
typedef int (*kiq_scram_lookup_fn)(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out);

enum kiq_scram_state { KIQ_SCRAM_FIRST, KIQ_SCRAM_FINAL, KIQ_SCRAM_DONE };

typedef struct kiq_scram_server {
    enum kiq_scram_mech mech;
    enum kiq_scram_state state;
    char user[256];
    bool tokenauth; /* Kafka's tokenauth=true extension: user is a delegation token's id */
    char server_nonce[48]; /* made at the first message unless preset (tests) */
    char gs2_header[300];
    char *client_first_bare, *server_first; /* kept for the AuthMessage */
    char nonce[400];                        /* the client's and the server's */
    kiq_scram_credential_t cred;
} kiq_scram_server_t;

void kiq_scram_server_init(kiq_scram_server_t *s, enum kiq_scram_mech m);
void kiq_scram_server_clear(kiq_scram_server_t *s);
/* One client message in; the server's answer (malloc'd, *out_len bytes)
 * out. 0 while the exchange goes on or once it has succeeded (state DONE,
 * user authenticated); -1 for a malformed message (the reason in the error
 * slot) and 1 for a user without a credential or a wrong proof. */
int kiq_scram_step(kiq_scram_server_t *s, const uint8_t *in, size_t len, kiq_scram_lookup_fn lookup, void *ctx,
                   char **out, size_t *out_len);

#endif
