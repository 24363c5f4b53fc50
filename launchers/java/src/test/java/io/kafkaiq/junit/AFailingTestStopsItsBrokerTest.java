package io.kafkaiq.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs two failing test classes (a class-level and a method-level @KafkaIQ) through the JUnit Platform
 * launcher and checks that both brokers are gone afterwards. The inner classes run only when the property
 * below names the file their brokers' PIDs go to (and surefire skips nested classes anyway).
 */
class AFailingTestStopsItsBrokerTest {
    static final String PID_FILE = "kafkaiq.test.pidFile";

    @Test
    void theBrokerIsStoppedWhenATestFails(@TempDir Path tmp) throws IOException {
        Path pids = tmp.resolve("pids");
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectClass(ClassLevel.class), selectClass(MethodLevel.class))
                .build();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        System.setProperty(PID_FILE, pids.toString());
        try {
            LauncherFactory.create().execute(request, listener);
        } finally {
            System.clearProperty(PID_FILE);
        }
        TestExecutionSummary summary = listener.getSummary();
        assertEquals(2, summary.getTestsStartedCount());
        assertEquals(2, summary.getTestsFailedCount());
        summary.getFailures().forEach(f -> assertEquals("the test fails", f.getException().getMessage()));
        List<String> started = Files.readAllLines(pids);
        assertEquals(2, started.size());
        for (String pid : started) {
            assertFalse(ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false),
                    "broker " + pid + " still runs");
        }
    }

    private static void failAfterWriting(KafkaIQCluster kafka) throws IOException {
        Files.writeString(Path.of(System.getProperty(PID_FILE)), kafka.pid() + "\n", StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        fail("the test fails");
    }

    @KafkaIQ
    @EnabledIfSystemProperty(named = PID_FILE, matches = ".+")
    static class ClassLevel {
        @Test
        void fails(KafkaIQCluster kafka) throws IOException {
            failAfterWriting(kafka);
        }
    }

    @EnabledIfSystemProperty(named = PID_FILE, matches = ".+")
    static class MethodLevel {
        @Test
        @KafkaIQ
        void fails(KafkaIQCluster kafka) throws IOException {
            failAfterWriting(kafka);
        }
    }
}
