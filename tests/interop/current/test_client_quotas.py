"""Client quotas as Kafka enforces them: set and described with Apache
Kafka's kafka-configs on a combined broker and controller (the quotas are
the controller's ClientQuotaRecords); on a standalone broker (its own
store), a producer and a consumer under a byte-rate quota on their client
id held to within 10 % of it once the first burst is spent; the throttle
time seen in confluent-kafka's statistics; the broker's per-client byte rate
in its Prometheus text."""
import json
import pathlib
import subprocess
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, free_port

KAFKA_LIB = pathlib.Path(__file__).resolve().parents[3] / "build" / "kafka" / "lib"
QUOTA = 200000  # bytes per second
VALUE = 1000
MEASURE_S = 6.0


class CombinedNode(Broker):
    """One node that is broker and the quorum's only controller."""

    def __init__(self, workdir):
        self.control = free_port()
        super().__init__(workdir, ["control.plane.listener.name=CONTROLLER"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners=PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.control}"
        return cmd + ["--override", f"controller.quorum.voters=0@{self.host}:{self.control}"]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    b = CombinedNode(tmp_path_factory.mktemp("quotas"))
    b.start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    # Two one-second windows: a saturating client's traffic repeats with
    # the windows (a burst as the oldest is dropped, then the wait its
    # throttle asks), so the measured seconds hold whole periods; with
    # Kafka's eleven (and its ten seconds' worth of first burst) a period
    # is eleven seconds.
    b = Broker(tmp_path_factory.mktemp("quotas-standalone"), ["quota.window.num=2"])
    b.start()
    yield b
    b.stop()


def configs(node, *args, ok=True):
    if not any(KAFKA_LIB.glob("*.jar")):
        pytest.skip("Apache Kafka's tools are not in build/kafka/lib")
    out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, sorted(KAFKA_LIB.glob("*.jar")))),
                          "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", node.bootstrap, *args],
                         capture_output=True, text=True, timeout=120)
    assert (out.returncode == 0) == ok, out.stdout + out.stderr
    return out.stdout + out.stderr


def test_kafka_configs_round_trip(node):
    assert "Completed updating config for user alice" in configs(
        node, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048")
    configs(node, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
            "--entity-name", "app", "--add-config", "request_percentage=50")
    configs(node, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
            "controller_mutation_rate=100")
    configs(node, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config",
            "consumer_byte_rate")
    # a value Kafka refuses: byte rates are whole numbers
    assert "is not an integer" in configs(node, "--alter", "--entity-type", "clients", "--entity-name", "x",
                                          "--add-config", "producer_byte_rate=10.5", ok=False)
    # kept in the metadata log: described after a restart
    node.restart()
    users = configs(node, "--describe", "--entity-type", "users")
    assert "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0" in users
    assert "consumer_byte_rate" not in users  # deleted
    assert "request_percentage" not in users  # the user and client entity is not a user's
    clients = configs(node, "--describe", "--entity-type", "clients")
    assert "Quota configs for the default client-id are controller_mutation_rate=100.0" in clients
    assert "producer_byte_rate" not in clients  # refused
    both = configs(node, "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type",
                   "clients", "--entity-name", "app")
    assert "Quota configs for user-principal 'alice', client-id 'app' are request_percentage=50.0" in both


def steady_rate(points, start):
    """Bytes per second between the first point at or after start and the
    last one MEASURE_S later."""
    window = [(t, n) for t, n in points if start <= t <= start + MEASURE_S]
    assert len(window) > 10, f"too few points to measure: {len(window)}"
    (t0, n0), (t1, n1) = window[0], window[-1]
    return (n1 - n0) / (t1 - t0)


def throttled_since(stats):
    """The first time a statistics callback showed a broker's throttle time."""
    for t, s in stats:
        if any(b.get("throttle", {}).get("max", 0) > 0 for b in s["brokers"].values()):
            return t
    return None


def test_byte_rate_quotas(standalone):
    node = standalone
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    deadline = time.monotonic() + 30
    while True:  # until the node's broker is registered and unfenced
        try:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            break
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    configs(node, "--alter", "--entity-type", "clients", "--entity-name", "quota-producer", "--add-config",
            f"producer_byte_rate={QUOTA}")
    configs(node, "--alter", "--entity-type", "clients", "--entity-name", "quota-consumer", "--add-config",
            f"consumer_byte_rate={QUOTA}")

    stats, points, sent = [], [], [0]
    # small requests and a short queue: each request a small part of a
    # second's quota, delivery reports as the broker answers, not in heaps
    p = Producer({"bootstrap.servers": node.bootstrap, "client.id": "quota-producer", "linger.ms": 5,
                  "batch.size": 16384, "queue.buffering.max.messages": 200,
                  "statistics.interval.ms": 200, "stats_cb": lambda s: stats.append((time.monotonic(), json.loads(s)))})

    def delivered(err, msg):
        assert err is None, err
        sent[0] += len(msg.value())
        points.append((time.monotonic(), sent[0]))

    value = b"x" * VALUE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            p.produce(topic, value, on_delivery=delivered)
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
        since = throttled_since(stats)
        if since and points and points[-1][0] > since + MEASURE_S + 0.5:
            break
    p.flush(30)
    since = throttled_since(stats)
    assert since, "the producer never saw a throttle time"
    rate = steady_rate(points, since + 0.5)
    assert abs(rate - QUOTA) <= 0.1 * QUOTA, f"produced at {rate:.0f} B/s under a {QUOTA} B/s quota"
    total = sent[0]

    # the broker measures the client under its Kafka name
    text = urllib.request.urlopen(f"http://{node.http}/metrics", timeout=10).read().decode()
    assert 'kafka_server_produce_byte_rate{user="",clientId="quota-producer"}' in text

    stats.clear()
    points.clear()
    got = [0]
    c = Consumer({"bootstrap.servers": node.bootstrap, "client.id": "quota-consumer", "group.id": topic,
                  "auto.offset.reset": "earliest", "fetch.max.bytes": 20000, "message.max.bytes": 20000,
                  "max.partition.fetch.bytes": 20000,
                  "statistics.interval.ms": 200,
                  "stats_cb": lambda s: stats.append((time.monotonic(), json.loads(s)))})
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and got[0] < total:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got[0] += len(m.value())
        points.append((time.monotonic(), got[0]))
        since = throttled_since(stats)
        if since and points[-1][0] > since + MEASURE_S + 0.5:
            break
    c.close()
    since = throttled_since(stats)
    assert since, "the consumer never saw a throttle time"
    rate = steady_rate(points, since + 0.5)
    assert abs(rate - QUOTA) <= 0.1 * QUOTA, f"consumed at {rate:.0f} B/s under a {QUOTA} B/s quota"
