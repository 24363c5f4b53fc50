package io.kafkaiq.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * One {@code build/kafkaiq serve} process a test started and owns: a standalone broker, or one broker of a
 * {@link KiqCluster}. Its ports and log dir survive restarts; a clean stop (SIGTERM) must exit 0.
 */
final class KiqBroker {
    static final Duration READY = Duration.ofSeconds(10);
    static final Duration STOP = Duration.ofSeconds(15);

    final int id;
    final int port;
    /** Its HTTP listener's port (the state and journeys API); -1 for a server someone else runs. */
    final int httpPort;
    private final String host;
    private final int controlPort;
    private final String voters;
    private final Path workdir;
    private final List<String> overrides;
    private Process proc;
    private int starts;
    private Path stderr;

    /** A broker with its own client, control-plane and HTTP ports; voters null for a standalone one. */
    KiqBroker(Path workdir, int id, List<Integer> ports, String voters, List<String> overrides) {
        this.workdir = workdir;
        this.id = id;
        this.host = Kiq.HOST;
        this.port = ports.get(0);
        this.controlPort = ports.get(1);
        this.httpPort = ports.get(2);
        this.voters = voters;
        this.overrides = new ArrayList<>(overrides);
        this.overrides.add("kafkaiq.http.listener=" + Kiq.HOST + ":" + httpPort);
    }

    /** A server someone else runs (KIQ_BOOTSTRAP): never started or stopped here. */
    private KiqBroker(String bootstrap, int id) {
        this.workdir = null;
        this.id = id;
        this.host = bootstrap.substring(0, bootstrap.lastIndexOf(':'));
        this.port = Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
        this.controlPort = -1;
        this.httpPort = -1;
        this.voters = null;
        this.overrides = List.of();
    }

    /**
     * A standalone broker on free ports, started; or, with KIQ_BOOTSTRAP=host:port, that running server (Apache
     * Kafka from scripts/kafka.sh, say, to check the tests themselves against the reference).
     */
    static KiqBroker standalone(Path workdir) {
        String external = System.getenv("KIQ_BOOTSTRAP");
        if (external != null && !external.isEmpty()) {
            Properties p = new Properties();
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, external);
            try (Admin a = Admin.create(p)) {
                return new KiqBroker(external, a.describeCluster().nodes().get().iterator().next().id());
            } catch (ExecutionException e) {
                throw new AssertionError("KIQ_BOOTSTRAP=" + external + ": " + e.getCause(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
        KiqBroker b = new KiqBroker(workdir, 0, Kiq.freePorts(3), null, List.of());
        b.start();
        return b;
    }

    String bootstrap() {
        return host + ":" + port;
    }

    /**
     * How many requests of api (Kafka's name: "Produce") this broker served since it started at each version
     * 0..max, from its /metrics; null for a server someone else runs.
     */
    long[] requestsServed(String api, int max) throws IOException, InterruptedException {
        if (httpPort < 0) {
            return null;
        }
        String body = metricsText();
        long[] n = new long[max + 1];
        for (int v = 0; v <= max; v++) {
            String sample = "kafka_network_requestmetrics_requests_by_version_total{request=\"" + api
                    + "\",version=\"" + v + "\"} ";
            for (String line : body.split("\n")) {
                if (line.startsWith(sample)) {
                    n[v] = (long) Double.parseDouble(line.substring(sample.length()).trim());
                }
            }
        }
        return n;
    }

    /** An unlabelled sample of this broker's /metrics (its HTTP listener must be on); -1 when absent. */
    double metric(String name) throws IOException, InterruptedException {
        for (String line : metricsText().split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        return -1;
    }

    private String metricsText() throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://" + host + ":" + httpPort + "/metrics"))
                        .timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return r.body();
    }

    private List<String> command() {
        List<String> cmd = new ArrayList<>(List.of(Kiq.BIN.toString(), "serve", Kiq.CONFIG.toString()));
        List<String> kv = new ArrayList<>();
        kv.add("broker.id=" + id);
        kv.add("log.dirs=" + workdir.resolve("data"));
        if (voters == null) {
            kv.add("listeners=PLAINTEXT://" + bootstrap());
        } else {
            kv.add("listeners=PLAINTEXT://" + bootstrap() + ",CONTROLLER://" + Kiq.HOST + ":" + controlPort);
            kv.add("control.plane.listener.name=CONTROLLER");
            kv.add("controller.quorum.voters=" + voters);
        }
        kv.addAll(overrides);
        for (String o : kv) {
            cmd.add("--override");
            cmd.add(o);
        }
        return cmd;
    }

    void start() {
        if (alive()) {
            throw new IllegalStateException("broker " + id + " already running");
        }
        starts++;
        try {
            Files.createDirectories(workdir);
            stderr = workdir.resolve("broker-" + id + "-" + starts + ".stderr");
            proc = new ProcessBuilder(command()).directory(workdir.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                    .redirectErrorStream(true).redirectOutput(stderr.toFile()).start();
        } catch (IOException e) {
            throw new AssertionError("cannot start " + Kiq.BIN + " (run make first)", e);
        }
        Process p = proc;
        Kiq.waitFor("broker " + id + " accepting on " + bootstrap(), READY, () -> {
            if (!p.isAlive()) { // an Error, so the wait stops here
                throw new AssertionError("broker " + id + " exited " + p.exitValue() + "\n" + stderrTail());
            }
            return Kiq.accepting(port);
        });
    }

    boolean alive() {
        Process p = proc;
        return p != null && p.isAlive();
    }

    /** SIGKILL, and waits for the process to be gone. */
    void kill() throws InterruptedException {
        Process p = proc;
        proc = null;
        p.destroyForcibly();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("broker " + id + " survived SIGKILL");
        }
    }

    /** SIGTERM; asserts a clean exit 0 within STOP. */
    void stop() throws InterruptedException {
        Process p = proc;
        if (p == null) {
            return;
        }
        proc = null;
        p.destroy();
        if (!p.waitFor(STOP.toSeconds(), TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("broker " + id + " still running " + STOP.toSeconds()
                    + " s after SIGTERM; killed\n" + stderrTail());
        }
        assertEquals(0, p.exitValue(), () -> "broker " + id + " exit code on SIGTERM\n" + stderrTail());
    }

    String stderrTail() {
        if (stderr == null) {
            return "--- broker " + id + ": never started";
        }
        try {
            byte[] all = Files.readAllBytes(stderr);
            int from = Math.max(0, all.length - 4000);
            return "--- broker " + id + " (" + stderr + "):\n" + new String(all, from, all.length - from,
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "--- broker " + id + ": no stderr";
        }
    }
}
