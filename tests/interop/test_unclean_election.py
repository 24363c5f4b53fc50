"""A topic's own unclean.leader.election.enable wins over the broker's, as in
Kafka: three `kafkaiq serve` processes, a topic at min.insync.replicas=1
whose follower is paused out of the ISR while the leader alone acknowledges
more records, then the leader SIGKILLed and the follower resumed.

- brokers at true, the topic at false: the partition stays without a
  leader until the old leader is back, and every acknowledged record is
  read back (checked by kafkaiq.check);
- brokers at false, the topic at true: the follower is elected (unclean)
  and exactly the records only the dead leader had are lost.
"""

import pathlib
import subprocess

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cluster import CLUSTER_OVERRIDES, CONTROLLER_ID, Cluster, wait_until
from conftest import BROKER_BIN

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TOPIC = "unclean"
BEFORE, ALONE = 100, 1000  # records acked by both replicas, then by the leader alone


class History:
    """kafkaiq.check's text history: send, ack and poll lines."""

    def __init__(self):
        self.lines = []

    def send(self, v, p):
        self.lines.append(f"send {v} {TOPIC} {p}")

    def ack(self, v, p, offset):
        self.lines.append(f"ack {v} {TOPIC} {p} {offset}")

    def poll(self, p, offset, v):
        self.lines.append(f"poll reader {TOPIC} {p} {offset} {v}")

    def check(self, path):
        """kafkaiq.check's counts: {"lost-write": n, ...}."""
        path.write_text("\n".join(self.lines) + "\n")
        r = subprocess.run([str(BROKER_BIN), "run", str(ROOT / "scripts" / "soak_check.lua"), str(path)],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
        counts = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                counts[parts[0]] = int(parts[1])
        assert "lost-write" in counts, r.stdout + r.stderr
        return counts, r.stdout


def produce(bootstrap, history, partition, first, n):
    """n records to the partition with acks=all, each recorded; asserts all acked."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "linger.ms": 5, "message.timeout.ms": 20000, "log_level": 0})
    errors = []

    def done(err, msg):
        if err is not None:
            errors.append(err)
        else:
            history.ack(msg.value().decode(), partition, msg.offset())
    for i in range(first, first + n):
        v = f"v{i}"
        history.send(v, partition)
        p.produce(TOPIC, v.encode(), partition=partition, on_delivery=done)
        p.poll(0)
    assert p.flush(30) == 0, "records still in flight"
    assert not errors, errors[:3]


def read_all(bootstrap, history, partition):
    """Every record of the partition from offset 0 to its end, recorded."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unclean-check", "enable.auto.commit": False,
                  "enable.partition.eof": True, "log_level": 0})
    c.assign([TopicPartition(TOPIC, partition, 0)])
    try:
        def at_end():
            m = c.poll(0.5)
            if m is None:
                return False
            if m.error():
                return m.error().code() == -191  # _PARTITION_EOF
            history.poll(partition, m.offset(), m.value().decode())
            return False
        wait_until(at_end, 30, f"{TOPIC}-{partition} read to its end", interval=0)
    finally:
        c.close()


def scenario(tmp_path, broker_unclean, topic_unclean):
    c = Cluster(tmp_path / "cluster", overrides=CLUSTER_OVERRIDES + (
        f"unclean.leader.election.enable={broker_unclean}",))
    c.start()
    try:
        a = AdminClient({"bootstrap.servers": c.bootstrap})
        a.create_topics([NewTopic(TOPIC, 3, 2, config={"unclean.leader.election.enable": topic_unclean,
                                                       "min.insync.replicas": "1"})],
                        operation_timeout=10)[TOPIC].result(20)
        parts = c.wait_healthy(TOPIC, 3, rf=2)
        # a partition whose replicas leave the controller's broker alone
        partition, st = next((p, s) for p, s in sorted(parts.items()) if CONTROLLER_ID not in s["replicas"])
        leader = st["leader"]
        follower = next(r for r in st["replicas"] if r != leader)
        history = History()
        produce(c.bootstrap, history, partition, 0, BEFORE)
        c.wait_replicas_identical(TOPIC, partition, [leader, follower], 20)

        c[follower].pause()
        c.wait_isr(TOPIC, partition, [leader], 20, via=CONTROLLER_ID)
        produce(c[leader].bootstrap, history, partition, BEFORE, ALONE)
        c[leader].kill()
        c[follower].resume()
        # the dead leader fenced (its session over) and the follower live:
        # the controller has decided who leads
        wait_until(lambda: follower in c.metadata(via=CONTROLLER_ID)["brokers"]
                   and c.leader(TOPIC, partition, via=CONTROLLER_ID) != leader, 30,
                   f"broker {leader} fenced and broker {follower} live")
        return c, history, partition, leader, follower
    except BaseException:
        c.stop()
        raise


def test_topic_false_keeps_the_partition_offline_and_loses_nothing(tmp_path):
    c, history, partition, leader, follower = scenario(tmp_path, "true", "false")
    try:
        st = c.partitions(TOPIC, via=CONTROLLER_ID)[partition]
        assert st["leader"] == -1, f"{TOPIC}-{partition} elected {st['leader']} from outside the ISR: {st}"
        c[leader].start()
        wait_until(lambda: c.leader(TOPIC, partition, via=CONTROLLER_ID) == leader, 30,
                   f"broker {leader} leading {TOPIC}-{partition} again")
        read_all(c.bootstrap, history, partition)
        counts, report = history.check(tmp_path / "history.txt")
        assert counts["lost-write"] == 0, report
        assert counts["unseen"] == 0, report
    finally:
        c.stop()


def test_topic_true_elects_the_out_of_sync_follower(tmp_path):
    c, history, partition, leader, follower = scenario(tmp_path, "false", "true")
    try:
        wait_until(lambda: c.leader(TOPIC, partition, via=CONTROLLER_ID) == follower, 30,
                   f"broker {follower} elected (unclean) for {TOPIC}-{partition}")
        # writes to the new leader take the offsets the dead one had used,
        # so reads go past every record only it held
        produce(c.bootstrap, history, partition, BEFORE + ALONE, ALONE + 1)
        read_all(c.bootstrap, history, partition)
        counts, report = history.check(tmp_path / "history.txt")
        # what only the dead leader held, and nothing else
        assert counts["lost-write"] == ALONE, report
        assert counts["unseen"] == 0, report
    finally:
        c.stop()
