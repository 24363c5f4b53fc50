package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three KafkaIQ processes: the Admin client's leader elections, and Kafka's own system-test clients
 * (VerifiableProducer, VerifiableConsumer, TransactionalMessageCopier) while partition leaders are SIGKILLed and
 * started again. Broker 0 hosts the controller and is never killed (its loss stops elections until it returns).
 */
class ClusterTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int BOUNCES = 3;
    private static final String TOOLS = "org.apache.kafka.tools.";

    @TempDir(cleanup = CleanupMode.ON_SUCCESS) // kept for a look when a test failed
    static Path dir;
    static KiqCluster cluster;

    @BeforeAll
    static void start() {
        cluster = new KiqCluster(dir, 3);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** A test starts with every broker up (one a failed test left down is started again). */
    @BeforeEach
    void allUp() {
        for (KiqBroker b : cluster.brokers) {
            if (!b.alive()) {
                b.start();
            }
        }
        cluster.waitRegistered();
    }

    private static void create(String topic, int partitions) throws Exception {
        cluster.admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 3))).all().get();
        cluster.waitHealthy(WAIT, topic);
    }

    /** partition -> error of a preferred election (null: elected). */
    private static Map<Integer, Throwable> electPreferred(String topic, Set<Integer> partitions) throws Exception {
        Set<TopicPartition> tps = partitions.stream().map(p -> new TopicPartition(topic, p))
                .collect(Collectors.toSet());
        Map<TopicPartition, Optional<Throwable>> r = cluster.admin.electLeaders(ElectionType.PREFERRED, tps)
                .partitions().get();
        Map<Integer, Throwable> out = new HashMap<>();
        r.forEach((tp, e) -> out.put(tp.partition(), e.orElse(null)));
        return out;
    }

    private static Map<Integer, Integer> preferred(String topic) throws Exception {
        Map<Integer, Integer> m = new HashMap<>();
        cluster.describe(topic).partitions().forEach(p -> m.put(p.partition(), p.replicas().get(0).id()));
        return m;
    }

    @Test
    void electLeadersPutsPreferredReplicasBackInCharge() throws Exception {
        String topic = "elect";
        create(topic, 3);
        Map<Integer, Integer> preferred = preferred(topic);
        assertEquals(preferred, cluster.leaders(topic), "new partitions are led by their first replica");
        electPreferred(topic, Set.of(0, 1, 2)).values()
                .forEach(e -> assertInstanceOf(ElectionNotNeededException.class, e));

        // a clean stop hands broker 1's leaderships to other replicas; back, it leads nothing
        KiqBroker one = cluster.broker(1);
        one.stop();
        Kiq.waitFor("broker 1 leads nothing", WAIT, () -> !cluster.leaders(topic).containsValue(1));
        one.start();
        cluster.waitHealthy(WAIT, topic);
        Set<Integer> its = preferred.entrySet().stream().filter(e -> e.getValue() == 1).map(Map.Entry::getKey)
                .collect(Collectors.toSet());
        assertTrue(!its.isEmpty(), "broker 1 is some partition's preferred leader: " + preferred);
        for (int p : its) {
            assertNotEquals(1, cluster.leaders(topic).get(p));
        }

        Map<Integer, Throwable> result = electPreferred(topic, Set.of(0, 1, 2));
        for (int p = 0; p < 3; p++) {
            if (its.contains(p)) {
                assertNull(result.get(p), "partition " + p + " elected");
            } else {
                assertInstanceOf(ElectionNotNeededException.class, result.get(p));
            }
        }
        Kiq.waitFor("the preferred replicas lead again", WAIT, () -> cluster.leaders(topic).equals(preferred));

        TopicPartition nowhere = new TopicPartition("no-such-topic", 0);
        Optional<Throwable> unknown = cluster.admin.electLeaders(ElectionType.PREFERRED, Set.of(nowhere)).partitions()
                .get().get(nowhere);
        assertInstanceOf(UnknownTopicOrPartitionException.class, unknown.orElse(null));
    }

    /** The first of prefer that is not the controller's broker and leads a partition of topics. */
    private static int victim(List<Integer> prefer, String... topics) throws Exception {
        Set<Integer> leading = new HashSet<>();
        for (String t : topics) {
            leading.addAll(cluster.leaders(t).values());
        }
        return prefer.stream().filter(id -> id != KiqCluster.CONTROLLER && leading.contains(id)).findFirst()
                .orElseThrow(() -> new AssertionError("none of " + prefer + " leads a partition of "
                        + List.of(topics) + " (leaders: " + leading + ")"));
    }

    /**
     * SIGKILLs broker victim (never the controller's), waits until the controller moved its leaderships of
     * topics and the clients made progress without it, starts it again, waits for full ISRs and puts the
     * preferred leaders of topics back.
     */
    private static void bounce(int round, int victim, String what, LongSupplier progress, String... topics)
            throws Exception {
        assertNotEquals(KiqCluster.CONTROLLER, victim);
        cluster.broker(victim).kill();
        Kiq.waitFor("bounce " + round + ": broker " + victim + " fenced, its leaderships moved", WAIT, () -> {
            for (String t : topics) {
                if (cluster.leaders(t).containsValue(victim)) {
                    return false;
                }
            }
            return true;
        });
        long before = progress.getAsLong();
        Kiq.waitFor("bounce " + round + ": " + what + " going on without broker " + victim, WAIT,
                () -> progress.getAsLong() > before + 300);
        cluster.broker(victim).start();
        cluster.waitHealthy(WAIT, topics);
        for (String t : topics) {
            Map<Integer, Integer> preferred = preferred(t);
            electPreferred(t, preferred.keySet());
            Kiq.waitFor("bounce " + round + ": preferred leaders of " + t + " back", WAIT,
                    () -> cluster.leaders(t).equals(preferred));
        }
        System.out.println("bounce " + round + ": broker " + victim + " SIGKILLed and back (" + what + " at "
                + progress.getAsLong() + ")");
    }

    private static long count(JvmProcess p, String name) {
        return p.events().stream().filter(e -> name.equals(e.path("name").asText())).count();
    }

    @Test
    void verifiableProducerAndConsumerLoseAndDuplicateNothingWhileLeadersBounce() throws Exception {
        String topic = "verifiable";
        create(topic, 3);
        String bs = cluster.bootstrap();
        // the tool turns retries off; an idempotent producer retries, so every value should be acknowledged once
        Path config = Files.writeString(dir.resolve("verifiable-producer.properties"),
                "enable.idempotence=true\nretries=2147483647\n");
        try (JvmProcess consumer = new JvmProcess("verifiable-consumer", dir, TOOLS + "VerifiableConsumer",
                "--bootstrap-server", bs, "--topic", topic, "--group-id", "verifiable", "--group-protocol", "classic",
                "--session-timeout", "10000", "--reset-policy", "earliest", "--verbose");
                JvmProcess producer = new JvmProcess("verifiable-producer", dir, TOOLS + "VerifiableProducer",
                        "--bootstrap-server", bs, "--topic", topic, "--throughput", "500", "--acks", "-1",
                        "--command-config", config.toString())) {
            consumer.awaitEvent("partitions assigned", WAIT, e -> "partitions_assigned".equals(e.path("name")
                    .asText()) && e.path("partitions").size() == 3);
            LongSupplier acked = () -> count(producer, "producer_send_success");
            Kiq.waitFor("writes acknowledged before the first bounce", WAIT, () -> acked.getAsLong() >= 1000);
            for (int round = 1; round <= BOUNCES; round++) {
                // brokers 1 and 2 in turn, when they lead something
                int victim = victim(List.of(1 + round % 2, 1 + (round + 1) % 2), topic);
                bounce(round, victim, "acknowledged writes", acked, topic, "__consumer_offsets");
            }
            long last = acked.getAsLong();
            Kiq.waitFor("writes acknowledged after the last bounce", WAIT, () -> acked.getAsLong() >= last + 500);
            producer.terminate(WAIT); // it stops sending, flushes and reports
            JsonNode tool = producer.awaitEvent("its summary", WAIT, e -> "tool_data".equals(e.path("name")
                    .asText()));

            // value -> partition and offset, as acknowledged
            Map<String, String> ackedAt = new HashMap<>();
            for (JsonNode e : producer.events()) {
                if ("producer_send_success".equals(e.path("name").asText())) {
                    ackedAt.put(e.path("value").asText(), e.path("partition").asInt() + "@" + e.path("offset")
                            .asLong());
                }
            }
            Kiq.waitFor("every acknowledged value consumed", WAIT, () -> consumed(consumer).keySet()
                    .containsAll(ackedAt.keySet()));
            consumer.terminate(WAIT);
            assertTrue(count(consumer, "shutdown_complete") > 0, consumer.stderrTail());

            Map<String, List<String>> got = consumed(consumer);
            long lost = ackedAt.keySet().stream().filter(v -> !got.containsKey(v)).count();
            long duplicates = got.values().stream().mapToLong(l -> l.size() - 1).sum();
            long moved = ackedAt.entrySet().stream()
                    .filter(e -> got.containsKey(e.getKey()) && !got.get(e.getKey()).contains(e.getValue())).count();
            Set<String> errors = producer.events().stream()
                    .filter(e -> "producer_send_error".equals(e.path("name").asText()))
                    .map(e -> e.path("exception").asText() + ": " + e.path("message").asText())
                    .collect(Collectors.toSet());
            String summary = String.format("verifiable: %d sent, %d acknowledged, %d send errors %s, %d consumed, "
                    + "%d lost, %d duplicates, %d not at their acknowledged offset, %d bounces",
                    tool.path("sent").asLong(), ackedAt.size(), count(producer, "producer_send_error"), errors,
                    got.values().stream().mapToLong(List::size).sum(), lost, duplicates, moved, BOUNCES);
            System.out.println(summary);
            assertEquals(tool.path("sent").asLong(), ackedAt.size(), "every write acknowledged: " + summary);
            assertEquals(0, lost, summary);
            assertEquals(0, duplicates, summary);
            assertEquals(0, moved, summary);
        }
    }

    /**
     * Kafka's transactions system test, shortened: the copier reads its input read_committed and writes each
     * batch with the input offsets in one transaction, a third of them aborted on purpose; the brokers of its
     * transaction coordinator, its group coordinator and an output leader are SIGKILLed in turn. The output,
     * read_committed, is then exactly the input, partition by partition in order.
     */
    @Test
    void transactionalMessageCopierCopiesExactlyWhileLeadersBounce() throws Exception {
        String in = "copy-in";
        String out = "copy-out";
        int messages = 12000;
        create(in, 3);
        create(out, 3);
        String bs = cluster.bootstrap();
        try (KafkaProducer<String, String> p = Clients.producer(bs, "enable.idempotence=true", "linger.ms=10")) {
            for (int i = 0; i < messages; i++) {
                p.send(new ProducerRecord<>(in, i % 3, null, String.valueOf(i)));
            }
            p.flush();
        }
        String[] topics = {in, out, "__consumer_offsets", "__transaction_state"};
        try (JvmProcess copier = new JvmProcess("copier", dir, TOOLS + "TransactionalMessageCopier",
                "--broker-list", bs, "--input-topic", in, "--input-partition", "0", "--output-topic", out,
                "--transactional-id", "copier-1", "--consumer-group", "copier", "--transaction-size", "50",
                "--group-mode", "--use-group-metadata", "--enable-random-aborts")) {
            LongSupplier copied = () -> {
                List<JsonNode> es = copier.events();
                for (int i = es.size() - 1; i >= 0; i--) {
                    if (es.get(i).has("totalProcessed")) {
                        return es.get(i).path("totalProcessed").asLong();
                    }
                }
                return 0;
            };
            Kiq.waitFor("copying under way", WAIT, () -> copied.getAsLong() >= 1000);
            for (int round = 1; round <= BOUNCES; round++) {
                // the transaction coordinator's broker, the group coordinator's, an output leader's; those
                // on the controller's broker are passed over for brokers 1 and 2 in turn
                List<Integer> prefer = new ArrayList<>();
                if (round == 1) {
                    prefer.add(cluster.admin.describeTransactions(List.of("copier-1")).description("copier-1").get()
                            .coordinatorId());
                } else if (round == 2) {
                    prefer.add(cluster.admin.describeConsumerGroups(List.of("copier")).all().get().get("copier")
                            .coordinator().id());
                }
                prefer.addAll(round % 2 == 1 ? List.of(1, 2) : List.of(2, 1));
                int victim = round <= 2 ? victim(prefer, topics) : victim(prefer, out);
                bounce(round, victim, "copied records", copied, topics);
            }
            assertEquals(0, copier.awaitExit(Duration.ofSeconds(180)), copier.stderrTail());
            assertEquals(messages, copied.getAsLong());
        }

        List<ConsumerRecord<String, String>> input = Clients.readAll(bs, in, "read_committed", WAIT);
        List<ConsumerRecord<String, String>> output = Clients.readAll(bs, out, "read_committed", WAIT);
        Map<Integer, List<String>> inputs = new HashMap<>();
        Map<Integer, List<String>> outputs = new HashMap<>();
        input.forEach(r -> inputs.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value()));
        output.forEach(r -> outputs.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value()));
        Set<String> distinct = output.stream().map(ConsumerRecord::value).collect(Collectors.toSet());
        long lost = input.stream().filter(r -> !distinct.contains(r.value())).count();
        long duplicates = output.size() - distinct.size();
        List<ConsumerRecord<String, String>> uncommitted = Clients.readAll(bs, out, "read_uncommitted", WAIT);
        String summary = String.format("copier: %d input, %d output read_committed (%d read_uncommitted: aborted "
                + "ones included), %d lost, %d duplicates, %d bounces", input.size(), output.size(),
                uncommitted.size(), lost, duplicates, BOUNCES);
        System.out.println(summary);
        assertEquals(messages, input.size());
        assertEquals(0, lost, summary);
        assertEquals(0, duplicates, summary);
        assertEquals(inputs, outputs, "each output partition is its input partition, in order: " + summary);
    }

    /** VerifiableConsumer's records (--verbose): value -> where each was read ("partition@offset"). */
    private static Map<String, List<String>> consumed(JvmProcess consumer) {
        Map<String, List<String>> out = new HashMap<>();
        for (JsonNode e : consumer.events()) {
            if ("record_data".equals(e.path("name").asText())) {
                out.computeIfAbsent(e.path("value").asText(), k -> new ArrayList<>())
                        .add(e.path("partition").asInt() + "@" + e.path("offset").asLong());
            }
        }
        return out;
    }
}
