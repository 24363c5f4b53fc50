/* Which broker of the cluster sent a request; see peer_broker.h. */
#include "api/peer_broker.h"

#include <stdlib.h>
#include <string.h>

#include "api/authorize.h"
#include "controller/metadata_cache.h"
#include "security/peer_security.h"
#include "security/sasl.h"

#define BROKER_CLIENT_PREFIX "kafkaiq-broker-"

int32_t kiq_api_peer_broker(kiq_broker_t *b, const kiq_request_t *r)
{
    kiq_str_t cid = r->header.client_id;
    size_t plen = strlen(BROKER_CLIENT_PREFIX);
    if (!b->cluster || !b->metadata || !cid.p || (size_t)cid.len <= plen || (size_t)cid.len > plen + 10 ||
        memcmp(cid.p, BROKER_CLIENT_PREFIX, plen) != 0)
        return -1;
    char digits[12];
    memcpy(digits, cid.p + plen, (size_t)cid.len - plen);
    digits[(size_t)cid.len - plen] = '\0';
    char *end;
    long id = strtol(digits, &end, 10);
    char host[256];
    int port;
    /* with SASL between brokers the sender must also have signed in as
     * the inter-broker user: a client id alone is anyone's to claim */
    const kiq_peer_security_t *sec = b->peer_security;
    const char *principal = r->sasl ? kiq_sasl_principal(r->sasl) : NULL;
    if (sec && sec->principal[0] && (!principal || strcmp(principal, sec->principal) != 0)) return -1;
    if (*end != '\0' || id < 0 || id > INT32_MAX ||
        !kiq_metadata_cache_broker(b->metadata, (int32_t)id, NULL, host, sizeof host, &port))
        return -1;
    /* the client id names a broker; with an authorizer, its principal must
     * hold ClusterAction too (brokers sign in as super users) */
    return kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION) ? (int32_t)id : -1;
}
