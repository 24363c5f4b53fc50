package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams' word count at exactly_once_v2, SIGKILLed while lines keep coming and started again on the same
 * state directory: read read_committed, every word's counts in the output are exactly 1, 2, ..., its total.
 */
class StreamsEosTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
        "india", "juliett", "kilo", "lima", "mike"};
    private static final int LINES = 1500;
    private static final int WORDS_PER_LINE = 4;

    @TempDir(cleanup = CleanupMode.ON_SUCCESS) // kept for a look when a test failed
    static Path dir;
    static KiqBroker broker;
    static Admin admin;

    @BeforeAll
    static void start() {
        broker = KiqBroker.standalone(dir.resolve("broker"));
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

    private static String line(int i) {
        StringBuilder s = new StringBuilder();
        for (int j = 0; j < WORDS_PER_LINE; j++) {
            s.append(j == 0 ? "" : " ").append(WORDS[(i * 7 + j * 3 + i / 5) % WORDS.length]);
        }
        return s.toString();
    }

    private static JvmProcess app(String name) throws Exception {
        JvmProcess p = new JvmProcess(name, dir, WordCountApp.class.getName(), broker.bootstrap(), "wordcount",
                "lines", "counts", dir.resolve("state").toString());
        p.awaitEvent("RUNNING", WAIT, e -> "RUNNING".equals(e.path("state").asText()));
        return p;
    }

    /** Output records per word (the output is keyed by word), read_committed. */
    private static int committedOutput() {
        return Clients.readAll(broker.bootstrap(), "counts", "read_committed", WAIT).size();
    }

    @Test
    void wordCountKilledMidRunAndRestartedCountsEveryWordOnce() throws Exception {
        Clients.createTopic(admin, "lines", 2, (short) 1, Map.of());
        Clients.createTopic(admin, "counts", 2, (short) 1, Map.of());
        Map<String, Integer> expected = new HashMap<>();
        for (int i = 0; i < LINES; i++) {
            for (String w : line(i).split(" ")) {
                expected.merge(w, 1, Integer::sum);
            }
        }
        int total = LINES * WORDS_PER_LINE;

        // lines keep coming, a few at a time, while the application is killed and restarted
        AtomicInteger sent = new AtomicInteger();
        AtomicReference<Exception> producerFailed = new AtomicReference<>();
        Thread feeder = new Thread(() -> {
            try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "acks=all")) {
                for (int i = 0; i < LINES; i++) {
                    p.send(new ProducerRecord<>("lines", "line-" + i, line(i))).get();
                    sent.incrementAndGet();
                    if (i % 10 == 9) {
                        Thread.sleep(25); // pacing: the input outlasts the kill and the restart
                    }
                }
            } catch (Exception e) {
                producerFailed.set(e);
            }
        }, "feeder");

        JvmProcess first = app("wordcount-1");
        JvmProcess second = null;
        try {
            feeder.start();
            Kiq.waitFor("a third of the counts committed", WAIT, () -> committedOutput() >= total / 3);
            assertTrue(sent.get() < LINES, "killed while lines were still coming");
            first.kill();
            int atKill = sent.get();

            second = app("wordcount-2");
            feeder.join(WAIT.toMillis());
            assertNull(producerFailed.get());
            assertEquals(LINES, sent.get());
            assertTrue(atKill < LINES);
            Kiq.waitFor("every word counted", WAIT, () -> committedOutput() >= total);
            // SIGTERM: the shutdown hook closes the application (the JVM then exits 128 + 15)
            assertEquals(143, second.terminate(Duration.ofSeconds(30)), second.stderrTail());
            assertEquals("NOT_RUNNING", second.events().get(second.events().size() - 1).path("state").asText(),
                    second.events() + "\n" + second.stderrTail());
            for (JvmProcess p : List.of(first, second)) {
                assertTrue(p.events().stream().noneMatch(e -> "ERROR".equals(e.path("state").asText())),
                        p.name + " went into ERROR\n" + p.stderrTail());
            }
        } finally {
            first.close();
            if (second != null) {
                second.close();
            }
        }

        Map<String, List<Integer>> counts = new HashMap<>();
        List<ConsumerRecord<String, String>> out = Clients.readAll(broker.bootstrap(), "counts", "read_committed",
                WAIT);
        for (ConsumerRecord<String, String> r : out) {
            counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(r.value()));
        }
        assertEquals(expected.keySet(), counts.keySet());
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<Integer> want = new ArrayList<>();
            for (int i = 1; i <= e.getValue(); i++) {
                want.add(i);
            }
            assertEquals(want, counts.get(e.getKey()), "the counts of " + e.getKey() + " in the output, in order");
        }
        assertEquals(total, out.size(), "one output record per word read, none twice");
    }
}
