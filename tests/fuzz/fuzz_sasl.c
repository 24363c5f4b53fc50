/* libFuzzer target: the SASL parsers a client reaches before it has
 * authenticated. The first byte picks one: a PLAIN token through a
 * session, a SCRAM client-first message, a SCRAM client-final message
 * after a valid first one (SHA-256 or SHA-512), a JAAS text (the
 * broker's own config, parsed the same way), an OAUTHBEARER client
 * message through a session, a token alone through Kafka's unsecured
 * validator (base64url, JSON, claims), or what a peer's SCRAM server
 * answers a broker signing in to it (its first message, then, when that
 * was taken, the rest as its final one). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/clock.h"
#include "security/sasl.h"
#include "security/sasl_client.h"
#include "security/sasl_oauth.h"

static kiq_scram_credential_t creds[2];

static int lookup(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    if (strcmp(user, "user") != 0) return -1;
    *out = creds[m];
    return 0;
}

static int ignore_user(void *ctx, const char *user, const char *password) { return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static kiq_sasl_t *sasl;
    static kiq_oauth_t *oauth;
    if (!sasl) {
        kiq_config_t *c = kiq_config_new();
        kiq_config_set(c, "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER");
        kiq_config_set(c, "oauthbearer.sasl.jaas.config", "M required unsecuredValidatorRequiredScope=\"a,b\";");
        kiq_config_set(c, "plain.sasl.jaas.config",
                       "org.apache.kafka.common.security.plain.PlainLoginModule required user_user=\"pencil\";");
        sasl = kiq_sasl_new(c);
        oauth = kiq_oauth_new(c);
        kiq_config_free(c);
        if (!sasl || !oauth) abort();
        kiq_sasl_set_scram_lookup(sasl, lookup, NULL);
        for (int m = 0; m < 2; m++)
            kiq_scram_credential_make((enum kiq_scram_mech)m, "pencil", 6, (const uint8_t *)"saltsalt", 8, 4096, &creds[m]);
    }
    if (size < 1) return 0;
    int pick = data[0] % 8;
    data++, size--;
    if (pick == 6) {
        char *token = malloc(size ? size : 1);
        memcpy(token, data, size);
        kiq_oauth_token_t t;
        kiq_oauth_validate(oauth, token, size, kiq_clock_wall_ms(), &t);
        free(token);
        return 0;
    }
    if (pick == 7) {
        /* the server's first message up to a newline, its final one after */
        const uint8_t *nl = memchr(data, '\n', size);
        size_t first = nl ? (size_t)(nl - data) : size;
        kiq_sasl_client_t c;
        kiq_sasl_client_init(&c, "SCRAM-SHA-256", "user", "pencil");
        strcpy(c.nonce, "fuzznonce"); /* fixed, so inputs can extend it */
        uint8_t *in = malloc(size ? size : 1), *out;
        size_t out_len;
        memcpy(in, data, size);
        if (kiq_sasl_client_step(&c, NULL, 0, &out, &out_len) != 0) abort();
        free(out);
        if (kiq_sasl_client_step(&c, in, first, &out, &out_len) == 0) {
            free(out);
            size_t rest = nl ? size - first - 1 : 0;
            if (kiq_sasl_client_step(&c, in + size - rest, rest, &out, &out_len) == 0) free(out);
        }
        free(in);
        kiq_sasl_client_clear(&c);
        return 0;
    }
    if (pick == 4) {
        char *text = malloc(size + 1);
        memcpy(text, data, size);
        text[size] = 0;
        kiq_sasl_jaas_users(text, ignore_user, NULL);
        free(text);
        return 0;
    }
    static const char *const mechs[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-256", "SCRAM-SHA-512", NULL,
                                        "OAUTHBEARER"};
    kiq_sasl_session_t *ss = kiq_sasl_session_new(sasl);
    kiq_sasl_handshake(ss, mechs[pick], strlen(mechs[pick]));
    uint8_t *out;
    size_t out_len;
    if (pick == 2 || pick == 3) {
        static const char first[] = "n,,n=user,r=fuzznonce";
        if (kiq_sasl_authenticate(ss, (const uint8_t *)first, sizeof first - 1, &out, &out_len) != 0) abort();
        free(out);
    }
    /* a copy of exactly size bytes: reads past it are caught */
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    if (kiq_sasl_authenticate(ss, in, size, &out, &out_len) == 0) {
        free(out);
        /* a refused token's error answer, then the client's \x01 */
        if (pick == 5 && kiq_sasl_authenticate(ss, (const uint8_t *)"\x01", 1, &out, &out_len) == 0) free(out);
    }
    free(in);
    kiq_sasl_session_unref(ss);
    return 0;
}
