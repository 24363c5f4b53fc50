package io.kafkaiq.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A Java program run as a process of its own (a Kafka tool, the Streams application): its stdout read line by
 * line, each JSON object kept as an event (the tools print one per line); its stdout and stderr in files.
 */
final class JvmProcess implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    final String name;
    private final Process proc;
    private final Path stderr;
    private final Path stdout;
    private final Thread reader;
    /** Guarded by itself: the reader thread appends, the test reads. */
    private final List<JsonNode> events = new ArrayList<>();

    JvmProcess(String name, Path workdir, String mainClass, String... args) throws IOException {
        this.name = name;
        Files.createDirectories(workdir);
        this.stderr = workdir.resolve(name + ".stderr");
        this.stdout = workdir.resolve(name + ".stdout");
        this.proc = new ProcessBuilder(Kiq.java(mainClass, args)).directory(workdir.toFile())
                .redirectError(stderr.toFile()).start();
        this.reader = new Thread(this::read, name + "-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /** Reads stdout to its end, a copy of it into NAME.stdout beside the stderr file. */
    private void read() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(proc.getInputStream(),
                StandardCharsets.UTF_8));
                Writer copy = Files.newBufferedWriter(stdout)) {
            String line;
            while ((line = r.readLine()) != null) {
                copy.write(line);
                copy.write('\n');
                if (!line.startsWith("{")) {
                    continue;
                }
                JsonNode n;
                try {
                    n = JSON.readTree(line);
                } catch (IOException e) {
                    continue; // a line that is not one JSON object (a tool's free text)
                }
                synchronized (events) {
                    events.add(n);
                    events.notifyAll();
                }
            }
        } catch (IOException e) {
            // the stream closes when the process dies
        }
    }

    /** The events so far. */
    List<JsonNode> events() {
        synchronized (events) {
            return new ArrayList<>(events);
        }
    }

    /** Until an event matches; that event. Fails early when the process exits without one. */
    JsonNode awaitEvent(String what, Duration timeout, Predicate<JsonNode> match) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int seen = 0;
        synchronized (events) {
            while (true) {
                for (; seen < events.size(); seen++) {
                    if (match.test(events.get(seen))) {
                        return events.get(seen);
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || (!proc.isAlive() && !reader.isAlive())) {
                    throw new AssertionError(name + ": " + what + ": not within " + timeout.toMillis() + " ms"
                            + (proc.isAlive() ? "" : " (exited " + proc.exitValue() + ")") + "\n" + stderrTail());
                }
                events.wait(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), 200)));
            }
        }
    }

    boolean alive() {
        return proc.isAlive();
    }

    /** Waits for the process to end by itself; its exit code. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!proc.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " still running after " + timeout.toMillis() + " ms\n" + stderrTail());
        }
        reader.join(5000);
        return proc.exitValue();
    }

    /** SIGTERM (the tools and the Streams application close on it); the exit code. */
    int terminate(Duration timeout) throws InterruptedException {
        proc.toHandle().destroy(); // Process.destroy() would also close our end of its stdout, losing the last lines
        return awaitExit(timeout);
    }

    /** SIGKILL: no shutdown hook runs, nothing is flushed or committed. */
    void kill() throws InterruptedException {
        proc.destroyForcibly();
        proc.waitFor();
        reader.join(5000);
    }

    String stderrTail() {
        try {
            byte[] all = Files.readAllBytes(stderr);
            int from = Math.max(0, all.length - 4000);
            return "--- " + name + " stderr (" + stderr + "):\n"
                    + new String(all, from, all.length - from, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "--- " + name + ": no stderr";
        }
    }

    /** Kills a process a failed test left running. */
    @Override
    public void close() throws InterruptedException {
        if (proc.isAlive()) {
            kill();
        }
    }
}
