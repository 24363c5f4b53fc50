/* What the four delegation token requests check first, as Kafka's
 * broker does (allowTokenRequests): only a connection authenticated with
 * SASL other than by a token may ask (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
 * the tokens are the controller's, of this node (NOT_CONTROLLER on a node
 * without one: not forwarded yet). On handler threads. */
#ifndef KIQ_API_DELEGATION_TOKEN_CHECKS_H
#define KIQ_API_DELEGATION_TOKEN_CHECKS_H

#include "api/api.h"

/* 0 or the error to answer, with the requester's principal (Type:name;
 * User:ANONYMOUS on a connection without SASL) in *principal either way */
int16_t kiq_dtoken_request_check(kiq_broker_t *b, kiq_request_t *r, const char **principal);

#endif
