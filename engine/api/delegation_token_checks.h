/* What the four delegation token requests check first, as Kafka's
 * broker does (allowTokenRequests): only a connection authenticated with
 * SASL other than by a token may ask (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
 * The tokens are the active controller's: in a cluster a broker forwards
 * the request there naming the client in kafkaiq_requester, which the
 * controller honours from a node (ClusterAction on the control plane).
 * On handler threads. */
#ifndef KIQ_API_DELEGATION_TOKEN_CHECKS_H
#define KIQ_API_DELEGATION_TOKEN_CHECKS_H

#include "api/api.h"

/* 0 or the error to answer, with the requester's principal (Type:name;
 * User:ANONYMOUS on a connection without SASL; the one a forwarding
 * broker named) in *principal either way */
int16_t kiq_dtoken_request_check(kiq_broker_t *b, kiq_request_t *r, kiq_str_t requester, const char **principal);
#endif
