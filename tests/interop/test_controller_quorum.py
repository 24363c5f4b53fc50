"""Losing the active controller stops nothing: three `serve` processes, each
a combined node (broker and controller quorum voter), RF 3 and
min.insync.replicas=2. The process of the active controller is stopped
(SIGSTOP) or killed (SIGKILL) for OUTAGE_S while a writer per partition
sends acks=all Produce requests to its partition's current leader:

- a new controller leads (its election time and each partition's longest
  acknowledgement gap are printed, not asserted: tests assert no wall-clock
  times);
- every partition acknowledges writes during the outage: those led by the
  other two and those led by the lost node, which move;
- CreateTopics succeeds during the outage;
- once the node is back, every acknowledged record is read back where it
  was acknowledged.

And Apache Kafka's kafka-metadata-quorum (--bootstrap-controller, and
--bootstrap-server through a broker) describes
the quorum of `serve --brokers 3`: its leader, epoch, voters and each
one's replication, and a new leader once the old one's broker is killed.
UnregisterBroker (through any broker) removes a stopped broker's
registration, and refuses an unknown id.
"""

import json
import struct
import subprocess
import threading
import time
import urllib.request

import pytest

import kiq_clients as kc
import kiq_wire as kw
from cluster import CLUSTER_OVERRIDES, HOST, Cluster, OneProcessCluster, wait_until
from conftest import ROOT

API_PRODUCE = 0
OUTAGE_S = 15.0
SESSION_MS = next(int(kv.split("=")[1]) for kv in CLUSTER_OVERRIDES if kv.startswith("broker.session.timeout.ms="))
MOVE_BOUND_S = SESSION_MS / 1000 + 7.0
PARTITIONS = 6
VOTERS = (0, 1, 2)


class Writer(threading.Thread):
    """acks=all Produce of one record at a time to one partition, always to
    the leader the live brokers name; keeps (offset, value) of each ack and
    the time of each."""

    def __init__(self, cluster, topic, partition):
        super().__init__(daemon=True)
        self.c, self.topic, self.partition = cluster, topic, partition
        self.halt = threading.Event()
        self.acked, self.times, self.errors = [], [], []
        self.conn = self.conn_to = None

    def leader(self):
        for b in self.c.alive():
            try:
                st = b.metadata([self.topic], timeout=1.0)["topics"][self.topic]["partitions"][self.partition]
            except (OSError, AssertionError, ConnectionError, KeyError):
                continue
            if st["leader"] >= 0:
                return self.c[st["leader"]]
        return None

    def send(self, value):
        if self.conn is None:
            leader = self.leader()
            if leader is None:
                return None
            self.conn, self.conn_to = kw.Conn(leader.host, leader.port, timeout=1.0), leader.id
        batch = kw.record_batch([(None, value, [])])
        resp = self.conn.call(API_PRODUCE, 3, kw.produce_v3_body(self.topic, self.partition, batch, acks=-1,
                                                                 timeout_ms=1000))
        return kw.parse_produce_v3(resp)[(self.topic, self.partition)]

    def drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def run(self):
        n = 0
        while not self.halt.is_set():
            value = f"{self.partition}-{n}".encode()
            try:
                got = self.send(value)
            except (OSError, AssertionError, ConnectionError) as e:
                self.errors.append(repr(e))
                self.drop()
                time.sleep(0.05)
                continue
            if got is None or got[0] != 0:
                self.errors.append(got)
                self.drop()
                time.sleep(0.05)
                continue
            self.acked.append((got[1], value))
            self.times.append(time.monotonic())
            n += 1
            time.sleep(0.01)
        self.drop()

    def longest_gap(self, since):
        times = [t for t in self.times if t >= since - 1.0]
        return max((b - a for a, b in zip(times, times[1:])), default=float("inf"))


def active_controller(c, exclude=()):
    """The controller every live broker (but those excluded) names, or None."""
    named = {b.metadata(timeout=1.0)["controller"] for b in c.alive() if b.id not in exclude}
    return named.pop() if len(named) == 1 else None


@pytest.mark.parametrize("how", ["pause", "kill"])
def test_losing_the_active_controller_stops_nothing(tmp_path, how):
    c = Cluster(tmp_path, voters=VOTERS)
    c.start()
    writers = []
    try:
        topic = "chaos"
        parts = c.create_topic(topic, PARTITIONS)
        old = active_controller(c)
        assert old in VOTERS, f"controller {old}"
        victim = c[old]
        writers = [Writer(c, topic, p) for p in range(PARTITIONS)]
        for w in writers:
            w.start()
        wait_until(lambda: all(len(w.acked) >= 5 for w in writers), 20, "every writer acknowledged")
        led_by_victim = {p for p, st in parts.items() if st["leader"] == old}

        stopped = time.monotonic()
        victim.pause() if how == "pause" else victim.kill()
        others = [b for b in c.brokers if b is not victim]

        def new_leader():
            named = {b.metadata(timeout=1.0)["controller"] for b in others}
            return len(named) == 1 and named.pop() not in (old, -1)
        wait_until(new_leader, 10, "a new active controller", interval=0.02)
        took = time.monotonic() - stopped
        new = active_controller(c, exclude=(old,))

        made = "made-during-outage"
        a = kc.admin(",".join(b.bootstrap for b in others))
        from confluent_kafka.admin import NewTopic
        a.create_topics([NewTopic(made, 2, 2)], operation_timeout=10, request_timeout=15)[made].result(timeout=20)

        wait_until(lambda: all(st["leader"] not in (old, -1)
                               for st in c.partitions(topic, via=others[0].id).values()),
                   MOVE_BOUND_S, f"no partition led by broker {old}")
        moved = time.monotonic()
        wait_until(lambda: all(w.times and w.times[-1] > moved for w in writers), 20,
                   "every writer acknowledged while the node was down")
        during = {w.partition: sum(1 for t in w.times if t > stopped) for w in writers}
        left = OUTAGE_S - (time.monotonic() - stopped)
        if left > 0:
            time.sleep(left)  # the outage's length, not a wait for a condition
        victim.resume() if how == "pause" else victim.start()
        back = time.monotonic()
        wait_until(lambda: all(w.times and w.times[-1] > back for w in writers), 20,
                   "every writer acknowledged after the node came back")
        for w in writers:
            w.halt.set()
        for w in writers:
            w.join(10)

        gaps = {w.partition: round(w.longest_gap(stopped), 2) for w in writers}
        print(f"{how}: new controller {new} after {took:.3f} s; longest ack gaps {gaps}; "
              f"partitions led by {old}: {sorted(led_by_victim)}; acknowledged during the outage {during}")
        assert new not in (old, -1, None), f"new controller {new}"

        c.wait_healthy(topic, PARTITIONS, 3, timeout=30)
        got = kc.consume_confluent_all(c.bootstrap, topic, range(PARTITIONS))
        stored = {(p, off): v for p, off, _k, v, _h in got}
        for w in writers:
            lost = [(off, v) for off, v in w.acked if stored.get((w.partition, off)) != v]
            assert not lost, f"partition {w.partition}: {len(lost)} acknowledged records not read back: {lost[:5]}"
        assert c.partitions(made, via=old)
    finally:
        for w in writers:
            w.halt.set()
        c.stop()


# ---------------------------------------------------------------- Kafka's own tool

KAFKA_LIB = ROOT / "build" / "kafka" / "lib"  # scripts/kafka.sh fetch (make deps)


# The tool's admin client gives up within 10 s instead of its 60 s default:
# asked just after a leader died, it may still be sent there, and a wait
# for the new leader asks again rather than hang on the dead one.
SHORT_TIMEOUTS = ROOT / "build" / "test-artifacts" / "quorum-tool.properties"


def metadata_quorum(controller, *args, via="--bootstrap-controller"):
    """kafka-metadata-quorum --bootstrap-controller controller describe args
    (or --bootstrap-server, a broker): its output, from the pinned Apache
    Kafka's jars."""
    jars = sorted(KAFKA_LIB.glob("*.jar"))
    assert jars, f"no Apache Kafka jars in {KAFKA_LIB} (make deps fetches them)"
    SHORT_TIMEOUTS.parent.mkdir(parents=True, exist_ok=True)
    SHORT_TIMEOUTS.write_text("default.api.timeout.ms=10000\nrequest.timeout.ms=5000\n")
    out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, jars)),
                          "org.apache.kafka.tools.MetadataQuorumCommand", via, controller,
                          "--command-config", str(SHORT_TIMEOUTS), "describe", *args],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"kafka-metadata-quorum {args}: exit {out.returncode}\n{out.stderr[-3000:]}"
    return out.stdout


def status_of(text):
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def test_kafka_metadata_quorum_describes_the_quorum(tmp_path):
    c = OneProcessCluster(tmp_path, 3)
    c.start()
    try:
        controllers = [f"{HOST}:{c.base + 100 + i}" for i in range(3)]
        st = status_of(metadata_quorum(controllers[1], "--status"))
        leader, epoch = int(st["LeaderId"]), int(st["LeaderEpoch"])
        assert leader in (0, 1, 2) and epoch >= 1, st
        assert int(st["HighWatermark"]) > 0, st
        assert [v["id"] for v in json.loads(st["CurrentVoters"])] == [0, 1, 2], st
        assert json.loads(st["CurrentObservers"]) == [], st
        # a broker's client listener hands it to the active controller
        via_broker = status_of(metadata_quorum(f"{HOST}:{c.base + 2}", "--status", via="--bootstrap-server"))
        assert (via_broker["LeaderId"], via_broker["LeaderEpoch"]) == (st["LeaderId"], st["LeaderEpoch"]), via_broker

        def caught_up():
            rows = [line.split() for line in metadata_quorum(controllers[2], "--replication").splitlines()[1:]]
            by_id = {int(r[0]): r for r in rows}
            return (sorted(by_id) == [0, 1, 2] and [r[-1] for r in rows].count("Leader") == 1
                    and by_id[leader][-1] == "Leader" and all(r[3] == "0" for r in rows) and by_id)
        rows = wait_until(caught_up, 30, "every voter caught up in --replication", interval=0.5)
        assert len({r[2] for r in rows.values()}) == 1, rows  # one log end offset

        # the leader's broker killed over the control API: the tool, asking
        # a survivor, names the new leader in a higher epoch
        req = urllib.request.Request(f"http://{c.http[(leader + 1) % 3]}/api/brokers/{leader}/kill", data=b"{}",
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 202  # queued: the set's supervisor kills it
        survivor = controllers[(leader + 1) % 3]

        def moved():
            s = status_of(metadata_quorum(survivor, "--status"))
            return s if int(s["LeaderId"]) not in (leader, -1) and int(s["LeaderEpoch"]) > epoch else None
        st = wait_until(moved, 30, "a new quorum leader in kafka-metadata-quorum", interval=0.5)
        assert int(st["LeaderId"]) in set(range(3)) - {leader}
    finally:
        c.stop()


# ---------------------------------------------------------------- UnregisterBroker

API_UNREGISTER_BROKER = 64
ERR_BROKER_ID_NOT_REGISTERED = 102


def read_uvarint(r):
    n, shift = 0, 0
    while True:
        b = r.take(1)[0]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n
        shift += 7


def unregister_broker(broker, broker_id):
    """(error code, message) of UnregisterBroker v0 sent to broker's client
    listener (which forwards it to the controller)."""
    with kw.Conn(broker.host, broker.port, timeout=30) as conn:
        r = kw.Reader(conn.call(API_UNREGISTER_BROKER, 0, struct.pack(">i", broker_id) + b"\x00", flexible=True))
    read_uvarint(r)  # the response header's tagged fields
    r.int32()  # throttle
    err = r.int16()
    n = read_uvarint(r)  # compact nullable string: length + 1, 0 for null
    return err, (r.take(n - 1).decode() if n else None)


def registered(c, via):
    """The broker ids the controller has registered, from its /api/state."""
    with urllib.request.urlopen(f"http://{c[via].http}/api/state", timeout=10) as resp:
        view = json.loads(resp.read())["controller_view"]
    return {b["id"]: b["fenced"] for b in view["brokers"]}


def test_unregister_broker_removes_a_stopped_brokers_registration(tmp_path):
    c = Cluster(tmp_path)
    c.start()
    try:
        err, msg = unregister_broker(c[1], 7)
        assert err == ERR_BROKER_ID_NOT_REGISTERED and "7" in msg, (err, msg)

        c[2].stop()
        wait_until(lambda: registered(c, 0).get(2) is True, 20, "broker 2 fenced after its clean stop")
        assert unregister_broker(c[1], 2) == (0, None)
        assert set(registered(c, 0)) == {0, 1}
        # gone for good: asked again, it is not registered
        assert unregister_broker(c[1], 2)[0] == ERR_BROKER_ID_NOT_REGISTERED

        # started again, it registers anew
        c[2].start()
        c.wait_registered()
        assert registered(c, 0) == {0: False, 1: False, 2: False}
    finally:
        c.stop()
