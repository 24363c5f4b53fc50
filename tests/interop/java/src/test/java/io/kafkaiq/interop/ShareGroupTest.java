package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Share groups (KIP-932) with the Java KafkaShareConsumer: records shared out among members, each delivered,
 * acquisition locks expiring into redelivery, the delivery limit archiving, reject and release, the state across
 * a restart, the Admin client's offsets, the journey. Each group is set up with the Admin client's group configs:
 * from the log's start, a short lock (3 s), a delivery limit of 3.
 */
class ShareGroupTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int LOCK_MS = 3000;

    @TempDir(cleanup = CleanupMode.ON_SUCCESS) // kept for a look when a test failed
    static Path dir;
    static KiqBroker broker;
    static Admin admin;

    @BeforeAll
    static void start() {
        broker = new KiqBroker(dir, 0, Kiq.freePorts(3), null,
                List.of("group.share.heartbeat.interval.ms=500"));
        broker.start();
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

    /** The test's group configs set with the Admin client, and read back. */
    private static void configure(String group) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        Map<String, String> want = Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms",
                String.valueOf(LOCK_MS), "share.delivery.count.limit", "3");
        List<AlterConfigOp> ops = new ArrayList<>();
        want.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
        Config got = admin.describeConfigs(List.of(res)).all().get().get(res);
        want.forEach((k, v) -> assertEquals(v, got.get(k).value(), k));
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, got.get("share.auto.offset.reset").source());
    }

    private static KafkaShareConsumer<String, String> consumer(String group, boolean explicit) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        return new KafkaShareConsumer<>(p);
    }

    private static void produce(String topic, int partitions, List<String> values) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "linger.ms=5")) {
            int i = 0;
            for (String v : values) {
                p.send(new ProducerRecord<>(topic, i++ % partitions, null, v));
            }
            p.flush();
        }
    }

    private static List<String> values(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + i);
        }
        return out;
    }

    private static short deliveries(ConsumerRecord<String, String> r) {
        return r.deliveryCount().orElseThrow();
    }

    @Test
    void everyRecordDeliveredToTheMembers() throws Exception {
        String topic = "share-all", group = "share-all-g";
        Clients.createTopic(admin, topic, 3, (short) 1, Map.of());
        configure(group);
        List<String> want = values("v", 300);
        produce(topic, 3, want);
        Map<String, Integer> firstDeliveries = new HashMap<>();
        try (KafkaShareConsumer<String, String> a = consumer(group, false);
                KafkaShareConsumer<String, String> b = consumer(group, false)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Kiq.waitFor("every record delivered", WAIT, () -> {
                for (KafkaShareConsumer<String, String> c : List.of(a, b)) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        if (deliveries(r) == 1) {
                            firstDeliveries.merge(r.value(), 1, Integer::sum);
                        }
                    }
                }
                return firstDeliveries.keySet().containsAll(want);
            });
            // the group as the Admin client sees it
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            assertEquals(2, d.members().size());
            Set<Integer> assigned = new HashSet<>();
            d.members().forEach(m -> m.assignment().topicPartitions().forEach(tp -> assigned.add(tp.partition())));
            assertEquals(Set.of(0, 1, 2), assigned);
            boolean listed = false;
            for (GroupListing g : admin.listGroups().all().get()) {
                listed |= g.groupId().equals(group) && g.type().orElse(null) == GroupType.SHARE;
            }
            assertTrue(listed, "ListGroups shows the share group");
        }
        assertEquals(want.size(), firstDeliveries.size());
        firstDeliveries.forEach((v, n) -> assertEquals(1, n, v + " first-delivered " + n + " times"));
    }

    @Test
    void anExpiredLockRedelivers() throws Exception {
        String topic = "share-lock", group = "share-lock-g";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        configure(group);
        produce(topic, 1, values("l", 5));
        try (KafkaShareConsumer<String, String> holder = consumer(group, true)) {
            holder.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = new ArrayList<>();
            Kiq.waitFor("the holder acquires the records", WAIT, () -> {
                holder.poll(Duration.ofMillis(200)).forEach(held::add);
                return held.size() == 5;
            });
            held.forEach(r -> assertEquals(1, deliveries(r)));
            // the holder acknowledges nothing and polls no more: its locks expire, another member gets them
            long acquired = System.nanoTime();
            try (KafkaShareConsumer<String, String> other = consumer(group, false)) {
                other.subscribe(List.of(topic));
                List<ConsumerRecord<String, String>> again = new ArrayList<>();
                Kiq.waitFor("the records redelivered", WAIT, () -> {
                    other.poll(Duration.ofMillis(200)).forEach(again::add);
                    return again.size() >= 5;
                });
                assertTrue(System.nanoTime() - acquired >= (LOCK_MS - 100) * 1_000_000L,
                        "redelivered only after the lock expired");
                for (ConsumerRecord<String, String> r : again) {
                    assertEquals(2, deliveries(r), r.value() + " is a second delivery");
                }
                other.commitSync(); // the implicit acknowledgement of what the last poll returned
            }
        }
        // the batch's journey tells it: acquired, the lock expired, acquired again, accepted
        String journey = Kiq.waitFor("the share stages in the journey", WAIT, () -> {
            String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://" + Kiq.HOST + ":"
                    + broker.httpPort + "/api/journey?topic=" + topic + "&partition=0&offset=0")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            return body.contains("\"stage\":\"share_acknowledged\"") ? body : null;
        });
        for (String text : List.of("acquired offsets 0..4 (delivery 1), locked for " + LOCK_MS + " ms",
                "the lock on offsets 0..4 (delivery 1) expired after " + LOCK_MS
                        + " ms unacknowledged: available to be delivered again",
                "acquired offsets 0..4 (delivery 2)", "accepted offsets 0..4: done")) {
            assertTrue(journey.contains(text), "journey says \"" + text + "\": " + journey);
        }
        assertTrue(journey.indexOf("(delivery 1), locked") < journey.indexOf("expired after")
                && journey.indexOf("expired after") < journey.indexOf("(delivery 2)"), journey);
    }

    /** Releases records every time they come until none come; the delivery counts they came with. */
    @Test
    void theDeliveryLimitArchivesAndRejectAndReleaseWork() throws Exception {
        String topic = "share-ack", group = "share-ack-g";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        configure(group);
        produce(topic, 1, List.of("keep-releasing", "reject-me", "accept-me"));
        List<Short> released = new ArrayList<>();
        Set<String> rejected = new HashSet<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            Kiq.waitFor("the first record delivered three times", WAIT, () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    switch (r.value()) {
                        case "keep-releasing" -> {
                            released.add(deliveries(r));
                            c.acknowledge(r, AcknowledgeType.RELEASE);
                        }
                        case "reject-me" -> {
                            assertTrue(rejected.add(r.value()), "a rejected record came back");
                            c.acknowledge(r, AcknowledgeType.REJECT);
                        }
                        default -> c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                c.commitSync();
                return released.size() >= 3;
            });
            assertEquals(List.of((short) 1, (short) 2, (short) 3), released);
            // archived at the limit: a record produced after it comes, and it does not again
            produce(topic, 1, List.of("marker"));
            Kiq.waitFor("the marker delivered", WAIT, () -> {
                boolean marker = false;
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    assertFalse(r.value().equals("keep-releasing") || r.value().equals("reject-me"),
                            r.value() + " delivered again (delivery " + deliveries(r) + ")");
                    marker |= r.value().equals("marker");
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
                return marker;
            });
        }
    }

    /** A restarted broker carries on from __share_group_state: acknowledged records stay done, counts stay. */
    @Test
    void theStateSurvivesARestart() throws Exception {
        String topic = "share-restart", group = "share-restart-g";
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        configure(group);
        produce(topic, 1, values("r", 10));
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            Set<String> seen = new HashSet<>();
            Kiq.waitFor("ten records delivered", WAIT, () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    seen.add(r.value());
                    c.acknowledge(r, Integer.parseInt(r.value().substring(1)) < 5 ? AcknowledgeType.ACCEPT
                            : AcknowledgeType.RELEASE);
                }
                c.commitSync();
                return seen.size() == 10;
            });
        }
        broker.stop();
        broker.start();
        admin.close(Duration.ofSeconds(5));
        admin = Clients.admin(broker.bootstrap());
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            Map<String, Short> again = new HashMap<>();
            Kiq.waitFor("the released records again", WAIT, () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    again.put(r.value(), deliveries(r));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
                return again.size() >= 5;
            });
            assertEquals(Map.of("r5", (short) 2, "r6", (short) 2, "r7", (short) 2, "r8", (short) 2, "r9", (short) 2),
                    again);
        }
    }

    /** Consumes every record of the topic with a new member of group; their values. */
    private static List<String> consumeAll(String topic, String group, int want) {
        List<String> got = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, false)) {
            c.subscribe(List.of(topic));
            Kiq.waitFor(want + " records", WAIT, () -> {
                c.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
                return got.size() >= want;
            });
            c.commitSync();
        }
        return got;
    }

    private static Map<TopicPartition, SharePartitionOffsetInfo> offsets(String group, TopicPartition tp)
            throws Exception {
        return admin.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp))))
                .partitionsToOffsetInfo(group).get();
    }

    /** The Admin client's share group offsets: listed with the lag, reset, deleted. */
    @Test
    void offsetsListedAlteredAndDeleted() throws Exception {
        String topic = "share-admin", group = "share-admin-g";
        TopicPartition tp = new TopicPartition(topic, 0);
        Clients.createTopic(admin, topic, 1, (short) 1, Map.of());
        configure(group);
        produce(topic, 1, values("a", 10));
        assertEquals(values("a", 10), consumeAll(topic, group, 10));
        produce(topic, 1, values("b", 5));
        SharePartitionOffsetInfo info = Kiq.waitFor("the start offset past the accepted records", WAIT, () -> {
            SharePartitionOffsetInfo i = offsets(group, tp).get(tp);
            return i != null && i.startOffset() == 10 ? i : null;
        });
        assertEquals(5L, info.lag().orElseThrow());
        // the group is empty once its member left: the start goes back to offset 3
        Kiq.waitFor("the reset taken", WAIT, () -> {
            admin.alterShareGroupOffsets(group, Map.of(tp, 3L)).all().get();
            return true;
        });
        assertEquals(3L, offsets(group, tp).get(tp).startOffset());
        List<String> again = consumeAll(topic, group, 12);
        assertEquals(values("a", 10).subList(3, 10), again.subList(0, 7));
        // deleted: the group starts from the log's start again (share.auto.offset.reset here)
        admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
        SharePartitionOffsetInfo gone = offsets(group, tp).get(tp);
        assertTrue(gone == null || gone.startOffset() < 0, "no start offset after the delete: " + gone);
        assertEquals(15, consumeAll(topic, group, 15).size());
    }
}
