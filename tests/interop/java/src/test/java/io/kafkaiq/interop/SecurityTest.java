package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client over SASL_SSL: a SCRAM-SHA-512 credential set with the Admin client (signed in with PLAIN),
 * then produce and consume as that user; a wrong password is a SaslAuthenticationException with Kafka's
 * message. OAUTHBEARER with Kafka's unsecured login (its own unsigned token for sub alice): produce and consume
 * while the connections re-authenticate (KIP-368, connections.max.reauth.ms of 3 s, counted by the broker).
 * The node is a combined broker and controller; its certificates are made here with openssl.
 */
class SecurityTest {
    private static final Duration READ = Duration.ofSeconds(30);
    private static final String PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required ";
    private static final String SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required ";
    private static final String OAUTH_JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
            + "required unsecuredLoginStringClaim_sub=\"alice\";";
    private static final String REAUTHS = "kafka_server_socket_server_metrics_successful_reauthentication_total";

    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    static Path dir;
    static KiqBroker broker;

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "openssl " + String.join(" ", args) + ": " + out);
    }

    @BeforeAll
    static void start() throws Exception {
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=kiq-java-ca");
        Files.writeString(dir.resolve("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
                "/CN=localhost");
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
                "server.pem", "-days", "2", "-extfile", "san.ext");
        Files.writeString(dir.resolve("store.pem"),
                Files.readString(dir.resolve("server.key")) + Files.readString(dir.resolve("server.pem")));
        List<Integer> ports = Kiq.freePorts(3);
        String host = Kiq.HOST;
        broker = new KiqBroker(dir, 0, ports, "0@" + host + ":" + ports.get(1), List.of(
                "listeners=SASL_SSL://" + host + ":" + ports.get(0) + ",CONTROLLER://" + host + ":" + ports.get(1),
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,OAUTHBEARER", "connections.max.reauth.ms=3000",
                "listener.name.sasl_ssl.plain.sasl.jaas.config=" + PLAIN_JAAS + "user_admin=\"admin-secret\";",
                "ssl.keystore.type=PEM", "ssl.keystore.location=" + dir.resolve("store.pem")));
        broker.start();
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (broker != null) broker.stop();
    }

    private static Properties client(String mechanism, String jaas) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", dir.resolve("ca.pem").toString());
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.jaas.config", jaas);
        return p;
    }

    private static Properties scram(String password) {
        return client("SCRAM-SHA-512", SCRAM_JAAS + "username=\"alice\" password=\"" + password + "\";");
    }

    @Test
    void scramOverSaslSsl() throws Exception {
        try (Admin admin = Admin.create(client("PLAIN", PLAIN_JAAS + "username=\"admin\" password=\"admin-secret\";"))) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("alice",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "alice-secret"))).all().get();
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)),
                    admin.describeUserScramCredentials(List.of("alice")).description("alice").get().credentialInfos());
        }
        Properties pp = scram("alice-secret");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>("java-scram", "k" + i, "v" + i)).get();
        }
        Properties cp = scram("alice-secret");
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "java-scram");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of("java-scram"));
            long deadline = System.nanoTime() + READ.toNanos();
            while (got.size() < 10 && System.nanoTime() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        assertEquals(List.of("v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"), got);

        try (Admin wrong = Admin.create(scram("wrong"))) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> wrong.listTopics().names().get());
            assertInstanceOf(SaslAuthenticationException.class, e.getCause());
            assertEquals("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                    + "SCRAM-SHA-512", e.getCause().getMessage());
        }
    }

    @Test
    void oauthbearerReauthenticating() throws Exception {
        double before = broker.metric(REAUTHS);
        Properties pp = client("OAUTHBEARER", OAUTH_JAAS);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Properties cp = client("OAUTHBEARER", OAUTH_JAAS);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "java-oauth");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> sent = new ArrayList<>(), got = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp);
                KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of("java-oauth"));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            // records go on both ways until the connections have re-authenticated a few times
            while (broker.metric(REAUTHS) < before + 4 && System.nanoTime() < deadline) {
                String v = "v" + sent.size();
                p.send(new ProducerRecord<>("java-oauth", v)).get();
                sent.add(v);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            }
            while (got.size() < sent.size() && System.nanoTime() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        Assertions.assertTrue(broker.metric(REAUTHS) >= before + 4, "re-authentications: " + broker.metric(REAUTHS));
        assertEquals(sent, got);
        assertEquals(0.0, broker.metric("kafka_server_socket_server_metrics_failed_reauthentication_total"));
    }
}
