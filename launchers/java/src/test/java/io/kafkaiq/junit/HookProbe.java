package io.kafkaiq.junit;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * PlainApiTest's child JVM: starts a broker, writes "PID DIRECTORY" to args[0] (whole, by a rename) and waits
 * to be ended. It never closes the broker: the shutdown hook must.
 */
public final class HookProbe {
    private HookProbe() {
    }

    public static void main(String[] args) throws Exception {
        KafkaIQCluster kafka = KafkaIQCluster.start();
        Path out = Path.of(args[0]);
        Path tmp = Path.of(args[0] + ".tmp");
        Files.writeString(tmp, kafka.pid() + " " + kafka.directory());
        Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE);
        Thread.currentThread().join();
    }
}
