package io.kafkaiq.junit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A running {@code kafkaiq serve} process on free ports, found through its ready file, and its control API over
 * HTTP. Start one with {@link #start(Options)} (and close it), or let {@link KafkaIQ} do both.
 */
public final class KafkaIQCluster implements AutoCloseable {
    /**
     * One broker of the process: its client port, controller port (-1 for a lone broker, which has none) and
     * control API address (host:port).
     */
    public record Broker(int id, String host, int port, int controlPort, String http) {
    }

    /** What {@link #start(Options)} runs: broker count, overrides, binary and how long the start may take. */
    public static final class Options {
        private int brokers = 1;
        private final Map<String, String> overrides = new LinkedHashMap<>();
        private String binary;
        private Duration startTimeout = Duration.ofSeconds(30);

        public Options brokers(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("brokers must be at least 1, not " + n);
            }
            brokers = n;
            return this;
        }

        public Options override(String key, Object value) {
            overrides.put(key, String.valueOf(value));
            return this;
        }

        /** One "key=value" setting, as in {@link KafkaIQ#overrides()}. */
        public Options override(String keyEqualsValue) {
            int eq = keyEqualsValue.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("an override is key=value, not '" + keyEqualsValue + "'");
            }
            return override(keyEqualsValue.substring(0, eq), keyEqualsValue.substring(eq + 1));
        }

        /** The binary to run; null or empty looks it up (see {@link KafkaIQCluster#findBinary(String)}). */
        public Options binary(String path) {
            binary = path;
            return this;
        }

        public Options startTimeout(Duration timeout) {
            startTimeout = timeout;
            return this;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<Map<String, Object>> OBJECT = new TypeReference<>() {
    };
    /** HTTP/1.1: the broker's listener does not speak h2c, and the JDK would offer an upgrade. */
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration DEFAULT_WAIT = Duration.ofSeconds(10);
    /** The processes not yet stopped, for the shutdown hook. */
    private static final Set<KafkaIQCluster> LIVE = ConcurrentHashMap.newKeySet();
    private static final AtomicBoolean HOOK = new AtomicBoolean();

    private final Process process;
    private final Path dir;
    private final long startedNanos;
    private long readyNanos;
    private String bootstrap;
    private List<Broker> brokers;
    private String http;
    private long pid;
    private boolean closed;

    private KafkaIQCluster(Process process, Path dir, long startedNanos) {
        this.process = process;
        this.dir = dir;
        this.startedNanos = startedNanos;
    }

    public static Options options() {
        return new Options();
    }

    /** One broker with the default settings. */
    public static KafkaIQCluster start() {
        return start(options());
    }

    /**
     * Runs {@code kafkaiq serve} and returns once every broker serves; if the process exits first or the start
     * timeout passes, a {@link KafkaIQException} with the tail of what it logged (nothing is left running).
     */
    public static KafkaIQCluster start(Options options) {
        String binary = findBinary(options.binary);
        installShutdownHook();
        Path dir;
        try {
            dir = Files.createTempDirectory("kafkaiq-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path ready = dir.resolve("ready.json");
        List<String> args = new ArrayList<>(List.of(binary, "serve"));
        if (options.brokers > 1) {
            args.addAll(List.of("--brokers", Integer.toString(options.brokers)));
        }
        args.addAll(List.of("--ready-file", ready.toString(),
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "kafkaiq.http.listener=127.0.0.1:0",
                "--override", "log.dirs=" + dir.resolve("data")));
        options.overrides.forEach((k, v) -> args.addAll(List.of("--override", k + "=" + v)));
        long t0 = System.nanoTime();
        Process p;
        try {
            p = new ProcessBuilder(args)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(dir.resolve("kafkaiq.log").toFile())
                    .start();
        } catch (IOException e) {
            deleteTree(dir);
            throw new KafkaIQException("cannot run " + binary + ": " + e.getMessage(), e);
        }
        KafkaIQCluster c = new KafkaIQCluster(p, dir, t0);
        LIVE.add(c);
        try {
            c.awaitReady(ready, options.startTimeout);
        } catch (RuntimeException | Error e) {
            c.close();
            throw e;
        }
        return c;
    }

    /**
     * The binary to run: explicit when not empty, else the system property kafkaiq.bin, else $KAFKAIQ_BIN, else
     * kafkaiq on PATH.
     */
    public static String findBinary(String explicit) {
        for (String candidate : new String[] {explicit, System.getProperty("kafkaiq.bin"), System.getenv("KAFKAIQ_BIN")}) {
            if (candidate != null && !candidate.isBlank()) {
                return candidate;
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(File.pathSeparator)) {
                Path p = Path.of(d.isEmpty() ? "." : d, "kafkaiq");
                if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                    return p.toString();
                }
            }
        }
        throw new KafkaIQException("kafkaiq not found: install it (make install, or the Debian package), "
                + "or set -Dkafkaiq.bin, $KAFKAIQ_BIN or @KafkaIQ(binary = ...)");
    }

    /**
     * Registers (once per JVM) a shutdown hook that kills every process started here and not yet closed, so a
     * JVM ended by a signal or System.exit leaves no broker behind. {@link #start(Options)} calls it.
     */
    public static void installShutdownHook() {
        if (HOOK.compareAndSet(false, true)) {
            Runtime.getRuntime().addShutdownHook(new Thread(KafkaIQCluster::destroyAll, "kafkaiq-shutdown"));
        }
    }

    /**
     * Kills (SIGKILL) every process started here and not yet closed and removes its temp directory; what the
     * shutdown hook runs.
     */
    public static void destroyAll() {
        List<KafkaIQCluster> all = List.copyOf(LIVE);
        all.forEach(c -> c.process.destroyForcibly());
        for (KafkaIQCluster c : all) {
            try {
                // its files stay open until it is gone; a SIGKILLed process goes at once
                c.process.waitFor(2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            LIVE.remove(c);
            deleteTree(c.dir);
        }
    }

    private void awaitReady(Path ready, Duration timeout) {
        long deadline = startedNanos + timeout.toNanos();
        while (!Files.exists(ready)) {
            if (!process.isAlive()) {
                throw new KafkaIQException("kafkaiq serve did not start (exit " + process.exitValue() + "): "
                        + tail(log(), 2000));
            }
            if (System.nanoTime() > deadline) {
                throw new KafkaIQException("kafkaiq serve did not start within " + timeout.toMillis() + " ms: "
                        + tail(log(), 2000));
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KafkaIQException("interrupted while kafkaiq serve started", e);
            }
        }
        readyNanos = System.nanoTime() - startedNanos;
        Map<String, Object> info;
        try {
            info = JSON.readValue(ready.toFile(), OBJECT);
        } catch (IOException e) {
            throw new KafkaIQException("unreadable ready file " + ready + ": " + e.getMessage(), e);
        }
        bootstrap = (String) info.get("bootstrap");
        http = (String) info.get("http");
        pid = ((Number) info.get("pid")).longValue();
        List<Broker> bs = new ArrayList<>();
        for (Object o : (List<?>) info.get("brokers")) {
            Map<?, ?> b = (Map<?, ?>) o;
            // a lone broker has no controller listener of its own: no control_port
            Object control = b.get("control_port");
            bs.add(new Broker(((Number) b.get("id")).intValue(), (String) b.get("host"),
                    ((Number) b.get("port")).intValue(), control == null ? -1 : ((Number) control).intValue(),
                    (String) b.get("http")));
        }
        brokers = Collections.unmodifiableList(bs);
    }

    /** host:port,host:port,... for bootstrap.servers. */
    public String bootstrapServers() {
        return bootstrap;
    }

    public List<Broker> brokers() {
        return brokers;
    }

    /** Broker 0's control API, host:port. */
    public String http() {
        return http;
    }

    /** The serve process's id. */
    public long pid() {
        return pid;
    }

    /** From the process start until the ready file appeared. */
    public Duration readyAfter() {
        return Duration.ofNanos(readyNanos);
    }

    /** The temp directory holding the data, the ready file and the log; removed by {@link #close()}. */
    public Path directory() {
        return dir;
    }

    /** What the brokers wrote to stderr so far. */
    public String log() {
        try {
            return Files.readString(dir.resolve("kafkaiq.log"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /**
     * Adds a fault rule to broker 0: api, version, min_version, max_version, client_id, topic, partition, error
     * (Kafka's name or code), delay_ms, action (error | delay | disconnect | drop_response), times, after,
     * probability, seed. Returns its id.
     */
    public int fault(Map<String, ?> rule) {
        return fault(rule, 0);
    }

    public int fault(Map<String, ?> rule, int broker) {
        return ((Number) call("POST", "/api/faults", rule, broker, CALL_TIMEOUT).get("id")).intValue();
    }

    /** Broker 0's rules, each with its matched and fired counts. */
    public List<Map<String, Object>> faults() {
        return faults(0);
    }

    @SuppressWarnings("unchecked")
    public List<Map<String, Object>> faults(int broker) {
        return (List<Map<String, Object>>) call("GET", "/api/faults", null, broker, CALL_TIMEOUT).get("faults");
    }

    /** One rule of broker 0; the ids removed. */
    public List<Integer> removeFault(int id) {
        return removeFault(id, 0);
    }

    public List<Integer> removeFault(int id, int broker) {
        return removed(call("DELETE", "/api/faults/" + id, null, broker, CALL_TIMEOUT));
    }

    /** Every rule of broker 0; the ids removed. */
    public List<Integer> removeFaults() {
        return removeFaults(0);
    }

    public List<Integer> removeFaults(int broker) {
        return removed(call("DELETE", "/api/faults", null, broker, CALL_TIMEOUT));
    }

    private static List<Integer> removed(Map<String, Object> answer) {
        return ((List<?>) answer.get("removed")).stream().map(o -> ((Number) o).intValue()).toList();
    }

    /** Kills broker id (no clean shutdown), asking broker via; returns at once: wait for state=stopped. */
    public Map<String, Object> kill(int id, int via) {
        return brokerOp(id, "kill", via);
    }

    /** Stops broker id cleanly. */
    public Map<String, Object> stop(int id, int via) {
        return brokerOp(id, "stop", via);
    }

    /** Stops broker id cleanly if it runs, then starts it again on the same ports and data. */
    public Map<String, Object> restart(int id, int via) {
        return brokerOp(id, "restart", via);
    }

    /** Broker id stops heartbeating and replicating, as a SIGSTOPped broker looks to the others. */
    public Map<String, Object> pause(int id, int via) {
        return brokerOp(id, "pause", via);
    }

    public Map<String, Object> resume(int id, int via) {
        return brokerOp(id, "resume", via);
    }

    private Map<String, Object> brokerOp(int id, String op, int via) {
        return call("POST", "/api/brokers/" + id + "/" + op, null, via, CALL_TIMEOUT);
    }

    /** Replication from leader to follower: "cut", "heal" or "drop" (fetches unanswered). */
    public Map<String, Object> link(int from, int to, String action) {
        return link(from, to, action, null, 0);
    }

    /** As {@link #link(int, int, String)}; "slow" takes delay (per fetch), null otherwise. */
    public Map<String, Object> link(int from, int to, String action, Duration delay, int via) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("from", from);
        body.put("to", to);
        body.put("action", action);
        if (delay != null) {
            body.put("delay_ms", delay.toMillis());
        }
        return call("POST", "/api/links", body, via, CALL_TIMEOUT);
    }

    /** Replica to leads topic-partition from now on; wait for leader=to to see the brokers follow. */
    public Map<String, Object> moveLeader(String topic, int partition, int to) {
        return call("POST", "/api/leaders", Map.of("topic", topic, "partition", partition, "to", to), 0,
                CALL_TIMEOUT);
    }

    /** Every partition's first replica leads again where it can; how many leaderships moved. */
    public int electPreferred() {
        return ((Number) call("POST", "/api/leaders", Map.of("preferred", true), 0, CALL_TIMEOUT).get("moved"))
                .intValue();
    }

    /** {@link #waitFor(Map, Duration, int)} on broker 0, bounded by 10 s. */
    public Map<String, Object> waitFor(Map<String, ?> condition) {
        return waitFor(condition, DEFAULT_WAIT, 0);
    }

    public Map<String, Object> waitFor(Map<String, ?> condition, Duration timeout) {
        return waitFor(condition, timeout, 0);
    }

    /**
     * Until a condition holds, as broker via sees it: broker=ID with state=ready|running|stopped; topic=T and
     * partition=P with leader=any|ID, isr=N (exactly), high_watermark=N or log_start_offset=N (at least);
     * group=G with state=Stable. Returns the answer ({"value", ...}); a {@link KafkaIQException} with status 408
     * and what the broker saw when the timeout passes first.
     */
    public Map<String, Object> waitFor(Map<String, ?> condition, Duration timeout, int via) {
        StringBuilder q = new StringBuilder("/api/wait?");
        condition.forEach((k, v) -> q.append(encode(k)).append('=').append(encode(String.valueOf(v))).append('&'));
        q.append("timeout_ms=").append(timeout.toMillis());
        return call("GET", q.toString(), null, via, CALL_TIMEOUT.plus(timeout));
    }

    /** Moves the process's clock ahead (started with kafkaiq.clock=manual): retention, rolls, timeouts follow. */
    public Map<String, Object> advanceClock(Duration by) {
        return advanceClock(by, 0);
    }

    public Map<String, Object> advanceClock(Duration by, int via) {
        return call("POST", "/api/clock", Map.of("advance_ms", by.toMillis()), via, CALL_TIMEOUT);
    }

    /** Broker 0's /api/state. */
    public Map<String, Object> state() {
        return state(0);
    }

    public Map<String, Object> state(int broker) {
        return call("GET", "/api/state", null, broker, CALL_TIMEOUT);
    }

    /** The control API of broker id: one request, its JSON answer; refusals raise {@link KafkaIQException}. */
    public Map<String, Object> call(String method, String path, Object body, int broker, Duration timeout) {
        Broker b = brokers.stream().filter(x -> x.id() == broker).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no broker " + broker + " in " + brokers));
        HttpRequest.BodyPublisher publisher;
        try {
            publisher = body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + body, e);
        }
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + b.http() + path))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .method(method, publisher)
                .build();
        HttpResponse<String> response;
        try {
            response = HTTP.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new KafkaIQException(method + " " + path + " on broker " + broker + " (" + b.http() + "): "
                    + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaIQException(method + " " + path + ": interrupted", e);
        }
        String text = response.body();
        if (response.statusCode() >= 400) {
            String message = text;
            try {
                Object error = JSON.readValue(text, OBJECT).get("error");
                if (error != null) {
                    message = error.toString();
                }
            } catch (JsonProcessingException e) {
                // not JSON: the body as it came is the message
            }
            throw new KafkaIQException(method + " " + path + ": " + response.statusCode() + " " + message,
                    response.statusCode(), message, null);
        }
        if (text.isBlank()) {
            return Map.of();
        }
        try {
            return JSON.readValue(text, OBJECT);
        } catch (JsonProcessingException e) {
            throw new KafkaIQException(method + " " + path + ": not JSON: " + tail(text, 200), e);
        }
    }

    /** SIGTERM (a clean shutdown), SIGKILL after 20 s; the temp directory goes. Safe to call twice. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (process.isAlive()) {
                process.destroy();
                if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly().waitFor();
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            LIVE.remove(this);
            deleteTree(dir);
        }
    }

    @Override
    public String toString() {
        return "KafkaIQCluster[pid " + pid + ", " + bootstrap + "]";
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String tail(String s, int n) {
        return s.length() <= n ? s : s.substring(s.length() - n);
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // already gone, or a file vanished while walking: nothing left to clean up
        }
    }
}
