/* What the controller's files share (controller.c: records, elections,
 * fencing, lifecycle; controller_round.c: what each broker is sent;
 * controller_requests.c: the requests it decides; controller_configs.c:
 * the dynamic configs): the controller itself and the helpers more than
 * one of them uses, each called under the controller's mutex unless it
 * says otherwise. Only they include it. */
#ifndef KIQ_CONTROLLER_CONTROLLER_INTERNAL_H
#define KIQ_CONTROLLER_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "controller/broker_channel.h"
#include "controller/config_changes.h"
#include "controller/controller.h"
#include "controller/metadata_image.h"
#include "controller/quorum.h"
#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "proto/errors.h"


/* A partition a broker must stop and delete (its topic was deleted, or
 * its replica left the replica set). */
typedef struct stop_entry {
    char *topic;
    int32_t partition;
} stop_entry_t;

/* What the controller keeps per registered broker besides the image. */
typedef struct broker_slot {
    int32_t id;
    int64_t last_heartbeat_ns;
    /* Whether its current incarnation registered or heartbeated since this
     * controller started (a restarted controller's slots start with a
     * session's grace but nothing heard). */
    bool heard;
    kiq_broker_channel_t *channel;
    /* The store offset its channel's round in flight was built at, and the
     * highest one it took: a partition's new leader is named to the brokers
     * (and so to clients) only once it took its LeaderAndIsr, else a client
     * sends it a retry before it leads, gets NOT_LEADER and (librdkafka
     * < 2.3) takes the next batch's OUT_OF_ORDER_SEQUENCE as fatal. */
    int64_t building_offset, acked_offset;
    stop_entry_t *stops;
    int nstops, cap, stops_in_flight;
} broker_slot_t;

/* A replica its broker assigned to the LOST directory. */
typedef struct impaired_replica {
    kiq_uuid_t topic_id;
    int32_t partition;
    int32_t broker;
} impaired_replica_t;

struct kiq_controller {
    int32_t node_id;
    char control_listener[32];
    kiq_metrics_t *metrics; /* the hosting broker's; the lines to brokers report there */
    const struct kiq_peer_security *security; /* the hosting broker's: TLS and SASL toward them; NULL: plaintext */
    int64_t session_timeout_ns;
    /* the hosting broker's config, from new to free: its dynamic values
     * (unclean.leader.election.enable) are read where they are used */
    const kiq_config_t *cfg;
    int64_t rebalance_interval_ns; /* 0: auto.leader.rebalance.enable off */
    int64_t next_rebalance_ns;
    int64_t token_check_interval_ns; /* delegation.token.expiry.check.interval.ms */
    int64_t next_token_check_ns;
    int32_t default_partitions;
    int16_t default_replication_factor;
    atomic_uint_fast64_t unclean_elections; /* leaders elected from outside the ISR, for metrics */
    /* operations that wrote to the metadata log, and the records they
     * wrote (attempts: a write that failed counts too), for metrics */
    atomic_uint_fast64_t operations, records;
    struct kiq_quorum *quorum; /* the hosting broker's, outlives the controller */
    int64_t write_timeout_ms;  /* a write waits this long for a majority */
    /* moves when the image's client quotas may have changed; read without
     * mu by the quota managers, which look the quotas up again then */
    atomic_uint_fast64_t quotas_version;
    /* the image's ACL bindings as the authorizer reads them, republished
     * under mu when a replay changed them; read without mu */
    kiq_acl_published_t acls;
    pthread_mutex_t mu; /* guards everything below */
    bool acls_changed; /* the replay since the last publication changed the bindings */
    pthread_cond_t activated; /* active became true */
    kiq_metadata_image_t *image;
    int64_t applied;   /* the image holds the committed log up to here (exclusive) */
    bool active;       /* this node leads the quorum and its image is whole: it decides */
    int32_t epoch;     /* the quorum epoch it became active in: the controller epoch */
    bool min_isr_kept; /* keep_cluster_min_isr done in this activation */
    bool features_kept; /* kiq_ctl_keep_features done in this activation */
    int16_t commit_error; /* why the last kiq_ctl_commit failed (a Kafka error) */
    broker_slot_t *brokers;
    int nbrokers, cap;
    impaired_replica_t *impaired;
    int nimpaired, impaired_cap;
    uint64_t version; /* moves with every change the brokers must hear of */
    struct kiq_worker *timer; /* fences silent brokers, rebalances leaders; from start to free */
    bool stopping;
};

/* A growing list of records for one commit, their arrays in an arena. */
typedef struct batch {
    kiq_metadata_record_t *r;
    size_t n, cap;
    kiq_arena_t *a;
} batch_t;

/* A new record of type at the end of b. */
kiq_metadata_record_t *kiq_ctl_add_record(batch_t *b, int16_t type);
/* s copied into a. */
kiq_str_t kiq_ctl_astr(kiq_arena_t *a, const char *s);
/* Under mu: the records written through the quorum and, once a majority
 * has them, applied and told to the brokers. -1 with c->commit_error
 * (NOT_CONTROLLER when this node no longer leads, REQUEST_TIMED_OUT). */
int kiq_ctl_commit(kiq_controller_t *c, batch_t *b);
/* Under mu: expired delegation tokens removed (RemoveDelegationTokenRecords). */
void kiq_ctl_remove_expired_tokens(kiq_controller_t *c);
/* Under mu: the sender to a broker, made or pointed at its (new) address. */
void kiq_ctl_connect_channel(kiq_controller_t *c, broker_slot_t *s, bool restarted);
/* n ids copied into a (room for one at least). */
int32_t *kiq_ctl_copy_ids(kiq_arena_t *a, const int32_t *ids, int32_t n);
/* Records giving a leader to partitions without one, now that more
 * brokers are live. */
void kiq_ctl_elect_offline(kiq_controller_t *c, batch_t *b);
/* The endpoint of a registration by listener name (NULL: the first that
 * is not the control plane's). */
const kiq_broker_endpoint_t *kiq_ctl_endpoint(const kiq_controller_t *c, const kiq_broker_registration_t *b,
                                             const char *name);
/* Under mu. */
void kiq_ctl_forget_impaired(kiq_controller_t *c, int32_t broker);
/* Whether id is among the n ids. */
bool kiq_ctl_has_id(const int32_t *ids, int32_t n, int32_t id);
/* Under mu. */
bool kiq_ctl_is_impaired(const kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker);
/* Records moving broker id out of the way on every partition. */
void kiq_ctl_leave_partitions(kiq_controller_t *c, batch_t *b, int32_t id);
/* Under mu: broker can lead topic-p now: registered, not fenced, in the
 * ISR, and its replica not impaired. */
bool kiq_ctl_may_lead(const kiq_controller_t *c, const kiq_topic_image_t *ti, int32_t p, int32_t broker);
/* A PartitionChange of topic-p at the end of b, its fields "as before". */
kiq_partition_change_record_t *kiq_ctl_partition_change(batch_t *b, const kiq_topic_image_t *ti, int32_t p);
/* Under mu: broker is to stop topic-p and delete its log (StopReplica) at
 * its next round; false when out of memory. */
bool kiq_ctl_add_stop(kiq_controller_t *c, int32_t broker, const char *topic, int32_t p);
/* Under mu: every reassignment whose target replicas are all in the ISR
 * completed (controller_reassign.c; the brokers of its leaving replicas
 * delete them from the metadata they get). 0, or
 * -1 when the commit failed. */
int kiq_ctl_complete_reassignments(kiq_controller_t *c);
/* Under mu: the unfenced brokers but except, at most max, into out. */
size_t kiq_ctl_live_brokers(kiq_controller_t *c, int32_t except, int32_t *out, size_t max);
/* Under mu: a record moving broker id out of the way on ti's partition p:
 * it leaves the ISR (unless it is the last member) and a leadership goes
 * to another eligible ISR member, or, with none, to nobody (offline)
 * unless unclean election is on, or stays when keep_alone. */
void kiq_ctl_move_off(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p, int32_t id,
                     const int32_t *live, size_t nlive, bool keep_alone);
/* Under mu: marks or clears one replica; false when out of memory. */
bool kiq_ctl_set_impaired(kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker, bool impaired);
/* Whether the registration names a log directory the registered broker
 * holds (from its RegisterBrokerRecord, so a restarted controller knows
 * them too): then it is that broker restarted, not a second process. */
bool kiq_ctl_shares_dir(const kiq_broker_registration_t *rb, const kiq_broker_registration_request_t *req);
/* Under mu: broker id's slot (made when create), or NULL. */
broker_slot_t *kiq_ctl_slot_of(kiq_controller_t *c, int32_t id, bool create);
/* Under mu: the bootstrap feature levels written when the log has no
 * metadata.version yet (controller_features.c). 0, or -1 when the commit
 * failed. */
int kiq_ctl_keep_features(kiq_controller_t *c);
/* Under mu: the finalized feature levels and their epoch into um. */
void kiq_ctl_build_features(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um);
/* Under mu: UserScramCredentialRecords for kafkaiq.add.scram's entries
 * into b (the cluster's first metadata; controller_scram.c). */
void kiq_ctl_add_bootstrap_scram(kiq_controller_t *c, batch_t *b);
/* Under mu: the client quotas into um (controller_quotas.c). */
void kiq_ctl_build_quotas(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um);
/* Under mu: the delegation tokens into um (controller_tokens.c). */
void kiq_ctl_build_tokens(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um);
/* Under mu: the ACL bindings into um (controller_acls.c). */
void kiq_ctl_build_acls(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um);
/* Under mu: the SCRAM credentials into um (controller_scram.c). */
void kiq_ctl_build_scram(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um);
/* Under mu: a round for every broker. */
void kiq_ctl_tell_brokers(kiq_controller_t *c);

#endif
