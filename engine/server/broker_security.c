/* The listeners' TLS and SASL, and how this node reaches the others'; see broker_security.h. */
#include "server/broker_security.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "controller/controller.h"
#include "controller/delegation_tokens.h"
#include "controller/metadata_cache.h"
#include "core/error.h"
#include "core/say.h"
#include "security/peer_security.h"
#include "security/authorizer.h"
#include "security/sasl.h"
#include "security/tls.h"

/* Handler threads: SCRAM credentials are the metadata image's, as this
 * node's controller holds it, or on a broker that is no voter as the
 * controller last sent them. */
static int scram_lookup(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    kiq_broker_t *b = ctx;
    if (b->controller) return kiq_controller_scram_credential(b->controller, m, user, out);
    return b->metadata ? kiq_metadata_cache_scram(b->metadata, m, user, out) : -1;
}

/* Brokers reach each other on the client listener: the inter-broker
 * listener and protocol, where configured, must be that one's. */
static int inter_broker_check(const kiq_config_t *config, const kiq_listener_t *data)
{
    const char *ib = kiq_config_str(config, KIQ_CFG_INTER_BROKER_LISTENER_NAME);
    bool ibp_default;
    const char *ibp = kiq_config_text(config, KIQ_CFG_SECURITY_INTER_BROKER_PROTOCOL, &ibp_default);
    const char *name = kiq_security_protocol_name(data->protocol);
    if (*ib && strcasecmp(ib, data->name) != 0)
        return kiq_error_set("inter.broker.listener.name %s: brokers reach each other on the client listener, %s",
                             ib, data->name);
    if (!ibp_default && strcasecmp(ibp, name) != 0)
        return kiq_error_set("security.inter.broker.protocol %s: the client listener %s, which brokers reach each "
                             "other on, is %s", ibp, data->name, name);
    return 0;
}

/* The control-plane listener (controller.listener.names' protocol): its
 * TLS and SASL from the same ssl.* and SASL configs, and the client side
 * every node reaches the controllers' (and the controller the brokers')
 * control-plane listeners with, signing in with
 * sasl.mechanism.controller.protocol. */
static int control_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *control)
{
    bool sasl = control->protocol == KIQ_SASL_PLAINTEXT || control->protocol == KIQ_SASL_SSL;
    if (sasl) {
        if (!(b->control_sasl = kiq_sasl_new(config))) return -1;
        kiq_sasl_set_scram_lookup(b->control_sasl, scram_lookup, b);
    }
    if ((control->protocol == KIQ_SSL || control->protocol == KIQ_SASL_SSL) && !(b->control_tls = kiq_tls_new(config)))
        return -1;
    if (b->cluster &&
        !(b->controller_security =
              kiq_peer_security_new(config, control->protocol, KIQ_CFG_SASL_MECHANISM_CONTROLLER_PROTOCOL)))
        return -1;
    KIQ_INFO("listener %s (control plane): %s", control->name, kiq_security_protocol_name(control->protocol));
    return 0;
}

static int take_nothing(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred)
{
    return 0;
}

/* Handler threads: the bindings as this node's controller last published
 * them from its image, or on a broker that is no voter as the controller
 * last sent them. */
static kiq_acl_snapshot_t *acls_now(void *ctx)
{
    kiq_broker_t *b = ctx;
    return b->controller ? kiq_controller_acls(b->controller) : kiq_metadata_cache_acls(b->metadata);
}

/* Handler threads: delegation tokens are the image's too, or on a broker
 * that is no voter as the controller last sent them (the HMAC made here
 * from delegation.token.secret.key, the same on every node). */
static int token_lookup(void *ctx, enum kiq_scram_mech m, const char *token_id, kiq_scram_credential_t *out,
                        char *owner, size_t cap, int64_t *expiry_ms)
{
    kiq_broker_t *b = ctx;
    if (b->controller) return kiq_controller_token_credential(b->controller, m, token_id, out, owner, cap, expiry_ms);
    const char *secret = kiq_config_str(b->config, KIQ_CFG_DELEGATION_TOKEN_SECRET_KEY);
    return *secret && b->metadata && kiq_metadata_cache_token(b->metadata, token_id, owner, cap, expiry_ms) == 0
               ? kiq_dtoken_scram_credential(secret, m, token_id, out)
               : -1;
}

int kiq_broker_security_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *data,
                              const kiq_listener_t *control)
{
    /* refused at start, not when the controller first writes them */
    if (kiq_scram_add_spec(kiq_config_str(config, KIQ_CFG_ADD_SCRAM), take_nothing, NULL) != 0) {
        char why[300];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        return kiq_error_set("kafkaiq.add.scram: %s", why);
    }
    if (kiq_authorizer_new(config, acls_now, b, &b->authorizer) != 0) return -1;
    if (control && control->protocol != KIQ_PLAINTEXT && control_setup(b, config, control) != 0) return -1;
    if (!data) return 0;
    if (inter_broker_check(config, data) != 0) return -1;
    if (data->protocol == KIQ_PLAINTEXT) return 0;
    b->protocol = data->protocol;
    const char *name = kiq_security_protocol_name(data->protocol);
    bool sasl = data->protocol == KIQ_SASL_PLAINTEXT || data->protocol == KIQ_SASL_SSL;
    /* the lines to the other brokers' client listeners: this broker's
     * inter-broker client; a lone combined node has no other brokers
     * unless some join it, so it needs no inter-broker user of its own */
    bool mech_default;
    kiq_config_text(config, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL, &mech_default);
    bool lone = b->nvoters == 1 && b->roles.controller;
    if (b->cluster && !(lone && sasl && mech_default) &&
        !(b->peer_security = kiq_peer_security_new(config, data->protocol, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL)))
        return -1;
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
