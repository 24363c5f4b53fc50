"""Partition reassignment (KIP-455) driven by Apache Kafka's own
kafka-reassign-partitions against `serve --brokers 3`:

- --execute moves an RF 2 partition's replica from broker 1 to broker 2,
  which had none of the topic; while replication to broker 2 is cut (the
  control API's links) the reassignment stays in progress and
  ListPartitionReassignments (the tool's --list, and a raw request) shows
  the replicas being added and removed;
- once healed, --verify reports it complete: the replicas are the target,
  broker 2's log holds every acknowledged record (the same batches as the
  leader's; then it leads and a consumer reads them all back from it), and
  broker 1's replica is stopped and its log deleted;
- a reassignment that removes the leader completes with a new leader
  from the target, which serves every record;
- --cancel reverts a reassignment in progress to the original replicas and
  deletes the partial replica;
- AlterPartitionReassignments refuses an unregistered broker, a broker
  twice and an empty list (INVALID_REPLICA_ASSIGNMENT), an unknown topic
  (UNKNOWN_TOPIC_OR_PARTITION), and a cancel with nothing in progress
  (NO_REASSIGNMENT_IN_PROGRESS).
"""

import json
import struct
import subprocess
import urllib.request

import kiq_wire as kw
from cluster import HOST, OneProcessCluster, read_batches, wait_until
from conftest import ROOT

KAFKA_LIB = ROOT / "build" / "kafka" / "lib"  # scripts/kafka.sh fetch (make deps)
API_ALTER_REASSIGNMENTS = 45
API_LIST_REASSIGNMENTS = 46
ERR_UNKNOWN_TOPIC_OR_PARTITION = 3
ERR_INVALID_REPLICA_ASSIGNMENT = 39
ERR_NO_REASSIGNMENT_IN_PROGRESS = 85
RECORDS = 500
OVERRIDES = ("replica.fetch.wait.max.ms=100", "replica.lag.time.max.ms=2000", "min.insync.replicas=1")


# ---------------------------------------------------------------- Kafka's tool

def reassign(c, tmp_path, *args, plan=None):
    """kafka-reassign-partitions --bootstrap-server (broker 1) args, with
    plan written to a JSON file as --reassignment-json-file: (exit code,
    stdout + stderr)."""
    jars = sorted(KAFKA_LIB.glob("*.jar"))
    assert jars, f"no Apache Kafka jars in {KAFKA_LIB} (make deps fetches them)"
    cmd = ["java", "-Xmx256m", "-cp", ":".join(map(str, jars)),
           "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
           "--bootstrap-server", f"{HOST}:{c.base + 1}", *args]
    if plan is not None:
        f = tmp_path / "plan.json"
        f.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": t, "partition": p, "replicas": r} for t, p, r in plan]}))
        cmd += ["--reassignment-json-file", str(f)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def tool_ok(c, tmp_path, *args, plan=None):
    code, text = reassign(c, tmp_path, *args, plan=plan)
    assert code == 0, f"kafka-reassign-partitions {args}: exit {code}\n{text[-3000:]}"
    return text


# ---------------------------------------------------------------- raw requests

def compact_array(items):
    return kw.uvarint(len(items) + 1) + b"".join(items)


def int32s(ids):
    return compact_array([struct.pack(">i", i) for i in ids])


class Flex(kw.Reader):
    """A reader of flexible (compact) fields."""

    def uvarint(self):
        n, shift = 0, 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def cstring(self):
        n = self.uvarint()
        return self.take(n - 1).decode() if n else None

    def carray(self, fn):
        n = self.uvarint()
        return None if n == 0 else [fn(self) for _ in range(n - 1)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def call_flexible(broker_port, api_key, body):
    with kw.Conn(HOST, broker_port, timeout=30) as conn:
        r = Flex(conn.call(api_key, 0, body + b"\x00", flexible=True))
    r.tags()  # the response header's
    return r


def alter_reassignments(port, topic, partition, replicas):
    """{(topic, partition): (error, message)} and the top-level (error,
    message) of AlterPartitionReassignments v0; replicas None cancels."""
    part = struct.pack(">i", partition) + (b"\x00" if replicas is None else int32s(replicas)) + b"\x00"
    body = struct.pack(">i", 30000) + compact_array([kw.compact_string(topic) + compact_array([part]) + b"\x00"])
    r = call_flexible(port, API_ALTER_REASSIGNMENTS, body)
    r.int32()  # throttle
    top = (r.int16(), r.cstring())

    def p(r):
        out = (r.int32(), r.int16(), r.cstring())
        r.tags()
        return out

    def t(r):
        name = r.cstring()
        parts = r.carray(p)
        r.tags()
        return [((name, i), (e, m)) for i, e, m in parts]
    return top, dict(x for ps in r.carray(t) for x in ps)


def list_reassignments(port, topics=None):
    """{(topic, partition): (replicas, adding, removing)} of
    ListPartitionReassignments v0 (topics: {name: [partitions]}, None: all)."""
    body = struct.pack(">i", 30000) + (b"\x00" if topics is None else compact_array(
        [kw.compact_string(n) + int32s(ps) + b"\x00" for n, ps in topics.items()]))
    r = call_flexible(port, API_LIST_REASSIGNMENTS, body)
    r.int32()
    err, msg = r.int16(), r.cstring()
    assert err == 0, (err, msg)

    def ints(r):
        return r.carray(lambda r: r.int32())

    def p(r):
        out = (r.int32(), ints(r), ints(r), ints(r))
        r.tags()
        return out

    def t(r):
        name = r.cstring()
        parts = r.carray(p)
        r.tags()
        return [((name, i), (rep, add, rem)) for i, rep, add, rem in parts]
    return dict(x for ps in r.carray(t) for x in ps)


# ---------------------------------------------------------------- the cluster

def links(c, action, frm, to):
    req = urllib.request.Request(f"http://{c.http[0]}/api/links", method="POST",
                                 data=json.dumps({"from": frm, "to": to, "action": action}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def partition_state(c, topic, partition, via=0):
    from cluster import metadata
    return metadata(HOST, c.base + via, [topic])["topics"][topic]["partitions"][partition]


def create(c, topic):
    """topic with one partition of RF 2, placed by the controller; its
    (leader, follower, the broker without a replica) once every broker's
    metadata shows both replicas in sync."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": c.bootstrap})
    a.create_topics([NewTopic(topic, 1, 2)], request_timeout=15)[topic].result(20)

    def healthy():
        sts = [partition_state(c, topic, 0, via) for via in range(3)]
        return sts[0] if all(s["leader"] >= 0 and len(s["isr"]) == 2 and s == sts[0] for s in sts) else None
    st = wait_until(healthy, 20, f"{topic}-0 with a leader and an ISR of 2 on every broker")
    leader, follower = st["replicas"]
    assert st["leader"] == leader, st
    return leader, follower, ({0, 1, 2} - {leader, follower}).pop()


def produce(c, topic, n):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for i in range(n):
        p.produce(topic, value=f"record-{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(30) == 0 and not errors, errors


def log_of(c, broker, topic):
    return read_batches(c.data_dir / f"broker-{broker}" / f"{topic}-0")


def test_kafka_reassign_partitions_moves_a_replica_to_a_new_broker(tmp_path):
    c = OneProcessCluster(tmp_path, 3, overrides=OVERRIDES)
    c.start()
    try:
        lead, old, new = create(c, "moving")
        produce(c, "moving", RECORDS)
        assert log_of(c, new, "moving") is None  # the new broker holds none of the topic
        target = [new, lead]
        plan = [("moving", 0, target)]

        # replication to the new broker cut: the reassignment stays in progress
        links(c, "cut", lead, new)
        text = tool_ok(c, tmp_path, "--execute", plan=plan)
        assert "Successfully started partition reassignment" in text, text
        moving = {("moving", 0): ([new, lead, old], [new], [old])}
        assert list_reassignments(c.base + 2) == moving
        assert list_reassignments(c.base, {"moving": [0], "nothing": [0]}) == moving
        assert "moving-0" in tool_ok(c, tmp_path, "--list")
        assert "still in progress" in tool_ok(c, tmp_path, "--verify", plan=plan)
        st = partition_state(c, "moving", 0)
        assert st["replicas"] == [new, lead, old] and st["leader"] == lead, st

        links(c, "heal", lead, new)
        wait_until(lambda: "is completed" in tool_ok(c, tmp_path, "--verify", plan=plan),
                   60, "kafka-reassign-partitions --verify: complete", interval=1.0)
        assert list_reassignments(c.base + 1) == {}
        for via in range(3):
            st = wait_until(lambda: (lambda s: s if s["replicas"] == target else None)(
                partition_state(c, "moving", 0, via)), 20, f"broker {via}'s metadata: replicas {target}")
            assert sorted(st["isr"]) == sorted(target), st
        # the new replica's log: every acknowledged record, the leader's batches
        leader_log = log_of(c, lead, "moving")
        assert sum(last - base + 1 for base, last, _, _ in leader_log) == RECORDS
        wait_until(lambda: log_of(c, new, "moving") == leader_log, 20, "the new replica's log the same as the leader's")
        # the old replica stopped and deleted
        wait_until(lambda: not (c.data_dir / f"broker-{old}" / "moving-0").exists(), 20,
                   f"broker {old}'s moving-0 deleted")

        # the new broker, first in the replicas, leads (preferred election) and serves them all
        req = urllib.request.Request(f"http://{c.http[0]}/api/leaders", data=json.dumps({"preferred": True}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).close()
        wait_until(lambda: partition_state(c, "moving", 0)["leader"] == new, 20, f"broker {new} leads moving-0")
        from confluent_kafka import Consumer, TopicPartition
        cons = Consumer({"bootstrap.servers": f"{HOST}:{c.base + new}", "group.id": "reassigned",
                         "enable.auto.commit": False})
        cons.assign([TopicPartition("moving", 0, 0)])
        got = []
        try:
            wait_until(lambda: got.extend(m.value() for m in cons.consume(100, 1.0) if not m.error())
                       or len(got) >= RECORDS, 30, f"every record consumed from broker {new}")
        finally:
            cons.close()
        assert got == [f"record-{i}".encode() for i in range(RECORDS)]
    finally:
        c.stop()


def test_a_reassignment_away_from_the_leader_moves_the_leadership(tmp_path):
    c = OneProcessCluster(tmp_path, 3, overrides=OVERRIDES)
    c.start()
    try:
        lead, kept, new = create(c, "away")
        produce(c, "away", RECORDS)
        target = [new, kept]
        tool_ok(c, tmp_path, "--execute", plan=[("away", 0, target)])
        wait_until(lambda: "is completed" in tool_ok(c, tmp_path, "--verify", plan=[("away", 0, target)]),
                   60, "kafka-reassign-partitions --verify: complete", interval=1.0)
        for via in range(3):
            st = wait_until(lambda: (lambda s: s if s["replicas"] == target and s["leader"] in target else None)(
                partition_state(c, "away", 0, via)), 20, f"broker {via}'s metadata: replicas {target}, led by one")
            assert sorted(st["isr"]) == sorted(target), st
        wait_until(lambda: not (c.data_dir / f"broker-{lead}" / "away-0").exists(), 20,
                   f"the old leader {lead}'s away-0 deleted")
        from confluent_kafka import Consumer, TopicPartition
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "away", "enable.auto.commit": False})
        cons.assign([TopicPartition("away", 0, 0)])
        got = []
        try:
            wait_until(lambda: got.extend(m.value() for m in cons.consume(100, 1.0) if not m.error())
                       or len(got) >= RECORDS, 30, "every record consumed from the new leader")
        finally:
            cons.close()
        assert got == [f"record-{i}".encode() for i in range(RECORDS)]
    finally:
        c.stop()


def test_cancel_and_refusals(tmp_path):
    c = OneProcessCluster(tmp_path, 3, overrides=OVERRIDES)
    c.start()
    try:
        lead, old, new = create(c, "staying")
        produce(c, "staying", 50)

        top, res = alter_reassignments(c.base + 1, "staying", 0, [lead, 9])
        assert top == (0, None)
        err, msg = res[("staying", 0)]
        assert err == ERR_INVALID_REPLICA_ASSIGNMENT and "broker 9" in msg, (err, msg)
        err, msg = alter_reassignments(c.base, "staying", 0, [new, new])[1][("staying", 0)]
        assert err == ERR_INVALID_REPLICA_ASSIGNMENT and "more than once" in msg, (err, msg)
        assert alter_reassignments(c.base, "staying", 0, [])[1][("staying", 0)][0] == ERR_INVALID_REPLICA_ASSIGNMENT
        assert alter_reassignments(c.base, "nothing", 0, [0, 1])[1][("nothing", 0)][0] == \
            ERR_UNKNOWN_TOPIC_OR_PARTITION
        assert alter_reassignments(c.base, "staying", 7, [0, 1])[1][("staying", 7)][0] == \
            ERR_UNKNOWN_TOPIC_OR_PARTITION
        err, msg = alter_reassignments(c.base + 2, "staying", 0, None)[1][("staying", 0)]
        assert err == ERR_NO_REASSIGNMENT_IN_PROGRESS, (err, msg)
        assert list_reassignments(c.base) == {}

        # a reassignment held in progress, then cancelled with the tool
        links(c, "cut", lead, new)
        plan = [("staying", 0, [lead, new])]
        tool_ok(c, tmp_path, "--execute", plan=plan)
        assert list_reassignments(c.base) == {("staying", 0): ([lead, new, old], [new], [old])}
        wait_until(lambda: (c.data_dir / f"broker-{new}" / "staying-0").exists(), 20,
                   f"broker {new} hosts staying-0")
        text = tool_ok(c, tmp_path, "--cancel", plan=plan)
        assert "Successfully cancelled" in text, text
        assert list_reassignments(c.base) == {}
        for via in range(3):
            wait_until(lambda: partition_state(c, "staying", 0, via)["replicas"] == [lead, old], 20,
                       f"broker {via}'s metadata: replicas back to {[lead, old]}")
        # the partial replica is stopped and deleted; the originals keep theirs
        wait_until(lambda: not (c.data_dir / f"broker-{new}" / "staying-0").exists(), 20,
                   f"broker {new}'s staying-0 deleted")
        assert log_of(c, old, "staying") is not None
        err, msg = alter_reassignments(c.base, "staying", 0, None)[1][("staying", 0)]
        assert err == ERR_NO_REASSIGNMENT_IN_PROGRESS, (err, msg)
        links(c, "heal", lead, new)
    finally:
        c.stop()
