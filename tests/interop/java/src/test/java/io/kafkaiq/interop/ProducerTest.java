package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Java producer against one broker: idempotence, every acks, every codec, headers, the size limit. */
class ProducerTest {
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

    /** Sends n keyed records, flushes, and returns what each send was answered (acks=0: no offsets). */
    private static List<RecordMetadata> send(KafkaProducer<String, String> p, String topic, int n, String prefix)
            throws Exception {
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            fs.add(p.send(new ProducerRecord<>(topic, "k" + (i % 17), prefix + i)));
        }
        p.flush();
        List<RecordMetadata> out = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) {
            out.add(f.get());
        }
        return out;
    }

    /** Each value exactly once, and in each partition in the order sent. */
    private static void assertEachOnceInOrder(List<ConsumerRecord<String, String>> got, int n, String prefix) {
        assertEquals(n, got.size(), "records read back");
        Map<Integer, Integer> lastByPartition = new HashMap<>();
        boolean[] seen = new boolean[n];
        for (ConsumerRecord<String, String> r : got) {
            int i = Integer.parseInt(r.value().substring(prefix.length()));
            assertTrue(!seen[i], "value " + r.value() + " read twice");
            seen[i] = true;
            assertEquals("k" + (i % 17), r.key());
            Integer last = lastByPartition.put(r.partition(), i);
            assertTrue(last == null || last < i, "partition " + r.partition() + ": " + i + " after " + last);
        }
    }

    @Test
    void idempotentProducerWritesEachRecordOnceInOrder() throws Exception {
        String topic = "idempotent";
        Clients.createTopic(admin, topic, 3, (short) 1, Map.of());
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "enable.idempotence=true",
                "acks=all", "max.in.flight.requests.per.connection=5", "linger.ms=5", "batch.size=2048")) {
            List<RecordMetadata> md = send(p, topic, 3000, "v");
            Map<Integer, Long> next = new HashMap<>();
            for (RecordMetadata m : md) {
                long want = next.getOrDefault(m.partition(), 0L);
                assertEquals(want, m.offset(), "offsets of partition " + m.partition() + " are dense");
                next.put(m.partition(), want + 1);
            }
        }
        assertEachOnceInOrder(Clients.readAll(broker.bootstrap(), topic, "read_uncommitted", READ), 3000, "v");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "1", "all"})
    void everyAcksSettingDelivers(String acks) throws Exception {
        String topic = "acks-" + acks;
        int n = 1000;
        Clients.createTopic(admin, topic, 3, (short) 1, Map.of());
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "acks=" + acks,
                "enable.idempotence=" + acks.equals("all"), "linger.ms=5")) {
            for (RecordMetadata m : send(p, topic, n, "a")) {
                // acks=0 is never answered, so the producer knows no offset
                assertEquals(acks.equals("0"), m.offset() == -1, "offset " + m.offset() + " at acks=" + acks);
            }
        }
        List<TopicPartition> tps = List.of(0, 1, 2).stream().map(i -> new TopicPartition(topic, i)).toList();
        // acks=0: appended after the flush returned; wait for the log end (bounded)
        Kiq.waitFor("all " + n + " records of acks=" + acks + " appended", Duration.ofSeconds(10), () -> {
            try (var c = Clients.consumer(broker.bootstrap(), null)) {
                return c.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum() == n;
            }
        });
        assertEachOnceInOrder(Clients.readAll(broker.bootstrap(), topic, "read_uncommitted", READ), n, "a");
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void everyCodecRoundTrips(String codec) throws Exception {
        String topic = "codec-" + codec;
        int n = 2000;
        Clients.createTopic(admin, topic, 2, (short) 1, Map.of());
        String prefix = "compressible value, compressible value, compressible value #";
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "compression.type=" + codec,
                "linger.ms=20", "batch.size=65536")) {
            send(p, topic, n, prefix);
        }
        assertEachOnceInOrder(Clients.readAll(broker.bootstrap(), topic, "read_uncommitted", READ), n, prefix);
        // stored as the producer compressed it: the log holds far fewer bytes than the values
        long stored = admin.describeLogDirs(List.of(broker.id)).allDescriptions().get().get(broker.id).values()
                .stream().flatMap(d -> d.replicaInfos().entrySet().stream())
                .filter(e -> e.getKey().topic().equals(topic)).mapToLong(e -> e.getValue().size()).sum();
        long raw = (long) n * prefix.length();
        assertTrue(codec.equals("none") ? stored > raw : stored < raw / 4,
                codec + ": " + stored + " bytes stored for " + raw + " bytes of values");
    }

    @Test
    void headersRoundTripInOrderWithDuplicatesAndNulls() throws Exception {
        String topic = "headers";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        List<Header> headers = List.of(
                new RecordHeader("trace", "abc".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("empty", new byte[0]),
                new RecordHeader("null", null),
                new RecordHeader("trace", new byte[] {0, 1, 2, (byte) 255}),
                new RecordHeader("ünïcode", "ß".getBytes(StandardCharsets.UTF_8)));
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "compression.type=lz4")) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, null, "k", "v" + i, headers)).get();
            }
            p.send(new ProducerRecord<>(topic, "no-headers", "v10")).get();
        }
        List<ConsumerRecord<String, String>> got = Clients.readAll(broker.bootstrap(), topic, "read_uncommitted",
                READ);
        assertEquals(11, got.size());
        for (int i = 0; i < 10; i++) {
            Header[] h = got.get(i).headers().toArray();
            assertEquals(headers.size(), h.length);
            for (int j = 0; j < h.length; j++) {
                assertEquals(headers.get(j).key(), h[j].key());
                assertArrayEquals(headers.get(j).value(), h[j].value(), "header " + j + " of record " + i);
            }
        }
        assertEquals(0, got.get(10).headers().toArray().length);
    }

    /**
     * A batch of exactly the topic's max.message.bytes (log overhead included, as Kafka counts it) is taken and
     * read back whole; one byte more is refused, which the producer reports as RecordTooLargeException.
     */
    @Test
    void recordsUpToMaxMessageBytesAreTakenAndOneByteMoreIsRefused() throws Exception {
        String topic = "large";
        int max = 300_000;
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of("max.message.bytes", String.valueOf(max)));
        // one record, null key, no headers: 61 bytes of batch header and 11 of record framing
        // (three varints of 3 bytes for these lengths, attributes, timestamp and offset deltas, header count)
        int fits = max - 72;
        String big = "x".repeat(fits);
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "max.request.size=1048576",
                "compression.type=none", "retries=0", "enable.idempotence=false")) {
            RecordMetadata m = p.send(new ProducerRecord<>(topic, big)).get();
            assertEquals(0, m.offset());
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> p.send(new ProducerRecord<>(topic, big + "x")).get());
            assertInstanceOf(RecordTooLargeException.class, e.getCause());
            assertEquals(1, p.send(new ProducerRecord<>(topic, "small")).get().offset(),
                    "the refused record took no offset");
        }
        List<ConsumerRecord<String, String>> got = Clients.readAll(broker.bootstrap(), topic, "read_uncommitted",
                READ);
        assertEquals(2, got.size());
        assertEquals(big, got.get(0).value());
        assertEquals("small", got.get(1).value());
    }
}
