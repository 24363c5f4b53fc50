package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Java client in the security client matrix (issue 28): it produces and consumes over SASL_SSL with PLAIN,
 * SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (Kafka's unsecured login, with the scope the broker requires),
 * and over mutual TLS (a PEM key store), and is refused a wrong credential: a wrong password with Kafka's
 * message, a token without the scope with insufficient_scope, no client certificate with an
 * SslAuthenticationException. One combined node serves the four mechanisms (alice's SCRAM credentials written
 * with its first metadata); a second node's one client listener is SSL requiring a client certificate.
 */
class SecurityMatrixTest {
    private static final Duration READ = Duration.ofSeconds(30);
    private static final int RECORDS = 10;
    private static final String PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required ";
    private static final String SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required ";
    private static final String OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
            + "required unsecuredLoginStringClaim_sub=\"alice\"";

    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    static Path dir;
    static KiqBroker sasl;
    static KiqBroker mtls;

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "openssl " + String.join(" ", args) + ": " + out);
    }

    private static void certificate(String name, String subject, String... more) throws Exception {
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj",
                subject);
        List<String> args = new ArrayList<>(List.of("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey",
                "ca.key", "-CAcreateserial", "-out", name + ".pem", "-days", "2"));
        args.addAll(List.of(more));
        openssl(args.toArray(String[]::new));
        Files.writeString(dir.resolve(name + "-store.pem"),
                Files.readString(dir.resolve(name + ".key")) + Files.readString(dir.resolve(name + ".pem")));
    }

    @BeforeAll
    static void start() throws Exception {
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=kiq-java-matrix-ca");
        Files.writeString(dir.resolve("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        certificate("server", "/CN=localhost", "-extfile", "san.ext");
        certificate("client", "/C=NL/O=KafkaIQ/OU=test/CN=alice");
        String host = Kiq.HOST, store = "ssl.keystore.location=" + dir.resolve("server-store.pem");
        List<Integer> ports = Kiq.freePorts(3);
        sasl = new KiqBroker(dir.resolve("sasl"), 0, ports, "0@" + host + ":" + ports.get(1), List.of(
                "listeners=SASL_SSL://" + host + ":" + ports.get(0) + ",CONTROLLER://" + host + ":" + ports.get(1),
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                "listener.name.sasl_ssl.plain.sasl.jaas.config=" + PLAIN + "user_alice=\"alice-secret\";",
                "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
                        + "OAuthBearerLoginModule required unsecuredValidatorRequiredScope=\"kafka\";",
                "kafkaiq.add.scram=SCRAM-SHA-256=[name=alice,password=alice-secret];"
                        + "SCRAM-SHA-512=[name=alice,password=alice-secret]",
                "ssl.keystore.type=PEM", store));
        sasl.start();
        List<Integer> more = Kiq.freePorts(3);
        mtls = new KiqBroker(dir.resolve("mtls"), 0, more, null, List.of(
                "listeners=SSL://" + host + ":" + more.get(0), "ssl.keystore.type=PEM", store,
                "ssl.truststore.type=PEM", "ssl.truststore.location=" + dir.resolve("ca.pem"),
                "ssl.client.auth=required"));
        mtls.start();
        // alice's SCRAM credentials are written when the controller is first active
        long deadline = System.nanoTime() + READ.toNanos();
        while (true) {
            try (Admin a = Admin.create(client("SCRAM-SHA-512", false))) {
                a.listTopics().names().get();
                break;
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) throw e;
            }
        }
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (mtls != null) mtls.stop();
        if (sasl != null) sasl.stop();
    }

    /** A client of one cell; wrong: a credential the broker refuses. */
    private static Properties client(String cell, boolean wrong) {
        Properties p = new Properties();
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", dir.resolve("ca.pem").toString());
        p.put(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        if (cell.equals("mTLS")) {
            p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, mtls.bootstrap());
            p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
            if (!wrong) {
                p.put("ssl.keystore.type", "PEM");
                p.put("ssl.keystore.location", dir.resolve("client-store.pem").toString());
            }
            return p;
        }
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, sasl.bootstrap());
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put("sasl.mechanism", cell);
        String password = wrong ? "wrong" : "alice-secret";
        p.put("sasl.jaas.config", switch (cell) {
            case "PLAIN" -> PLAIN + "username=\"alice\" password=\"" + password + "\";";
            case "OAUTHBEARER" -> OAUTH + (wrong ? ";" : " unsecuredLoginListClaim_scope=\",kafka\";");
            default -> SCRAM + "username=\"alice\" password=\"" + password + "\";";
        });
        return p;
    }

    @ParameterizedTest
    @ValueSource(strings = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "mTLS"})
    void produceConsumeAndRefuse(String cell) throws Exception {
        String topic = "java-matrix-" + cell.toLowerCase();
        Properties pp = client(cell, false);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < RECORDS; i++) {
                sent.add(cell + "-" + i);
                p.send(new ProducerRecord<>(topic, sent.get(i))).get();
            }
        }
        Properties cp = client(cell, false);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, topic);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + READ.toNanos();
            while (got.size() < RECORDS && System.nanoTime() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        assertEquals(sent, got);

        try (Admin wrong = Admin.create(client(cell, true))) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> wrong.listTopics().names().get());
            if (cell.equals("mTLS")) {
                assertInstanceOf(SslAuthenticationException.class, e.getCause());
                return;
            }
            assertInstanceOf(SaslAuthenticationException.class, e.getCause());
            String message = e.getCause().getMessage();
            switch (cell) {
                case "PLAIN" -> assertEquals("Authentication failed: Invalid username or password", message);
                case "OAUTHBEARER" -> assertTrue(message.contains("insufficient_scope"), message);
                default -> assertEquals("Authentication failed during authentication due to invalid credentials "
                        + "with SASL mechanism " + cell, message);
            }
        }
    }
}
