package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/** Classic-protocol consumer groups with the Java consumer: subscribe, rebalance, commits, seek, position. */
class ConsumerGroupTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Quick rebalances: a member learns of one at its next heartbeat. */
    private static final String[] GROUP = {"heartbeat.interval.ms=200", "session.timeout.ms=6000"};

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

    /** Writes `per` records to each partition, values "p-i" from `from` on. */
    private static void produce(String topic, int partitions, int from, int per) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "linger.ms=5")) {
            for (int i = from; i < from + per; i++) {
                for (int part = 0; part < partitions; part++) {
                    p.send(new ProducerRecord<>(topic, part, null, part + "-" + i));
                }
            }
            p.flush();
        }
    }

    private static List<TopicPartition> partitions(String topic, int n) {
        return IntStream.range(0, n).mapToObj(i -> new TopicPartition(topic, i)).collect(Collectors.toList());
    }

    /** Polls until `want` records came; they are returned. */
    private static List<ConsumerRecord<String, String>> pollUntil(KafkaConsumer<String, String> c, int want) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        Kiq.waitFor(want + " records polled", WAIT, () -> {
            c.poll(Duration.ofMillis(100)).forEach(got::add);
            return got.size() >= want;
        });
        assertEquals(want, got.size(), "no more than the records written");
        return got;
    }

    @Test
    void subscribedMemberReadsEverythingAndCommitsSync() throws Exception {
        String topic = "subscribed";
        Clients.createTopic(admin, topic, 3, (short) 1, Map.of());
        produce(topic, 3, 0, 100);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), "g-sync", GROUP)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 300);
            assertEquals(300, got.stream().map(ConsumerRecord::value).distinct().count());
            assertEquals(Set.copyOf(partitions(topic, 3)), c.assignment());
            c.commitSync();
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.copyOf(partitions(topic, 3)));
            for (TopicPartition tp : partitions(topic, 3)) {
                assertEquals(100, committed.get(tp).offset(), tp + " committed");
                assertEquals(100, c.position(tp), tp + " position");
            }
        }
        // the next member of the group starts at the commits: nothing is read again
        produce(topic, 3, 100, 1);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), "g-sync", GROUP)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 3);
            assertEquals(Set.of("0-100", "1-100", "2-100"),
                    got.stream().map(ConsumerRecord::value).collect(Collectors.toSet()));
        }
        // and the group's offsets as the Admin client lists them
        Map<TopicPartition, OffsetAndMetadata> listed = admin.listConsumerGroupOffsets("g-sync")
                .partitionsToOffsetAndMetadata().get();
        assertEquals(3, listed.size());
        listed.values().forEach(o -> assertEquals(100, o.offset()));
    }

    @Test
    void twoMembersShareThePartitionsAndHandThemBack() throws Exception {
        String topic = "shared";
        int parts = 4;
        Clients.createTopic(admin, topic, parts, (short) 1, Map.of());
        produce(topic, parts, 0, 50);
        try (KafkaConsumer<String, String> a = Clients.consumer(broker.bootstrap(), "g-two", GROUP);
                KafkaConsumer<String, String> b = Clients.consumer(broker.bootstrap(), "g-two", GROUP)) {
            a.subscribe(List.of(topic));
            pollUntil(a, 200);
            a.commitSync();
            assertEquals(parts, a.assignment().size());

            // b joins: a gives up half at its next poll; both poll (one thread each is not needed)
            b.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> stray = new ArrayList<>();
            Kiq.waitFor("the partitions split between two members", WAIT, () -> {
                a.poll(Duration.ofMillis(50)).forEach(stray::add);
                b.poll(Duration.ofMillis(50)).forEach(stray::add);
                Set<TopicPartition> sa = a.assignment();
                Set<TopicPartition> sb = b.assignment();
                Set<TopicPartition> union = new HashSet<>(sa);
                union.addAll(sb);
                return !sa.isEmpty() && !sb.isEmpty() && union.size() == parts && sa.size() + sb.size() == parts;
            });
            assertEquals(List.of(), stray, "nothing read again: b starts at a's commits");

            produce(topic, parts, 50, 25);
            Map<String, Set<TopicPartition>> owner = Map.of("a", a.assignment(), "b", b.assignment());
            Set<String> values = new HashSet<>();
            AtomicInteger count = new AtomicInteger();
            Kiq.waitFor("the new records read by their partitions' owners", WAIT, () -> {
                for (var e : Map.of("a", a, "b", b).entrySet()) {
                    for (ConsumerRecord<String, String> r : e.getValue().poll(Duration.ofMillis(50))) {
                        assertTrue(owner.get(e.getKey()).contains(new TopicPartition(r.topic(), r.partition())),
                                e.getKey() + " read " + r.partition() + " it does not own");
                        values.add(r.value());
                        count.incrementAndGet();
                    }
                }
                return count.get() >= parts * 25;
            });
            assertEquals(parts * 25, count.get());
            assertEquals(parts * 25, values.size(), "no record read twice");
            a.commitSync();
            b.commitSync();

            b.close(); // LeaveGroup: a takes everything back at once
            Kiq.waitFor("a owns every partition again", WAIT, () -> {
                a.poll(Duration.ofMillis(50)).forEach(r -> stray.add(r));
                return a.assignment().size() == parts;
            });
            assertEquals(List.of(), stray);
            Map<TopicPartition, OffsetAndMetadata> committed = a.committed(Set.copyOf(partitions(topic, parts)));
            committed.values().forEach(o -> assertEquals(75, o.offset()));
        }
    }

    @Test
    void asyncCommitsCallBackAndLand() throws Exception {
        String topic = "async";
        Clients.createTopic(admin, topic, 2, (short) 1, Map.of());
        produce(topic, 2, 0, 30);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), "g-async", GROUP)) {
            c.subscribe(List.of(topic));
            pollUntil(c, 60);
            AtomicReference<Map<TopicPartition, OffsetAndMetadata>> done = new AtomicReference<>();
            AtomicReference<Exception> failed = new AtomicReference<>();
            c.commitAsync((offsets, e) -> {
                failed.set(e);
                done.set(offsets);
            });
            // an explicit offset with metadata, committed asynchronously behind the first
            TopicPartition p1 = new TopicPartition(topic, 1);
            AtomicReference<Exception> failed2 = new AtomicReference<>();
            AtomicInteger calls = new AtomicInteger();
            c.commitAsync(Map.of(p1, new OffsetAndMetadata(17, "seventeen")), (o, e) -> {
                failed2.set(e);
                calls.incrementAndGet();
            });
            Kiq.waitFor("both commit callbacks", WAIT, () -> {
                c.poll(Duration.ofMillis(50));
                return done.get() != null && calls.get() == 1;
            });
            assertNull(failed.get());
            assertNull(failed2.get());
            assertEquals(30, done.get().get(new TopicPartition(topic, 0)).offset());
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.copyOf(partitions(topic, 2)));
            OffsetAndMetadata p0 = committed.get(new TopicPartition(topic, 0));
            assertEquals(30, p0.offset());
            assertEquals(Optional.of(0), p0.leaderEpoch(), "the consumed records' leader epoch, committed with them");
            assertEquals(17, committed.get(p1).offset(), "the later commit wins");
            assertEquals("seventeen", committed.get(p1).metadata());
            assertEquals(Optional.empty(), committed.get(p1).leaderEpoch(), "none given");
        }
    }

    @Test
    void seekPositionAndCommittedWithoutSubscribing() throws Exception {
        String topic = "seek";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        produce(topic, 1, 0, 100);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), "g-seek", GROUP)) {
            c.assign(List.of(tp));
            assertNull(c.committed(Set.of(tp)).get(tp), "no commit yet");
            assertEquals(0, c.position(tp), "auto.offset.reset=earliest");
            c.seek(tp, 50);
            assertEquals(50, c.position(tp));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 50);
            assertEquals("0-50", got.get(0).value());
            assertEquals(50, got.get(0).offset());
            assertEquals(100, c.position(tp));

            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp));
            c.seekToEnd(List.of(tp));
            assertEquals(100, c.position(tp));

            // by timestamp: the first record at or after a time
            long ts = c.offsetsForTimes(Map.of(tp, 0L)).get(tp).timestamp();
            assertEquals(0, c.offsetsForTimes(Map.of(tp, ts)).get(tp).offset());
            assertNull(c.offsetsForTimes(Map.of(tp, Long.MAX_VALUE)).get(tp), "no record that late");

            c.seek(tp, new OffsetAndMetadata(42, Optional.empty(), "by hand"));
            assertEquals(42, c.position(tp));
            c.commitSync(Map.of(tp, new OffsetAndMetadata(c.position(tp), "by hand")));
            OffsetAndMetadata committed = c.committed(Set.of(tp)).get(tp);
            assertEquals(42, committed.offset());
            assertEquals("by hand", committed.metadata());
            assertEquals(Map.of(tp, 100L), c.endOffsets(List.of(tp)));
            assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)));
        }
        // a member of the group resumes at the commit
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), "g-seek", GROUP)) {
            c.assign(List.of(tp));
            List<ConsumerRecord<String, String>> got = pollUntil(c, 58);
            assertEquals(42, got.get(0).offset());
        }
    }
}
