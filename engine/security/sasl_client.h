/* The client side of SASL PLAIN and SCRAM-SHA-256/512 (RFC 5802, RFC 7677,
 * no channel binding), as a broker signs in to another broker or a
 * controller: each token to send in turn, the server's answers checked
 * (SCRAM's nonce and, at the end, the server's signature). A
 * kiq_sasl_client_t belongs to the one connection signing in. */
#ifndef KIQ_SECURITY_SASL_CLIENT_H
#define KIQ_SECURITY_SASL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "security/sasl_scram.h"

enum kiq_sasl_client_mech { KIQ_SASL_CLIENT_PLAIN, KIQ_SASL_CLIENT_SCRAM };

typedef struct kiq_sasl_client {
    enum kiq_sasl_client_mech mech;
    enum kiq_scram_mech scram;
    int step; /* tokens made so far */
    const char *user, *password; /* the caller's, for the exchange's life */
    char nonce[48];              /* the client's; preset by tests before the first step */
    char *client_first_bare;
    uint8_t server_signature[KIQ_SCRAM_MAX_KEY];
} kiq_sasl_client_t;

/* For mechanism ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"); -1 with the
 * reason for another one. */
int kiq_sasl_client_init(kiq_sasl_client_t *c, const char *mechanism, const char *user, const char *password);
void kiq_sasl_client_clear(kiq_sasl_client_t *c);
/* The server's last answer in (ignored at the first step): 0 with the next
 * token (malloc'd, *out_len bytes) to send, 1 once the exchange is done
 * and the server proved itself, -1 with the reason for an answer that is
 * malformed or does not follow. */
int kiq_sasl_client_step(kiq_sasl_client_t *c, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

#endif
