package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * KIP-714 with the Java client: a client-metrics resource made, listed and described with the Admin client
 * (IncrementalAlterConfigs, ListConfigResources, DescribeConfigs), and a producer it matches pushing the producer
 * metrics it asks for, every 500 ms, which the broker then shows in /api/clients.
 */
class TelemetryTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final ConfigResource RESOURCE = new ConfigResource(ConfigResource.Type.CLIENT_METRICS,
            "java-producers");

    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
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

    private static String get(String path) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://" + Kiq.HOST + ":" + broker.httpPort + path))
                        .timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return r.body();
    }

    @Test
    void subscribedProducerPushes() throws Exception {
        assumeTrue(broker.httpPort > 0, "a broker this test started (its HTTP listener)");
        admin.incrementalAlterConfigs(Map.of(RESOURCE, List.of(
                new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer."), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("interval.ms", "500"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("match", "client_id=java-tele.*"), AlterConfigOp.OpType.SET))))
                .all().get();
        Collection<ConfigResource> listed = admin.listConfigResources(Set.of(ConfigResource.Type.CLIENT_METRICS),
                new ListConfigResourcesOptions()).all().get();
        assertEquals(List.of(RESOURCE), List.copyOf(listed));
        Config described = admin.describeConfigs(List.of(RESOURCE)).all().get().get(RESOURCE);
        assertEquals("org.apache.kafka.producer.", described.get("metrics").value());
        assertEquals("500", described.get("interval.ms").value());

        try (KafkaProducer<String, String> p = Clients.producer(broker.bootstrap(), "client.id=java-tele-1")) {
            p.send(new ProducerRecord<>("java-tele", "k", "v")).get();
            String clients = Kiq.waitFor("the producer's push in /api/clients", WAIT, () -> {
                String body = get("/api/clients?client_id=java-tele-1");
                return body.contains("org.apache.kafka.producer.") ? body : null;
            });
            assertTrue(!clients.contains("org.apache.kafka.consumer."), clients);
            String metrics = get("/metrics");
            assertTrue(metrics.contains("kafkaiq_client_producer_") && metrics.contains("client_id=\"java-tele-1\""),
                    "kafkaiq_client_producer_* of java-tele-1 in /metrics");
        }
    }
}
