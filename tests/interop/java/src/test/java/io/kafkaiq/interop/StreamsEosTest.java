package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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

    /** How many output records a consumer at that isolation level reads. */
    private static int output(String isolation) {
        return Clients.readAll(broker.bootstrap(), "counts", isolation, WAIT).size();
    }

    @Test
    void wordCountKilledMidRunAndRestartedCountsEveryWordOnce() throws Exception {
        Clients.createTopic(admin, "lines", 2, (short) 1, Map.of());
        Clients.createTopic(admin, "counts", 2, (short) 1, Map.of());

        // lines keep coming, a few at a time, until told to stop: before the kill, during and after the restart
        AtomicInteger sent = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Exception> producerFailed = new AtomicReference<>();
        Thread feeder = new Thread(() -> {
            try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "acks=all")) {
                for (int i = 0; !stop.get(); i++) {
                    p.send(new ProducerRecord<>("lines", "line-" + i, line(i))).get();
                    sent.incrementAndGet();
                    if (i % 10 == 9) {
                        Thread.sleep(25); // pacing, not synchronisation
                    }
                }
            } catch (Exception e) {
                producerFailed.set(e);
            }
        }, "feeder");

        JvmProcess first = app("wordcount-1");
        JvmProcess second = null;
        int lines;
        try {
            feeder.start();
            Kiq.waitFor("counts committed", WAIT, () -> output("read_committed") >= 1000);
            // the output's high watermark past its last stable offset: counts in an open transaction
            try (KafkaConsumer<String, String> u = Clients.consumer(broker.bootstrap(), null);
                    KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), null,
                            "isolation.level=read_committed")) {
                List<TopicPartition> tps = List.of(new TopicPartition("counts", 0), new TopicPartition("counts", 1));
                Kiq.waitFor("counts written in an open transaction", WAIT, () -> {
                    Map<TopicPartition, Long> stable = c.endOffsets(tps);
                    Map<TopicPartition, Long> high = u.endOffsets(tps);
                    return tps.stream().anyMatch(tp -> high.get(tp) > stable.get(tp));
                });
            }
            first.kill();
            int atKill = sent.get();

            second = app("wordcount-2");
            Kiq.waitFor("more lines after the restart", WAIT, () -> sent.get() >= atKill + 500);
            stop.set(true);
            feeder.join(WAIT.toMillis());
            assertNull(producerFailed.get());
            lines = sent.get();
            Kiq.waitFor("every word counted", WAIT, () -> output("read_committed") >= lines * WORDS_PER_LINE);
            // SIGTERM: the shutdown hook closes the application (the JVM then exits 128 + 15)
            assertEquals(143, second.terminate(Duration.ofSeconds(30)), second.stderrTail());
            assertEquals("NOT_RUNNING", second.events().get(second.events().size() - 1).path("state").asText(),
                    second.events() + "\n" + second.stderrTail());
            for (JvmProcess p : List.of(first, second)) {
                assertTrue(p.events().stream().noneMatch(e -> "ERROR".equals(e.path("state").asText())),
                        p.name + " went into ERROR\n" + p.stderrTail());
            }
        } finally {
            stop.set(true);
            first.close();
            if (second != null) {
                second.close();
            }
        }

        Map<String, Integer> expected = new HashMap<>();
        for (int i = 0; i < lines; i++) {
            for (String w : line(i).split(" ")) {
                expected.merge(w, 1, Integer::sum);
            }
        }
        int total = lines * WORDS_PER_LINE;
        Map<String, List<Integer>> counts = new HashMap<>();
        List<ConsumerRecord<String, String>> out = Clients.readAll(broker.bootstrap(), "counts", "read_committed",
                WAIT);
        for (ConsumerRecord<String, String> r : out) {
            counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(Integer.parseInt(r.value()));
        }
        // what the killed instance wrote in its open transaction is in the log, aborted
        System.out.printf("streams: %d words, %d output records read_committed, %d read_uncommitted%n", total,
                out.size(), output("read_uncommitted"));
        assertEquals(expected.keySet(), counts.keySet());
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<Integer> want = new ArrayList<>();
            for (int i = 1; i <= e.getValue(); i++) {
                want.add(i);
            }
            assertEquals(want, counts.get(e.getKey()), "the counts of " + e.getKey() + " in the output, in order");
        }
        assertEquals(total, out.size(), "one output record per word read, none twice");

        // exactly_once_v2 on transaction.version 2: transactions v2 throughout (KIP-890 part 2), the partitions
        // and offsets added by the produce and TxnOffsetCommit themselves
        long[] endTxn = broker.requestsServed("EndTxn", 5);
        if (endTxn != null) {
            long[] offsets = broker.requestsServed("TxnOffsetCommit", 5);
            String seen = String.format("EndTxn v0-4 %s, TxnOffsetCommit v0-4 %s, AddPartitionsToTxn v0-5 %s, "
                    + "AddOffsetsToTxn v0-4 %s", Arrays.toString(Arrays.copyOf(endTxn, 5)),
                    Arrays.toString(Arrays.copyOf(offsets, 5)),
                    Arrays.toString(broker.requestsServed("AddPartitionsToTxn", 5)),
                    Arrays.toString(broker.requestsServed("AddOffsetsToTxn", 4)));
            assertEquals("EndTxn v0-4 [0, 0, 0, 0, 0], TxnOffsetCommit v0-4 [0, 0, 0, 0, 0], "
                    + "AddPartitionsToTxn v0-5 [0, 0, 0, 0, 0, 0], AddOffsetsToTxn v0-4 [0, 0, 0, 0, 0]", seen);
            assertTrue(endTxn[5] > 0 && offsets[5] > 0, "EndTxn v5 " + endTxn[5] + ", TxnOffsetCommit v5 " + offsets[5]);
        }
    }
}
