package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/** The Admin client against one broker (electing leaders needs three: ClusterTest). */
class AdminTest {
    private static final Duration READ = Duration.ofSeconds(30);

    @TempDir(cleanup = CleanupMode.ON_SUCCESS) // kept for a look when a test failed
    static Path dir;
    static KiqBroker broker;
    static Admin admin;

    @BeforeAll
    static void start() {
        broker = KiqBroker.standalone(dir);
        admin = Clients.admin(broker.bootstrap());
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        if (broker != null) {
            broker.stop();
        }
    }

    /** ExecutionException's cause from a future expected to fail. */
    private static Throwable failure(org.apache.kafka.common.KafkaFuture<?> f) {
        return assertThrows(ExecutionException.class, f::get).getCause();
    }

    @Test
    void createListAndDeleteTopics() throws Exception {
        admin.createTopics(List.of(new NewTopic("made", 3, (short) 1).configs(Map.of("retention.ms", "60000")),
                new NewTopic("dry", 1, (short) 1)), new CreateTopicsOptions().validateOnly(false))
                .all().get();
        admin.createTopics(List.of(new NewTopic("dry-run", 1, (short) 1)),
                new CreateTopicsOptions().validateOnly(true)).all().get();
        Set<String> names = admin.listTopics().names().get();
        assertTrue(names.containsAll(Set.of("made", "dry")), names.toString());
        assertFalse(names.contains("dry-run"), "validateOnly creates nothing");
        assertEquals(3, admin.describeTopics(List.of("made")).allTopicNames().get().get("made").partitions().size());

        assertInstanceOf(TopicExistsException.class,
                failure(admin.createTopics(List.of(new NewTopic("made", 1, (short) 1))).all()));
        assertInstanceOf(InvalidConfigurationException.class, failure(admin.createTopics(List.of(
                new NewTopic("bad-config", 1, (short) 1).configs(Map.of("retention.ms", "soon")))).all()));

        admin.deleteTopics(List.of("made", "dry")).all().get();
        Kiq.waitFor("deleted topics gone from the listing", READ, () -> {
            Set<String> now = admin.listTopics().names().get();
            return !now.contains("made") && !now.contains("dry");
        });
        assertInstanceOf(UnknownTopicOrPartitionException.class,
                failure(admin.deleteTopics(List.of("made")).all()));
    }

    @Test
    void createPartitionsAddsAndNeverRemoves() throws Exception {
        Clients.createTopic(admin, "grow", 2, (short) 1, Map.of());
        admin.createPartitions(Map.of("grow", NewPartitions.increaseTo(5))).all().get();
        assertEquals(5, admin.describeTopics(List.of("grow")).allTopicNames().get().get("grow").partitions().size());
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap())) {
            assertEquals(4, p.send(new ProducerRecord<>("grow", 4, null, "in a new partition")).get().partition());
        }
        assertInstanceOf(InvalidPartitionsException.class,
                failure(admin.createPartitions(Map.of("grow", NewPartitions.increaseTo(3))).all()));
    }

    private static ConfigEntry entry(ConfigResource r, String name) throws Exception {
        Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
        return c.get(name);
    }

    private static void alter(ConfigResource r, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(r, List.of(ops))).all().get();
    }

    @Test
    void describeAndIncrementallyAlterTopicConfigs() throws Exception {
        Clients.createTopic(admin, "cfg", 1, (short) 1, Map.of("cleanup.policy", "delete"));
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, "cfg");
        // neither segment.ms nor its broker synonyms (log.roll.ms, log.roll.hours) set anywhere
        ConfigEntry segmentMs = entry(t, "segment.ms");
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, segmentMs.source());
        assertEquals("delete", entry(t, "cleanup.policy").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, entry(t, "cleanup.policy").source());

        alter(t, new AlterConfigOp(new ConfigEntry("segment.ms", "1234567"), AlterConfigOp.OpType.SET));
        assertEquals("1234567", entry(t, "segment.ms").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, entry(t, "segment.ms").source());

        alter(t, new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND));
        assertEquals(Set.of("delete", "compact"), Set.of(entry(t, "cleanup.policy").value().split(",")));
        alter(t, new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT));
        assertEquals("compact", entry(t, "cleanup.policy").value());

        alter(t, new AlterConfigOp(new ConfigEntry("segment.ms", ""), AlterConfigOp.OpType.DELETE));
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, entry(t, "segment.ms").source());
        assertEquals(segmentMs.value(), entry(t, "segment.ms").value());

        // validateOnly changes nothing; a bad value is refused naming the config
        admin.incrementalAlterConfigs(Map.of(t, List.of(new AlterConfigOp(new ConfigEntry("segment.ms", "1"),
                AlterConfigOp.OpType.SET))), new AlterConfigsOptions().validateOnly(true)).all().get();
        assertEquals(segmentMs.value(), entry(t, "segment.ms").value());
        Throwable bad = failure(admin.incrementalAlterConfigs(Map.of(t, List.of(new AlterConfigOp(
                new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all());
        assertInstanceOf(InvalidConfigurationException.class, bad);
        assertTrue(bad.getMessage().contains("retention.ms"), bad.getMessage());
    }

    @Test
    void describeAndIncrementallyAlterBrokerConfigs() throws Exception {
        ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(broker.id));
        ConfigResource all = new ConfigResource(ConfigResource.Type.BROKER, "");
        awaitEntry(b, "log.retention.bytes", "-1", ConfigEntry.ConfigSource.DEFAULT_CONFIG);

        alter(all, new AlterConfigOp(new ConfigEntry("log.retention.bytes", "123456789"),
                AlterConfigOp.OpType.SET));
        awaitEntry(b, "log.retention.bytes", "123456789", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);

        alter(b, new AlterConfigOp(new ConfigEntry("log.retention.bytes", "987654321"), AlterConfigOp.OpType.SET));
        awaitEntry(b, "log.retention.bytes", "987654321", ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);

        // a topic without its own value follows the broker's
        Clients.createTopic(admin, "follows", 1, (short) 1, Map.of());
        ConfigResource t = new ConfigResource(ConfigResource.Type.TOPIC, "follows");
        awaitEntry(t, "retention.bytes", "987654321", ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG);

        alter(b, new AlterConfigOp(new ConfigEntry("log.retention.bytes", ""), AlterConfigOp.OpType.DELETE));
        awaitEntry(b, "log.retention.bytes", "123456789", ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
        alter(all, new AlterConfigOp(new ConfigEntry("log.retention.bytes", ""), AlterConfigOp.OpType.DELETE));
        awaitEntry(b, "log.retention.bytes", "-1", ConfigEntry.ConfigSource.DEFAULT_CONFIG);
    }

    /** Until the resource's config has that value from that source (a broker applies a change as Kafka's do:
     * once the controller's record reaches it). */
    private static void awaitEntry(ConfigResource r, String name, String value, ConfigEntry.ConfigSource source) {
        Kiq.waitFor(r + " " + name + "=" + value + " (" + source + ")", Duration.ofSeconds(10), () -> {
            ConfigEntry e = entry(r, name);
            return value.equals(e.value()) && source == e.source() ? e : null;
        });
    }

    @Test
    void describeClusterAndLogDirs() throws Exception {
        DescribeClusterResult c = admin.describeCluster();
        assertNotNull(c.clusterId().get());
        assertEquals(1, c.nodes().get().size());
        assertEquals(broker.port, c.nodes().get().iterator().next().port());

        Clients.createTopic(admin, "dirs", 2, (short) 1, Map.of());
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap())) {
            p.send(new ProducerRecord<>("dirs", 1, null, "x".repeat(1000))).get();
        }
        Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(broker.id)).allDescriptions().get()
                .get(broker.id);
        assertEquals(1, dirs.size());
        LogDirDescription d = dirs.values().iterator().next();
        assertTrue(d.totalBytes().isPresent() && d.usableBytes().isPresent(), "volume sizes (v4)");
        assertEquals(0, d.replicaInfos().get(new TopicPartition("dirs", 0)).size());
        assertTrue(d.replicaInfos().get(new TopicPartition("dirs", 1)).size() > 1000);
    }

    @Test
    void listOffsetsEarliestLatestByTimestampAndMaxTimestamp() throws Exception {
        Clients.createTopic(admin, "times", 1, (short) 1, Map.of());
        TopicPartition tp = new TopicPartition("times", 0);
        long base = System.currentTimeMillis() - 60_000;
        long[] ts = {base, base + 1000, base + 5000, base + 3000, base + 5000, base + 2000};
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "linger.ms=50")) {
            for (int i = 0; i < ts.length; i++) {
                p.send(new ProducerRecord<>("times", 0, ts[i], null, "t" + i));
            }
            p.flush();
        }
        assertEquals(0, list(tp, OffsetSpec.earliest()).offset());
        assertEquals(6, list(tp, OffsetSpec.latest()).offset());
        ListOffsetsResultInfo max = list(tp, OffsetSpec.maxTimestamp());
        assertEquals(base + 5000, max.timestamp());
        assertEquals(2, max.offset(), "the first record holding the largest timestamp");
        // the first offset whose timestamp is at or after the one asked
        assertEquals(1, list(tp, OffsetSpec.forTimestamp(base + 500)).offset());
        assertEquals(2, list(tp, OffsetSpec.forTimestamp(base + 1500)).offset());
        assertEquals(-1, list(tp, OffsetSpec.forTimestamp(base + 9000)).offset(), "none that late");
    }

    private static long lastStable(TopicPartition tp) {
        try (var c = Clients.consumer(broker.bootstrap(), null, "isolation.level=read_committed")) {
            return c.endOffsets(List.of(tp)).get(tp);
        }
    }

    private static ListOffsetsResultInfo list(TopicPartition tp, OffsetSpec spec) throws Exception {
        return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get();
    }

    @Test
    void deleteRecordsMovesTheLogStart() throws Exception {
        Clients.createTopic(admin, "trim", 1, (short) 1, Map.of());
        TopicPartition tp = new TopicPartition("trim", 0);
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap())) {
            for (int i = 0; i < 30; i++) {
                p.send(new ProducerRecord<>("trim", 0, null, "r" + i));
            }
            p.flush();
        }
        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(12))).lowWatermarks().get(tp).get()
                .lowWatermark();
        assertEquals(12, low);
        assertEquals(12, list(tp, OffsetSpec.earliest()).offset());
        List<ConsumerRecord<String, String>> left = Clients.readAll(broker.bootstrap(), "trim", "read_uncommitted",
                READ);
        assertEquals(18, left.size());
        assertEquals("r12", left.get(0).value());
        // beyond the high watermark is refused; -1 means up to it
        assertInstanceOf(org.apache.kafka.common.errors.OffsetOutOfRangeException.class,
                failure(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(31))).all()));
        assertEquals(30, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp)
                .get().lowWatermark());
    }

    @Test
    void describeProducersTransactionsAndAbortAHangingOne() throws Exception {
        Clients.createTopic(admin, "txn-admin", 1, (short) 1, Map.of());
        TopicPartition tp = new TopicPartition("txn-admin", 0);
        try (KafkaProducer<String, String> idem = Clients.producer(broker.bootstrap(), "enable.idempotence=true")) {
            for (int i = 0; i < 5; i++) {
                idem.send(new ProducerRecord<>("txn-admin", 0, null, "idem" + i)).get();
            }
        }
        KafkaProducer<String, String> tx = Clients.producer(broker.bootstrap(), "transactional.id=hanging",
                "transaction.timeout.ms=60000");
        try {
            tx.initTransactions();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>("txn-admin", 0, null, "never committed")).get();

            List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get()
                    .activeProducers();
            assertEquals(2, producers.size(), producers.toString());
            ProducerState idemState = producers.stream().filter(s -> s.lastSequence() == 4).findFirst()
                    .orElseThrow(() -> new AssertionError("the idempotent producer's last sequence 4: " + producers));
            assertEquals(OptionalLong.empty(), idemState.currentTransactionStartOffset());
            ProducerState open = producers.stream().filter(s -> s != idemState).findFirst().orElseThrow();
            assertEquals(OptionalLong.of(5), open.currentTransactionStartOffset());

            TransactionDescription d = admin.describeTransactions(List.of("hanging")).description("hanging").get();
            assertEquals(TransactionState.ONGOING, d.state());
            assertEquals(Set.of(tp), d.topicPartitions());
            assertEquals(open.producerId(), d.producerId());
            assertEquals(60000, d.transactionTimeoutMs());
            Collection<TransactionListing> listed = admin.listTransactions().all().get();
            assertTrue(listed.stream().anyMatch(l -> l.transactionalId().equals("hanging")
                    && l.state() == TransactionState.ONGOING), listed.toString());

            // KIP-664: the partition's leader writes the abort marker itself
            admin.abortTransaction(new AbortTransactionSpec(tp, open.producerId(), (short) open.producerEpoch(),
                    open.coordinatorEpoch().orElse(-1))).all().get();
            List<ProducerState> after = admin.describeProducers(List.of(tp)).partitionResult(tp).get()
                    .activeProducers();
            assertTrue(after.stream().allMatch(s -> s.currentTransactionStartOffset().isEmpty()), after.toString());
            assertEquals(7, lastStable(tp), "the last stable offset past the marker");
            List<ConsumerRecord<String, String>> committed = Clients.readAll(broker.bootstrap(), "txn-admin",
                    "read_committed", READ);
            assertEquals(List.of("idem0", "idem1", "idem2", "idem3", "idem4"),
                    committed.stream().map(ConsumerRecord::value).collect(Collectors.toList()));
        } finally {
            tx.close(Duration.ZERO);
        }
    }

    @Test
    void fenceProducersFencesTheTransactionalProducerAndAbortsItsTransaction() throws Exception {
        Clients.createTopic(admin, "fenced", 1, (short) 1, Map.of());
        try (KafkaProducer<String, String> tx = Clients.producer(broker.bootstrap(), "transactional.id=to-fence")) {
            tx.initTransactions();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>("fenced", 0, null, "before the fence")).get();
            TransactionDescription before = admin.describeTransactions(List.of("to-fence")).description("to-fence")
                    .get();
            assertEquals(TransactionState.ONGOING, before.state());
            admin.fenceProducers(List.of("to-fence")).all().get();
            // Kafka's coordinator aborts the open transaction (one epoch), then answers the retried
            // InitProducerId (another): Empty with the epoch two past the fenced producer's
            TransactionDescription after = admin.describeTransactions(List.of("to-fence")).description("to-fence")
                    .get();
            assertEquals(TransactionState.EMPTY, after.state());
            assertEquals(before.producerId(), after.producerId());
            assertEquals(before.producerEpoch() + 2, after.producerEpoch());
            assertEquals(2, lastStable(new TopicPartition("fenced", 0)), "the record and its abort marker");
            assertThrows(ProducerFencedException.class, tx::commitTransaction);
        }
        assertEquals(List.of(), Clients.readAll(broker.bootstrap(), "fenced", "read_committed", READ));
    }
}
