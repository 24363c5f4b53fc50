/* Parsing of listeners and controller.quorum.voters; see listeners.h. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/listeners.h"
#include "core/error.h"

/* "host:port" (host may be empty or a bracketed IPv6 address) */
static int parse_host_port(const char *s, size_t len, char *host, size_t host_len, int *port, const char *what)
{
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--)
        if (s[i - 1] == ':') {
            colon = s + i - 1;
            break;
        }
    if (!colon) return kiq_error_set("%s: '%.*s' has no port", what, (int)len, s);
    char digits[8];
    size_t dl = (size_t)(s + len - colon - 1);
    if (dl == 0 || dl >= sizeof digits) return kiq_error_set("%s: bad port in '%.*s'", what, (int)len, s);
    memcpy(digits, colon + 1, dl);
    digits[dl] = 0;
    char *end;
    long p = strtol(digits, &end, 10);
    if (*end || p < 0 || p > 65535) return kiq_error_set("%s: bad port in '%.*s'", what, (int)len, s);
    size_t hl = (size_t)(colon - s);
    if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= host_len) return kiq_error_set("%s: host too long in '%.*s'", what, (int)len, s);
    memcpy(host, s, hl);
    host[hl] = 0;
    *port = (int)p;
    return 0;
}

int kiq_listeners_parse(const char *spec, kiq_listener_t *out, int max, int *n)
{
    *n = 0;
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *e = end;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        const char *sep = NULL;
        for (const char *q = p; q + 3 <= e; q++)
            if (memcmp(q, "://", 3) == 0) {
                sep = q;
                break;
            }
        if (!sep || sep == p) return kiq_error_set("listeners: '%.*s' must look like NAME://host:port", (int)(e - p), p);
        if (*n >= max) return kiq_error_set("listeners: more than %d entries", max);
        kiq_listener_t *l = &out[*n];
        size_t nl = (size_t)(sep - p);
        if (nl >= sizeof l->name) return kiq_error_set("listeners: name too long in '%.*s'", (int)(e - p), p);
        memcpy(l->name, p, nl);
        l->name[nl] = 0;
        for (int i = 0; i < *n; i++)
            if (strcmp(out[i].name, l->name) == 0) return kiq_error_set("listeners: %s is listed twice", l->name);
        if (parse_host_port(sep + 3, (size_t)(e - sep - 3), l->host, sizeof l->host, &l->port, "listeners") != 0)
            return -1;
        (*n)++;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return kiq_error_set("listeners: empty");
    return 0;
}

static const char *const protocol_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

const char *kiq_security_protocol_name(enum kiq_security_protocol p) { return protocol_names[p]; }

int kiq_listeners_protocols(const kiq_config_t *c, kiq_listener_t *all, int n)
{
    const char *map = kiq_config_str(c, KIQ_CFG_LISTENER_SECURITY_PROTOCOL_MAP);
    bool is_default;
    kiq_config_text(c, KIQ_CFG_LISTENER_SECURITY_PROTOCOL_MAP, &is_default);
    for (int i = 0; i < n; i++) {
        bool found = false;
        size_t nl = strlen(all[i].name);
        for (const char *p = map; *p;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            while (len && *p == ' ') p++, len--;
            while (len && p[len - 1] == ' ') len--;
            const char *colon = memchr(p, ':', len);
            if (!colon)
                return kiq_error_set("listener.security.protocol.map: '%.*s' must look like NAME:PROTOCOL", (int)len, p);
            size_t kl = (size_t)(colon - p), vl = len - kl - 1;
            if (kl == nl && strncasecmp(p, all[i].name, nl) == 0) {
                int k = 0;
                while (k < 4 && !(strlen(protocol_names[k]) == vl && strncasecmp(colon + 1, protocol_names[k], vl) == 0))
                    k++;
                if (k == 4)
                    return kiq_error_set("listener.security.protocol.map: unknown security protocol '%.*s' "
                                         "(PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", (int)vl, colon + 1);
                all[i].protocol = (enum kiq_security_protocol)k;
                found = true;
            }
            p = comma ? comma + 1 : p + strlen(p);
        }
        if (!found && !is_default)
            return kiq_error_set("listener.security.protocol.map: no security protocol for listener %s", all[i].name);
        if (!found) all[i].protocol = KIQ_PLAINTEXT;
    }
    return 0;
}

int kiq_listeners_pick(const kiq_config_t *c, const kiq_listener_t *all, int n, bool need_data,
                       const kiq_listener_t **data, const kiq_listener_t **control)
{
    const char *cp = kiq_config_str(c, KIQ_CFG_CONTROL_PLANE_LISTENER_NAME);
    *data = *control = NULL;
    for (int i = 0; i < n; i++) {
        if (*cp && strcmp(all[i].name, cp) == 0) *control = &all[i];
        else if (!*data) *data = &all[i];
    }
    if (*cp && !*control) return kiq_error_set("control.plane.listener.name: no listener named %s", cp);
    if (!*data && need_data) return kiq_error_set("listeners: no listener for clients besides the control plane");
    return 0;
}

int kiq_voters_parse(const char *spec, kiq_voter_t *out, int max, int *n)
{
    *n = 0;
    if (!*spec) return 1;
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *at = memchr(p, '@', len);
        char *end;
        long v = strtol(p, &end, 10);
        if (!at || end != at || v < 0 || v > INT32_MAX)
            return kiq_error_set("controller.quorum.voters: '%.*s' must look like id@host:port", (int)len, p);
        if (*n == max) return kiq_error_set("controller.quorum.voters: more than %d voters", max);
        kiq_voter_t *vt = &out[*n];
        vt->id = (int32_t)v;
        if (parse_host_port(at + 1, len - (size_t)(at + 1 - p), vt->host, sizeof vt->host, &vt->port,
                            "controller.quorum.voters") != 0)
            return -1;
        if (kiq_voter_of(out, *n, vt->id))
            return kiq_error_set("controller.quorum.voters: voter %d appears twice", vt->id);
        (*n)++;
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}

int kiq_bootstrap_servers_parse(const char *spec, kiq_voter_t *out, int max, int *n)
{
    *n = 0;
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*n == max) return kiq_error_set("controller.quorum.bootstrap.servers: more than %d servers", max);
        out[*n].id = -1;
        if (parse_host_port(p, len, out[*n].host, sizeof out[*n].host, &out[*n].port,
                            "controller.quorum.bootstrap.servers") != 0)
            return -1;
        (*n)++;
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}

const kiq_voter_t *kiq_voter_of(const kiq_voter_t *v, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (v[i].id == id) return &v[i];
    return NULL;
}

int kiq_roles_parse(const kiq_config_t *c, kiq_roles_t *out)
{
    const char *spec = kiq_config_str(c, KIQ_CFG_PROCESS_ROLES);
    kiq_voter_t voters[KIQ_MAX_VOTERS];
    int nvoters;
    int vrc = kiq_voters_parse(kiq_config_str(c, KIQ_CFG_CONTROLLER_QUORUM_VOTERS), voters, KIQ_MAX_VOTERS, &nvoters);
    if (vrc < 0) return -1;
    int32_t id = (int32_t)kiq_config_int(c, KIQ_CFG_BROKER_ID);
    bool voter = vrc == 0 && kiq_voter_of(voters, nvoters, id);
    *out = (kiq_roles_t){.broker = !*spec, .controller = !*spec && voter};
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        bool *role = len == 6 && memcmp(p, "broker", 6) == 0       ? &out->broker
                     : len == 10 && memcmp(p, "controller", 10) == 0 ? &out->controller
                                                                     : NULL;
        if (!role) return kiq_error_set("process.roles: unknown role '%.*s' (broker or controller)", (int)len, p);
        if (*role) return kiq_error_set("process.roles: '%.*s' is named twice", (int)len, p);
        *role = true;
        p = comma ? comma + 1 : p + strlen(p);
    }
    /* with bootstrap servers the voters are the metadata log's: a controller observes until added */
    if (out->controller && !voter && !*kiq_config_str(c, KIQ_CFG_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS))
        return kiq_error_set("process.roles has controller: node %d must be among controller.quorum.voters", id);
    if (voter && !out->controller)
        return kiq_error_set("node %d is among controller.quorum.voters: its process.roles must have controller", id);
    return 0;
}
