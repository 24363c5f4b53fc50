package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java consumer with group.protocol=consumer (KIP-848): the broker assigns, members come and go (closed, or
 * SIGKILLed VerifiableConsumer processes), commits carry the member epoch; and the online upgrade of a classic group to a consumer group and back (Kafka's
 * group.consumer.migration.policy=bidirectional), for an empty group and for one with classic members that stay
 * (a mixed group).
 */
class ConsumerProtocolTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String[] CONSUMER = {"group.protocol=consumer", "max.poll.records=100"};

    @TempDir(cleanup = CleanupMode.ON_SUCCESS) // kept for a look when a test failed
    static Path dir;
    static KiqBroker broker;
    static Admin admin;

    @BeforeAll
    static void start() {
        String external = System.getenv("KIQ_BOOTSTRAP");
        if (external != null && !external.isEmpty()) {
            broker = KiqBroker.standalone(dir);
        } else {
            // members learn of a new assignment at their next heartbeat: quick ones keep the test short
            broker = new KiqBroker(dir, 0, Kiq.freePorts(3), null,
                    List.of("group.consumer.heartbeat.interval.ms=300", "group.consumer.session.timeout.ms=10000"));
            broker.start();
        }
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

    /** Writes `per` records to each partition, values "p-i" for i from `from` on. */
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

    private static Set<TopicPartition> partitions(String topic, int n) {
        return IntStream.range(0, n).mapToObj(i -> new TopicPartition(topic, i)).collect(Collectors.toSet());
    }

    /**
     * One member polling in a thread of its own; each batch is committed before the next poll, and what it
     * gives up in a rebalance is committed first, so a partition moves on at exactly the next record.
     */
    private static final class Member implements AutoCloseable {
        final String name;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final Thread thread;
        volatile Throwable failed;
        volatile Set<TopicPartition> owned = Set.of();

        Member(String name, String group, String topic, Map<String, List<String>> readBy) {
            this(name, group, topic, readBy, CONSUMER);
        }

        /** The same with the consumer's own settings (group.protocol=classic: a classic member). */
        Member(String name, String group, String topic, Map<String, List<String>> readBy, String... config) {
            this.name = name;
            thread = new Thread(() -> {
                try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), group, config)) {
                    c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                            c.commitSync(); // the consumed positions of what it gives up
                        }

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        }
                    });
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                            readBy.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(name);
                        }
                        c.commitSync(); // with the member's epoch, which the broker checks
                        owned = Set.copyOf(c.assignment());
                    }
                } catch (Throwable e) {
                    failed = e;
                }
            }, "member-" + name);
            thread.start();
        }

        /** Leaves the group (close: its partitions revoked, committed, then a leave heartbeat). */
        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            thread.join(WAIT.toMillis());
            assertTrue(!thread.isAlive(), name + " closed");
            assertNull(failed, name + " failed");
        }
    }

    private static void waitRead(Map<String, List<String>> readBy, int want, List<Member> members) {
        Kiq.waitFor(want + " records read", WAIT, () -> {
            for (Member m : members) {
                assertNull(m.failed, m.name + " failed");
            }
            return readBy.size() >= want;
        });
    }

    /** Every member of the group with the partitions it owns, as ConsumerGroupDescribe tells them. */
    private static Map<String, Set<TopicPartition>> described(String group) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        assertEquals(GroupType.CONSUMER, d.type());
        Map<String, Set<TopicPartition>> out = new HashMap<>();
        for (MemberDescription m : d.members()) {
            out.put(m.consumerId(), m.assignment().topicPartitions());
        }
        return out;
    }

    /** The partitions spread two each over three members, disjoint and all of them. */
    private static boolean balanced(Map<String, Set<TopicPartition>> owned, Set<TopicPartition> all) {
        Set<TopicPartition> union = new HashSet<>();
        owned.values().forEach(union::addAll);
        return owned.size() == 3 && owned.values().stream().allMatch(s -> s.size() == 2) && union.equals(all);
    }

    @Test
    void threeMembersThroughALeaveAndAJoin() throws Exception {
        String topic = "kip848-members";
        String group = "g-kip848";
        int parts = 6;
        int per = 300;
        Clients.createTopic(admin, topic, parts, (short) 1, Map.of());
        Set<TopicPartition> all = partitions(topic, parts);
        Map<String, List<String>> readBy = new ConcurrentHashMap<>();
        List<Member> members = new ArrayList<>();
        try {
            for (String n : List.of("a", "b", "c")) {
                members.add(new Member(n, group, topic, readBy));
            }
            Kiq.waitFor("two partitions for each of three members", WAIT, () -> balanced(described(group), all));
            produce(topic, parts, 0, per);
            waitRead(readBy, parts * per, members);

            // a leaves while records flow: b and c take its partitions at its last commit
            produce(topic, parts, per, per);
            Member a = members.remove(0);
            a.close();
            Kiq.waitFor("a gone, its partitions with b and c", WAIT, () -> {
                Map<String, Set<TopicPartition>> owned = described(group);
                Set<TopicPartition> union = new HashSet<>();
                owned.values().forEach(union::addAll);
                return owned.size() == 2 && union.equals(all);
            });
            waitRead(readBy, 2 * parts * per, members);

            // d joins while records flow: it takes a share from b and c, and reads what comes after
            members.add(new Member("d", group, topic, readBy));
            produce(topic, parts, 2 * per, per / 2);
            Kiq.waitFor("two partitions each for b, c and d", WAIT, () -> balanced(described(group), all));
            produce(topic, parts, 2 * per + per / 2, per - per / 2);
            waitRead(readBy, 3 * parts * per, members);
            Kiq.waitFor("each member's view of its partitions as the broker has it", WAIT, () -> {
                Set<TopicPartition> union = new HashSet<>();
                members.forEach(m -> union.addAll(m.owned));
                return members.stream().allMatch(m -> m.owned.size() == 2) && union.equals(all);
            });
            assertTrue(readBy.values().stream().anyMatch(by -> by.contains("d")), "d read records");
        } finally {
            for (Member m : members) {
                m.close();
            }
        }
        assertEquals(3 * parts * per, readBy.size(), "every record read");
        // each handoff committed the given-up partitions first: nothing read twice
        Map<String, List<String>> twice = readBy.entrySet().stream().filter(e -> e.getValue().size() > 1)
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        assertEquals(Map.of(), twice, "records read more than once");
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get();
        assertEquals(all, committed.keySet());
        committed.values().forEach(o -> assertEquals(3L * per, o.offset()));
    }

    /** Kafka's VerifiableConsumer with group.protocol=consumer, printing each record (--verbose). */
    private static JvmProcess verifiable(String name, String group, String topic) throws Exception {
        return new JvmProcess(name, dir, "org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server",
                broker.bootstrap(), "--topic", topic, "--group-id", group, "--group-protocol", "consumer",
                "--reset-policy", "earliest", "--verbose");
    }

    /** value -> "partition@offset" for each time one of the consumers read it. */
    private static Map<String, List<String>> readBy(List<JvmProcess> consumers) {
        Map<String, List<String>> out = new HashMap<>();
        for (JvmProcess c : consumers) {
            for (JsonNode e : c.events()) {
                if ("record_data".equals(e.path("name").asText())) {
                    out.computeIfAbsent(e.path("value").asText(), k -> new ArrayList<>())
                            .add(e.path("partition").asInt() + "@" + e.path("offset").asLong());
                }
            }
        }
        return out;
    }

    /**
     * Three VerifiableConsumer processes (the tool Kafka's own system tests use) in a consumer protocol group; one
     * is SIGKILLed mid-stream and a fourth joins. Every record is read, and a record is read twice only where
     * at-least-once allows it: the killed member read it past its last successful commit of that partition.
     */
    @Test
    void membersKilledEveryRecordRead() throws Exception {
        String topic = "kip848-kill";
        String group = "g-kip848-kill";
        int parts = 6;
        int per = 200;
        Clients.createTopic(admin, topic, parts, (short) 1, Map.of());
        Set<TopicPartition> all = partitions(topic, parts);
        List<JvmProcess> consumers = new ArrayList<>();
        try {
            for (String n : List.of("a", "b", "c")) {
                consumers.add(verifiable("kill-" + n, group, topic));
            }
            Kiq.waitFor("two partitions for each of three members", WAIT, () -> balanced(described(group), all));
            produce(topic, parts, 0, per);
            Kiq.waitFor("the first round read", WAIT, () -> readBy(consumers).size() >= parts * per);

            // a dies while the second round flows; once its session ends b and c go on from its commits
            JvmProcess a = consumers.get(0);
            produce(topic, parts, per, per);
            a.kill();
            Kiq.waitFor("a's session over, its partitions with b and c", WAIT, () -> {
                Map<String, Set<TopicPartition>> owned = described(group);
                Set<TopicPartition> union = new HashSet<>();
                owned.values().forEach(union::addAll);
                return owned.size() == 2 && union.equals(all);
            });
            consumers.add(verifiable("kill-d", group, topic));
            Kiq.waitFor("two partitions each for b, c and d", WAIT, () -> balanced(described(group), all));
            produce(topic, parts, 2 * per, per);
            Kiq.waitFor("every record read", WAIT, () -> readBy(consumers).size() >= 3 * parts * per);

            Map<String, List<String>> got = readBy(consumers);
            assertEquals(3 * parts * per, got.size(), "every record read");
            // a's last successful commit of each partition: what it read from there on may be read again
            Map<Integer, Long> aCommitted = new HashMap<>();
            for (JsonNode e : a.events()) {
                if ("offsets_committed".equals(e.path("name").asText()) && e.path("success").asBoolean()) {
                    for (JsonNode o : e.path("offsets")) {
                        aCommitted.merge(o.path("partition").asInt(), o.path("offset").asLong(), Math::max);
                    }
                }
            }
            List<String> beyond = new ArrayList<>();
            got.forEach((v, at) -> {
                if (at.size() > 1) {
                    String[] po = at.get(0).split("@");
                    long from = aCommitted.getOrDefault(Integer.parseInt(po[0]), 0L);
                    if (Long.parseLong(po[1]) < from || at.stream().distinct().count() > 1) {
                        beyond.add(v + " " + at);
                    }
                }
            });
            System.out.printf("kip848 kill: %d records, %d read again after a's kill, a's commits %s%n", got.size(),
                    got.values().stream().filter(at -> at.size() > 1).count(), aCommitted);
            assertEquals(List.of(), beyond, "read twice, though committed before the kill");
            Kiq.waitFor("the group's commits at the end of every partition", WAIT, () -> {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get();
                return committed.keySet().equals(all)
                        && committed.values().stream().allMatch(o -> o.offset() == 3L * per);
            });
        } finally {
            for (JvmProcess c : consumers) {
                c.close();
            }
        }
    }

    /** Polls c until `want` records came, committing them; their values. */
    private static List<String> readCommitted(KafkaConsumer<String, String> c, int want) {
        List<String> got = new ArrayList<>();
        Kiq.waitFor(want + " records polled", WAIT, () -> {
            c.poll(Duration.ofMillis(100)).forEach(r -> got.add(r.value()));
            return got.size() >= want;
        });
        c.commitSync();
        return got;
    }

    private static GroupType typeOf(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get().get(group).type();
    }

    @Test
    void emptyGroupsUpgradeToTheConsumerProtocolAndBack() throws Exception {
        String topic = "kip848-upgrade";
        String group = "g-upgrade";
        Clients.createTopic(admin, topic, 3, (short) 1, Map.of());
        produce(topic, 3, 0, 10);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), group, "group.protocol=classic",
                "heartbeat.interval.ms=200")) {
            c.subscribe(List.of(topic));
            assertEquals(30, readCommitted(c, 30).size());
            assertEquals(GroupType.CLASSIC, typeOf(group));
        }

        // upgrade: the empty classic group becomes a consumer group, its offsets kept
        produce(topic, 3, 10, 5);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), group, CONSUMER)) {
            c.subscribe(List.of(topic));
            List<String> got = readCommitted(c, 15);
            assertEquals(15, got.size());
            assertTrue(got.stream().allMatch(v -> Integer.parseInt(v.split("-")[1]) >= 10),
                    "from the classic group's commits on: " + got);
            assertEquals(GroupType.CONSUMER, typeOf(group));
            assertEquals(Set.of(partitions(topic, 3)), Set.copyOf(described(group).values()));
        }

        // downgrade: the last member left, a classic member takes the group over at its commits
        produce(topic, 3, 15, 5);
        try (KafkaConsumer<String, String> c = Clients.consumer(broker.bootstrap(), group, "group.protocol=classic",
                "heartbeat.interval.ms=200")) {
            c.subscribe(List.of(topic));
            List<String> got = readCommitted(c, 15);
            assertTrue(got.stream().allMatch(v -> Integer.parseInt(v.split("-")[1]) >= 15),
                    "from the consumer group's commits on: " + got);
            assertEquals(GroupType.CLASSIC, typeOf(group));
        }
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get();
        committed.values().forEach(o -> assertEquals(20L, o.offset()));
        assertEquals(3, committed.size());
    }
    private static final String[] CLASSIC = {"group.protocol=classic", "heartbeat.interval.ms=200",
        "max.poll.records=100"};

    /** Each member's own view: `each` partitions apiece, disjoint, all of them. */
    private static boolean owns(List<Member> members, Set<TopicPartition> all, int each) {
        Set<TopicPartition> union = new HashSet<>();
        members.forEach(m -> union.addAll(m.owned));
        return members.stream().allMatch(m -> m.owned.size() == each) && union.equals(all);
    }

    /**
     * A mixed group: two classic members share six partitions; a member of the consumer protocol joins and the
     * group becomes a consumer group whose assignor serves the classic members too (two partitions each, the classic
     * ones learning theirs through JoinGroup/SyncGroup); it leaves and the group is classic again, the two classic
     * members balanced by their own assignor. Records flow throughout; each is read once (every handoff commits
     * first).
     */
    @Test
    void classicMembersStayThroughAConsumerMembersJoinAndLeave() throws Exception {
        String topic = "kip848-mixed";
        String group = "g-mixed";
        int parts = 6;
        int per = 100;
        Clients.createTopic(admin, topic, parts, (short) 1, Map.of());
        Set<TopicPartition> all = partitions(topic, parts);
        Map<String, List<String>> readBy = new ConcurrentHashMap<>();
        List<Member> classic = new ArrayList<>();
        List<Member> members = new ArrayList<>();
        try {
            for (String n : List.of("a", "b")) {
                classic.add(new Member(n, group, topic, readBy, CLASSIC));
            }
            members.addAll(classic);
            Kiq.waitFor("three partitions for each classic member", WAIT, () -> owns(classic, all, 3));
            assertEquals(GroupType.CLASSIC, typeOf(group));
            produce(topic, parts, 0, per);
            waitRead(readBy, parts * per, members);

            // c joins with the consumer protocol while records flow: the group is upgraded, a and b stay
            Member c = new Member("c", group, topic, readBy, CONSUMER);
            members.add(c);
            produce(topic, parts, per, per);
            Kiq.waitFor("a consumer group of three, two partitions each", WAIT,
                    () -> typeOf(group) == GroupType.CONSUMER && balanced(described(group), all)
                            && owns(members, all, 2));
            produce(topic, parts, 2 * per, per);
            waitRead(readBy, 3 * parts * per, members);
            assertTrue(readBy.values().stream().anyMatch(by -> by.contains("c")), "c read records");

            // c leaves: only classic members stay, the group is classic again and rebalances
            members.remove(c);
            c.close();
            produce(topic, parts, 3 * per, per);
            Kiq.waitFor("a classic group again, three partitions each for a and b", WAIT,
                    () -> typeOf(group) == GroupType.CLASSIC && owns(classic, all, 3));
            waitRead(readBy, 4 * parts * per, members);
        } finally {
            for (Member m : members) {
                m.close();
            }
        }
        assertEquals(4 * parts * per, readBy.size(), "every record read");
        Map<String, List<String>> twice = readBy.entrySet().stream().filter(e -> e.getValue().size() > 1)
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        assertEquals(Map.of(), twice, "records read more than once");
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get();
        assertEquals(all, committed.keySet());
        committed.values().forEach(o -> assertEquals(4L * per, o.offset()));
    }
}
