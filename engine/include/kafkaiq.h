/* KafkaIQ engine: the public C API. A broker is a value, not a process: many
 * can live in one process. */
#ifndef KAFKAIQ_H
#define KAFKAIQ_H

#include "core/version.h"

/* A broker's configuration by Kafka's names (server.properties keys). */
typedef struct kiq_config kiq_config_t;
kiq_config_t *kiq_config_new(void);
void kiq_config_free(kiq_config_t *c);
/* One value by name, checked; -1 with the reason for a bad value (an
 * unknown name is accepted with a warning, as Kafka does). */
int kiq_config_set(kiq_config_t *c, const char *name, const char *value);
/* A properties file (key=value or key: value, # and ! comments). */
int kiq_config_load_file(kiq_config_t *c, const char *path);
/* "key=value", as given to --override. */
int kiq_config_override(kiq_config_t *c, const char *assignment);

#include <stdbool.h>

typedef struct kiq_broker kiq_broker_t;

/* Takes a copy of the configuration; checks it and prepares the data
 * directory (locks it, reads meta.properties). NULL with the reason in the
 * error slot. */
kiq_broker_t *kiq_broker_new(const kiq_config_t *config);
/* Loads the logs, binds the listener, starts every thread. */
int kiq_broker_start(kiq_broker_t *b);
/* Any thread but the broker's own: clean shutdown (logs flushed and marked
 * clean). Idempotent. */
void kiq_broker_stop(kiq_broker_t *b);
/* Like a crash as far as the data directory can tell: no clean-shutdown
 * marker, so the next start recovers the logs from scratch. */
void kiq_broker_kill(kiq_broker_t *b);
void kiq_broker_free(kiq_broker_t *b);
/* The bound port (useful with port 0). */
int kiq_broker_port(const kiq_broker_t *b);
/* The host clients are told to reach it at (advertised.listeners, else
 * the listener's). */
const char *kiq_broker_host(const kiq_broker_t *b);
/* Whether this start has reached serving: unfenced by the controller in a
 * cluster, started when alone. */
bool kiq_broker_ready(kiq_broker_t *b);
/* The control-plane listener's bound port; -1 when it has none. */
int kiq_broker_control_port(const kiq_broker_t *b);
/* Any thread while it runs: why the broker cannot go on (in a cluster, its
 * broker.id is another live process's), or NULL. */
const char *kiq_broker_failed(kiq_broker_t *b);

#endif
