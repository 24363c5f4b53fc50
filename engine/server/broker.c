#include "server/broker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "config/listeners.h"
#include "controller/controller.h"
#include "controller/quorum.h"
#include "server/broker_configs.h"
#include "server/broker_features.h"
#include "server/broker_dirs.h"
#include "net/peer_channel.h"
#include "server/broker_lifecycle.h"
#include "server/broker_metrics.h"
#include "server/client_telemetry.h"
#include "server/controller_link.h"
#include "server/broker_quotas.h"
#include "server/quota_manager.h"
#include "controller/metadata_cache.h"
#include "replica/replica_manager.h"
#include "share/share_manager.h"
#include "txn/broker_peers.h"
#include "core/uuid.h"
#include "journey/journal.h"
#include "journey/otlp.h"
#include "security/authorizer.h"
#include "security/sasl.h"
#include "security/peer_security.h"
#include "security/tls.h"
#include "server/broker_security.h"

static int32_t current_controller(void *ctx, const char **host, int *port);

static void ask_producer_ids(void *ctx, kiq_producer_ids_t *ids)
{
    kiq_controller_link_producer_ids(ctx, ids);
}

/* Any thread: a block of producer ids came; InitProducerId requests
 * waiting for one go on. */
static void producer_ids_arrived(void *ctx)
{
    kiq_broker_t *b = ctx;
    if (b->purgatory) kiq_purgatory_notify(b->purgatory, kiq_purgatory_producer_ids_key());
}

/* The lifecycle thread: registered; the first block of producer ids is
 * asked for now, so the first InitProducerId finds it here. */
static void registered(void *ctx, int64_t broker_epoch)
{
    kiq_broker_t *b = ctx;
    atomic_store(&b->registered_epoch, broker_epoch);
    kiq_producer_ids_prefetch(b->producer_ids);
}

kiq_broker_t *kiq_broker_create(const kiq_config_t *config, const kiq_broker_surface_t *surface)
{
    if (kiq_config_validate(config) != 0) return NULL;
    kiq_broker_t *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->features_mu, NULL);
    pthread_mutex_init(&b->quotas_mu, NULL);
    b->surface = surface;
    b->config = kiq_config_copy(config);
    b->node_id = (int32_t)kiq_config_int(config, KIQ_CFG_BROKER_ID);
    if (strcmp(kiq_config_str(config, KIQ_CFG_CLOCK), "manual") == 0) kiq_clock_set_manual();
    kiq_listener_t ls[KIQ_MAX_LISTENERS];
    const kiq_listener_t *data, *control;
    int nl;
    if (!b->config || kiq_broker_dirs_parse(b, kiq_config_str(config, KIQ_CFG_LOG_DIRS)) != 0 ||
        kiq_roles_parse(config, &b->roles) != 0 ||
        kiq_listeners_parse(kiq_config_str(config, KIQ_CFG_LISTENERS), ls, KIQ_MAX_LISTENERS, &nl) != 0 ||
        kiq_listeners_protocols(config, ls, nl) != 0 ||
        kiq_listeners_pick(config, ls, nl, b->roles.broker, &data, &control) != 0)
        goto fail;
    /* a controller-only node serves no clients: none of its own */
    if (!b->roles.broker) data = NULL;
    snprintf(b->host, sizeof b->host, "%s", data ? data->host : "");
    b->port = data ? data->port : -1;
    b->bound_port = -1;
    if (control) {
        snprintf(b->control_host, sizeof b->control_host, "%s", control->host);
        b->control_port = control->port;
        b->has_control_plane = true;
    }
    b->cluster = kiq_voters_parse(kiq_config_str(config, KIQ_CFG_CONTROLLER_QUORUM_VOTERS), b->voters,
                                  KIQ_MAX_VOTERS, &b->nvoters) == 0;
    const char *bootstrap = kiq_config_str(config, KIQ_CFG_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS);
    /* a controller-only node of a dynamic quorum (kraft.version 1) */
    if (!b->cluster && b->roles.controller && !b->roles.broker && *bootstrap) b->cluster = true;
    /* A broker of a dynamic quorum knows the controllers by address alone:
     * it looks for the active one among them as it does among voters
     * (kiq_broker_controller_not_there), under ids -2, -3, ... (Kafka's for
     * a bootstrap server). */
    if (!b->cluster && !b->roles.controller && *bootstrap) {
        if (kiq_bootstrap_servers_parse(bootstrap, b->voters, KIQ_MAX_VOTERS, &b->nvoters) != 0) goto fail;
        for (int i = 0; i < b->nvoters; i++) b->voters[i].id = -2 - i;
        b->cluster = b->nvoters > 0;
    }
    if (kiq_broker_security_setup(b, config, data, control) != 0) goto fail;
    if (b->cluster && b->nvoters > 0) {
        atomic_store(&b->controller_id, b->voters[0].id);
        snprintf(b->controller_host, sizeof b->controller_host, "%s", b->voters[0].host);
        b->controller_port = b->voters[0].port;
    }
    const char *adv = kiq_config_str(config, KIQ_CFG_ADVERTISED_LISTENERS);
    if (*adv) {
        kiq_listener_t al[KIQ_MAX_LISTENERS];
        int na;
        if (kiq_listeners_parse(adv, al, KIQ_MAX_LISTENERS, &na) != 0) goto fail;
        snprintf(b->advertised_host, sizeof b->advertised_host, "%s", al[0].host);
        b->advertised_port = al[0].port;
    }
    if (kiq_broker_dirs_claim(b) != 0) goto fail;
    if (b->cluster) {
        kiq_producer_id_source_t from_controller = {ask_producer_ids, producer_ids_arrived, b};
        b->producer_ids = kiq_producer_ids_new_from(&from_controller);
    } else {
        b->producer_ids = kiq_producer_ids_new(b->log_dirs[0].path, KIQ_PRODUCER_IDS_BLOCK);
    }
    if (!b->producer_ids) goto fail;
    kiq_log_config_default(&b->log_cfg);
    b->log_cfg.segment_bytes = (int32_t)kiq_config_int(config, KIQ_CFG_LOG_SEGMENT_BYTES);
    b->log_cfg.index_interval_bytes =
        (int32_t)kiq_config_int(config, KIQ_CFG_LOG_INDEX_INTERVAL_BYTES);
    b->log_cfg.segment_index_bytes =
        (int32_t)kiq_config_int(config, KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES);
    if (kiq_log_config_check(&b->log_cfg) != 0) goto fail;
    kiq_observer_t counter = kiq_event_counts_observer(&b->event_counts);
    if (kiq_observers_add(&b->observers, &counter) != 0) goto fail;
    if (!(b->metrics = kiq_metrics_new()) || kiq_metrics_add(b->metrics, kiq_broker_metrics, b) != 0) goto oom;
    if (!(b->client_quotas = kiq_quota_manager_new((int)kiq_config_int(config, KIQ_CFG_QUOTA_WINDOW_NUM),
                                                   kiq_config_int(config, KIQ_CFG_QUOTA_WINDOW_SIZE_SECONDS) * 1000,
                                                   &kiq_broker_quota_source, b)) ||
        kiq_metrics_add(b->metrics, kiq_quota_metrics, b->client_quotas) != 0)
        goto oom;
    if (!(b->telemetry = kiq_client_telemetry_new()) ||
        kiq_metrics_add(b->metrics, kiq_client_telemetry_metrics, b->telemetry) != 0)
        goto oom;
    if (!(b->topic_counts = kiq_topic_counts_new())) goto oom;
    kiq_observer_t topic_counter = kiq_topic_counts_observer(b->topic_counts);
    if (kiq_observers_add(&b->observers, &topic_counter) != 0) goto fail;
    if (!(b->recent_events = kiq_recent_events_new())) goto oom;
    kiq_observer_t recent = kiq_recent_events_observer(b->recent_events);
    if (kiq_observers_add(&b->observers, &recent) != 0) goto fail;
    if (kiq_config_bool(config, KIQ_CFG_JOURNEY_ENABLE)) {
        b->journeys = kiq_journeys_new(b->node_id, (int)kiq_config_int(config, KIQ_CFG_JOURNEY_MAX_BATCHES));
        if (!b->journeys) goto oom;
        kiq_observer_t recorder = kiq_journeys_observer(b->journeys);
        if (kiq_observers_add(&b->observers, &recorder) != 0) goto fail;
    }
    b->metadata = kiq_metadata_cache_new();
    if (!b->metadata) goto oom;
    return b;
oom:
    kiq_error_set("out of memory");
fail:
    kiq_broker_free(b);
    return NULL;
}

/* Processor thread: the surface decides what is queued. */
static int admit(void *ctx, kiq_request_t *r)
{
    const kiq_broker_t *b = ctx;
    return b->surface->admit(r);
}

/* Processor thread: a request is finished. */
static void request_done(void *ctx, const kiq_request_t *r)
{
    kiq_broker_t *b = ctx;
    kiq_request_stats_record(&b->stats, r);
}

/* Any thread (the log manager's append listener): a partition's waiters,
 * or everyone's, try again. */
static void wake_waiters(void *purgatory, const char *topic, int32_t partition)
{
    if (topic)
        kiq_purgatory_notify(purgatory, kiq_purgatory_key(topic, strlen(topic), partition));
    else
        kiq_purgatory_notify_all(purgatory);
}

/* The replica manager's, any thread: what the lifecycle registered. */
static int64_t broker_epoch(void *ctx)
{
    kiq_broker_t *b = ctx;
    return b->lifecycle ? kiq_broker_lifecycle_epoch(b->lifecycle) : -1;
}

/* The replica manager's, any thread: __consumer_offsets leadership moved. */
static void coordinator_partition_led(void *ctx, const char *topic, int32_t partition, bool led)
{
    kiq_broker_t *b = ctx;
    if (strcmp(topic, KIQ_OFFSETS_TOPIC) == 0 && b->groups)
        kiq_group_coordinator_partition_led(b->groups, partition, led);
    else if (strcmp(topic, KIQ_TXN_TOPIC) == 0 && b->txns)
        kiq_txn_coordinator_partition_led(b->txns, partition, led);
}

/* A topic's partition count as this broker knows it: from the cluster's
 * metadata, or its own topics when alone. */
/* A marker reached a partition of __consumer_offsets led here. */
static void offsets_marker(void *ctx, int32_t partition, int64_t producer_id, bool commit)
{
    kiq_broker_t *b = ctx;
    kiq_group_coordinator_txn_marker(b->groups, partition, producer_id, commit);
}

static int32_t partitions_of(void *ctx, const char *topic, size_t len)
{
    kiq_broker_t *b = ctx;
    if (b->cluster) return kiq_metadata_cache_partition_count(b->metadata, topic, len);
    kiq_topic_t *t = kiq_topics_get(b->topics, (kiq_str_t){topic, (int32_t)len});
    int32_t n = t ? t->npartitions : -1;
    kiq_topic_unref(t);
    return n;
}

static int next_producer_id(void *ctx, int64_t *id)
{
    kiq_broker_t *b = ctx;
    return kiq_producer_ids_next(b->producer_ids, id);
}

/* An I/O thread's (or the control plane's, thread -1) request. */
static void handle(kiq_broker_t *b, kiq_request_t *r, int thread)
{
    if (kiq_observers_want(&b->observers, KIQ_POINT_DEQUEUED)) {
        kiq_event_t e = kiq_event(KIQ_POINT_DEQUEUED, b->node_id);
        e.request = r;
        e.thread = thread;
        kiq_observers_emit(&b->observers, &e);
    }
    int64_t t0 = kiq_clock_mono_ns();
    b->surface->handle(b, r);
    atomic_fetch_add_explicit(&b->io_busy_ns, kiq_clock_mono_ns() - t0, memory_order_relaxed);
}

static void *handler_main(void *arg)
{
    kiq_handler_thread_t *h = arg;
    kiq_say_thread_name(h->name);
    kiq_request_t *r;
    while ((r = kiq_request_queue_pop(h->queue))) handle(h->b, r, h->id);
    return NULL;
}

static int handler_start(kiq_handler_thread_t *h, kiq_broker_t *b, kiq_request_queue_t *queue, int id,
                         const char *name)
{
    *h = (kiq_handler_thread_t){.b = b, .queue = queue, .id = id};
    snprintf(h->name, sizeof h->name, "%s", name);
    if (pthread_create(&h->thread, NULL, handler_main, h) != 0)
        return kiq_error_errno("cannot start the %s thread", name);
    h->started = true;
    return 0;
}

/* After its queue closed. */
static void handler_join(kiq_handler_thread_t *h)
{
    if (h->started) pthread_join(h->thread, NULL);
    h->started = false;
}

/* The control plane's processor: the quorum's own RPCs take their queue. */
static bool quorum_request(void *ctx, const kiq_request_t *r)
{
    switch (r->header.api_key) {
    case KIQ_API_FETCH:
    case KIQ_API_VOTE:
    case KIQ_API_BEGIN_QUORUM_EPOCH:
    case KIQ_API_END_QUORUM_EPOCH:
    case KIQ_API_DESCRIBE_QUORUM:
        return true;
    default:
        return false;
    }
}

/* A processor of this broker feeding queue, with the broker's limits. */
static kiq_processor_config_t processor_config(kiq_broker_t *b, int id, kiq_request_queue_t *queue)
{
    return (kiq_processor_config_t){
        .id = id,
        .max_request_bytes = (size_t)kiq_config_int(b->config, KIQ_CFG_SOCKET_REQUEST_MAX_BYTES),
        .idle_ms = kiq_config_int(b->config, KIQ_CFG_CONNECTIONS_MAX_IDLE_MS),
        .read_timeout_ms = kiq_config_int(b->config, KIQ_CFG_REQUEST_READ_TIMEOUT_MS),
        .queue = queue,
        .admit = admit,
        .done = request_done,
        .admit_ctx = b,
        .observers = &b->observers,
        .broker = b->node_id,
    };
}

/* Its own queue, processor, acceptor and I/O thread; the bound port is
 * kept for restarts like the data listener's. */
static int start_control_plane(kiq_broker_t *b)
{
    b->control_queue = kiq_request_queue_new((size_t)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS));
    b->quorum_queue = kiq_request_queue_new((size_t)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS));
    if (!b->control_queue || !b->quorum_queue) return kiq_error_set("out of memory");
    kiq_request_queue_set_observers(b->control_queue, &b->observers, b->node_id);
    kiq_request_queue_set_observers(b->quorum_queue, &b->observers, b->node_id);
    kiq_processor_config_t pc = processor_config(b, b->nprocessors, b->control_queue);
    pc.listener = KIQ_LISTENER_CONTROL;
    pc.tls = b->control_tls;
    pc.sasl = b->control_sasl;
    pc.urgent_queue = b->quorum_queue;
    pc.urgent = quorum_request;
    b->control_processor = kiq_processor_new(&pc);
    if (!b->control_processor) return -1;
    kiq_request_queue_on_space(b->control_queue, kiq_processor_queue_space, b->control_processor);
    kiq_request_queue_on_space(b->quorum_queue, kiq_processor_queue_space, b->control_processor);
    /* the controller's requests never wait behind client load */
    char name[24];
    snprintf(name, sizeof name, "control-%d", b->node_id);
    if (handler_start(&b->control_io, b, b->control_queue, -1, name) != 0) return -1;
    snprintf(name, sizeof name, "quorum-%d", b->node_id);
    if (handler_start(&b->quorum_io, b, b->quorum_queue, -1, name) != 0) return -1;
    if (kiq_processor_start(b->control_processor) != 0 || kiq_acceptor_start(b->control_acceptor) != 0) return -1;
    return 0;
}

static void stop_control_plane(kiq_broker_t *b)
{
    kiq_acceptor_free(b->control_acceptor);
    b->control_acceptor = NULL;
    if (b->control_queue) kiq_request_queue_close(b->control_queue);
    if (b->quorum_queue) kiq_request_queue_close(b->quorum_queue);
    handler_join(&b->control_io);
    handler_join(&b->quorum_io);
    kiq_processor_free(b->control_processor);
    b->control_processor = NULL;
    kiq_request_queue_free(b->control_queue);
    kiq_request_queue_free(b->quorum_queue);
    b->control_queue = b->quorum_queue = NULL;
}

/* What opening the logs found, for the startup phases: how many
 * partitions, whether the stop before was clean, what recovery rescanned. */
static void note_recovery(kiq_broker_t *b)
{
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    int64_t partitions = 0, batches = 0, truncated = 0;
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *log = list[i]->partitions[p]->log;
            if (!log) continue;
            kiq_segment_recovery_t rec;
            kiq_partition_log_recovery(log, &rec);
            partitions++;
            batches += rec.batches;
            truncated += (int64_t)rec.bytes_truncated;
        }
    if (list) kiq_topics_list_free(list, count);
    atomic_store(&b->startup.clean, b->log_cfg.clean_shutdown);
    atomic_store(&b->startup.recovered_batches, batches);
    atomic_store(&b->startup.truncated_bytes, truncated);
    kiq_broker_startup_mark(&b->startup, KIQ_STARTUP_LOGS, partitions);
}

/* ---- the broker's services ---------------------------------------------
 *
 * The broker is the services below (NGINX's module list is the model): a
 * start brings one up on the thread starting the broker, in this order; a
 * shutdown quiesces them in the reverse order (stop: no more work taken,
 * what is parked answered, threads joined), then releases them in the
 * reverse order (release: memory and files), so whatever a later service
 * uses outlives it. A row's phase is stamped when it has started. The
 * services added from outside (HTTP) start after the last row and stop
 * before the first. */

/* configs: the dynamic broker configs first, the logs open with them */
static int start_configs(kiq_broker_t *b)
{
    kiq_broker_startup_begin(&b->startup);
    if (kiq_broker_configs_load(b) != 0 || kiq_broker_features_load(b) != 0 || kiq_broker_quotas_load(b) != 0)
        return -1;
    kiq_broker_configs_log_config(b, &b->log_cfg, &b->log_cfg);
    return 0;
}

/* logs: every log directory opened (recovered after an unclean stop) */
static int start_logs(kiq_broker_t *b)
{
    kiq_topics_dir_spec_t *specs = calloc((size_t)b->nlog_dirs, sizeof *specs);
    if (!specs) return kiq_error_set("out of memory");
    b->log_cfg.clean_shutdown = true;
    for (int i = 0; i < b->nlog_dirs; i++) {
        kiq_broker_log_dir_t *d = &b->log_dirs[i];
        d->clean_shutdown = kiq_broker_dir_marked_clean(d);
        if (!d->clean_shutdown) b->log_cfg.clean_shutdown = false;
        if (!d->clean_shutdown && !d->fresh) KIQ_INFO("no clean-shutdown marker in %s: recovering logs", d->path);
        /* A restart is the way back for a failed directory: it is tried again. */
        kiq_log_dir_reset(d->health);
        specs[i] = (kiq_topics_dir_spec_t){.path = d->path, .clean_shutdown = d->clean_shutdown, .health = d->health};
    }
    /* a cluster broker hosts only the partitions the controller gives it */
    b->topics = kiq_topics_open_dirs_ex(specs, b->nlog_dirs, &b->log_cfg, b->cluster);
    free(specs);
    if (!b->topics) return -1;
    kiq_topics_set_observers(b->topics, &b->observers, b->node_id);
    b->replica_start = (kiq_partition_replica_start_t){b->node_id, b->cluster, &b->observers};
    kiq_partition_state_ops_t states = kiq_partition_replica_states(&b->replica_start);
    if (kiq_topics_set_partition_states(b->topics, &states) != 0) return -1;
    note_recovery(b);
    if (!kiq_broker_dirs_read_incarnation(b) && kiq_uuid_random(&b->incarnation) != 0)
        return kiq_error_set("no randomness");
    /* from now on the logs are open and a crash is unclean */
    return kiq_broker_dirs_unmark(b);
}

/* After every other service: the logs closed, and with a clean stop each
 * healthy directory marked clean (after a disk failure the next start
 * recovers what reached that directory). */
static void release_logs(kiq_broker_t *b)
{
    if (!b->topics) return;
    kiq_topics_free(b->topics);
    b->topics = NULL;
    if (b->stopping_clean && kiq_broker_dirs_mark_clean(b))
        KIQ_INFO("[KafkaIQ broker %d] shut down cleanly", b->node_id);
}

/* log tasks: retention, the cleaner, the flusher, the mover between log
 * directories, the scrubber */
static int start_log_tasks(kiq_broker_t *b)
{
    b->retention = kiq_log_retention_new(b->topics, b->config);
    if (!b->retention) return -1;
    b->cleaner = kiq_log_cleaner_new(b->topics, b->config);
    if (!b->cleaner) return -1;
    b->flusher = kiq_log_flusher_new(b->topics);
    if (!b->flusher) return -1;
    b->mover = kiq_log_mover_new(b->topics, b->config);
    if (!b->mover) return -1;
    int64_t scrub_ms = kiq_config_int(b->config, KIQ_CFG_LOG_SCRUB_INTERVAL_MS);
    b->scrubber = kiq_log_scrubber_new(b->topics, scrub_ms);
    if (!b->scrubber && scrub_ms > 0) return -1;
    return 0;
}

/* journeys: the recorder's journal and OTLP exporter, each with its
 * thread, while the broker runs (the ring itself lives as long as the
 * broker, so a stopped one still answers from it) */
static int start_journeys(kiq_broker_t *b)
{
    if (!b->journeys) return 0;
    int64_t keep_bytes = kiq_config_int(b->config, KIQ_CFG_JOURNEY_RETENTION_BYTES);
    if (keep_bytes != 0) {
        /* hidden from the log manager, which takes a directory for a partition's */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/.journeys", b->log_dirs[0].path);
        kiq_journal_t *journal = kiq_journal_open(dir, kiq_config_int(b->config, KIQ_CFG_JOURNEY_RETENTION_MS), keep_bytes);
        if (!journal) return -1;
        kiq_journeys_keep(b->journeys, journal);
    }
    const char *endpoint = kiq_config_str(b->config, KIQ_CFG_OTLP_ENDPOINT);
    if (endpoint[0]) {
        kiq_otlp_t *otlp = kiq_otlp_open(endpoint, b->node_id);
        if (!otlp) return -1;
        kiq_journeys_export(b->journeys, otlp);
    }
    return 0;
}

/* After every thread that records has stopped: a clean stop saves the
 * ring's journeys in the journal (a kill, like a crash, does not). */
static void stop_journeys(kiq_broker_t *b)
{
    if (b->journeys) kiq_journeys_let_go(b->journeys, b->stopping_clean);
}

static void stop_log_tasks(kiq_broker_t *b)
{
    kiq_log_mover_free(b->mover);
    b->mover = NULL;
    kiq_log_retention_free(b->retention);
    b->retention = NULL;
    kiq_log_scrubber_free(b->scrubber);
    b->scrubber = NULL;
    kiq_log_cleaner_free(b->cleaner);
    b->cleaner = NULL;
    kiq_log_flusher_free(b->flusher);
    b->flusher = NULL;
}

/* coordinators: groups and transactions, their state loaded */
static int start_coordinators(kiq_broker_t *b)
{
    kiq_group_context_t gctx = {b->config, b->topics, b->cluster, b->metadata};
    b->groups = kiq_group_coordinator_new(&gctx);
    if (!b->groups) return kiq_error_set("out of memory");
    if (!(b->shares = kiq_share_manager_new())) return kiq_error_set("out of memory");
    if (kiq_group_coordinator_start(b->groups) != 0) return -1;
    kiq_txn_context_t tctx = {
        b->config, b->topics, b->cluster, next_producer_id, partitions_of, b,
        {b->topics, b->metadata, b->node_id, b->metrics, b->peer_security, offsets_marker, b},
    };
    if (!(b->txns = kiq_txn_coordinator_new(&tctx))) return kiq_error_set("out of memory");
    if (kiq_txn_coordinator_start(b->txns) != 0) return -1;
    return 0;
}

/* Parked joins and syncs answered NOT_COORDINATOR, the timers stopped. */
static void stop_coordinators(kiq_broker_t *b)
{
    kiq_group_coordinator_stop(b->groups);
    kiq_txn_coordinator_stop(b->txns);
}

static void release_coordinators(kiq_broker_t *b)
{
    kiq_group_coordinator_free(b->groups);
    b->groups = NULL;
    kiq_share_manager_free(b->shares);
    b->shares = NULL;
    kiq_txn_coordinator_free(b->txns);
    b->txns = NULL;
}

/* replicas: LeaderAndIsr, StopReplica and the fetchers' home in a cluster
 * (before the requests: handlers read it); standalone every partition is
 * led here */
static int start_replicas(kiq_broker_t *b)
{
    if (b->cluster) {
        kiq_replica_context_t rc = {
            .node_id = b->node_id,
            .config = b->config,
            .topics = b->topics,
            .metadata = b->metadata,
            .controller = current_controller,
            .broker_epoch = broker_epoch,
            .coordinator_partition_led = coordinator_partition_led,
            .ctx = b,
        };
        for (int i = 0; i < b->nlog_dirs && i < KIQ_REPLICA_MAX_LOG_DIRS; i++) rc.log_dir_ids[rc.nlog_dirs++] = b->log_dirs[i].dir_id;
        rc.metrics = b->metrics;
        rc.peer_security = b->peer_security;
        rc.controller_security = b->controller_security;
        if (!(b->replicas = kiq_replica_manager_new(&rc))) return -1;
    } else {
        kiq_replica_manager_lead_all_alone(b->topics);
    }
    return 0;
}

/* No handler calls in any more; its fetchers hold topics. */
static void release_replicas(kiq_broker_t *b)
{
    kiq_replica_manager_free(b->replicas);
    b->replicas = NULL;
}

/* requests: the purgatory, the request queue, the processors, the I/O
 * threads, the channel to the controller, and last the listener */
static int start_requests(kiq_broker_t *b)
{
    b->purgatory = kiq_purgatory_new();
    b->fetch_sessions = kiq_fetch_sessions_new();
    b->queue = kiq_request_queue_new((size_t)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS));
    if (!b->purgatory || !b->fetch_sessions || !b->queue) return kiq_error_set("out of memory");
    kiq_request_queue_set_observers(b->queue, &b->observers, b->node_id);
    kiq_topics_set_append_listener(b->topics, wake_waiters, b->purgatory);
    b->nprocessors = b->roles.broker ? (int)kiq_config_int(b->config, KIQ_CFG_NUM_NETWORK_THREADS) : 0;
    b->processors = calloc((size_t)b->nprocessors + 1, sizeof *b->processors);
    if (!b->processors) return kiq_error_set("out of memory");
    if (!(b->request_pool = kiq_memory_pool_new(kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUEST_BYTES))))
        return kiq_error_set("out of memory");
    b->quotas = kiq_connection_quotas_new((int32_t)kiq_config_int(b->config, KIQ_CFG_MAX_CONNECTIONS),
                                          (int32_t)kiq_config_int(b->config, KIQ_CFG_MAX_CONNECTIONS_PER_IP),
                                          kiq_config_str(b->config, KIQ_CFG_MAX_CONNECTIONS_PER_IP_OVERRIDES));
    if (!b->quotas) return -1;
    for (int i = 0; i < b->nprocessors; i++) {
        kiq_processor_config_t pc = processor_config(b, i, b->queue);
        pc.tls = b->tls;
        pc.sasl = b->sasl;
        pc.pool = b->request_pool;
        pc.quotas = b->quotas;
        b->processors[i] = kiq_processor_new(&pc);
        if (!b->processors[i]) return -1;
        kiq_request_queue_on_space(b->queue, kiq_processor_queue_space, b->processors[i]);
        kiq_memory_pool_on_release(b->request_pool, kiq_processor_pool_space, b->processors[i]);
    }
    if (b->roles.broker) {
        b->acceptor = kiq_acceptor_new(b->host, b->port, b->processors, b->nprocessors, b->quotas);
        if (!b->acceptor) return -1;
        b->bound_port = kiq_acceptor_port(b->acceptor);
        b->port = b->bound_port; /* a restart comes back on the same port */
    }
    kiq_request_stats_clear(&b->stats); /* the last run's figures go */
    if (!b->advertised_host[0]) {
        snprintf(b->advertised_host, sizeof b->advertised_host, "%s", *b->host ? b->host : "127.0.0.1");
        b->advertised_port = b->bound_port;
    }
    if (kiq_purgatory_start(b->purgatory) != 0) return -1;
    atomic_store(&b->registered_epoch, -1);
    if (b->cluster) {
        char id[40];
        snprintf(id, sizeof id, "kafkaiq-broker-%d", b->node_id);
        const char *host;
        int port;
        atomic_store(&b->forwarding_to, current_controller(b, &host, &port));
        kiq_peer_channel_config_t cc = {.name = "to-controller", .peer = "controller", .host = host,
                                        .port = port, .client_id = id, .backoff_min_ms = 100,
                                        .backoff_max_ms = 1000, .metrics = b->metrics,
                                        .security = b->controller_security};
        b->controller_channel = kiq_peer_channel_new(&cc);
        if (!b->controller_channel) return -1;
        b->share_peers = kiq_broker_peers_new(b->metadata, b->peer_security, b->node_id, "share-admin", true, b->metrics);
        if (!b->share_peers) return kiq_error_set("out of memory");
    }
    atomic_store(&b->io_busy_ns, 0);
    b->io_started_ns = kiq_clock_mono_ns();
    b->nio_threads = (int)kiq_config_int(b->config, KIQ_CFG_NUM_IO_THREADS);
    b->io_threads = calloc((size_t)b->nio_threads, sizeof *b->io_threads);
    if (!b->io_threads) return kiq_error_set("out of memory");
    static atomic_int next_id; /* I/O thread numbers, unique in the process */
    for (int i = 0; i < b->nio_threads; i++) {
        int id = atomic_fetch_add(&next_id, 1);
        char name[24];
        snprintf(name, sizeof name, "io-%d", id);
        if (handler_start(&b->io_threads[i], b, b->queue, id, name) != 0) {
            b->nio_threads = i;
            return -1;
        }
    }
    for (int i = 0; i < b->nprocessors; i++)
        if (kiq_processor_start(b->processors[i]) != 0) return -1;
    if (!b->acceptor) return 0;
    /* As Kafka's broker, no client is taken before the controller's
     * metadata is here: an answer from an empty cache would tell one that
     * its topic is missing, or refuse it. The controller's own requests
     * come on the control plane; without one they come here, so nothing
     * can be held. */
    if (b->cluster && b->has_control_plane) kiq_acceptor_hold(b->acceptor);
    return kiq_acceptor_start(b->acceptor);
}

void kiq_broker_metadata_applied(kiq_broker_t *b)
{
    if (b->has_control_plane && b->acceptor && kiq_acceptor_open(b->acceptor))
        KIQ_INFO("[KafkaIQ broker %d] the controller's metadata is here: taking clients on port %d", b->node_id,
                 b->bound_port);
}

/* Stop taking work, answer what is parked (what the channel holds first:
 * some of it parks), then drain the handlers. */
static void stop_requests(kiq_broker_t *b)
{
    kiq_acceptor_free(b->acceptor);
    b->acceptor = NULL;
    kiq_peer_channel_stop(b->controller_channel);
    if (b->share_peers) kiq_broker_peers_shutdown(b->share_peers);
    if (b->purgatory) kiq_purgatory_stop(b->purgatory);
    if (b->queue) kiq_request_queue_close(b->queue);
    for (int i = 0; i < b->nio_threads; i++) handler_join(&b->io_threads[i]);
    b->nio_threads = 0;
}

static void release_requests(kiq_broker_t *b)
{
    for (int i = 0; i < b->nprocessors; i++) kiq_processor_free(b->processors[i]);
    free(b->processors);
    b->processors = NULL;
    b->nprocessors = 0;
    kiq_request_queue_free(b->queue);
    b->queue = NULL;
    kiq_purgatory_free(b->purgatory);
    b->purgatory = NULL;
    kiq_fetch_sessions_free(b->fetch_sessions);
    b->fetch_sessions = NULL;
    kiq_peer_channel_free(b->controller_channel);
    b->controller_channel = NULL;
    kiq_broker_peers_free(b->share_peers);
    b->share_peers = NULL;
    /* after the processors and every request: they give bytes and slots back */
    kiq_memory_pool_free(b->request_pool);
    b->request_pool = NULL;
    kiq_connection_quotas_free(b->quotas);
    b->quotas = NULL;
    free(b->io_threads);
    b->io_threads = NULL;
}

struct kiq_controller *kiq_broker_active_controller(kiq_broker_t *b)
{
    struct kiq_controller *c = b->controller;
    return c && kiq_controller_active(c) ? c : NULL;
}

/* The leader this voter's quorum names; -1 when it names none or this
 * broker hosts no voter. */
static int32_t quorum_leader(kiq_broker_t *b)
{
    if (!b->quorum) return -1;
    kiq_raft_view_t v;
    kiq_quorum_view(b->quorum, &v);
    return v.leader_id;
}

/* The replica manager's, the lifecycle's and forwarding's: where the
 * active controller is. The leader this voter's quorum names; where it
 * names none (an election, or this voter cut off from the others) or this
 * broker is no voter, where the controller was last found: the last
 * UpdateMetadata's sender, or the next voter after one that was not it
 * (kiq_broker_controller_not_there), as a Kafka broker's observer looks
 * for the quorum's leader. */
static int32_t current_controller(void *ctx, const char **host, int *port)
{
    kiq_broker_t *b = ctx;
    int32_t id = quorum_leader(b);
    if (id < 0) id = atomic_load(&b->controller_id);
    const kiq_voter_t *v = kiq_voter_of(b->voters, b->nvoters, id);
    *host = v ? v->host : b->controller_host;
    *port = v ? v->port : b->controller_port;
    return id;
}

int32_t kiq_broker_controller_id(kiq_broker_t *b)
{
    if (!b->cluster) return b->node_id;
    int32_t id = quorum_leader(b);
    return id >= 0 ? id : kiq_metadata_cache_controller(b->metadata);
}

/* Both move the forwarding line at once: a forwarded request queued for a
 * controller that is gone goes to the new one instead of waiting there. */
void kiq_broker_controller_seen(kiq_broker_t *b, int32_t id)
{
    if (!b->cluster || !kiq_voter_of(b->voters, b->nvoters, id)) return;
    atomic_store(&b->controller_id, id);
    kiq_broker_follow_controller(b);
}

void kiq_broker_controller_not_there(kiq_broker_t *b, int32_t id)
{
    int i = 0;
    while (i < b->nvoters && b->voters[i].id != id) i++;
    int32_t next = b->voters[i < b->nvoters ? (i + 1) % b->nvoters : 0].id;
    if (atomic_compare_exchange_strong(&b->controller_id, &id, next)) kiq_broker_follow_controller(b);
}

/* The lifecycle's: a call to `id` found no active controller there. */
static void controller_not_there(void *ctx, int32_t id) { kiq_broker_controller_not_there(ctx, id); }

void kiq_broker_follow_controller(kiq_broker_t *b)
{
    if (!b->controller_channel) return; /* not started yet: it starts where the controller is */
    const char *host;
    int port;
    int32_t id = current_controller(b, &host, &port);
    if (atomic_exchange(&b->forwarding_to, id) != id) kiq_peer_channel_retarget(b->controller_channel, host, port);
}

/* The quorum's ticker: its commits applied, the controller (de)activated,
 * and the leader it names is where this broker's lines go next. */
static void quorum_changed(void *ctx)
{
    kiq_broker_t *b = ctx;
    kiq_controller_quorum_changed(b->controller);
    kiq_raft_view_t v;
    kiq_quorum_view(b->quorum, &v);
    if (v.leader_id >= 0 && atomic_exchange(&b->controller_id, v.leader_id) != v.leader_id) {
        KIQ_INFO("[KafkaIQ broker %d] the controller quorum's leader is %d (epoch %d)", b->node_id, v.leader_id,
                 v.epoch);
        kiq_broker_follow_controller(b);
    }
}

/* Under the quorum's lock: the voters' Fetches held here may have news. */
static void quorum_news(void *ctx)
{
    kiq_broker_t *b = ctx;
    kiq_purgatory_notify(b->purgatory, kiq_purgatory_quorum_key());
}

/* controller: on each voter of the quorum, active where it leads */
static int start_controller(kiq_broker_t *b)
{
    if (!b->cluster || !b->roles.controller) return 0;
    kiq_quorum_config_t qc = {
        .node_id = b->node_id,
        .dir = b->log_dirs[0].path,
        .n_voters = b->nvoters,
        .election_timeout_ms = kiq_config_int(b->config, KIQ_CFG_CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS),
        .fetch_timeout_ms = kiq_config_int(b->config, KIQ_CFG_CONTROLLER_QUORUM_FETCH_TIMEOUT_MS),
        .election_backoff_max_ms = kiq_config_int(b->config, KIQ_CFG_CONTROLLER_QUORUM_ELECTION_BACKOFF_MAX_MS),
        .request_timeout_ms = kiq_config_int(b->config, KIQ_CFG_CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS),
        .snapshot_max_bytes = kiq_config_int(b->config, KIQ_CFG_METADATA_LOG_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS),
        .snapshot_interval_ms = kiq_config_int(b->config, KIQ_CFG_METADATA_LOG_MAX_SNAPSHOT_INTERVAL_MS),
        .segment_bytes = (int32_t)kiq_config_int(b->config, KIQ_CFG_METADATA_LOG_SEGMENT_BYTES),
        .metrics = b->metrics,
        .changed = quorum_changed,
        .news = quorum_news,
        .ctx = b,
    };
    memcpy(qc.voters, b->voters, (size_t)b->nvoters * sizeof *b->voters);
    if (kiq_bootstrap_servers_parse(kiq_config_str(b->config, KIQ_CFG_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS),
                                    qc.bootstrap, KIQ_RAFT_MAX_VOTERS, &qc.n_bootstrap) != 0)
        return -1;
    qc.standalone = kiq_config_bool(b->config, KIQ_CFG_QUORUM_STANDALONE);
    memcpy(qc.dir_id, b->log_dirs[0].dir_id.b, sizeof qc.dir_id);
    snprintf(qc.self.name, sizeof qc.self.name, "%s", kiq_config_str(b->config, KIQ_CFG_CONTROL_PLANE_LISTENER_NAME));
    snprintf(qc.self.host, sizeof qc.self.host, "%s", b->control_host);
    qc.self.port = b->control_port;
    qc.security = b->controller_security;
    if (!(b->quorum = kiq_quorum_new(&qc))) return -1;
    b->controller = kiq_controller_new(b->config, b->node_id,
                                       kiq_config_str(b->config, KIQ_CFG_CONTROL_PLANE_LISTENER_NAME), b->metrics,
                                       b->quorum, b->controller_security);
    if (!b->controller || kiq_quorum_start(b->quorum) != 0) return -1;
    if (b->nvoters == 1 && !kiq_controller_wait_active(b->controller, 10000))
        return kiq_error_set("the controller did not become active: its metadata log cannot be read or written");
    return 0;
}

/* After every handler that may forward to it; the quorum stops first, so
 * no write of the controller's waits on it. */
static void release_controller(kiq_broker_t *b)
{
    kiq_quorum_stop(b->quorum, b->stopping_clean);
    kiq_controller_free(b->controller);
    b->controller = NULL;
    kiq_quorum_free(b->quorum);
    b->quorum = NULL;
}

static int start_control_plane_if_any(kiq_broker_t *b) { return b->has_control_plane ? start_control_plane(b) : 0; }

/* The control listener is bound before the controller starts: its voter
 * record names the port bound, where the config's is 0. */
static int bind_control_listener(kiq_broker_t *b)
{
    if (!b->has_control_plane) return 0;
    b->control_acceptor = kiq_acceptor_new(b->control_host, b->control_port, &b->control_processor, 1, NULL);
    if (!b->control_acceptor) return -1;
    b->control_port = kiq_acceptor_port(b->control_acceptor);
    return 0;
}

/* A start that failed before the control plane's: the listener bound. */
static void release_control_listener(kiq_broker_t *b)
{
    kiq_acceptor_free(b->control_acceptor);
    b->control_acceptor = NULL;
}

/* lifecycle: registration and heartbeats; last of the cluster's, as the
 * registration carries the bound ports */
static int start_lifecycle(kiq_broker_t *b)
{
    if (b->cluster && b->roles.broker) {
        kiq_broker_identity_t id = {
            .node_id = b->node_id,
            .cluster_id = b->cluster_id,
            .incarnation = b->incarnation,
            .advertised_host = b->advertised_host,
            .advertised_port = b->advertised_port,
            .has_control_plane = b->has_control_plane,
            .control_host = b->control_host,
            .control_port = b->control_port,
            .controller = current_controller,
            .not_there = controller_not_there,
            .config = b->config,
            .startup = &b->startup,
            .nlog_dirs = b->nlog_dirs,
            .metrics = b->metrics,
            .security = b->controller_security,
            .registered = registered,
            .ctx = b,
        };
        for (int i = 0; i < b->nlog_dirs && i < KIQ_BROKER_MAX_LOG_DIRS; i++) id.log_dirs[i] = b->log_dirs[i].dir_id;
        if (id.nlog_dirs > KIQ_BROKER_MAX_LOG_DIRS) id.nlog_dirs = KIQ_BROKER_MAX_LOG_DIRS;
        if (!(b->lifecycle = kiq_broker_lifecycle_new(&id))) return -1;
    }
    return 0;
}

/* The controller stops hearing from this broker before anything else
 * stops; a clean stop is a controlled shutdown, except on the
 * controller's own broker (its restart leaves the cluster as it was: the
 * brokers get a session's grace when it is back). */
static void stop_lifecycle(kiq_broker_t *b)
{
    b->last_broker_epoch = b->lifecycle ? kiq_broker_lifecycle_epoch(b->lifecycle) : -1;
    if (b->stopping_clean && !kiq_broker_active_controller(b)) kiq_broker_lifecycle_shut_down(b->lifecycle);
    kiq_broker_lifecycle_free(b->lifecycle);
    b->lifecycle = NULL;
}

/* replication: the fetchers and the ISR worker (it reads the lifecycle's
 * broker epoch) */
static int start_replication(kiq_broker_t *b) { return b->replicas ? kiq_replica_manager_start(b->replicas) : 0; }

/* No more ISR changes or fetching (they read the lifecycle). */
static void stop_replication(kiq_broker_t *b) { kiq_replica_manager_stop(b->replicas); }

static int start_ready(kiq_broker_t *b)
{
    b->running = true;
    /* a broker of a cluster is ready once registered and unfenced */
    if (!b->cluster || !b->roles.broker) kiq_broker_startup_mark(&b->startup, KIQ_STARTUP_READY, 0);
    if (b->roles.broker)
        KIQ_INFO("[KafkaIQ broker %d] started: listening on %s:%d, data in %s, cluster %s", b->node_id,
                 *b->host ? b->host : "*", b->bound_port, kiq_config_str(b->config, KIQ_CFG_LOG_DIRS), b->cluster_id);
    else
        KIQ_INFO("[KafkaIQ controller %d] started: quorum listener on %s:%d, metadata in %s, cluster %s", b->node_id,
                 *b->control_host ? b->control_host : "*", b->control_port,
                 kiq_config_str(b->config, KIQ_CFG_LOG_DIRS), b->cluster_id);
    return 0;
}

/* A row: its start, and what its stop and release undo. */
typedef struct broker_row {
    const char *name;
    int (*start)(kiq_broker_t *b);
    void (*stop)(kiq_broker_t *b);
    void (*release)(kiq_broker_t *b);
    enum kiq_startup_phase phase; /* stamped once started; KIQ__STARTUP_PHASES: none */
} broker_row_t;

static const broker_row_t rows[] = {
    {"configs", start_configs, NULL, NULL, KIQ_STARTUP_CONFIG},
    {"logs", start_logs, NULL, release_logs, KIQ__STARTUP_PHASES},
    {"journeys", start_journeys, stop_journeys, NULL, KIQ__STARTUP_PHASES},
    {"log tasks", start_log_tasks, stop_log_tasks, NULL, KIQ__STARTUP_PHASES},
    {"coordinators", start_coordinators, stop_coordinators, release_coordinators, KIQ__STARTUP_PHASES},
    {"replicas", start_replicas, NULL, release_replicas, KIQ__STARTUP_PHASES},
    {"requests", start_requests, stop_requests, release_requests, KIQ_STARTUP_LISTENERS},
    {"control listener", bind_control_listener, NULL, release_control_listener, KIQ__STARTUP_PHASES},
    {"controller", start_controller, NULL, release_controller, KIQ_STARTUP_CONTROLLER},
    {"control plane", start_control_plane_if_any, stop_control_plane, NULL, KIQ__STARTUP_PHASES},
    {"lifecycle", start_lifecycle, stop_lifecycle, NULL, KIQ__STARTUP_PHASES},
    {"replication", start_replication, stop_replication, NULL, KIQ__STARTUP_PHASES},
    {"ready", start_ready, NULL, NULL, KIQ__STARTUP_PHASES},
};
#define NROWS (int)(sizeof rows / sizeof rows[0])

int kiq_broker_start(kiq_broker_t *b)
{
    for (int i = 0; i < NROWS; i++) {
        if (rows[i].start(b) != 0) return kiq_error_set("%s: %s", rows[i].name, kiq_error_get());
        kiq_broker_startup_service(&b->startup, rows[i].name);
        enum kiq_startup_phase ph = rows[i].phase;
        if (ph == KIQ_STARTUP_CONTROLLER && !b->controller) continue;
        if (ph != KIQ__STARTUP_PHASES)
            kiq_broker_startup_mark(&b->startup, ph,
                                    ph == KIQ_STARTUP_LISTENERS ? b->bound_port
                                    : ph == KIQ_STARTUP_CONTROLLER ? b->node_id : 0);
    }
    for (int i = 0; i < b->nservices; i++) {
        if (b->services[i].start(b->services[i].ctx, b) != 0) return -1;
        kiq_broker_startup_service(&b->startup, b->services[i].name);
    }
    return 0;
}

int kiq_broker_add_service(kiq_broker_t *b, const kiq_broker_service_t *service)
{
    if (b->nservices >= KIQ_BROKER_MAX_SERVICES) return kiq_error_set("at most %d services", KIQ_BROKER_MAX_SERVICES);
    b->services[b->nservices++] = *service;
    return 0;
}

int kiq_broker_port(const kiq_broker_t *b) { return b->bound_port; }

const char *kiq_broker_host(const kiq_broker_t *b) { return b->advertised_host; }

bool kiq_broker_ready(kiq_broker_t *b) { return kiq_broker_startup_reached(&b->startup, KIQ_STARTUP_READY); }

int kiq_broker_control_port(const kiq_broker_t *b) { return b->has_control_plane ? b->control_port : -1; }

const char *kiq_broker_failed(kiq_broker_t *b)
{
    return b->lifecycle ? kiq_broker_lifecycle_gave_up(b->lifecycle) : NULL;
}

bool kiq_broker_journey_verdict(kiq_broker_t *b, const kiq_journey_t *jr, kiq_journey_verdict_t *out)
{
    kiq_topic_t *t = b->running && b->topics ? kiq_topics_get(b->topics, KIQ_STR(jr->topic)) : NULL;
    kiq_partition_t *part = t && jr->partition < t->npartitions ? t->partitions[jr->partition] : NULL;
    kiq_partition_log_t *log = part ? atomic_load(&part->log) : NULL;
    bool said = false;
    if (log && part->replica) {
        kiq_replica_view_t *v = malloc(sizeof *v); /* large: off the stack */
        if (v) {
            kiq_partition_replica_view(part->replica, v);
            kiq_journey_partition_t p = {v->role == KIQ_REPLICA_LEADER, b->node_id, v->leader,
                                         kiq_partition_log_high_watermark(log), v->nisr, v->isr};
            said = kiq_journey_verdict(jr, &p, out);
            free(v);
        }
    }
    kiq_topic_unref(t);
    return said;
}

static void broker_shutdown(kiq_broker_t *b, bool clean);

void kiq_broker_stop(kiq_broker_t *b) { broker_shutdown(b, true); }

void kiq_broker_kill(kiq_broker_t *b) { broker_shutdown(b, false); }

static void broker_shutdown(kiq_broker_t *b, bool clean)
{
    if (!b) return;
    b->stopping_clean = b->running && clean;
    if (b->running && !clean) KIQ_WARN("[KafkaIQ broker %d] killed: no clean shutdown", b->node_id);
    b->running = false;
    /* first what reads the broker from outside (the HTTP listener) */
    for (int i = b->nservices - 1; i >= 0; i--) b->services[i].stop(b->services[i].ctx, b);
    for (int i = NROWS - 1; i >= 0; i--)
        if (rows[i].stop) rows[i].stop(b);
    for (int i = NROWS - 1; i >= 0; i--)
        if (rows[i].release) rows[i].release(b);
}

void kiq_broker_free(kiq_broker_t *b)
{
    if (!b) return;
    kiq_broker_stop(b);
    kiq_config_free(b->config);
    kiq_tls_free(b->tls);
    kiq_peer_security_free(b->peer_security);
    kiq_peer_security_free(b->controller_security);
    kiq_tls_free(b->control_tls);
    kiq_sasl_free(b->control_sasl);
    kiq_sasl_free(b->sasl);
    kiq_authorizer_free(b->authorizer);
    /* the threads that ran interceptors are joined */
    if (b->interceptors.ops) b->interceptors.ops->free(b->interceptors.ctx);
    for (int i = 0; i < b->nservices; i++)
        if (b->services[i].free) b->services[i].free(b->services[i].ctx);
    kiq_metadata_cache_free(b->metadata);
    kiq_journeys_free(b->journeys);
    kiq_topic_counts_free(b->topic_counts);
    kiq_recent_events_free(b->recent_events);
    kiq_metrics_remove(b->metrics, b);
    kiq_metrics_remove(b->metrics, b->client_quotas);
    kiq_metrics_remove(b->metrics, b->telemetry);
    kiq_client_telemetry_free(b->telemetry);
    kiq_quota_manager_free(b->client_quotas);
    kiq_metrics_free(b->metrics);
    kiq_request_stats_clear(&b->stats);
    kiq_producer_ids_free(b->producer_ids);
    for (int i = 0; i < b->nlog_dirs; i++) {
        if (b->log_dirs[i].lock_fd >= 0) close(b->log_dirs[i].lock_fd);
        kiq_log_dir_free(b->log_dirs[i].health);
        free(b->log_dirs[i].path);
    }
    free(b->log_dirs);
    pthread_mutex_destroy(&b->features_mu);
    kiq_client_quota_store_clear(&b->quota_store);
    pthread_mutex_destroy(&b->quotas_mu);
    free(b);
}
