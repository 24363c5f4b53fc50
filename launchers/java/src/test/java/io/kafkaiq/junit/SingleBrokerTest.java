package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * One broker for the whole class, reached through the constructor, lifecycle methods and test methods; a group
 * is formed without the initial rebalance delay.
 */
@KafkaIQ(overrides = "group.initial.rebalance.delay.ms=0")
class SingleBrokerTest {
    private static long startedInBeforeAll;

    private final KafkaIQCluster kafka;

    SingleBrokerTest(KafkaIQCluster kafka) {
        this.kafka = kafka;
    }

    @BeforeAll
    static void remember(KafkaIQCluster kafka) {
        startedInBeforeAll = kafka.pid();
    }

    @AfterEach
    void clearFaults() {
        kafka.removeFaults();
    }

    @Test
    void oneClusterServesTheWholeClass(KafkaIQCluster asParameter) {
        assertEquals(startedInBeforeAll, kafka.pid());
        assertEquals(kafka, asParameter);
        assertTrue(ProcessHandle.of(kafka.pid()).map(ProcessHandle::isAlive).orElse(false));
        assertEquals(1, kafka.brokers().size());
        KafkaIQCluster.Broker b = kafka.brokers().get(0);
        assertEquals("127.0.0.1:" + b.port(), kafka.bootstrapServers());
        assertEquals(b.http(), kafka.http());
    }

    @Test
    @KafkaIQ
    void aMethodAnnotationGivesTheMethodItsOwn(KafkaIQCluster own) {
        assertNotEquals(kafka.pid(), own.pid());
        assertEquals(startedInBeforeAll, kafka.pid());
    }

    @Nested
    class InANestedClass {
        @Test
        void theOuterClassesClusterIsShared(KafkaIQCluster outer) {
            assertEquals(startedInBeforeAll, outer.pid());
        }
    }

    @Test
    void aRealClientProducesAndAGroupConsumes() throws Exception {
        String topic = Clients.topic("plain");
        Clients.create(kafka.bootstrapServers(), topic, 1, 1);
        assertEquals(3, Clients.produce(kafka.bootstrapServers(), topic, List.of("a", "b", "c"), Map.of()).size());
        String group = "g-" + topic;
        try (KafkaConsumer<String, String> c = Clients.consumer(kafka.bootstrapServers(), group)) {
            c.subscribe(List.of(topic));
            assertEquals(List.of("a", "b", "c"), Clients.poll(c, 3));
            assertEquals("Stable", kafka.waitFor(Map.of("group", group, "state", "Stable")).get("value"));
        }
    }

    /**
     * The differential check: a Produce answered NOT_LEADER_OR_FOLLOWER once makes the Java producer (acks=all,
     * idempotent, default retries) refresh its metadata and send again, and the record lands once. A rule that
     * only delays the producer's Metadata by 1 ms (the broker refuses a delay of 0) counts them: none for a send
     * with nothing wrong, at least one after the error.
     */
    @Test
    void notLeaderOnceMakesTheProducerRefreshMetadataAndSucceed() throws Exception {
        String topic = Clients.topic("retry");
        Clients.create(kafka.bootstrapServers(), topic, 1, 1);
        String clientId = "differential-" + topic;
        int metadata = kafka.fault(Map.of("api", "Metadata", "client_id", clientId, "action", "delay",
                "delay_ms", 1));
        try (KafkaProducer<String, String> p = Clients.producer(kafka.bootstrapServers(),
                Map.of(ProducerConfig.CLIENT_ID_CONFIG, clientId, ProducerConfig.ACKS_CONFIG, "all"))) {
            p.partitionsFor(topic);
            p.send(new ProducerRecord<>(topic, "control")).get(30, TimeUnit.SECONDS);
            long before = count(rule(metadata), "matched");
            assertTrue(before >= 1, "the producer's own Metadata requests are counted");
            p.send(new ProducerRecord<>(topic, "again")).get(30, TimeUnit.SECONDS);
            assertEquals(before, count(rule(metadata), "matched"), "a send with nothing wrong asks for none");

            int produce = kafka.fault(Map.of("api", "Produce", "topic", topic, "error", "NOT_LEADER_OR_FOLLOWER",
                    "times", 1));
            p.send(new ProducerRecord<>(topic, "retried")).get(30, TimeUnit.SECONDS);
            Map<String, Object> refused = rule(produce);
            assertEquals(1, count(refused, "fired"));
            assertEquals("NOT_LEADER_OR_FOLLOWER", refused.get("error"));
            assertTrue(count(refused, "matched") >= 2, "the refused request and the retry: " + refused);
            assertTrue(count(rule(metadata), "matched") > before, "metadata refreshed after the error");
        }
        assertEquals(List.of("control", "again", "retried"), Clients.consume(kafka.bootstrapServers(), topic, 3));
    }

    @Test
    void aFatalFaultReachesTheApplication() throws Exception {
        String topic = Clients.topic("fatal");
        Clients.create(kafka.bootstrapServers(), topic, 1, 1);
        int id = kafka.fault(Map.of("api", "Produce", "topic", topic, "error", "TOPIC_AUTHORIZATION_FAILED"));
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> Clients.produce(kafka.bootstrapServers(), topic, List.of("y"), Map.of()));
        assertInstanceOf(TopicAuthorizationException.class, e.getCause());
        assertEquals(List.of(id), kafka.removeFault(id));
        assertEquals(0, Clients.produce(kafka.bootstrapServers(), topic, List.of("z"), Map.of()).get(0).offset());
    }

    @Test
    void aRefusedControlCallSaysWhy() {
        KafkaIQException e = assertThrows(KafkaIQException.class,
                () -> kafka.fault(Map.of("api", "Produce", "error", "NOT_AN_ERROR")));
        assertEquals(400, e.status());
        assertTrue(e.brokerMessage().contains("unknown error 'NOT_AN_ERROR'"), e.getMessage());
        e = assertThrows(KafkaIQException.class, () -> kafka.removeFault(4242));
        assertEquals(404, e.status());
        assertTrue(e.getMessage().contains("404 no fault rule 4242"), e.getMessage());
        e = assertThrows(KafkaIQException.class, () -> kafka.kill(0, 0));
        assertEquals(409, e.status());
        assertTrue(e.brokerMessage().contains("this broker runs alone"), e.getMessage());
        e = assertThrows(KafkaIQException.class, () -> kafka.advanceClock(Duration.ofSeconds(1)));
        assertEquals(409, e.status());
        assertTrue(e.brokerMessage().contains("the clock is the system's"), e.getMessage());
    }

    @Test
    void aWaitThatCannotBeMetSaysWhatItSaw() {
        KafkaIQException e = assertThrows(KafkaIQException.class, () -> kafka.waitFor(
                Map.of("topic", "nothing", "partition", 0, "high_watermark", 5), Duration.ofMillis(100)));
        assertEquals(408, e.status());
        assertTrue(e.brokerMessage().matches("timed out after .* ms waiting for high watermark 5 of nothing-0.*"),
                e.getMessage());
    }

    private static long count(Map<String, Object> rule, String key) {
        return ((Number) rule.get(key)).longValue();
    }

    private Map<String, Object> rule(int id) {
        return kafka.faults().stream().filter(f -> ((Number) f.get("id")).intValue() == id).findFirst()
                .orElseThrow(() -> new AssertionError("no rule " + id + " in " + kafka.faults()));
    }
}
