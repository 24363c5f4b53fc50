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
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.DelegationTokenExpiredException;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
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
 * Delegation tokens (KIP-48) with the Admin client: created for a renewer, described, renewed by the renewer and
 * not by another user, used to produce and consume with SCRAM-SHA-512 tokenauth (the owner's principal), refused
 * to ask for a token itself, expired, and then refused.
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
                "listener.name.sasl_ssl.plain.sasl.jaas.config=" + PLAIN_JAAS + "user_admin=\"admin-secret\" "
                        + "user_bob=\"bob-secret\" user_carol=\"carol-secret\";",
                "delegation.token.secret.key=java-token-secret",
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

    private static Properties plain(String user) {
        return client("PLAIN", PLAIN_JAAS + "username=\"" + user + "\" password=\"" + user + "-secret\";");
    }

    private static Properties byToken(DelegationToken t) {
        return client("SCRAM-SHA-512", SCRAM_JAAS + "username=\"" + t.tokenInfo().tokenId() + "\" password=\""
                + t.hmacAsBase64String() + "\" tokenauth=\"true\";");
    }

    @Test
    void delegationTokens() throws Exception {
        KafkaPrincipal bob = new KafkaPrincipal("User", "bob"), admin = new KafkaPrincipal("User", "admin");
        DelegationToken token;
        try (Admin a = Admin.create(plain("admin"))) {
            token = a.createDelegationToken(new CreateDelegationTokenOptions().renewers(List.of(bob))
                    .maxLifetimeMs(3_600_000)).delegationToken().get();
            TokenInformation info = token.tokenInfo();
            assertEquals(admin, info.owner());
            assertEquals(admin, info.tokenRequester());
            assertEquals(List.of(bob), new ArrayList<>(info.renewers()));
            assertEquals(info.issueTimestamp() + 3_600_000, info.maxTimestamp());
            assertEquals(info.maxTimestamp(), info.expiryTimestamp()); // the 24 h default expiry is capped by it
            assertEquals(64, token.hmac().length);
            List<DelegationToken> described = a.describeDelegationToken(
                    new DescribeDelegationTokenOptions().owners(List.of(admin))).delegationTokens().get();
            assertEquals(List.of(token), described);
            assertEquals(List.of(), a.describeDelegationToken(
                    new DescribeDelegationTokenOptions().owners(List.of(bob))).delegationTokens().get());
        }
        try (Admin b = Admin.create(plain("bob")); Admin c = Admin.create(plain("carol"))) {
            long expiry = b.renewDelegationToken(token.hmac(), new RenewDelegationTokenOptions().renewTimePeriodMs(600_000))
                    .expiryTimestamp().get();
            Assertions.assertTrue(expiry < token.tokenInfo().maxTimestamp() && expiry > token.tokenInfo().issueTimestamp());
            ExecutionException e = assertThrows(ExecutionException.class, () -> c.renewDelegationToken(token.hmac())
                    .expiryTimestamp().get());
            assertInstanceOf(DelegationTokenOwnerMismatchException.class, e.getCause());
        }
        Properties pp = byToken(token);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>("java-token", "t" + i)).get();
        }
        Properties cp = byToken(token);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "java-token");
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of("java-token"));
            long deadline = System.nanoTime() + READ.toNanos();
            while (got.size() < 5 && System.nanoTime() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) got.add(r.value());
        }
        assertEquals(List.of("t0", "t1", "t2", "t3", "t4"), got);
        try (Admin t = Admin.create(byToken(token))) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> t.createDelegationToken().delegationToken().get());
            assertInstanceOf(UnsupportedByAuthenticationException.class, e.getCause());
        }
        try (Admin a = Admin.create(plain("admin"))) {
            // expired now: it cannot be renewed, nor authenticate anyone
            long at = a.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(0))
                    .expiryTimestamp().get();
            Assertions.assertTrue(at <= System.currentTimeMillis());
            while (System.currentTimeMillis() <= at) Thread.onSpinWait(); // past the expiry's millisecond
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> a.renewDelegationToken(token.hmac()).expiryTimestamp().get());
            assertInstanceOf(DelegationTokenExpiredException.class, e.getCause());
        }
        try (Admin t = Admin.create(byToken(token))) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> t.listTopics().names().get());
            assertInstanceOf(SaslAuthenticationException.class, e.getCause());
        }
        try (Admin a = Admin.create(plain("admin"))) {
            // removed at once by a negative period
            a.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1));
            DelegationToken other = a.createDelegationToken().delegationToken().get();
            a.expireDelegationToken(other.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                    .expiryTimestamp().get();
            Assertions.assertFalse(a.describeDelegationToken().delegationTokens().get().contains(other));
        }
    }
}
