/* A broker's log directories as Kafka keeps them: each one locked,
 * tied to its cluster and broker id by meta.properties, and marked clean
 * by a clean shutdown (.kafka_cleanshutdown, with the broker's incarnation
 * in a cluster). The starting and stopping thread's. */
#ifndef KIQ_SERVER_BROKER_DIRS_H
#define KIQ_SERVER_BROKER_DIRS_H

#include <stdbool.h>

#include "server/broker.h"

/* log.dirs split at commas, blanks around each path dropped (the config
 * check refused empty and repeated entries). 0 or -1. */
int kiq_broker_dirs_parse(kiq_broker_t *b, const char *list);
/* Each directory made and locked, meta.properties read, agreed and written
 * where missing; the cluster id settled. 0 or -1. */
int kiq_broker_dirs_claim(kiq_broker_t *b);
/* Whether the directory's clean-shutdown marker is there. */
bool kiq_broker_dir_marked_clean(const kiq_broker_log_dir_t *d);
/* The incarnation a clean shutdown left in every directory's marker (they
 * must agree) into b: true when there is one to reuse. Before the markers
 * go. */
bool kiq_broker_dirs_read_incarnation(kiq_broker_t *b);
/* The markers removed: from now on a crash is unclean. 0 or -1. */
int kiq_broker_dirs_unmark(kiq_broker_t *b);
/* Every healthy directory marked clean; false when one was offline. */
bool kiq_broker_dirs_mark_clean(kiq_broker_t *b);

#endif
