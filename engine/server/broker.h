/* The broker's parts, for the request handlers. Everything here is set up
 * before threads start and torn down after they stop; what changes while
 * running has its own lock (topics, queue, purgatory). */
#ifndef KIQ_SERVER_BROKER_H
#define KIQ_SERVER_BROKER_H

#include <pthread.h>
#include <stdatomic.h>

#include "config/listeners.h"
#include "controller/features.h"
#include "group/group_coordinator.h"
#include "include/kafkaiq.h"
#include "log/cleaner_threads.h"
#include "log/log_config.h"
#include "log/log_dir.h"
#include "log/log_flusher.h"
#include "log/log_mover.h"
#include "log/log_retention.h"
#include "log/log_scrubber.h"
#include "log/topics.h"
#include "net/acceptor.h"
#include "controller/client_quotas.h"
#include "net/connection_quotas.h"
#include "net/memory_pool.h"
#include "net/processor.h"
#include "net/request_queue.h"
#include "raft/raft.h"
#include "replica/partition_replica.h"
#include "server/producer_ids.h"
#include "server/purgatory.h"
#include "server/fetch_sessions.h"
#include "journey/journey.h"
#include "metrics/registry.h"
#include "metrics/topic_counts.h"
#include "server/broker_startup.h"
#include "txn/txn_coordinator.h"
#include "server/event_counts.h"
#include "server/recent_events.h"
#include "server/interceptors.h"
#include "server/request_stats.h"

typedef struct kiq_broker_surface kiq_broker_surface_t;

/* Something that runs with a broker (see kiq_broker_t.services). start
 * runs on the thread starting the broker (0 or -1 with the reason), stop
 * on the one stopping it, free when the broker goes. */
typedef struct kiq_broker_service {
    const char *name; /* static: shown in the start's services */
    int (*start)(void *ctx, kiq_broker_t *b);
    void (*stop)(void *ctx, kiq_broker_t *b);
    void (*free)(void *ctx);
    void *ctx;
} kiq_broker_service_t;
#define KIQ_BROKER_MAX_SERVICES 4

/* One of the broker's log directories (log.dirs, Kafka's JBOD): each has
 * its own lock file, meta.properties, clean-shutdown marker, checkpoints
 * and health. Set up by kiq_broker_new; clean_shutdown is set by start. */
typedef struct kiq_broker_log_dir {
    char *path;
    /* Its health and injected disk faults: from new to free, so a fault
     * outlives a restart; its own lock. */
    kiq_log_dir_t *health;
    int lock_fd;
    bool clean_shutdown; /* the previous run left its marker here */
    bool fresh;          /* no meta.properties was there: nothing to recover */
    /* meta.properties' directory.id (KIP-858): what the controller knows
     * this broker's restarts by (one live process holds the directory) */
    kiq_uuid_t dir_id;
    bool rewrite_meta; /* its meta.properties has no directory.id yet */
} kiq_broker_log_dir_t;

/* What a broker serves: the machinery here runs it, the API layer above
 * (api/api_table.c) provides it. Immutable. */
struct kiq_broker_surface {
    /* Processor thread: 0 to queue r (its codec set), -1 to close the
     * connection (unknown API, unsupported version). */
    int (*admit)(kiq_request_t *r);
    /* I/O thread (and the purgatory's, for what it parked): decode, run
     * the handler, answer. */
    void (*handle)(kiq_broker_t *b, kiq_request_t *r);
};

/* A handler thread (one of the data plane's I/O threads, the control
 * plane's, the quorum's): takes requests off its queue and runs their
 * handlers until the queue closes. The starting thread's. */
typedef struct kiq_handler_thread {
    struct kiq_broker *b;
    kiq_request_queue_t *queue;
    int id; /* the data plane's I/O thread number for observers; -1 for the others */
    char name[24];
    pthread_t thread;
    bool started;
} kiq_handler_thread_t;

struct kiq_broker {
    const kiq_broker_surface_t *surface; /* fixed */
    kiq_config_t *config;
    int32_t node_id;
    char host[256];
    int port;             /* configured; 0 = pick one */
    int bound_port;
    /* The control-plane listener (control.plane.listener.name): the
     * controller's requests get their own acceptor, processor, queue and
     * I/O thread, from start to shutdown. */
    bool has_control_plane;
    char control_host[256];
    int control_port; /* configured, then bound */
    kiq_acceptor_t *control_acceptor;
    kiq_processor_t *control_processor;
    kiq_request_queue_t *control_queue;
    kiq_handler_thread_t control_io;
    /* the controller quorum's RPCs, on a thread of their own: a controller
     * handler waiting for a majority never holds up the fetches that make
     * one */
    kiq_request_queue_t *quorum_queue;
    kiq_handler_thread_t quorum_io;
    /* Cluster mode (controller.quorum.voters set): the quorum's voters,
     * fixed at new; the active controller as last known (the first voter
     * until the quorum names one), its id any thread's, its address
     * copied into the lines to it when they start and moved with
     * kiq_broker_controller_moved. */
    bool cluster;
    /* process.roles: a controller-only node has no client listener, never
     * registers as a broker and so hosts no replica */
    kiq_roles_t roles;
    kiq_voter_t voters[KIQ_MAX_VOTERS];
    int nvoters;
    _Atomic int32_t controller_id;
    char controller_host[256];
    int controller_port;
    /* Cluster mode, a voter: this node's part of the controller quorum,
     * from start to shutdown. */
    struct kiq_quorum *quorum;
    _Atomic int32_t forwarding_to; /* the controller controller_channel points at */
    /* Cluster mode: the kept line to the controller that forwarded
     * requests travel on; from start to free (stopped at shutdown, after
     * the handlers stop forwarding into it... or as they still might). */
    struct kiq_peer_channel *controller_channel;
    /* queued lines to the other brokers for the share offset admin calls
     * a share group's coordinator asks each partition leader (cluster only;
     * set at start, stopped with the requests, freed at release) */
    struct kiq_broker_peers *share_peers;
    atomic_bool share_state_asked; /* an ask for __share_group_state is with the controller (api/share_state_topic.c) */
    /* This run's incarnation (BrokerRegistration): a clean shutdown keeps
     * it in the clean-shutdown marker and the next start reuses it, so the
     * controller knows the broker's logs are whole and leaves its
     * leaderships be; after a crash it is new. Set at start. */
    kiq_uuid_t incarnation;
    int64_t last_broker_epoch; /* what the controller gave this run, kept at shutdown */
    bool stopping_clean; /* the shutdown under way is clean: controlled, the logs marked clean */
    atomic_int_fast64_t registered_epoch; /* the last registration's broker epoch, -1 before; any thread */
    /* The controller, on each voter of the quorum (active on the one
     * that leads: kiq_broker_active_controller): from start to shutdown;
     * its own lock. */
    struct kiq_controller *controller;
    /* Client quotas' sensors (server/quota_manager.h), from new to free;
     * enforced where the quotas are (server/broker_quotas.h): a standalone
     * broker's own, or the image of the controller this node hosts. Its
     * own lock. */
    struct kiq_quota_manager *client_quotas;
    /* Standalone: the client quotas (loaded at start, saved at each
     * change); a cluster's broker hosting no controller: as the
     * controller last pushed them. And their version; quotas_mu guards
     * the store. */
    pthread_mutex_t quotas_mu;
    kiq_client_quota_store_t quota_store;
    atomic_uint_fast64_t quota_version;
    /* Standalone: the finalized feature levels (server/broker_features.h),
     * loaded at start; features_mu guards them. */
    pthread_mutex_t features_mu;
    kiq_features_t features;
    /* Cluster mode: the cluster as the controller last pushed it
     * (UpdateMetadata), from new to free; its own lock. */
    struct kiq_metadata_cache *metadata;
    /* Cluster mode: registration and heartbeats, from the end of start to
     * the start of shutdown; its own lock. */
    struct kiq_broker_lifecycle *lifecycle;
    /* Cluster mode: LeaderAndIsr / StopReplica applied, replica fetchers,
     * ISR changes; from start until the I/O threads are joined; own lock. */
    struct kiq_replica_manager *replicas;
    char advertised_host[256];
    int advertised_port;
    char cluster_id[23];
    kiq_broker_log_dir_t *log_dirs; /* in log.dirs order; the first keeps the topic configs */
    int nlog_dirs;
    kiq_log_config_t log_cfg;

    kiq_topics_t *topics;
    kiq_partition_replica_start_t replica_start; /* how its partitions start; outlives the topics */
    kiq_log_retention_t *retention; /* its thread, from start to shutdown */
    kiq_log_mover_t *mover;         /* moves between log.dirs; its thread, from start to shutdown */
    kiq_log_scrubber_t *scrubber;   /* its thread, from start to shutdown; NULL: not scrubbing */
    kiq_log_cleaner_t *cleaner;     /* its threads, from start to shutdown */
    kiq_log_flusher_t *flusher;     /* its thread, from start to shutdown */
    kiq_request_queue_t *queue;
    kiq_processor_t **processors;
    int nprocessors;
    kiq_acceptor_t *acceptor;
    /* the client listener's security protocol and, for SSL, its TLS
     * context: set at create, read-only after, freed with the broker */
    enum kiq_security_protocol protocol;
    struct kiq_tls *tls;
    struct kiq_sasl *sasl; /* SASL_*: its mechanisms and users; likewise */
    /* how this broker reaches the others' client listeners (its
     * inter-broker client); NULL: plaintext, or not in a cluster; likewise */
    struct kiq_peer_security *peer_security;
    /* the control-plane listener's TLS context and SASL setup (NULL:
     * plaintext), and how this node reaches the controllers' (the
     * quorum's voters, from brokers and other voters) and the controller
     * reaches the brokers' control-plane listeners; likewise */
    struct kiq_tls *control_tls;
    struct kiq_sasl *control_sasl;
    struct kiq_peer_security *controller_security;
    /* authorizer.class.name's: set at create, read-only after (its
     * bindings are the controller's, read under its lock); NULL: none */
    struct kiq_authorizer *authorizer;
    /* the client listener's queued.max.request.bytes and connection
     * quotas, from start to shutdown */
    kiq_memory_pool_t *request_pool;
    kiq_connection_quotas_t *quotas;
    kiq_handler_thread_t *io_threads;
    /* Time the I/O threads spent handling requests since io_started_ns
     * (Kafka's RequestHandlerAvgIdlePercent is the rest). */
    atomic_int_fast64_t io_busy_ns;
    /* Record bytes fetches returned, by how: sendfile() from the segment
     * files, or copied through the response buffer (I/O threads). */
    atomic_int_fast64_t fetch_bytes_sendfile, fetch_bytes_copied;
    int64_t io_started_ns;
    int nio_threads;
    kiq_purgatory_t *purgatory;
    kiq_fetch_sessions_t *fetch_sessions; /* incremental fetch sessions (KIP-227), as the purgatory; own lock */
    /* Consumer groups and committed offsets: from start to shutdown; own lock. */
    kiq_group_coordinator_t *groups;
    /* Share groups' share-partitions and sessions led here (KIP-932): from
     * start to shutdown; own lock. */
    struct kiq_share_manager *shares;
    /* Transactional ids and their transactions: from start to shutdown; own lock. */
    kiq_txn_coordinator_t *txns;
    kiq_request_stats_t stats;
    kiq_interceptors_t interceptors; /* set before the first start, kept across restarts; freed with the broker */
    /* Who hears the observer points (core/observer.h): registered before
     * the first start, fixed after. event_counts is always one of them. */
    kiq_observers_t observers;
    kiq_event_counts_t event_counts;
    kiq_topic_counts_t *topic_counts; /* messages and bytes per topic; its own lock */
    /* every subsystem's figures, read by /metrics, /api/metrics and
     * b:metrics(); from new to free, its own lock */
    kiq_metrics_t *metrics;
    kiq_journeys_t *journeys;         /* NULL when kafkaiq.journey.enable is off; its own locks */
    /* the metrics clients pushed (KIP-714), newest per client instance;
     * from new to free, its own lock */
    struct kiq_client_telemetry *telemetry;
    kiq_recent_events_t *recent_events; /* the newest ISR changes, for /api/events; its own lock */
    /* the brokers of this process it belongs to (server/broker_set.h),
     * NULL alone; set by the set's owner before the broker starts */
    struct kiq_broker_set *set;
    /* What runs with the broker from the layers above (the HTTP listener):
     * added before the first start, started after each start, stopped
     * first in each shutdown, freed with the broker. */
    kiq_broker_service_t services[KIQ_BROKER_MAX_SERVICES];
    int nservices;
    kiq_producer_ids_t *producer_ids; /* InitProducerId: from new to free; own lock */
    kiq_broker_startup_t startup;     /* this start's phases; atomics */
    _Atomic bool running; /* from the ready row to the start of a shutdown; any thread reads */
};

/* The log directory of that path as given in log.dirs, or NULL. */
kiq_broker_log_dir_t *kiq_broker_find_log_dir(kiq_broker_t *b, const char *path);

/* Disk fault injection under one of the broker's log directories (dir as
 * given in log.dirs; NULL: the first; see kiq_log_dir_inject_fault):
 * writes fail with err after after_bytes more bytes, fsyncs too when
 * fsyncs is set. Callable from any thread, running or not; 0 or -1 (an
 * unknown dir too). */
int kiq_broker_inject_disk_fault(kiq_broker_t *b, const char *dir, int err, int64_t after_bytes, bool fsyncs);
/* A slow disk under dir (NULL: the first): each fsync there takes
 * delay_ms longer (kiq_log_dir_slow_fsyncs). Any thread; 0 or -1. */
int kiq_broker_slow_disk(kiq_broker_t *b, const char *dir, int64_t delay_ms);
/* Clears the fault and the delay of dir (NULL: of every directory); 0 or
 * -1 for an unknown dir. */
int kiq_broker_clear_disk_fault(kiq_broker_t *b, const char *dir);

/* The verdict on journey jr, a part kept by this broker, from the
 * partition as it stands here now (kiq_journey_verdict); false for a
 * follower's part or a partition not hosted here. Any thread. */
bool kiq_broker_journey_verdict(kiq_broker_t *b, const kiq_journey_t *jr, kiq_journey_verdict_t *out);

/* Adds a service (before the first start); -1 when there are too many. */
int kiq_broker_add_service(kiq_broker_t *b, const kiq_broker_service_t *service);

/* Installs the broker's interceptors (see server/interceptors.h): before
 * its first start, once. The broker frees them with itself. */
void kiq_broker_set_interceptors(kiq_broker_t *b, const kiq_interceptor_ops_t *ops, void *ctx,
                                 const atomic_int *active);
/* Any thread: this broker stops (or resumes) heartbeating, so the
 * controller fences it after broker.session.timeout.ms (nothing alone);
 * and stops (or resumes) replicating from leader `leader`. */
void kiq_broker_pause_heartbeats(kiq_broker_t *b, bool paused);
void kiq_broker_pause_fetching(kiq_broker_t *b, int32_t leader, bool paused);
/* Any thread: this voter's Raft traffic stops (or resumes) as a stopped
 * process's would; or its traffic with voter `voter` is cut (or healed).
 * Nothing on a broker that is not a voter. */
void kiq_broker_pause_quorum(kiq_broker_t *b, bool paused);
void kiq_broker_cut_quorum(kiq_broker_t *b, int32_t voter, bool cut);
/* Any thread: this voter's controller writes a metadata snapshot now
 * (kiq_controller_snapshot); -1 with the reason, also on a broker that
 * hosts no voter. */
int kiq_broker_snapshot_metadata(kiq_broker_t *b, kiq_raft_epoch_end_t *id);
/* Any thread: a fault rule added (its id, > 0), removed (0), or the
 * rules as an array "faults" (0); -1 with the reason, also when the
 * broker has no interceptors to keep them. */
int kiq_broker_fault_add(kiq_broker_t *b, const kiq_fault_rule_t *rule);
int kiq_broker_fault_remove(kiq_broker_t *b, int id);
int kiq_broker_faults_view(kiq_broker_t *b, const kiq_view_t *v);

/* Makes a broker serving surface (kiq_broker_new, engine/app, gives the API layer's):
 * what include/kafkaiq.h's kiq_broker_new does with it. */
kiq_broker_t *kiq_broker_create(const kiq_config_t *config, const kiq_broker_surface_t *surface);

/* Any thread: this broker's controller when it is the active one, else
 * NULL (the controller is another voter, or this one is standing by). */
struct kiq_controller *kiq_broker_active_controller(kiq_broker_t *b);
/* Any thread: the active controller's id as clients are told it (Metadata,
 * DescribeCluster): a voter's quorum knows the leader first, another
 * broker the last controller that pushed to it; a standalone broker is
 * its own. -1 when unknown. */
int32_t kiq_broker_controller_id(kiq_broker_t *b);
/* Any thread, before a forwarded request: the forwarding line points at
 * the active controller as last known. */
void kiq_broker_follow_controller(kiq_broker_t *b);
/* The control plane's, on an UpdateMetadata taken: voter `id` sent it, so
 * it is where the active controller was last found. */
void kiq_broker_controller_seen(kiq_broker_t *b, int32_t id);
/* The control plane's, on an UpdateMetadata applied: the client listener,
 * held since the start, takes connections. */
void kiq_broker_metadata_applied(kiq_broker_t *b);
/* A call to controller `id` found no active controller there (gone, or
 * not leading): look at the next voter, as an observer does. Any thread. */
void kiq_broker_controller_not_there(kiq_broker_t *b, int32_t id);

#endif
