/* Broker configuration with Kafka's names, declared once in KIQ_BROKER_CONFIGS
 * and read from a properties file and `--override key=value` flags. A config
 * is built on one thread, then shared by the broker's threads: the static
 * values are read-only from then on; the dynamic ones (those Kafka lets
 * AlterConfigs change that this engine applies at once, see
 * kiq_config_dynamic) may change on any thread under the config's lock,
 * and readers see each value change atomically. */
#ifndef KIQ_CONFIG_CONFIG_H
#define KIQ_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum kiq_config_type { KIQ_CFG_INT, KIQ_CFG_LONG, KIQ_CFG_BOOL, KIQ_CFG_STRING };

/* X(id, name, type, default, min, max, valid-strings or NULL, doc) */
#define KIQ_BROKER_CONFIGS(X)                                                                   \
    X(BROKER_ID, "broker.id", INT, "0", 0, INT32_MAX, NULL, "this broker's id")                \
    X(LISTENERS, "listeners", STRING, "PLAINTEXT://127.0.0.1:9092", 0, 0, NULL,                 \
      "where to listen: PLAINTEXT://host:port (port 0 picks a free one)")                      \
    X(ADVERTISED_LISTENERS, "advertised.listeners", STRING, "", 0, 0, NULL,                     \
      "address given to clients in Metadata; empty means the bound listener")                  \
    X(CONTROL_PLANE_LISTENER_NAME, "control.plane.listener.name", STRING, "", 0, 0, NULL,       \
      "the listener that takes the controller's requests (its own queue and thread)")          \
    X(LISTENER_SECURITY_PROTOCOL_MAP, "listener.security.protocol.map", STRING,                 \
      "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", 0, 0, NULL,  \
      "NAME:PROTOCOL,... the security protocol of each listener (PLAINTEXT, SSL, SASL_PLAINTEXT, " \
      "SASL_SSL); with the default, a name not in it (a controller listener) is PLAINTEXT")      \
    X(SSL_KEYSTORE_TYPE, "ssl.keystore.type", STRING, "JKS", 0, 0, NULL,                         \
      "the TLS listener's key store: PEM or PKCS12 (JKS is not read)")                          \
    X(SSL_KEYSTORE_LOCATION, "ssl.keystore.location", STRING, "", 0, 0, NULL,                    \
      "the key store file (PEM: the private key and certificate chain)")                        \
    X(SSL_KEYSTORE_PASSWORD, "ssl.keystore.password", STRING, "", 0, 0, NULL,                    \
      "the PKCS12 key store's password")                                                        \
    X(SSL_KEY_PASSWORD, "ssl.key.password", STRING, "", 0, 0, NULL,                              \
      "the password of an encrypted private key (default: ssl.keystore.password)")             \
    X(SSL_KEYSTORE_CERTIFICATE_CHAIN, "ssl.keystore.certificate.chain", STRING, "", 0, 0, NULL,  \
      "PEM key store given inline: the certificate chain")                                      \
    X(SSL_KEYSTORE_KEY, "ssl.keystore.key", STRING, "", 0, 0, NULL,                              \
      "PEM key store given inline: the private key")                                            \
    X(SSL_TRUSTSTORE_TYPE, "ssl.truststore.type", STRING, "JKS", 0, 0, NULL,                     \
      "the trust store for client certificates: PEM or PKCS12 (JKS is not read)")               \
    X(SSL_TRUSTSTORE_LOCATION, "ssl.truststore.location", STRING, "", 0, 0, NULL,                \
      "the trust store file")                                                                   \
    X(SSL_TRUSTSTORE_PASSWORD, "ssl.truststore.password", STRING, "", 0, 0, NULL,                \
      "the PKCS12 trust store's password")                                                      \
    X(SSL_TRUSTSTORE_CERTIFICATES, "ssl.truststore.certificates", STRING, "", 0, 0, NULL,        \
      "PEM trust store given inline: the trusted certificates")                                  \
    X(SSL_PRINCIPAL_MAPPING_RULES, "ssl.principal.mapping.rules", STRING, "DEFAULT", 0, 0, NULL,  \
      "RULE:pattern/replacement/[LU],...,DEFAULT: a client certificate's subject to the principal's name") \
    X(SSL_CLIENT_AUTH, "ssl.client.auth", STRING, "none", 0, 0, "required,requested,none",       \
      "client certificates on TLS listeners: required (mutual TLS), requested, none")           \
    X(SASL_ENABLED_MECHANISMS, "sasl.enabled.mechanisms", STRING, "GSSAPI", 0, 0, NULL,        \
      "the SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER")             \
    X(PLAIN_SASL_JAAS_CONFIG, "plain.sasl.jaas.config", STRING, "", 0, 0, NULL,                  \
      "PLAIN's users, in Kafka's JAAS form: org.apache.kafka.common.security.plain."           \
      "PlainLoginModule required user_alice=\"secret\";")                                       \
    X(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM, "ssl.endpoint.identification.algorithm", STRING, "https", 0, 0, \
      NULL, "https: a broker connecting to another over TLS checks that the peer's certificate names the "   \
      "address it dialled; empty: the trust store's signature alone")                           \
    X(INTER_BROKER_LISTENER_NAME, "inter.broker.listener.name", STRING, "", 0, 0, NULL,          \
      "the listener brokers reach each other on: KafkaIQ's client listener (empty: that one)")   \
    X(SECURITY_INTER_BROKER_PROTOCOL, "security.inter.broker.protocol", STRING, "PLAINTEXT", 0, 0, \
      "PLAINTEXT,SSL,SASL_PLAINTEXT,SASL_SSL",                                                    \
      "the inter-broker listener's protocol; when set it must be the client listener's")         \
    X(SASL_MECHANISM_INTER_BROKER_PROTOCOL, "sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", 0, 0, \
      NULL, "the SASL mechanism a broker signs in to the others with: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512") \
    X(SASL_MECHANISM_CONTROLLER_PROTOCOL, "sasl.mechanism.controller.protocol", STRING, "GSSAPI", 0, 0, NULL, \
      "the SASL mechanism nodes sign in to a SASL control-plane listener with: PLAIN, SCRAM-SHA-256 or "     \
      "SCRAM-SHA-512")                                                                            \
    X(SCRAM_SHA_256_SASL_JAAS_CONFIG, "scram-sha-256.sasl.jaas.config", STRING, "", 0, 0, NULL,  \
      "the inter-broker SCRAM-SHA-256 user in Kafka's JAAS form: org.apache.kafka.common.security." \
      "scram.ScramLoginModule required username=\"broker\" password=\"secret\";")             \
    X(SCRAM_SHA_512_SASL_JAAS_CONFIG, "scram-sha-512.sasl.jaas.config", STRING, "", 0, 0, NULL,  \
      "the inter-broker SCRAM-SHA-512 user, as scram-sha-256.sasl.jaas.config")                  \
    X(SASL_JAAS_CONFIG, "sasl.jaas.config", STRING, "", 0, 0, NULL,                              \
      "the inter-broker user (username=, password=) where the mechanism's own jaas.config has none") \
    X(AUTHORIZER_CLASS_NAME, "authorizer.class.name", STRING, "", 0, 0, NULL,                    \
      "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns on ACL authorization; empty: none") \
    X(SUPER_USERS, "super.users", STRING, "", 0, 0, NULL,                                         \
      "principals (User:name;User:other) allowed everything by the authorizer")                   \
    X(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "allow.everyone.if.no.acl.found", BOOL, "false", 0, 0, NULL, \
      "the authorizer allows an operation on a resource that no ACL names")                       \
    X(OAUTHBEARER_SASL_JAAS_CONFIG, "oauthbearer.sasl.jaas.config", STRING, "", 0, 0, NULL,      \
      "OAUTHBEARER's JAAS text: the unsecured validator's options (unsecuredValidatorPrincipalClaimName, " \
      "unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope, "                     \
      "unsecuredValidatorAllowableClockSkewMs)")                                                \
    X(SASL_OAUTHBEARER_JWKS_ENDPOINT_URL, "sasl.oauthbearer.jwks.endpoint.url", STRING, "", 0, 0, NULL, \
      "file:///path of a JWKS: OAUTHBEARER tokens must be signed by one of its keys; empty: Kafka's " \
      "unsecured validator (unsigned tokens, for tests)")                                      \
    X(SASL_OAUTHBEARER_EXPECTED_AUDIENCE, "sasl.oauthbearer.expected.audience", STRING, "", 0, 0, NULL, \
      "with a JWKS: audiences (comma-separated) a token's aud must name one of; empty: not checked") \
    X(SASL_OAUTHBEARER_EXPECTED_ISSUER, "sasl.oauthbearer.expected.issuer", STRING, "", 0, 0, NULL, \
      "with a JWKS: the iss a token must have; empty: not checked")                            \
    X(SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS, "sasl.oauthbearer.clock.skew.seconds", INT, "30", 0,  \
      INT32_MAX, NULL, "with a JWKS: the clock difference allowed in exp, iat and nbf")         \
    X(SASL_OAUTHBEARER_SUB_CLAIM_NAME, "sasl.oauthbearer.sub.claim.name", STRING, "sub", 0, 0, NULL, \
      "with a JWKS: the claim naming the principal")                                            \
    X(SASL_OAUTHBEARER_SCOPE_CLAIM_NAME, "sasl.oauthbearer.scope.claim.name", STRING, "scope", 0, 0, \
      NULL, "with a JWKS: the claim holding the token's scopes")                                \
    X(DELEGATION_TOKEN_SECRET_KEY, "delegation.token.secret.key", STRING, "", 0, 0, NULL,          \
      "the key delegation tokens' HMACs are made with (KIP-48); empty: tokens are disabled")   \
    X(DELEGATION_TOKEN_MAX_LIFETIME_MS, "delegation.token.max.lifetime.ms", LONG, "604800000", 1, \
      INT64_MAX, NULL, "a delegation token cannot be renewed past this long after its creation") \
    X(DELEGATION_TOKEN_EXPIRY_TIME_MS, "delegation.token.expiry.time.ms", LONG, "86400000", 1,   \
      INT64_MAX, NULL, "a delegation token expires this long after its creation or renewal unless " \
      "the renewal names another period")                                                       \
    X(DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS, "delegation.token.expiry.check.interval.ms", LONG,  \
      "3600000", 1, INT64_MAX, NULL, "how often the controller removes expired delegation tokens") \
    X(CONNECTIONS_MAX_REAUTH_MS, "connections.max.reauth.ms", LONG, "0", 0, INT64_MAX, NULL,     \
      "SASL sessions last at most this long (KIP-368): the client re-authenticates on the same " \
      "connection or it is closed at its next request; 0: only a credential's expiry bounds them") \
    X(PROCESS_ROLES, "process.roles", STRING, "", 0, 0, NULL,                                    \
      "broker, controller or broker,controller (a combined node); empty: broker, and controller "  \
      "too when broker.id is among controller.quorum.voters")                                     \
    X(CONTROLLER_QUORUM_VOTERS, "controller.quorum.voters", STRING, "", 0, 0, NULL,             \
      "id@host:port,... of the controller quorum's voters (their control-plane listeners); "    \
      "empty: a standalone broker")                                                            \
    X(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS, "controller.quorum.bootstrap.servers", STRING, "", 0, 0, \
      NULL, "host:port,... of controllers to find the quorum's leader through, instead of "     \
      "controller.quorum.voters: the voters are kept in the metadata log (kraft.version 1)")     \
    X(QUORUM_STANDALONE, "kafkaiq.quorum.standalone", BOOL, "false", 0, 0, NULL,                \
      "with controller.quorum.bootstrap.servers: a new metadata log makes this node the only "   \
      "voter (Kafka's kafka-storage format --standalone)")                                       \
    X(CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS, "controller.quorum.election.timeout.ms", INT, "1000", 1, \
      INT32_MAX, NULL, "a voter with no leader waits this long (and up to twice it) before an election") \
    X(CONTROLLER_QUORUM_FETCH_TIMEOUT_MS, "controller.quorum.fetch.timeout.ms", INT, "1000", 1,  \
      INT32_MAX, NULL, "a follower that has not heard from its leader this long starts an election "  \
      "(Kafka's default is 2000; half of it puts a new controller in place within about 1 s)")  \
    X(CONTROLLER_QUORUM_ELECTION_BACKOFF_MAX_MS, "controller.quorum.election.backoff.max.ms", INT, \
      "1000", 1, INT32_MAX, NULL, "the longest wait after a lost election before the next")     \
    X(CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS, "controller.quorum.request.timeout.ms", INT, "2000", 1, \
      INT32_MAX, NULL, "a request to another voter unanswered this long is sent again")         \
    X(METADATA_LOG_MAX_RECORD_BYTES_BETWEEN_SNAPSHOTS, "metadata.log.max.record.bytes.between.snapshots", \
      LONG, "20971520", 1, INT64_MAX, NULL, "a controller writes a metadata snapshot once its log " \
      "grew this many bytes since the last one")                                               \
    X(METADATA_LOG_MAX_SNAPSHOT_INTERVAL_MS, "metadata.log.max.snapshot.interval.ms", LONG, "3600000", 0, \
      INT64_MAX, NULL, "a controller writes a metadata snapshot this long after the last one when " \
      "records were committed since (0: only by size)")                                        \
    X(METADATA_LOG_SEGMENT_BYTES, "metadata.log.segment.bytes", INT, "1073741824", 61, INT32_MAX, NULL, \
      "the metadata log rolls a new segment at this size (only whole segments below the latest " \
      "snapshot are deleted)")                                                                  \
    X(BROKER_HEARTBEAT_INTERVAL_MS, "broker.heartbeat.interval.ms", INT, "2000", 1, INT32_MAX,  \
      NULL, "how often a broker tells the controller it is alive")                             \
    X(BROKER_SESSION_TIMEOUT_MS, "broker.session.timeout.ms", INT, "9000", 1, INT32_MAX, NULL,  \
      "a broker silent this long is fenced and loses its leaderships")                         \
    X(REPLICA_LAG_TIME_MAX_MS, "replica.lag.time.max.ms", LONG, "30000", 1, INT64_MAX, NULL,    \
      "a follower not caught up for this long leaves the ISR")                                 \
    X(NUM_REPLICA_FETCHERS, "num.replica.fetchers", INT, "1", 1, 64, NULL,                       \
      "fetcher threads per source broker")                                                      \
    X(REPLICA_FETCH_WAIT_MAX_MS, "replica.fetch.wait.max.ms", INT, "500", 0, INT32_MAX, NULL,   \
      "how long a follower's fetch may wait at the leader for data")                           \
    X(REPLICA_FETCH_MAX_BYTES, "replica.fetch.max.bytes", INT, "1048576", 0, INT32_MAX, NULL,   \
      "bytes a follower asks for per partition")                                                \
    X(MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS, "max.incremental.fetch.session.cache.slots", INT, \
      "1000", 0, INT32_MAX, NULL, "incremental fetch sessions (KIP-227) a broker holds at most; 0: none") \
    X(MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, "min.incremental.fetch.session.eviction.ms", INT, \
      "120000", 0, INT32_MAX, NULL,                                                              \
      "a fetch session idle this long may be evicted for a new one when the cache is full")     \
    X(AUTO_LEADER_REBALANCE_ENABLE, "auto.leader.rebalance.enable", BOOL, "true", 0, 0, NULL,    \
      "move leaderships back to each partition's preferred (first) replica when it is in the ISR") \
    X(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS, "leader.imbalance.check.interval.seconds", LONG,  \
      "300", 1, INT64_MAX, NULL, "how often the controller looks for leaderships to move back")   \
    X(UNCLEAN_LEADER_ELECTION_ENABLE, "unclean.leader.election.enable", BOOL, "false", 0, 0,    \
      NULL, "elect a replica outside the ISR when no ISR member is alive (may lose data)")      \
    X(LOG_DIRS, "log.dirs", STRING, "data", 0, 0, NULL, "the data directory")                  \
    X(NUM_NETWORK_THREADS, "num.network.threads", INT, "2", 1, 64, NULL,                        \
      "processor threads, each with its own event loop (default: one per core, 2 to 8)")       \
    X(NUM_IO_THREADS, "num.io.threads", INT, "4", 1, 256, NULL,                                 \
      "request handler threads (default: two per core, 4 to 16)")                               \
    X(QUEUED_MAX_REQUESTS, "queued.max.requests", INT, "500", 1, 1000000, NULL,                 \
      "request queue bound; a full queue mutes socket reads")                                   \
    X(SOCKET_REQUEST_MAX_BYTES, "socket.request.max.bytes", INT, "104857600", 64, INT32_MAX,    \
      NULL, "largest request frame accepted")                                                   \
    X(QUEUED_MAX_REQUEST_BYTES, "queued.max.request.bytes", LONG, "536870912", -1, INT64_MAX,   \
      NULL, "memory for requests being read and queued; reads pause when it is used up (-1: no bound, Kafka's default)") \
    X(MAX_CONNECTIONS, "max.connections", INT, "2147483647", 1, INT32_MAX, NULL,                \
      "open client connections; past it new ones wait to be accepted")                        \
    X(MAX_CONNECTIONS_PER_IP, "max.connections.per.ip", INT, "2147483647", 0, INT32_MAX, NULL,  \
      "open connections from one address; more are closed at once")                          \
    X(MAX_CONNECTIONS_PER_IP_OVERRIDES, "max.connections.per.ip.overrides", STRING, "", 0, 0,   \
      NULL, "per-address exceptions to max.connections.per.ip: host:count,host:count")         \
    X(CONNECTIONS_MAX_IDLE_MS, "connections.max.idle.ms", LONG, "600000", 1, INT64_MAX, NULL,   \
      "close a connection with nothing in flight that was silent this long")                  \
    X(REQUEST_READ_TIMEOUT_MS, "kafkaiq.request.read.timeout.ms", LONG, "30000", 1, INT64_MAX,  \
      NULL, "close a connection whose request has not arrived whole this long after its first byte") \
    X(MAX_DECOMPRESSED_BATCH_BYTES, "kafkaiq.max.decompressed.batch.bytes", INT, "67108864",    \
      1024, 134217728, NULL,                                                                       \
      "largest a produced batch may decompress to (so at most num.io.threads times this in all)") \
    X(QUOTA_WINDOW_NUM, "quota.window.num", INT, "11", 1, 64, NULL,                              \
      "samples a client quota's rate is measured over")                                        \
    X(QUOTA_WINDOW_SIZE_SECONDS, "quota.window.size.seconds", INT, "1", 1, 3600, NULL,           \
      "the time span of each sample of a client quota's rate")                                 \
    X(NUM_PARTITIONS, "num.partitions", INT, "1", 1, 100000, NULL,                               \
      "partitions of auto-created topics and of CreateTopics with -1")                         \
    X(DEFAULT_REPLICATION_FACTOR, "default.replication.factor", INT, "1", 1, 32767, NULL,       \
      "replication factor of auto-created topics")                                              \
    X(MIN_INSYNC_REPLICAS, "min.insync.replicas", INT, "1", 1, 32767, NULL,                     \
      "replicas that must acknowledge an acks=all write")                                       \
    X(AUTO_CREATE_TOPICS_ENABLE, "auto.create.topics.enable", BOOL, "true", 0, 0, NULL,         \
      "create unknown topics asked for in Metadata")                                            \
    X(DELETE_TOPIC_ENABLE, "delete.topic.enable", BOOL, "true", 0, 0, NULL,                     \
      "allow DeleteTopics")                                                                     \
    X(LOG_SEGMENT_BYTES, "log.segment.bytes", INT, "1073741824", 14, INT32_MAX, NULL,           \
      "roll a new segment past this size")                                                      \
    X(LOG_INDEX_INTERVAL_BYTES, "log.index.interval.bytes", INT, "4096", 0, INT32_MAX, NULL,    \
      "bytes between offset index entries")                                                     \
    X(LOG_INDEX_SIZE_MAX_BYTES, "log.index.size.max.bytes", INT, "10485760", 4, INT32_MAX,      \
      NULL, "largest offset index; a full index rolls the segment")                            \
    X(LOG_ROLL_MS, "log.roll.ms", LONG, "604800000", 1, INT64_MAX, NULL,                         \
      "roll a segment whose first batch is this much older than a new one; when set, wins over log.roll.hours") \
    X(LOG_ROLL_HOURS, "log.roll.hours", INT, "168", 1, INT32_MAX, NULL,                         \
      "log.roll.ms in hours")                                                                    \
    X(LOG_RETENTION_MS, "log.retention.ms", LONG, "604800000", -1, INT64_MAX, NULL,             \
      "delete segments whose newest timestamp is older (-1: forever); when set, wins over minutes and hours") \
    X(LOG_RETENTION_MINUTES, "log.retention.minutes", INT, "10080", -1, INT32_MAX, NULL,        \
      "log.retention.ms in minutes; when set, wins over log.retention.hours")                  \
    X(LOG_RETENTION_HOURS, "log.retention.hours", INT, "168", -1, INT32_MAX, NULL,              \
      "log.retention.ms in hours")                                                               \
    X(LOG_RETENTION_BYTES, "log.retention.bytes", LONG, "-1", -1, INT64_MAX, NULL,              \
      "delete the oldest segments while a partition is larger (-1: unlimited)")                \
    X(LOG_RETENTION_CHECK_INTERVAL_MS, "log.retention.check.interval.ms", LONG, "300000", 1,    \
      INT64_MAX, NULL, "how often the retention pass runs")                                     \
    X(LOG_CLEANUP_POLICY, "log.cleanup.policy", STRING, "delete", 0, 0, "delete,compact",       \
      "default cleanup policy")                                                                 \
    X(LOG_SCRUB_INTERVAL_MS, "kafkaiq.log.scrub.interval.ms", LONG, "86400000", 0, INT64_MAX, NULL, \
      "how often every closed segment is read back and its CRCs checked (0: never)")           \
    X(LOG_CLEANER_ENABLE, "log.cleaner.enable", BOOL, "true", 0, 0, NULL,                        \
      "run the log cleaner, which compacts topics whose cleanup.policy has compact")           \
    X(LOG_CLEANER_THREADS, "log.cleaner.threads", INT, "1", 1, 64, NULL,                         \
      "log cleaner threads; each cleans its share of the compacted partitions")               \
    X(LOG_CLEANER_BACKOFF_MS, "log.cleaner.backoff.ms", LONG, "15000", 1, INT64_MAX, NULL,       \
      "pause of a cleaner thread between two passes over its partitions")                      \
    X(MESSAGE_MAX_BYTES, "message.max.bytes", INT, "1048588", 0, INT32_MAX, NULL,               \
      "largest record batch accepted")                                                          \
    X(MESSAGE_TIMESTAMP_TYPE, "log.message.timestamp.type", STRING, "CreateTime", 0, 0,         \
      "CreateTime,LogAppendTime", "timestamp kept in batches")                                  \
    X(LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS, "log.message.timestamp.before.max.ms", LONG,          \
      "9223372036854775807", 0, INT64_MAX, NULL,                                                 \
      "refuse a CreateTime record whose timestamp is more than this behind the broker's clock")  \
    X(LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS, "log.message.timestamp.after.max.ms", LONG, "3600000", \
      0, INT64_MAX, NULL,                                                                         \
      "refuse a CreateTime record whose timestamp is more than this ahead of the broker's clock (Kafka 4.0: 1 h)") \
    X(COMPRESSION_TYPE, "compression.type", STRING, "producer", 0, 0,                           \
      "producer,uncompressed,gzip,snappy,lz4,zstd",                                              \
      "topics' default compression.type; not acted on: batches are stored as produced")         \
    X(OFFSETS_TOPIC_NUM_PARTITIONS, "offsets.topic.num.partitions", INT, "50", 1, 1000, NULL,    \
      "partitions of __consumer_offsets, fixed when it is created")                            \
    X(OFFSETS_TOPIC_REPLICATION_FACTOR, "offsets.topic.replication.factor", INT, "1", 1, 32767,  \
      NULL, "replicas of __consumer_offsets")                                                   \
    X(OFFSETS_TOPIC_SEGMENT_BYTES, "offsets.topic.segment.bytes", INT, "104857600", 14,          \
      INT32_MAX, NULL, "segment size of __consumer_offsets")                                    \
    X(OFFSETS_RETENTION_MINUTES, "offsets.retention.minutes", INT, "10080", 1, INT32_MAX, NULL, \
      "committed offsets of a group that has been empty this long are deleted")                \
    X(OFFSETS_RETENTION_CHECK_INTERVAL_MS, "offsets.retention.check.interval.ms", LONG,          \
      "600000", 1, INT64_MAX, NULL, "how often expired offsets are looked for")                 \
    X(OFFSETS_COMMIT_TIMEOUT_MS, "offsets.commit.timeout.ms", INT, "5000", 1, INT32_MAX, NULL,   \
      "how long a commit may wait for the offsets topic's replicas")                          \
    X(TRANSACTION_STATE_LOG_NUM_PARTITIONS, "transaction.state.log.num.partitions", INT, "50", 1,  \
      1000, NULL, "partitions of __transaction_state, fixed when it is created")                 \
    X(TRANSACTION_STATE_LOG_REPLICATION_FACTOR, "transaction.state.log.replication.factor", INT, \
      "3", 1, 32767, NULL, "replicas of __transaction_state (at most the live brokers)")          \
    X(TRANSACTION_STATE_LOG_MIN_ISR, "transaction.state.log.min.isr", INT, "2", 1, 32767, NULL,  \
      "min.insync.replicas of __transaction_state (at most its replicas)")                       \
    X(TRANSACTION_STATE_LOG_SEGMENT_BYTES, "transaction.state.log.segment.bytes", INT,          \
      "104857600", 14, INT32_MAX, NULL, "segment size of __transaction_state")                   \
    X(TRANSACTION_MAX_TIMEOUT_MS, "transaction.max.timeout.ms", INT, "900000", 1, INT32_MAX,    \
      NULL, "longest transaction timeout a producer may ask for")                                \
    X(PRODUCER_ID_EXPIRATION_MS, "producer.id.expiration.ms", INT, "86400000", 1, INT32_MAX, NULL, \
      "a producer that wrote nothing to a partition for this long is forgotten there")            \
    X(TRANSACTIONAL_ID_EXPIRATION_MS, "transactional.id.expiration.ms", INT, "604800000", 1,      \
      INT32_MAX, NULL, "a transactional id with no transaction for this long is forgotten")      \
    X(TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS,                                 \
      "transaction.remove.expired.transaction.cleanup.interval.ms", INT, "3600000", 1, INT32_MAX, \
      NULL, "how often the coordinator looks for transactional ids to forget")                   \
    X(TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS,                               \
      "transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, "10000", 1, INT32_MAX, \
      NULL, "how often the coordinator looks for transactions past their timeout to abort")     \
    X(OFFSET_METADATA_MAX_BYTES, "offset.metadata.max.bytes", INT, "4096", 0, INT32_MAX, NULL,  \
      "largest metadata string of a committed offset")                                          \
    X(GROUP_INITIAL_REBALANCE_DELAY_MS, "group.initial.rebalance.delay.ms", INT, "3000", 0,     \
      INT32_MAX, NULL, "how long the first rebalance of an empty group waits for more members") \
    X(GROUP_MIN_SESSION_TIMEOUT_MS, "group.min.session.timeout.ms", INT, "6000", 0, INT32_MAX,  \
      NULL, "smallest session timeout a member may ask for")                                    \
    X(GROUP_MAX_SESSION_TIMEOUT_MS, "group.max.session.timeout.ms", INT, "1800000", 0,          \
      INT32_MAX, NULL, "largest session timeout a member may ask for")                          \
    X(GROUP_MAX_SIZE, "group.max.size", INT, "2147483647", 1, INT32_MAX, NULL,                  \
      "members one group may have")                                                             \
    X(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, "group.consumer.heartbeat.interval.ms", INT, "5000", 1, \
      INT32_MAX, NULL, "how often members of a consumer protocol group (KIP-848) heartbeat")      \
    X(GROUP_CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.session.timeout.ms", INT, "45000", 1,   \
      INT32_MAX, NULL, "how long a consumer protocol member may go without heartbeat")           \
    X(GROUP_CONSUMER_MAX_SIZE, "group.consumer.max.size", INT, "2147483647", 1, INT32_MAX, NULL, \
      "members one consumer protocol group may have")                                          \
    X(GROUP_CONSUMER_ASSIGNORS, "group.consumer.assignors", STRING, "uniform,range", 0, 0, NULL, \
      "server-side assignors of consumer protocol groups, the first the default")               \
    X(GROUP_CONSUMER_MIGRATION_POLICY, "group.consumer.migration.policy", STRING, "bidirectional", 0, 0, \
      "disabled,upgrade,downgrade,bidirectional,DISABLED,UPGRADE,DOWNGRADE,BIDIRECTIONAL",         \
      "online conversion of groups with members: a classic group to a consumer group when a "     \
      "consumer-protocol member joins (upgrade), back when only classic members stay (downgrade)") \
    X(GROUP_SHARE_HEARTBEAT_INTERVAL_MS, "group.share.heartbeat.interval.ms", INT, "5000", 1,    \
      INT32_MAX, NULL, "how often members of a share group (KIP-932) heartbeat")                \
    X(GROUP_SHARE_SESSION_TIMEOUT_MS, "group.share.session.timeout.ms", INT, "45000", 1,        \
      INT32_MAX, NULL, "how long a share group member may go without heartbeat")               \
    X(GROUP_SHARE_MAX_SIZE, "group.share.max.size", INT, "200", 1, 1000, NULL,                    \
      "members one share group may have")                                                       \
    X(GROUP_SHARE_RECORD_LOCK_DURATION_MS, "group.share.record.lock.duration.ms", INT, "30000", \
      1000, 3600000, NULL, "how long a share group member holds the records it acquired")        \
    X(GROUP_SHARE_DELIVERY_COUNT_LIMIT, "group.share.delivery.count.limit", INT, "5", 2, 10,    \
      NULL, "deliveries of a record to a share group before it is archived")                    \
    X(GROUP_SHARE_MAX_SHARE_SESSIONS, "group.share.max.share.sessions", INT, "2000", 1, 1000000,  \
      NULL, "share sessions (ShareFetch) a broker keeps at most")                                \
    X(GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS, "group.share.partition.max.record.locks", INT,     \
      "2000", 100, 10000, NULL, "records of a share-partition in flight (acquired) at most")     \
    X(SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS, "share.coordinator.state.topic.num.partitions", INT,  \
      "50", 1, 1000, NULL, "partitions of __share_group_state (created on first use)")          \
    X(SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR, "share.coordinator.state.topic.replication.factor", \
      INT, "3", 1, 32767, NULL, "replicas of each partition of __share_group_state (at most the live brokers)") \
    X(SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR, "share.coordinator.state.topic.min.isr", INT, "2", 1, 32767, \
      NULL, "min.insync.replicas of __share_group_state (at most its replicas)")                \
    X(SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES, "share.coordinator.state.topic.segment.bytes", INT, \
      "104857600", 14, INT32_MAX, NULL, "segment size of __share_group_state")                  \
    X(SHARE_AUTO_OFFSET_RESET, "kafkaiq.share.auto.offset.reset", STRING, "latest", 0, 0,       \
      "latest,earliest", "where a share group starts on a partition (Kafka's share.auto.offset.reset " \
      "group config, which is not served)")                                                     \
    X(ADD_SCRAM, "kafkaiq.add.scram", STRING, "", 0, 0, NULL,                                    \
      "SCRAM credentials written with the cluster's first metadata, as kafka-storage format "    \
      "--add-scram writes them (say the inter-broker user): MECHANISM=[name=NAME,password=PASS"  \
      "(,iterations=N)] entries separated by ';'")                                                \
    X(LOG_LEVEL, "kafkaiq.log.level", STRING, "info", 0, 0, "error,warn,info,debug",            \
      "stderr log level")                                                                       \
    X(HOOK_MAX_INSTRUCTIONS, "kafkaiq.hook.max.instructions", LONG, "10000000", 1000,           \
      INT64_MAX, NULL, "Lua instructions one interceptor call may run before it is stopped")  \
    X(FETCH_SENDFILE, "kafkaiq.fetch.sendfile", BOOL, "true", 0, 0, NULL,                        \
      "send fetched records with sendfile() from the segment files unless a fetch interceptor needs them") \
    X(TELEMETRY_METRICS, "kafkaiq.telemetry.metrics", STRING, "*", 0, 0, NULL,                   \
      "the client metrics every client is asked to push (KIP-714): name prefixes, comma-separated; " \
      "*: all; empty: none (clients push nothing)")                                                \
    X(TELEMETRY_PUSH_INTERVAL_MS, "kafkaiq.telemetry.push.interval.ms", INT, "60000", 100, 3600000, NULL, \
      "how often clients push the metrics kafkaiq.telemetry.metrics asks for") \
    X(HTTP_LISTENER, "kafkaiq.http.listener", STRING, "", 0, 0, NULL,                            \
      "host:port of the broker's HTTP listener (metrics, journeys, state); empty: none; port 0: a free one") \
    X(CLOCK, "kafkaiq.clock", STRING, "system", 0, 0, "system,manual",                            \
      "manual: tests may move the process's clock ahead (POST /api/clock); system: never")      \
    X(HTTP_TOKEN, "kafkaiq.http.token", STRING, "", 0, 0, NULL,                                  \
      "a bearer token the HTTP listener's control API asks for (Authorization: Bearer TOKEN), "  \
      "from any address; empty: no token, loopback clients only")                                 \
    X(HTTP_BASIC, "kafkaiq.http.basic", STRING, "", 0, 0, NULL,                                  \
      "USER:PASSWORD the HTTP listener's control API takes as HTTP basic authentication "         \
      "(Authorization: Basic), besides or instead of kafkaiq.http.token, from any address; empty: none") \
    X(HTTP_SSL_CERTIFICATE_LOCATION, "kafkaiq.http.ssl.certificate.location", STRING, "", 0, 0, NULL, \
      "a PEM certificate (chain) file: the HTTP listener serves HTTPS with it and "              \
      "kafkaiq.http.ssl.key.location's key; empty: plain HTTP")                                   \
    X(HTTP_SSL_KEY_LOCATION, "kafkaiq.http.ssl.key.location", STRING, "", 0, 0, NULL,            \
      "the PEM private key of kafkaiq.http.ssl.certificate.location")                             \
    X(HTTP_MAX_CONNECTIONS, "kafkaiq.http.max.connections", INT, "256", 1, 65536, NULL,          \
      "open connections to the HTTP listener; past it the longest idle one is closed")        \
    X(JOURNEY_ENABLE, "kafkaiq.journey.enable", BOOL, "true", 0, 0, NULL,                        \
      "record every produced batch's journey through the broker")                              \
    X(JOURNEY_MAX_BATCHES, "kafkaiq.journey.max.batches", INT, "4000", 16, 10000000, NULL,       \
      "journeys kept, the oldest overwritten (the default is about 16 MiB)")                     \
    X(JOURNEY_RETENTION_MS, "kafkaiq.journey.retention.ms", LONG, "604800000", -1, INT64_MAX, NULL, \
      "how long the journey journal (<first log dir>/.journeys) keeps the journeys the ring let go of " \
      "(as log.retention.hours=168); -1: no time limit")                                           \
    X(JOURNEY_RETENTION_BYTES, "kafkaiq.journey.retention.bytes", LONG, "268435456", -1, INT64_MAX, NULL, \
      "the journey journal's size at most, its oldest files deleted first; 0: no journal, -1: no size limit") \
    X(OTLP_ENDPOINT, "kafkaiq.otlp.endpoint", STRING, "", 0, 0, NULL,                              \
      "an OpenTelemetry collector's OTLP/HTTP address (http://HOST:PORT[/PATH]): each produced batch's " \
      "journey is POSTed to <it>/v1/traces as a trace (JSON); empty: none")

enum kiq_config_id {
#define KIQ_CFG_ENUM(id, ...) KIQ_CFG_##id,
    KIQ_BROKER_CONFIGS(KIQ_CFG_ENUM)
#undef KIQ_CFG_ENUM
    KIQ_CFG__COUNT
};

typedef struct kiq_config_def {
    const char *name;
    enum kiq_config_type type;
    const char *default_value;
    int64_t min, max;
    const char *valid; /* comma-separated allowed strings, or NULL */
    const char *doc;
} kiq_config_def_t;

typedef struct kiq_config kiq_config_t;

extern const kiq_config_def_t kiq_config_defs[KIQ_CFG__COUNT];

/* Kafka's ConfigResource types, as the *Configs APIs and ConfigRecords
 * name them. */
enum kiq_config_resource { KIQ_CONFIG_RESOURCE_TOPIC = 2, KIQ_CONFIG_RESOURCE_BROKER = 4, KIQ_CONFIG_RESOURCE_GROUP = 32 };

/* Kafka's DescribeConfigs config_source values. */
enum kiq_config_source {
    KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC = 1,
    KIQ_CONFIG_SOURCE_DYNAMIC_BROKER = 2,
    KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER = 3,
    KIQ_CONFIG_SOURCE_STATIC_BROKER = 4,
    KIQ_CONFIG_SOURCE_DEFAULT = 5,
    KIQ_CONFIG_SOURCE_CLIENT_METRICS = 7,
    KIQ_CONFIG_SOURCE_GROUP = 8,
};

/* Where a dynamic broker config is set: for this broker (resource name its
 * id) or as the cluster-wide default (resource name ""), which it wins over. */
enum kiq_config_level { KIQ_CFG_LEVEL_BROKER, KIQ_CFG_LEVEL_CLUSTER, KIQ_CFG_LEVELS };

/* Whether the config may change while the broker runs: Kafka's dynamic
 * broker configs that take effect here at once (the message, log and
 * election settings read where they are used). Kafka's others (thread pool
 * sizes, listeners) are static here. */
bool kiq_config_dynamic(enum kiq_config_id id);
/* Checks value as config id's type, range and allowed values want: 0, or
 * -1 with the reason naming the config. */
int kiq_config_check(enum kiq_config_id id, const char *value);
/* Sets (value NULL: removes) a dynamic value at level after checking it
 * as kiq_config_set does. Any thread. 0, or -1 with the reason (a config
 * that is not dynamic, a bad value). */
int kiq_config_set_dynamic(kiq_config_t *c, enum kiq_config_level level, enum kiq_config_id id, const char *value);
/* The dynamic value at level, NULL when unset; valid until the config is
 * freed. Any thread. */
const char *kiq_config_dynamic_value(const kiq_config_t *c, enum kiq_config_level level, enum kiq_config_id id);
/* Where the value in effect comes from: DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER,
 * STATIC_BROKER or DEFAULT. */
enum kiq_config_source kiq_config_source(const kiq_config_t *c, enum kiq_config_id id);
/* The static value (the file's or an override's, else the default), and
 * whether it is the default. */
const char *kiq_config_static_text(const kiq_config_t *c, enum kiq_config_id id, bool *is_default);

kiq_config_t *kiq_config_new(void);
void kiq_config_free(kiq_config_t *c);
/* Sizes num.network.threads and num.io.threads, where the user left them
 * out, for one of `brokers` brokers sharing this process's cores (new
 * configs are sized for one). 0, or -1 with the reason. */
int kiq_config_share_cores(kiq_config_t *c, int brokers);
/* Sets one value by Kafka name, checking it; -1 with the reason (naming the
 * key) for a bad value. An unknown name is accepted with a warning, as Kafka
 * does, and kept for DescribeConfigs. */
int kiq_config_set(kiq_config_t *c, const char *name, const char *value);
/* Reads a properties file (key=value or key: value, # and ! comments). */
int kiq_config_load_file(kiq_config_t *c, const char *path);
/* Parses "key=value" as given to --override. */
int kiq_config_override(kiq_config_t *c, const char *assignment);
/* Cross-key checks once everything is set. */
int kiq_config_validate(const kiq_config_t *c);

int64_t kiq_config_int(const kiq_config_t *c, enum kiq_config_id id);
bool kiq_config_bool(const kiq_config_t *c, enum kiq_config_id id);
const char *kiq_config_str(const kiq_config_t *c, enum kiq_config_id id);
/* The value in effect as text (valid until the config is freed) and whether
 * it is the built-in default. */
const char *kiq_config_text(const kiq_config_t *c, enum kiq_config_id id, bool *is_default);
/* Whether a value is a secret (Kafka's PASSWORD type): never told back. */
bool kiq_config_sensitive(enum kiq_config_id id);
/* Looks a Kafka name up; -1 when unknown. */
int kiq_config_find(const char *name);
kiq_config_t *kiq_config_copy(const kiq_config_t *c);

#endif
