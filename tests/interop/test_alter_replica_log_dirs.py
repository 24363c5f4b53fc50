"""AlterReplicaLogDirs (KIP-113) on a broker with two log directories,
driven by Apache Kafka's own kafka-reassign-partitions with "log_dirs" in
its plan while a producer keeps writing:

- the partition ends in the new directory (DescribeLogDirs, and the files),
  the old directory no longer holds it, and every acknowledged record reads
  back, in order, with nothing lost or doubled;
- while it moves, DescribeLogDirs may show the copy as a future replica
  (isFutureKey) in the target directory, and never elsewhere;
- a path that is not one of log.dirs gets LOG_DIR_NOT_FOUND, a partition
  the cluster does not have UNKNOWN_TOPIC_OR_PARTITION (as Kafka 4 answers),
  and the broker stays up.
"""

import json
import os
import struct
import subprocess
import threading

import pytest

import kiq_wire as kw
from cluster import wait_until
from conftest import ROOT, Broker

KAFKA_LIB = ROOT / "build" / "kafka" / "lib"
API_ALTER_REPLICA_LOG_DIRS = 34
API_DESCRIBE_LOG_DIRS = 35
ERR_UNKNOWN_TOPIC_OR_PARTITION = 3
ERR_LOG_DIR_NOT_FOUND = 57
TOPIC = "moving"


@pytest.fixture(scope="module")
def jbod(tmp_path_factory):
    work = tmp_path_factory.mktemp("alter-log-dirs")
    dirs = [os.path.realpath(work / "d1"), os.path.realpath(work / "d2")]
    b = Broker(work, overrides=[f"log.dirs={','.join(dirs)}", "log.segment.bytes=65536"])
    b.start()
    try:
        yield b, dirs
    finally:
        b.stop()


def call(b, api_key, version, body, flexible=False):
    with kw.Conn(b.host, b.port, timeout=30) as conn:
        r = kw.Reader(conn.call(api_key, version, body, flexible=flexible))
    return r


def describe_log_dirs(b):
    """{dir: {(topic, partition): (size, is_future)}} from DescribeLogDirs v1
    (every partition)."""
    r = call(b, API_DESCRIBE_LOG_DIRS, 1, struct.pack(">i", -1))
    r.int32()  # throttle

    def part(r):
        return r.int32(), r.int64(), r.int64(), r.int8() != 0

    def topic(r):
        name = r.string()
        return [(name, p, size, future) for p, size, _lag, future in r.array(part)]

    def result(r):
        err, path = r.int16(), r.string()
        assert err == 0, (path, err)
        return path, {(t, p): (size, fut) for ts in r.array(topic) for t, p, size, fut in ts}
    return dict(r.array(result))


def alter_replica_log_dirs(b, path, topic, partitions):
    """{partition: error} of AlterReplicaLogDirs v1 moving topic's
    partitions to path."""
    body = kw.array([kw.string(path) + kw.array([kw.string(topic) + kw.array(
        [struct.pack(">i", p) for p in partitions])])])
    r = call(b, API_ALTER_REPLICA_LOG_DIRS, 1, body)
    r.int32()
    out = {}
    for name, parts in r.array(lambda r: (r.string(), r.array(lambda r: (r.int32(), r.int16())))):
        assert name == topic
        out.update(parts)
    return out


def where(b, topic, partition):
    """(current dir, future dir or None) of topic's partition."""
    cur = fut = None
    for path, parts in describe_log_dirs(b).items():
        entry = parts.get((topic, partition))
        if entry and entry[1]:
            assert fut is None, "two future replicas"
            fut = path
        elif entry:
            assert cur is None, "the partition in two directories"
            cur = path
    return cur, fut


def reassign_tool(b, tmp_path, plan):
    jars = sorted(KAFKA_LIB.glob("*.jar"))
    assert jars, f"no Apache Kafka jars in {KAFKA_LIB} (make deps fetches them)"
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(plan))
    cmd = ["java", "-Xmx256m", "-cp", ":".join(map(str, jars)),
           "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
           "--bootstrap-server", b.bootstrap, "--execute", "--reassignment-json-file", str(f)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


class Writer(threading.Thread):
    """Produces numbered records (acks=all, idempotent) until stopped; keeps
    the values the broker acknowledged."""

    def __init__(self, bootstrap):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                           "enable.idempotence": True})
        self.acked, self.errors = [], []
        self.stop_flag = threading.Event()

    def delivered(self, err, msg):
        if err:
            self.errors.append(err)
        else:
            self.acked.append(msg.value().decode())

    def run(self):
        i = 0
        while not self.stop_flag.is_set():
            self.p.produce(TOPIC, value=f"r-{i:07d}".encode(), partition=0, on_delivery=self.delivered)
            i += 1
            if i % 200 == 0:
                self.p.poll(0.01)
        self.p.flush(30)


def read_all(bootstrap, n):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "mover-check", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got = []
    try:
        def done():
            for m in c.consume(1000, 1.0):
                assert not m.error(), m.error()
                got.append(m.value().decode())
            return len(got) >= n
        wait_until(done, 60, f"{n} records read back")
    finally:
        c.close()
    return got


def test_move_while_producing(jbod, tmp_path):
    b, dirs = jbod
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)], request_timeout=15)[TOPIC].result(20)
    src = wait_until(lambda: where(b, TOPIC, 0)[0], 20, "the partition placed")
    dst = next(d for d in dirs if d != src)
    w = Writer(b.bootstrap)
    w.start()
    try:
        wait_until(lambda: len(w.acked) >= 20000, 60, "records acknowledged before the move")
        code, text = reassign_tool(b, tmp_path, {"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": [0], "log_dirs": [dst]}]})
        assert code == 0, f"kafka-reassign-partitions: exit {code}\n{text[-3000:]}"
        seen_future = []

        def moved():
            cur, fut = where(b, TOPIC, 0)
            if fut:
                assert fut == dst, (fut, dst)
                seen_future.append(fut)
            return cur == dst and fut is None
        wait_until(moved, 60, f"{TOPIC}-0 in {dst}")
        mark = len(w.acked)
        wait_until(lambda: len(w.acked) >= mark + 2000, 60, "records acknowledged after the move")
    finally:
        w.stop_flag.set()
        w.join(60)
    assert not w.errors, w.errors[:5]
    assert b.alive()
    assert os.path.isdir(os.path.join(dst, f"{TOPIC}-0"))
    assert not os.path.exists(os.path.join(src, f"{TOPIC}-0"))
    assert not [n for n in os.listdir(src) + os.listdir(dst) if n.endswith(("-future", "-delete"))]
    got = read_all(b.bootstrap, len(w.acked))
    assert got == sorted(got) and len(set(got)) == len(got), "records out of order or doubled"
    assert set(w.acked) <= set(got), "acknowledged records lost"
    # a restart finds it in its new directory
    b.restart()
    assert wait_until(lambda: where(b, TOPIC, 0), 20, "the partition after a restart") == (dst, None)
    assert len(read_all(b.bootstrap, len(w.acked))) >= len(w.acked)


def test_bad_input(jbod):
    b, dirs = jbod
    assert alter_replica_log_dirs(b, "/no/such/dir", TOPIC, [0]) == {0: ERR_LOG_DIR_NOT_FOUND}
    assert alter_replica_log_dirs(b, dirs[0], "no-such-topic", [0]) == {0: ERR_UNKNOWN_TOPIC_OR_PARTITION}
    assert alter_replica_log_dirs(b, dirs[0], TOPIC, [7]) == {7: ERR_UNKNOWN_TOPIC_OR_PARTITION}
    assert b.alive()
    # already where it is asked to be: nothing to do
    cur, _ = where(b, TOPIC, 0)
    assert alter_replica_log_dirs(b, cur, TOPIC, [0]) == {0: 0}
    assert where(b, TOPIC, 0) == (cur, None)
