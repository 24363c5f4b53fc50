package io.kafkaiq.interop;

import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' word count with exactly_once_v2, run by StreamsEosTest as a process of its own so that it can be
 * SIGKILLed: lines from the input topic, each word's running count to the output topic (word -> count), one
 * output record per word read (no cache). Prints {"state": ...} on each state change; SIGTERM closes it.
 *
 * <p>Arguments: bootstrap application.id input output state.dir
 */
public final class WordCountApp {
    private WordCountApp() {
    }

    public static void main(String[] args) throws InterruptedException {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // records go out at once and transactions stay open a while, so a SIGKILL finds output written
        // in an open transaction (StreamsEosTest waits for that before it kills)
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
        p.put(StreamsConfig.producerPrefix("linger.ms"), 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // a restarted instance waits out the killed one's session before its first rebalance completes
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 500);
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 10000);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .mapValues(String::valueOf)
                .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("{\"state\": \"" + now + "\"}");
            System.out.flush();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            // the state close() left, said here too: the listener's own line
            // for it may come after close() returns, and the JVM halts then
            System.out.println("{\"state\": \"" + streams.state() + "\"}");
            System.out.flush();
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
