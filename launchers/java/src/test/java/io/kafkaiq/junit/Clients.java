package io.kafkaiq.junit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The Java client as an application uses it: Admin, KafkaProducer, KafkaConsumer (strings). */
final class Clients {
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private Clients() {
    }

    static String topic(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static void create(String bootstrap, NewTopic topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(topic)).all().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    static void create(String bootstrap, String topic, int partitions, int replicationFactor) throws Exception {
        create(bootstrap, new NewTopic(topic, partitions, (short) replicationFactor));
    }

    static KafkaProducer<String, String> producer(String bootstrap, Map<String, Object> settings) {
        Map<String, Object> config = new HashMap<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.LINGER_MS_CONFIG, 0,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class));
        config.putAll(settings);
        return new KafkaProducer<>(config);
    }

    /** Sends every value, then waits for each acknowledgement; throws the first failure. */
    static List<RecordMetadata> produce(String bootstrap, String topic, List<String> values,
            Map<String, Object> settings) throws Exception {
        try (KafkaProducer<String, String> p = producer(bootstrap, settings)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (String v : values) {
                sent.add(p.send(new ProducerRecord<>(topic, v)));
            }
            List<RecordMetadata> acked = new ArrayList<>();
            for (Future<RecordMetadata> f : sent) {
                acked.add(f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS));
            }
            return acked;
        }
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
        Map<String, Object> config = new HashMap<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class));
        if (group != null) {
            config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(config);
    }

    /** The first n values of every partition of topic, read without a group; fewer if 30 s pass first. */
    static List<String> consume(String bootstrap, String topic, int n) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, null)) {
            List<TopicPartition> partitions = c.partitionsFor(topic, TIMEOUT).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(partitions);
            c.seekToBeginning(partitions);
            return poll(c, n);
        }
    }

    /** Polls until n values came or 30 s passed. */
    static List<String> poll(KafkaConsumer<String, String> c, int n) {
        List<String> got = new ArrayList<>();
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (got.size() < n && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                got.add(r.value());
            }
        }
        return got;
    }
}
