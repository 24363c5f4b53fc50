/* The client listener's TLS and SASL; see broker_security.h. */
#include "server/broker_security.h"

#include "controller/controller.h"
#include "core/error.h"
#include "core/say.h"
#include "security/authorizer.h"
#include "security/sasl.h"
#include "security/tls.h"

/* Handler threads: SCRAM credentials are the metadata image's, as this
 * node's controller holds it (none without one). */
static int scram_lookup(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    kiq_broker_t *b = ctx;
    return b->controller ? kiq_controller_scram_credential(b->controller, m, user, out) : -1;
}

/* Handler threads: the bindings are the metadata image's, as this node's
 * controller holds it; a node without one has none. */
static void acls_with(void *ctx, void (*fn)(const kiq_acl_store_t *s, void *arg), void *arg)
{
    kiq_broker_t *b = ctx;
    if (b->controller) {
        kiq_controller_with_acls(b->controller, fn, arg);
        return;
    }
    static const kiq_acl_store_t none;
    fn(&none, arg);
}

int kiq_broker_security_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *data,
                              const kiq_listener_t *control)
{
    if (kiq_authorizer_new(config, acls_with, b, &b->authorizer) != 0) return -1;
    /* the bindings are this node's controller's; brokers forward to each
     * other on the unchecked control plane */
    if (b->authorizer && b->cluster && (b->nvoters != 1 || !b->roles.controller))
        return kiq_error_set("authorizer.class.name: authorization is served on a standalone broker or a single "
                             "combined node only");
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
    }
    if (data->protocol == KIQ_SASL_PLAINTEXT) return 0;
    if (!(b->tls = kiq_tls_new(config))) return -1;
    /* no kernel TLS: a fetch's file data is read and encrypted, not sent with sendfile */
    KIQ_INFO("listener %s: %s through OpenSSL (fetches copied through user space, no sendfile)", data->name, name);
    return 0;
}
