package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** KafkaIQCluster without the extension: start, close, a start that fails, the binary lookup, the hook. */
class PlainApiTest {
    @Test
    void startAndCloseWithoutTheExtension() {
        Path dir;
        long pid;
        try (KafkaIQCluster kafka = KafkaIQCluster.start()) {
            pid = kafka.pid();
            dir = kafka.directory();
            assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
            assertTrue(Files.isDirectory(dir.resolve("data")));
            assertEquals(-1, kafka.brokers().get(0).controlPort());
            assertTrue(kafka.readyAfter().toNanos() > 0);
            assertTrue(kafka.state().containsKey("topics"), "the broker's state");
        }
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
        assertFalse(Files.exists(dir));
    }

    @Test
    void aBadStartSaysWhy() {
        KafkaIQException e = assertThrows(KafkaIQException.class,
                () -> KafkaIQCluster.start(KafkaIQCluster.options().override("num.partitions", "many")));
        assertTrue(e.getMessage().startsWith("kafkaiq serve did not start (exit "), e.getMessage());
        assertTrue(e.getMessage().contains("num.partitions"), e.getMessage());
        e = assertThrows(KafkaIQException.class,
                () -> KafkaIQCluster.start(KafkaIQCluster.options().binary("/nonexistent/kafkaiq")));
        assertTrue(e.getMessage().startsWith("cannot run /nonexistent/kafkaiq"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> KafkaIQCluster.options().override("no-equals-sign"));
    }

    @Test
    void theBinaryIsTheExplicitOneElseThePropertyElseTheEnvironmentsElsePath() {
        String saved = System.getProperty("kafkaiq.bin");
        try {
            System.setProperty("kafkaiq.bin", "/from/property");
            assertEquals("/explicit", KafkaIQCluster.findBinary("/explicit"));
            assertEquals("/from/property", KafkaIQCluster.findBinary(""));
            assertEquals("/from/property", KafkaIQCluster.findBinary(null));
            System.clearProperty("kafkaiq.bin");
            String env = System.getenv("KAFKAIQ_BIN");
            if (env != null && !env.isBlank()) {
                assertEquals(env, KafkaIQCluster.findBinary(""));
            }
        } finally {
            if (saved == null) {
                System.clearProperty("kafkaiq.bin");
            } else {
                System.setProperty("kafkaiq.bin", saved);
            }
        }
    }

    /**
     * A JVM ended by SIGTERM while its broker runs: the shutdown hook kills the broker and removes its files.
     * The JVM is a child (HookProbe) with only the launcher and Jackson on its class path.
     */
    @Test
    void aJvmEndedBySigtermLeavesNoBroker(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("probe");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classPath()));
        String bin = System.getProperty("kafkaiq.bin");
        if (bin != null && !bin.isBlank()) {
            cmd.add("-Dkafkaiq.bin=" + bin);
        }
        cmd.addAll(List.of(HookProbe.class.getName(), out.toString()));
        Process jvm = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(tmp.resolve("probe.log").toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!Files.exists(out)) {
                assertTrue(jvm.isAlive() && System.nanoTime() < deadline,
                        "the probe did not start a broker: " + Files.readString(tmp.resolve("probe.log")));
                Thread.sleep(10);
            }
            String[] started = Files.readString(out).trim().split(" ", 2);
            long pid = Long.parseLong(started[0]);
            assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
            jvm.destroy();
            assertTrue(jvm.waitFor(20, TimeUnit.SECONDS), "the probe JVM ended");
            assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "broker " + pid + " runs");
            assertFalse(Files.exists(Path.of(started[1])), "its directory is gone");
        } finally {
            jvm.destroyForcibly();
        }
    }

    private static String classPath() throws Exception {
        List<String> parts = new ArrayList<>();
        for (Class<?> c : List.of(KafkaIQCluster.class, HookProbe.class, ObjectMapper.class, JsonFactory.class,
                JsonAutoDetect.class)) {
            parts.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        }
        return String.join(File.pathSeparator, parts);
    }
}
