/* The inter-broker client's security from Kafka's configs; see peer_security.h. */
#include "security/peer_security.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/error.h"
#include "security/sasl.h"
#include "security/sasl_client.h"

static int credential_option(void *ctx, const char *key, const char *value)
{
    kiq_peer_security_t *s = ctx;
    if (strcmp(key, "username") == 0 && strlen(value) < sizeof s->user) snprintf(s->user, sizeof s->user, "%s", value);
    if (strcmp(key, "password") == 0 && strlen(value) < sizeof s->password)
        snprintf(s->password, sizeof s->password, "%s", value);
    return 0;
}

/* The user and password of the mechanism's JAAS entry, as Kafka's
 * inter-broker login takes them; sasl.jaas.config when it has none. */
static int credentials(kiq_peer_security_t *s, const kiq_config_t *c, const char *mech_config)
{
    const char *mech = s->mechanism;
    enum kiq_config_id id = strcmp(mech, "PLAIN") == 0           ? KIQ_CFG_PLAIN_SASL_JAAS_CONFIG
                            : strcmp(mech, "SCRAM-SHA-256") == 0 ? KIQ_CFG_SCRAM_SHA_256_SASL_JAAS_CONFIG
                                                                 : KIQ_CFG_SCRAM_SHA_512_SASL_JAAS_CONFIG;
    const char *texts[] = {kiq_config_str(c, id), kiq_config_str(c, KIQ_CFG_SASL_JAAS_CONFIG)};
    for (int i = 0; i < 2 && !s->user[0]; i++)
        if (*texts[i] && kiq_sasl_jaas_options(texts[i], credential_option, s) != 0) return -1;
    if (!s->user[0] || !s->password[0])
        return kiq_error_set("%s %s: no username and password to sign in with (in "
                             "listener.name.<listener>.<mechanism>.sasl.jaas.config or sasl.jaas.config)",
                             mech_config, mech);
    return 0;
}

kiq_peer_security_t *kiq_peer_security_new(const kiq_config_t *c, enum kiq_security_protocol protocol,
                                           enum kiq_config_id mechanism_id)
{
    kiq_peer_security_t *s = calloc(1, sizeof *s);
    if (!s) return kiq_error_set("out of memory"), NULL;
    if (protocol == KIQ_SASL_PLAINTEXT || protocol == KIQ_SASL_SSL) {
        const char *mech = kiq_config_str(c, mechanism_id);
        const char *mech_config = kiq_config_defs[mechanism_id].name;
        kiq_sasl_client_t probe;
        if (strlen(mech) >= sizeof s->mechanism || kiq_sasl_client_init(&probe, mech, "", "") != 0) {
            kiq_error_set("%s %s: nodes sign in to each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                          mech_config, mech);
            goto fail;
        }
        snprintf(s->mechanism, sizeof s->mechanism, "%s", mech);
        if (credentials(s, c, mech_config) != 0) goto fail;
        snprintf(s->principal, sizeof s->principal, "User:%s", s->user);
    }
    if ((protocol == KIQ_SSL || protocol == KIQ_SASL_SSL) && !(s->tls = kiq_tls_client_new(c))) goto fail;
    return s;
fail:
    kiq_peer_security_free(s);
    return NULL;
}

void kiq_peer_security_free(kiq_peer_security_t *s)
{
    if (!s) return;
    kiq_tls_free(s->tls);
    OPENSSL_cleanse(s->password, sizeof s->password);
    free(s);
}
