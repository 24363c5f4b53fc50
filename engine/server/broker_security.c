/* The client listener's TLS and SASL; see broker_security.h. */
#include "server/broker_security.h"

#include "controller/controller.h"
#include "core/error.h"
#include "core/say.h"
#include "security/sasl.h"
#include "security/tls.h"

/* Handler threads: SCRAM credentials are the metadata image's, as this
 * node's controller holds it (none without one). */
static int scram_lookup(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    kiq_broker_t *b = ctx;
    return b->controller ? kiq_controller_scram_credential(b->controller, m, user, out) : -1;
}

/* Handler threads: delegation tokens are the image's too. */
static int token_lookup(void *ctx, enum kiq_scram_mech m, const char *token_id, kiq_scram_credential_t *out,
                        char *owner, size_t cap, int64_t *expiry_ms)
{
    kiq_broker_t *b = ctx;
    return b->controller ? kiq_controller_token_credential(b->controller, m, token_id, out, owner, cap, expiry_ms) : -1;
}

int kiq_broker_security_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *data,
                              const kiq_listener_t *control)
{
    if (control && control->protocol != KIQ_PLAINTEXT)
        return kiq_error_set("listener %s: the control plane is PLAINTEXT only for now", control->name);
    if (!data || data->protocol == KIQ_PLAINTEXT) return 0;
    b->protocol = data->protocol;
    const char *name = kiq_security_protocol_name(data->protocol);
    /* peers fetch and send markers in plaintext to this listener */
    if (b->cluster && (b->nvoters != 1 || !b->roles.controller))
        return kiq_error_set("listener %s: %s is served on a standalone broker or a single combined node only "
                             "(brokers reach each other in plaintext on it)", data->name, name);
    bool sasl = data->protocol == KIQ_SASL_PLAINTEXT || data->protocol == KIQ_SASL_SSL;
    if (sasl) {
        if (!(b->sasl = kiq_sasl_new(config))) return -1;
        kiq_sasl_set_scram_lookup(b->sasl, scram_lookup, b);
        kiq_sasl_set_token_lookup(b->sasl, token_lookup, b);
    }
    if (data->protocol == KIQ_SASL_PLAINTEXT) return 0;
    if (!(b->tls = kiq_tls_new(config))) return -1;
    /* no kernel TLS: a fetch's file data is read and encrypted, not sent with sendfile */
    KIQ_INFO("listener %s: %s through OpenSSL (fetches copied through user space, no sendfile)", data->name, name);
    return 0;
}
