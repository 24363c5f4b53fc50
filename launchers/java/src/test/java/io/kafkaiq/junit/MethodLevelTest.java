package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * @KafkaIQ on methods: each its own process, started before the method's @BeforeEach and stopped after its
 * @AfterEach, both of which receive it too.
 */
class MethodLevelTest {
    private static final long DAY_MS = Duration.ofDays(1).toMillis();
    private static long previousPid;

    private KafkaIQCluster fromBeforeEach;

    @BeforeEach
    void before(KafkaIQCluster kafka) {
        fromBeforeEach = kafka;
    }

    @AfterEach
    void after(KafkaIQCluster kafka) {
        previousPid = kafka.pid();
    }

    @Test
    @KafkaIQ
    void eachMethodHasItsOwnCluster(KafkaIQCluster kafka) {
        assertOwn(kafka);
        assertEquals("system", kafka.call("GET", "/api/clock", null, 0, Duration.ofSeconds(5)).get("clock"));
    }

    @Test
    @KafkaIQ(overrides = {"kafkaiq.clock=manual", "log.retention.hours=1"})
    void aDayAheadRetentionDeletesWhatItKept(KafkaIQCluster kafka) throws Exception {
        assertOwn(kafka);
        String topic = Clients.topic("retention");
        Clients.create(kafka.bootstrapServers(), topic, 1, 1);
        Clients.produce(kafka.bootstrapServers(), topic, List.of("old-1", "old-2"), Map.of());
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "high_watermark", 2));
        KafkaIQException kept = assertThrows(KafkaIQException.class, () -> kafka.waitFor(
                Map.of("topic", topic, "partition", 0, "log_start_offset", 2), Duration.ofMillis(300)));
        assertEquals(408, kept.status());
        Map<String, Object> clock = kafka.advanceClock(Duration.ofDays(1));
        assertEquals("manual", clock.get("clock"));
        assertTrue(((Number) clock.get("ahead_ms")).longValue() >= DAY_MS, clock.toString());
        kafka.waitFor(Map.of("topic", topic, "partition", 0, "log_start_offset", 2));
    }

    /** The lifecycle methods saw this method's cluster, and the method before had another, stopped by now. */
    private void assertOwn(KafkaIQCluster kafka) {
        assertSame(fromBeforeEach, kafka);
        if (previousPid != 0) {
            assertNotEquals(previousPid, kafka.pid());
            assertFalse(ProcessHandle.of(previousPid).map(ProcessHandle::isAlive).orElse(false));
        }
    }
}
