/* Kafka's ssl.principal.mapping.rules: a list of RULE:pattern/replacement/[LU]
 * and DEFAULT, tried in order on a client certificate's distinguished name
 * (RFC 2253 form); the first rule whose pattern matches the whole name
 * gives the principal's name ($1... the pattern's groups; L lower case, U
 * upper case), DEFAULT the name unchanged. Built once with the listener's
 * TLS context, read-only after. */
#ifndef KIQ_SECURITY_PRINCIPAL_RULES_H
#define KIQ_SECURITY_PRINCIPAL_RULES_H

#include <stddef.h>

typedef struct kiq_principal_rules kiq_principal_rules_t;

/* NULL with the reason when a rule does not parse or its pattern does not
 * compile. */
kiq_principal_rules_t *kiq_principal_rules_new(const char *spec);
void kiq_principal_rules_free(kiq_principal_rules_t *r);
/* The name for dn into out: 0, or -1 when no rule matches (Kafka refuses
 * the connection then). */
int kiq_principal_rules_apply(const kiq_principal_rules_t *r, const char *dn, char *out, size_t out_len);

#endif
