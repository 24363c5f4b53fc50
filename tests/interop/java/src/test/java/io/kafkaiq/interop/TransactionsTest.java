package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/** Transactions with the Java producer, read by read_committed consumers: committed visible, aborted never. */
class TransactionsTest {
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

    private static KafkaProducer<String, String> transactional(String id) {
        KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "transactional.id=" + id,
                "linger.ms=5");
        p.initTransactions();
        return p;
    }

    private static List<String> values(List<ConsumerRecord<String, String>> rs) {
        return rs.stream().map(ConsumerRecord::value).sorted().collect(Collectors.toList());
    }

    /** The values "tag-0" .. "tag-(n-1)", sorted as values() sorts. */
    private static List<String> named(String tag, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(tag + "-" + i);
        }
        out.sort(null);
        return out;
    }

    private static void sendAll(KafkaProducer<String, String> p, String topic, String tag, int n) {
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(topic, i % 2, null, tag + "-" + i));
        }
    }

    @Test
    void readCommittedSeesCommittedTransactionsAndNeverAbortedOnes() throws Exception {
        String topic = "txn";
        Clients.createTopic(admin, topic, 2, (short) 1, Map.of());
        try (KafkaProducer<String, String> p = transactional("committer");
                KafkaProducer<String, String> plain = Clients.producer(broker.bootstrap())) {
            p.beginTransaction();
            sendAll(p, topic, "c1", 100);
            p.commitTransaction();
            p.beginTransaction();
            sendAll(p, topic, "a1", 100);
            p.flush(); // written to the log, then aborted
            p.abortTransaction();
            plain.send(new ProducerRecord<>(topic, 0, null, "plain-0")).get();
            p.beginTransaction();
            sendAll(p, topic, "c2", 50);
            p.commitTransaction();
            p.beginTransaction();
            sendAll(p, topic, "a2", 10);
            p.abortTransaction();
        }
        List<String> want = new ArrayList<>(named("c1", 100));
        want.addAll(named("c2", 50));
        want.add("plain-0");
        want.sort(null);
        assertEquals(want, values(Clients.readAll(broker.bootstrap(), topic, "read_committed", READ)));
        List<String> all = values(Clients.readAll(broker.bootstrap(), topic, "read_uncommitted", READ));
        assertEquals(100 + 100 + 1 + 50, all.stream().filter(v -> !v.startsWith("a2")).count(),
                "read_uncommitted sees the aborted records too");
    }

    @Test
    void anOpenTransactionHoldsReadCommittedBackUntilItCommits() throws Exception {
        String topic = "open-txn";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> p = transactional("holder");
                KafkaProducer<String, String> plain = Clients.producer(broker.bootstrap());
                KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), null,
                        "isolation.level=read_committed")) {
            plain.send(new ProducerRecord<>(topic, 0, null, "before")).get();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "inside")).get();
            plain.send(new ProducerRecord<>(topic, 0, null, "after")).get(); // behind the open transaction

            c.assign(List.of(tp));
            assertEquals(1, c.endOffsets(List.of(tp)).get(tp), "the last stable offset: the open transaction's start");
            List<String> got = new ArrayList<>();
            Kiq.waitFor("the record before the transaction", READ, () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> got.add(r.value()));
                return !got.isEmpty();
            });
            assertEquals(1, c.position(tp), "stopped at the last stable offset");
            assertEquals(List.of("before"), got);

            p.commitTransaction();
            Kiq.waitFor("the rest once committed", READ, () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> got.add(r.value()));
                return got.size() >= 3;
            });
            assertEquals(List.of("before", "inside", "after"), got);
            assertEquals(4, c.position(tp), "past the commit marker");
        }
    }

    @Test
    void consumeTransformProduceCommitsOffsetsOnlyWithTheTransaction() throws Exception {
        String in = "ctp-in";
        String out = "ctp-out";
        String group = "ctp";
        Clients.createTopic(admin, in, 2, (short) 1, Map.of());
        Clients.createTopic(admin, out, 2, (short) 1, Map.of());
        try (KafkaProducer<String, String> plain = Clients.producer(broker.bootstrap())) {
            sendAll(plain, in, "in", 200);
        }
        try (KafkaProducer<String, String> p = transactional("copier");
                KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), group,
                        "isolation.level=read_committed", "max.poll.records=40")) {
            c.subscribe(List.of(in));
            int copied = 0;
            int round = 0;
            long deadline = System.nanoTime() + READ.toNanos();
            while (copied < 200) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("copied " + copied + " of 200 within " + READ.toMillis() + " ms");
                }
                var records = c.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                p.beginTransaction();
                for (ConsumerRecord<String, String> r : records) {
                    p.send(new ProducerRecord<>(out, r.partition(), null, r.value().replace("in", "out")));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(next, c.groupMetadata());
                if (round++ % 3 == 1) { // every third batch aborted, and read again from the last commit
                    p.abortTransaction();
                    Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
                    for (TopicPartition tp : c.assignment()) {
                        OffsetAndMetadata o = committed.get(tp);
                        c.seek(tp, o == null ? 0 : o.offset());
                    }
                } else {
                    p.commitTransaction();
                    copied += records.count();
                }
            }
        }
        assertEquals(named("out", 200), values(Clients.readAll(broker.bootstrap(), out, "read_committed", READ)));
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get();
        assertEquals(100, committed.get(new TopicPartition(in, 0)).offset());
        assertEquals(100, committed.get(new TopicPartition(in, 1)).offset());
    }

    /** Requests of api served so far at each version 0..max, as the broker counts them. */
    private static long[] served(String api, int max) throws Exception {
        long[] n = broker.requestsServed(api, max);
        assumeTrue(n != null, "request counts only from a KafkaIQ broker this test started");
        return n;
    }

    /**
     * With transaction.version 2 finalized the Java producer speaks transactions v2 (KIP-890 part 2): its produce
     * (v12) and its offsets commit (TxnOffsetCommit v5) add their partitions, EndTxn is v5, and it never sends
     * AddPartitionsToTxn or AddOffsetsToTxn.
     */
    @Test
    void theProducerSpeaksTransactionsV2() throws Exception {
        String topic = "txn-v2";
        Clients.createTopic(admin, topic, 2, (short) 1, Map.of());
        long[] produce = served("Produce", 12);
        long[] endTxn = served("EndTxn", 5);
        long[] offsets = served("TxnOffsetCommit", 5);
        long[] addPartitions = served("AddPartitionsToTxn", 5);
        long[] addOffsets = served("AddOffsetsToTxn", 4);
        try (KafkaProducer<String, String> p = transactional("speaks-v2")) {
            p.beginTransaction();
            sendAll(p, topic, "v2", 10);
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(7)),
                    new ConsumerGroupMetadata("txn-v2-group"));
            p.commitTransaction();
            p.beginTransaction(); // at the epoch EndTxn v5 answered
            sendAll(p, topic, "v2b", 4);
            p.commitTransaction();
        }
        long[] produce2 = served("Produce", 12);
        long[] endTxn2 = served("EndTxn", 5);
        long[] offsets2 = served("TxnOffsetCommit", 5);
        long[] addPartitions2 = served("AddPartitionsToTxn", 5);
        long[] addOffsets2 = served("AddOffsetsToTxn", 4);
        // a retried request (the coordinator still busy) counts again: how many is not fixed, which versions are
        List<Long> produced = delta(produce, produce2);
        List<Long> committed = delta(offsets, offsets2);
        String seen = String.format("EndTxn v0-5 %s, TxnOffsetCommit v0-4 %s, AddPartitionsToTxn v0-5 %s, "
                + "AddOffsetsToTxn v0-4 %s, Produce v0-11 %s", delta(endTxn, endTxn2), committed.subList(0, 5),
                delta(addPartitions, addPartitions2), delta(addOffsets, addOffsets2), produced.subList(0, 12));
        assertEquals("EndTxn v0-5 [0, 0, 0, 0, 0, 2], TxnOffsetCommit v0-4 [0, 0, 0, 0, 0], "
                + "AddPartitionsToTxn v0-5 [0, 0, 0, 0, 0, 0], AddOffsetsToTxn v0-4 [0, 0, 0, 0, 0], "
                + "Produce v0-11 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]", seen);
        assertTrue(produced.get(12) >= 2 && committed.get(5) >= 1, "Produce v12 " + produced.get(12)
                + ", TxnOffsetCommit v5 " + committed.get(5));
        List<String> want = new ArrayList<>(named("v2", 10));
        want.addAll(named("v2b", 4));
        want.sort(null);
        assertEquals(want, values(Clients.readAll(broker.bootstrap(), topic, "read_committed", READ)));
        assertEquals(7, admin.listConsumerGroupOffsets("txn-v2-group").partitionsToOffsetAndMetadata().get()
                .get(new TopicPartition(topic, 0)).offset());
    }

    private static List<Long> delta(long[] before, long[] after) {
        List<Long> d = new ArrayList<>();
        for (int i = 0; i < before.length; i++) {
            d.add(after[i] - before[i]);
        }
        return d;
    }

    @Test
    void aNewProducerWithTheSameIdFencesTheOldAndAbortsItsTransaction() throws Exception {
        String topic = "zombie";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        KafkaProducer<String, String> old = transactional("zombie");
        try {
            old.beginTransaction();
            old.send(new ProducerRecord<>(topic, 0, null, "from the zombie")).get();
            try (KafkaProducer<String, String> fresh = transactional("zombie")) {
                assertThrows(ProducerFencedException.class, old::commitTransaction);
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, 0, null, "from the new one"));
                fresh.commitTransaction();
            }
        } finally {
            old.close(Duration.ZERO);
        }
        assertEquals(List.of("from the new one"),
                values(Clients.readAll(broker.bootstrap(), topic, "read_committed", READ)));
        assertEquals(Set.of(), Set.copyOf(admin.describeProducers(List.of(new TopicPartition(topic, 0)))
                .partitionResult(new TopicPartition(topic, 0)).get().activeProducers().stream()
                .filter(s -> s.currentTransactionStartOffset().isPresent()).collect(Collectors.toList())),
                "no transaction left open");
    }
}
