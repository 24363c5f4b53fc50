package io.kafkaiq.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The clients the tests use, configured for a broker on loopback, and reading a topic whole. */
final class Clients {
    private Clients() {
    }

    /** key=value pairs into props. */
    private static Properties with(Properties p, String... kv) {
        for (String s : kv) {
            int eq = s.indexOf('=');
            p.put(s.substring(0, eq), s.substring(eq + 1));
        }
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String... kv) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaProducer<>(with(p, kv));
    }

    /** A classic-protocol consumer (group.protocol=consumer in kv for KIP-848's); group null for none. */
    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String... kv) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(with(p, kv));
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    /** Creates a topic and waits for its leaders (CreateTopics answers once they are known). */
    static void createTopic(Admin admin, String topic, int partitions, short rf, Map<String, String> configs)
            throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, rf).configs(configs))).all().get();
    }

    /**
     * Every record of every partition of topic, from its start up to the end offsets read when called (the last
     * stable offsets under read_committed), partition by partition in offset order.
     */
    static List<ConsumerRecord<String, String>> readAll(String bootstrap, String topic, String isolation,
            Duration timeout) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, null, "isolation.level=" + isolation)) {
            List<TopicPartition> tps = c.partitionsFor(topic, timeout).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).collect(Collectors.toList());
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, timeout);
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(topic + ": not read to " + end + " within " + timeout.toMillis()
                            + " ms (" + out.size() + " records read)");
                }
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            out.sort((a, b) -> a.partition() != b.partition() ? Integer.compare(a.partition(), b.partition())
                    : Long.compare(a.offset(), b.offset()));
            return out;
        }
    }
}
