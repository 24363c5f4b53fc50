package io.kafkaiq.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;

/** Where the broker and its config are, free ports, bounded waits and JVM child processes. */
final class Kiq {
    static final String HOST = "127.0.0.1";
    /** The repository root (the pom passes it; the default suits a run from tests/interop/java). */
    static final Path ROOT = Path.of(System.getProperty("kiq.root", "../../..")).toAbsolutePath().normalize();
    static final Path BIN = System.getenv("KIQ_BIN") != null ? Path.of(System.getenv("KIQ_BIN"))
            : ROOT.resolve("build/kafkaiq");
    static final Path CONFIG = ROOT.resolve("config/server.properties");

    private static final Random PORTS = new Random(ProcessHandle.current().pid() ^ System.nanoTime());

    static {
        // a run cut short (surefire stopped, a timeout) leaves no broker or tool of its own running
        Runtime.getRuntime().addShutdownHook(new Thread(() -> ProcessHandle.current().descendants()
                .forEach(ProcessHandle::destroyForcibly), "kill-children"));
    }

    private Kiq() {
    }

    /** The low end of the range connect() takes local ports from. */
    static int ephemeralLow() {
        // line by line: Files.readString reads this procfs file truncated
        try (BufferedReader r = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
            return Integer.parseInt(r.readLine().trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return 32768;
        }
    }

    static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * A port free a moment ago, below the ephemeral range: a port of that range, once closed, can be
     * handed to any outgoing connection before the broker binds it.
     */
    static synchronized int freePort(List<Integer> taken) {
        int top = Math.max(10001, ephemeralLow());
        for (int i = 0; i < 200; i++) {
            int port = 10000 + PORTS.nextInt(top - 10000);
            if (!taken.contains(port) && bindable(port)) {
                return port;
            }
        }
        throw new IllegalStateException("no free port below " + top);
    }

    static List<Integer> freePorts(int n) {
        List<Integer> ports = new ArrayList<>();
        while (ports.size() < n) {
            ports.add(freePort(ports));
        }
        return ports;
    }

    static boolean accepting(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(HOST, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Polls what until it returns something other than null or false; that value. Exceptions count as
     * "not yet"; after timeout an AssertionError names the wait and the last value or exception.
     */
    static <T> T waitFor(String what, Duration timeout, Callable<T> poll) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Object last = null;
        while (true) {
            try {
                T v = poll.call();
                if (v != null && !Boolean.FALSE.equals(v)) {
                    return v;
                }
                last = v;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() >= deadline) {
                throw new AssertionError(what + ": not within " + timeout.toMillis() + " ms (last: " + last + ")");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(what + ": interrupted");
            }
        }
    }

    /** The command that runs mainClass in a JVM of its own on this run's classpath, with a small heap. */
    static List<String> java(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
