package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Start-to-first-ack through this launcher: kafkaiq serve started, its ready file read, and the Java producer's
 * first record to a new (auto-created) topic acknowledged with acks=all; for one broker and three, N runs each,
 * medians printed. Only with -Dkafkaiq.startupRuns=N.
 */
@EnabledIfSystemProperty(named = "kafkaiq.startupRuns", matches = "[1-9][0-9]*")
class StartupTimesTest {
    @Test
    void startToFirstAck() throws Exception {
        int runs = Integer.getInteger("kafkaiq.startupRuns");
        StringBuilder table = new StringBuilder(
                "brokers  ready_ms(median)  first_ack_ms(median)  first_ack_ms(all)\n");
        for (int brokers : new int[] {1, 3}) {
            List<Double> ready = new ArrayList<>();
            List<Double> acked = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                double[] r = once(brokers);
                ready.add(r[0]);
                acked.add(r[1]);
            }
            table.append(String.format("%7d  %16.1f  %20.1f  %s%n", brokers, median(ready), median(acked),
                    acked.stream().map(a -> String.format("%.0f", a)).collect(Collectors.joining(" "))));
        }
        System.out.print(table);
    }

    /** {ready ms, first ack ms}, both from just before the process starts. */
    private static double[] once(int brokers) throws Exception {
        long t0 = System.nanoTime();
        try (KafkaIQCluster kafka = KafkaIQCluster.start(KafkaIQCluster.options().brokers(brokers))) {
            double ready = (System.nanoTime() - t0) / 1e6;
            try (KafkaProducer<String, String> p = Clients.producer(kafka.bootstrapServers(),
                    Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
                long offset = p.send(new ProducerRecord<>("first-" + brokers, "v")).get(30, TimeUnit.SECONDS).offset();
                double ack = (System.nanoTime() - t0) / 1e6;
                assertEquals(0, offset);
                return new double[] {ready, ack};
            }
        }
    }

    private static double median(List<Double> xs) {
        List<Double> s = xs.stream().sorted().toList();
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }
}
