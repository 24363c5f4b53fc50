package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

/**
 * Three brokers in one process for the class. Broker 0 hosts the controller, so the failover kills broker 1
 * (made the leader through the control API: the cluster refuses manual replica assignments) and watches
 * through broker 0, fenced after a short session timeout. Every test leaves the three brokers running and in
 * sync.
 */
@KafkaIQ(brokers = 3, overrides = {"min.insync.replicas=2", "replica.lag.time.max.ms=1000",
        "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=250"})
class ThreeBrokerTest {
    private static final Map<String, Object> ACKS_ALL = Map.of(ProducerConfig.ACKS_CONFIG, "all");

    @Test
    void acksAllIsReplicatedToAllThree(KafkaIQCluster kafka) throws Exception {
        assertEquals(List.of(0, 1, 2), kafka.brokers().stream().map(KafkaIQCluster.Broker::id).toList());
        assertEquals(3, kafka.brokers().stream().map(KafkaIQCluster.Broker::port).collect(Collectors.toSet()).size());
        String topic = Clients.topic("replicated");
        Clients.create(kafka.bootstrapServers(), topic, 3, 3);
        for (int p = 0; p < 3; p++) {
            kafka.waitFor(Map.of("topic", topic, "partition", p, "isr", 3));
        }
        List<String> values = IntStream.range(0, 30).mapToObj(i -> "r" + i).toList();
        assertEquals(30, Clients.produce(kafka.bootstrapServers(), topic, values, ACKS_ALL).size());
        assertEquals(Set.copyOf(values), Set.copyOf(Clients.consume(kafka.bootstrapServers(), topic, 30)));
        Map<?, ?> topics = (Map<?, ?>) kafka.state(1).get("topics");
        assertEquals(3, ((Map<?, ?>) ((Map<?, ?>) topics.get(topic)).get("partitions")).size());
    }

    @Test
    void aKilledBrokerComesBackWithItsData(KafkaIQCluster kafka) throws Exception {
        String topic = Clients.topic("failover");
        createLedBy(kafka, topic, 1);
        Clients.produce(kafka.bootstrapServers(), topic, List.of("before"), ACKS_ALL);

        assertEquals(Boolean.TRUE, kafka.kill(1, 0).get("queued"));
        kafka.waitFor(Map.of("broker", 1, "state", "stopped"), Duration.ofSeconds(10), 0);
        // the controller fences broker 1: out of the ISR, and a replica in it leads
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 2), Duration.ofSeconds(20), 0);
        int leader = ((Number) kafka.waitFor(Map.of("topic", topic, "partition", 0, "leader", "any"),
                Duration.ofSeconds(10), 0).get("value")).intValue();
        assertTrue(leader == 0 || leader == 2, "a replica still running leads, not " + leader);
        Clients.produce(kafka.bootstrapServers(), topic, List.of("during"), ACKS_ALL);

        kafka.restart(1, 0);
        kafka.waitFor(Map.of("broker", 1, "state", "ready"), Duration.ofSeconds(20), 0);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3), Duration.ofSeconds(30), 0);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "high_watermark", 2), Duration.ofSeconds(10), 1);
        assertEquals(List.of("before", "during"), Clients.consume(kafka.bootstrapServers(), topic, 2));
        assertTrue(kafka.electPreferred() >= 1, "broker 1 leads its partition again");
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "leader", 1));
    }

    @Test
    void aPausedFollowerFallsBehindAndAStoppedOneComesBack(KafkaIQCluster kafka) throws Exception {
        String topic = Clients.topic("paused");
        createLedBy(kafka, topic, 0);
        kafka.pause(2, 0);
        try {
            Clients.produce(kafka.bootstrapServers(), topic, List.of("while paused"), ACKS_ALL);
            kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 2), Duration.ofSeconds(20));
        } finally {
            kafka.resume(2, 0);
        }
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3), Duration.ofSeconds(20));
        kafka.stop(2, 0);
        kafka.waitFor(Map.of("broker", 2, "state", "stopped"), Duration.ofSeconds(20), 0);
        kafka.restart(2, 0);
        kafka.waitFor(Map.of("broker", 2, "state", "ready"), Duration.ofSeconds(20), 0);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3), Duration.ofSeconds(30));
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "high_watermark", 1), Duration.ofSeconds(10), 2);
    }

    @Test
    void aCutFollowerLeavesTheIsrAndRejoinsWhenHealed(KafkaIQCluster kafka) throws Exception {
        String topic = Clients.topic("cut");
        createLedBy(kafka, topic, 2);
        kafka.link(2, 1, "cut");
        try {
            Clients.produce(kafka.bootstrapServers(), topic, List.of("a"), ACKS_ALL);
            assertTrue(((List<?>) kafka.call("GET", "/api/brokers", null, 0, Duration.ofSeconds(5)).get("links"))
                    .contains(Map.of("from", 2, "to", 1)));
            kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 2), Duration.ofSeconds(20));
        } finally {
            kafka.link(2, 1, "heal");
        }
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3), Duration.ofSeconds(20));
    }

    @Test
    void leadershipMovesWhereTheTestSays(KafkaIQCluster kafka) throws Exception {
        String topic = Clients.topic("moved");
        Clients.create(kafka.bootstrapServers(), topic, 1, 3);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3));
        int leader = ((Number) kafka.waitFor(Map.of("topic", topic, "partition", 0, "leader", "any")).get("value"))
                .intValue();
        int to = (leader + 1) % 3;
        assertEquals(to, ((Number) kafka.moveLeader(topic, 0, to).get("leader")).intValue());
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "leader", to));
        assertEquals(0, Clients.produce(kafka.bootstrapServers(), topic, List.of("moved"), ACKS_ALL).get(0).offset());
        assertEquals(0, kafka.electPreferred(), "the moved leader is first in the replicas now");
        KafkaIQException e = assertThrows(KafkaIQException.class, () -> kafka.moveLeader("no-such-topic", 0, 1));
        assertEquals(404, e.status());
    }

    /** One partition on all three brokers, led by leader (the control API moves it there). */
    private static void createLedBy(KafkaIQCluster kafka, String topic, int leader) throws Exception {
        Clients.create(kafka.bootstrapServers(), topic, 1, 3);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "isr", 3));
        kafka.moveLeader(topic, 0, leader);
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "leader", leader));
    }
}
