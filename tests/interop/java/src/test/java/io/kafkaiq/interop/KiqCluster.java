package io.kafkaiq.interop;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * A replicated KafkaIQ cluster of one {@code serve} process per broker (as tests/interop/cluster.py), broker 0
 * hosting the controller, so that any broker but the controller's can be SIGKILLed and started again.
 */
final class KiqCluster implements AutoCloseable {
    static final int CONTROLLER = 0;

    /**
     * cluster.py's: fast failure detection keeps failovers short. Leaderships stay where a failover put them
     * until a test elects the preferred replicas (ElectLeaders), so that the elections are the tests' own.
     */
    static final List<String> OVERRIDES = List.of(
            "default.replication.factor=3",
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=6",
            "transaction.state.log.replication.factor=3",
            "transaction.state.log.num.partitions=6",
            "min.insync.replicas=2",
            "broker.session.timeout.ms=4500",
            "broker.heartbeat.interval.ms=500",
            "replica.lag.time.max.ms=2000",
            "replica.fetch.wait.max.ms=100",
            "log.segment.bytes=262144",
            "num.partitions=3",
            "auto.leader.rebalance.enable=false");

    final List<KiqBroker> brokers = new ArrayList<>();
    final Admin admin;

    KiqCluster(Path workdir, int n) {
        List<List<Integer>> ports = new ArrayList<>();
        List<Integer> all = Kiq.freePorts(3 * n);
        for (int i = 0; i < n; i++) {
            ports.add(all.subList(3 * i, 3 * i + 3));
        }
        String voters = CONTROLLER + "@" + Kiq.HOST + ":" + ports.get(CONTROLLER).get(1);
        for (int i = 0; i < n; i++) {
            brokers.add(new KiqBroker(workdir.resolve("b" + i), i, ports.get(i), voters, OVERRIDES));
        }
        for (KiqBroker b : brokers) {
            b.start();
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        admin = Admin.create(p);
        waitRegistered();
    }

    String bootstrap() {
        return brokers.stream().map(KiqBroker::bootstrap).collect(Collectors.joining(","));
    }

    KiqBroker broker(int id) {
        return brokers.get(id);
    }

    /** Until the cluster lists every broker and names the controller. */
    void waitRegistered() {
        Kiq.waitFor("all " + brokers.size() + " brokers registered", Duration.ofSeconds(20), () -> {
            DescribeClusterResult r = admin.describeCluster();
            Node controller = r.controller().get();
            return r.nodes().get().size() == brokers.size() && controller != null && controller.id() == CONTROLLER;
        });
    }

    TopicDescription describe(String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
    }

    /** partition -> leader id, now. */
    Map<Integer, Integer> leaders(String topic) throws Exception {
        Map<Integer, Integer> m = new TreeMap<>();
        for (TopicPartitionInfo p : describe(topic).partitions()) {
            m.put(p.partition(), p.leader() == null ? -1 : p.leader().id());
        }
        return m;
    }

    /** Until every partition of the topics has a leader and all brokers in its ISR. */
    void waitHealthy(Duration timeout, String... topics) {
        Kiq.waitFor("every partition of " + List.of(topics) + " led with a full ISR", timeout, () -> {
            for (String t : topics) {
                for (TopicPartitionInfo p : describe(t).partitions()) {
                    if (p.leader() == null || p.isr().size() != brokers.size()) {
                        return false;
                    }
                }
            }
            return true;
        });
    }

    String stderrTails() {
        return brokers.stream().map(KiqBroker::stderrTail).collect(Collectors.joining("\n"));
    }

    /** Stops every broker, the controller's last; asserts clean exits. */
    @Override
    public void close() throws InterruptedException {
        admin.close(Duration.ofSeconds(5));
        List<String> problems = new ArrayList<>();
        for (int i = brokers.size() - 1; i >= 0; i--) {
            try {
                brokers.get(i).stop();
            } catch (AssertionError e) {
                problems.add(e.getMessage());
            }
        }
        if (!problems.isEmpty()) {
            throw new AssertionError(String.join("\n", problems));
        }
    }
}
