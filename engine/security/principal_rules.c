/* ssl.principal.mapping.rules on PCRE2 (Java's regex syntax for these
 * patterns is within it); see principal_rules.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "security/principal_rules.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct rule {
    pcre2_code *re; /* NULL: DEFAULT */
    char *replacement;
    char fold; /* 'L', 'U' or 0 */
} rule_t;

struct kiq_principal_rules {
    rule_t *rules;
    size_t n;
};

/* Up to the next unescaped '/', the escapes kept for the regex and taken
 * out of the replacement (unescape). NULL when there is none. */
static char *until_slash(const char **p, bool unescape)
{
    const char *s = *p;
    size_t n = 0;
    char *out = malloc(strlen(s) + 1);
    if (!out) return NULL;
    for (; *s && *s != '/'; s++) {
        if (*s == '\\' && s[1]) {
            if (!unescape) out[n++] = *s;
            s++;
        }
        out[n++] = *s;
    }
    if (*s != '/') {
        free(out);
        return NULL;
    }
    out[n] = 0;
    *p = s + 1;
    return out;
}

kiq_principal_rules_t *kiq_principal_rules_new(const char *spec)
{
    kiq_principal_rules_t *r = calloc(1, sizeof *r);
    if (!r) return kiq_error_set("out of memory"), NULL;
    const char *p = spec;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        rule_t rule = {0};
        if (strncmp(p, "DEFAULT", 7) == 0) {
            p += 7;
        } else if (strncmp(p, "RULE:", 5) == 0) {
            p += 5;
            char *pattern = until_slash(&p, false);
            if (pattern) rule.replacement = until_slash(&p, true);
            if (!pattern || !rule.replacement) {
                free(pattern);
                free(rule.replacement);
                kiq_principal_rules_free(r);
                return kiq_error_set("ssl.principal.mapping.rules: RULE: must look like RULE:pattern/replacement/[LU]"),
                       NULL;
            }
            int err;
            PCRE2_SIZE at;
            rule.re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED | PCRE2_ENDANCHORED,
                                    &err, &at, NULL);
            free(pattern);
            if (!rule.re) {
                PCRE2_UCHAR msg[120];
                pcre2_get_error_message(err, msg, sizeof msg);
                free(rule.replacement);
                kiq_principal_rules_free(r);
                return kiq_error_set("ssl.principal.mapping.rules: bad pattern at %zu: %s", (size_t)at, msg), NULL;
            }
            if (*p == 'L' || *p == 'U') rule.fold = *p++;
        } else {
            kiq_principal_rules_free(r);
            return kiq_error_set("ssl.principal.mapping.rules: '%.30s' is neither RULE: nor DEFAULT", p), NULL;
        }
        rule_t *more = realloc(r->rules, (r->n + 1) * sizeof *more);
        if (!more) {
            pcre2_code_free(rule.re);
            free(rule.replacement);
            kiq_principal_rules_free(r);
            return kiq_error_set("out of memory"), NULL;
        }
        r->rules = more;
        r->rules[r->n++] = rule;
        /* anything up to the separator is ignored, as Kafka's parser does */
        while (*p && *p != ',' && *p != '\n') p++;
        if (*p) p++;
    }
    if (!r->n) {
        kiq_principal_rules_free(r);
        return kiq_error_set("ssl.principal.mapping.rules: empty"), NULL;
    }
    return r;
}

void kiq_principal_rules_free(kiq_principal_rules_t *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        pcre2_code_free(r->rules[i].re);
        free(r->rules[i].replacement);
    }
    free(r->rules);
    free(r);
}

/* The replacement with $n put in from the match. */
static int substitute(const rule_t *rule, const char *dn, pcre2_match_data *md, char *out, size_t out_len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    uint32_t groups = pcre2_get_ovector_count(md);
    size_t n = 0;
    for (const char *s = rule->replacement; *s; s++) {
        const char *piece = s;
        size_t len = 1;
        if (*s == '$' && isdigit((unsigned char)s[1])) {
            uint32_t g = (uint32_t)(s[1] - '0');
            s++;
            if (g >= groups || ov[2 * g] == PCRE2_UNSET) {
                len = 0;
            } else {
                piece = dn + ov[2 * g];
                len = ov[2 * g + 1] - ov[2 * g];
            }
        }
        if (n + len + 1 > out_len) return kiq_error_set("principal name too long");
        for (size_t i = 0; i < len; i++)
            out[n++] = rule->fold == 'L' ? (char)tolower((unsigned char)piece[i])
                       : rule->fold == 'U' ? (char)toupper((unsigned char)piece[i])
                                           : piece[i];
    }
    out[n] = 0;
    return 0;
}

int kiq_principal_rules_apply(const kiq_principal_rules_t *r, const char *dn, char *out, size_t out_len)
{
    for (size_t i = 0; i < r->n; i++) {
        const rule_t *rule = &r->rules[i];
        if (!rule->re) {
            if (strlen(dn) + 1 > out_len) return kiq_error_set("principal name too long");
            strcpy(out, dn);
            return 0;
        }
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(rule->re, NULL);
        if (!md) return kiq_error_set("out of memory");
        int rc = pcre2_match(rule->re, (PCRE2_SPTR)dn, strlen(dn), 0, 0, md, NULL);
        int sub = rc > 0 ? substitute(rule, dn, md, out, out_len) : 1;
        pcre2_match_data_free(md);
        if (sub <= 0) return sub;
    }
    return kiq_error_set("No rules apply to %s, rules %zu", dn, r->n);
}
