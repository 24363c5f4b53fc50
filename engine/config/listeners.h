/* Kafka's `listeners` list: NAME://host:port entries, comma-separated. The
 * one named by control.plane.listener.name takes the controller's requests
 * (its own acceptor, processor and queue); the first other one serves
 * clients. Plain values, parsed on the thread building the broker. */
#ifndef KIQ_CONFIG_LISTENERS_H
#define KIQ_CONFIG_LISTENERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define KIQ_MAX_LISTENERS 4

/* Kafka's security protocols (listener.security.protocol.map). */
enum kiq_security_protocol { KIQ_PLAINTEXT, KIQ_SSL, KIQ_SASL_PLAINTEXT, KIQ_SASL_SSL };

typedef struct kiq_listener {
    char name[32];
    char host[256]; /* empty: every interface */
    int port;       /* 0: pick a free one */
    enum kiq_security_protocol protocol; /* from kiq_listeners_protocols */
} kiq_listener_t;

/* 0 with *n entries, or -1 naming the bad entry. */
int kiq_listeners_parse(const char *spec, kiq_listener_t *out, int max, int *n);
/* Each listener's protocol from listener.security.protocol.map; -1 for a
 * malformed map, an unknown protocol, or a listener the map was set
 * without (with Kafka's default map such a name, a controller
 * listener, is PLAINTEXT). */
int kiq_listeners_protocols(const kiq_config_t *c, kiq_listener_t *all, int n);
/* The protocol's name as Kafka writes it. */
const char *kiq_security_protocol_name(enum kiq_security_protocol p);

/* The client listener (NULL when there is none and need_data is false:
 * a controller-only node) and the control-plane one (NULL when
 * control.plane.listener.name is empty) of a parsed list; -1 when a named
 * listener is missing or a needed client listener is not there. */
int kiq_listeners_pick(const kiq_config_t *c, const kiq_listener_t *all, int n, bool need_data,
                       const kiq_listener_t **data, const kiq_listener_t **control);

/* One voter of controller.quorum.voters: its node id and the address of
 * its control-plane listener. */
#define KIQ_MAX_VOTERS 16
typedef struct kiq_voter {
    int32_t id;
    char host[256];
    int port;
} kiq_voter_t;

/* controller.quorum.voters: "id@host:port,..." (Kafka's static quorum).
 * 0 with the *n voters, 1 when empty (no controller: a standalone
 * broker), -1 when malformed or an id comes twice. */
int kiq_voters_parse(const char *spec, kiq_voter_t *out, int max, int *n);
/* controller.quorum.bootstrap.servers: "host:port,..." (ids -1). 0 with
 * the *n servers (none when empty), -1 when malformed. */
int kiq_bootstrap_servers_parse(const char *spec, kiq_voter_t *out, int max, int *n);
/* The voter of id among n, NULL when it is none. */
const kiq_voter_t *kiq_voter_of(const kiq_voter_t *v, int n, int32_t id);

/* What a node is (Kafka's process.roles): a broker serves clients and
 * hosts replicas; a controller is a voter of the quorum. */
typedef struct kiq_roles {
    bool broker, controller;
} kiq_roles_t;

/* process.roles of c against its broker.id and controller.quorum.voters.
 * Empty: a broker, and a controller too when it is a voter (KafkaIQ's
 * combined nodes). -1 for an unknown or repeated role, a controller that
 * is not a voter, a voter that is not a controller, or a controller with
 * no quorum. */
int kiq_roles_parse(const kiq_config_t *c, kiq_roles_t *out);

#endif
