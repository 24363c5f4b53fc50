"""No I/O thread waits on another broker: the controller's broker is paused
(SIGSTOP) for 5 s while CreateTopics, auto-creating Metadata and a
FindCoordinator that must create __transaction_state arrive at broker 1, more
of them than broker 1 has I/O threads. Broker 1 keeps answering its own
requests (ApiVersions, Produce, Fetch of a partition it leads alone)
throughout, and once the controller is back every forwarded request is
answered: done, or timed out with Kafka's error for it."""

import re
import struct
import threading
import time
import urllib.request

import kiq_wire as kw
from cluster import CLUSTER_OVERRIDES, Cluster, wait_until
from test_zero_copy import fetch_v4_body, parse_fetch_v4

API_PRODUCE, API_FETCH, API_METADATA, API_FIND_COORDINATOR, API_API_VERSIONS, API_CREATE_TOPICS = 0, 1, 3, 10, 18, 19
PAUSE_S = 5.0
IO_THREADS = 2
FORWARDED = 8  # parked at once: four times broker 1's I/O threads

OVERRIDES = [kv for kv in CLUSTER_OVERRIDES if not kv.startswith("broker.session.timeout.ms=")] + [
    f"num.io.threads={IO_THREADS}",
    # the paused controller must not fence the others for the heartbeats
    # it did not hear while it was stopped
    "broker.session.timeout.ms=30000",
]

ERR_NONE, ERR_LEADER_NOT_AVAILABLE, ERR_REQUEST_TIMED_OUT, ERR_COORDINATOR_NOT_AVAILABLE = 0, 5, 7, 15


def create_topics_v2_body(topic, partitions, rf, timeout_ms):
    t = kw.string(topic) + struct.pack(">ih", partitions, rf) + kw.array([]) + kw.array([])
    return kw.array([t]) + struct.pack(">ib", timeout_ms, 0)


def parse_create_topics_v2(payload):
    r = kw.Reader(payload)
    r.int32()  # throttle
    return dict(r.array(lambda r: (r.string(), (r.int16(), r.string()))))


def find_coordinator_v1(conn, txn_id):
    r = kw.Reader(conn.call(API_FIND_COORDINATOR, 1, kw.string(txn_id) + struct.pack(">b", 1)))
    r.int32()
    return r.int16()


class Forwarded(threading.Thread):
    """One request that goes to the controller, on its own connection to
    broker 1: what came back and when."""

    def __init__(self, broker, kind, n):
        super().__init__(daemon=True)
        self.broker, self.kind, self.n = broker, kind, n
        self.result = self.error = self.at = None

    def run(self):
        try:
            with kw.Conn(self.broker.host, self.broker.port, timeout=60) as c:
                if self.kind == "create":
                    topic = f"made-while-paused-{self.n}"
                    got = parse_create_topics_v2(c.call(API_CREATE_TOPICS, 2,
                                                        create_topics_v2_body(topic, 1, 2, 20000)))
                    self.result = got[topic][0]
                elif self.kind == "metadata":
                    md = kw.parse_metadata_v1(c.call(API_METADATA, 1, kw.metadata_v1_body([f"auto-{self.n}"])))
                    self.result = md["topics"][f"auto-{self.n}"][0]
                else:
                    self.result = find_coordinator_v1(c, f"txn-{self.n}")
        except Exception as e:  # noqa: BLE001 - recorded, asserted below
            self.error = repr(e)
        self.at = time.monotonic()


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def test_a_paused_controller_holds_no_io_thread(tmp_path):
    c = Cluster(tmp_path / "cluster", overrides=OVERRIDES)
    c.start()
    try:
        b1 = c[1]
        # a partition broker 1 leads alone: serving it involves no one else
        parts = c.create_topic("own", 3, rf=1)
        mine = [p for p, st in parts.items() if st["leader"] == 1]
        assert mine, parts
        part = mine[0]
        batch = kw.record_batch([(b"k", b"v" * 100, [])])
        conn = kw.Conn(b1.host, b1.port, timeout=30)

        def api_versions():
            return kw.parse_api_versions_v0(conn.call(API_API_VERSIONS, 0, b""))[0]

        def produce():
            return kw.parse_produce_v3(conn.call(API_PRODUCE, 3, kw.produce_v3_body("own", part, batch, acks=1)))[
                ("own", part)][0]

        def fetch():
            got = parse_fetch_v4(conn.call(API_FETCH, 4, fetch_v4_body("own", part, 0)))
            return got[("own", part)][0]

        # the partition's leader takes its role with LeaderAndIsr, which may
        # come a moment after the metadata that names it
        wait_until(lambda: produce() == ERR_NONE, 20, f"broker 1 leading own-{part}")
        for f in (api_versions, produce, fetch):
            assert f() == ERR_NONE

        c[0].pause()
        paused_at = time.monotonic()
        kinds = ["create"] * 4 + ["metadata"] * 2 + ["coordinator"] * 2
        assert len(kinds) == FORWARDED
        forwarded = [Forwarded(b1, k, i) for i, k in enumerate(kinds)]
        for f in forwarded:
            f.start()
        worst = {"ApiVersions": 0.0, "Produce": 0.0, "Fetch": 0.0}
        rounds = 0
        while time.monotonic() - paused_at < PAUSE_S:
            for name, f in (("ApiVersions", api_versions), ("Produce", produce), ("Fetch", fetch)):
                took, err = timed(f)
                assert err == ERR_NONE, f"{name} answered error {err} while the controller was paused"
                worst[name] = max(worst[name], took)
            rounds += 1
        held = [f for f in forwarded if f.at is not None and f.result is not None and f.kind == "create"]
        c[0].resume()
        resumed_at = time.monotonic()
        print(f"\nworst latencies at broker 1 over {rounds} rounds while its controller was paused: " +
              ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in worst.items()))
        # blocked I/O threads would have held these for the whole pause
        for name, w in worst.items():
            assert w < 1.0, f"{name} took {w:.2f} s while the controller was paused"
        assert not held, "CreateTopics answered while the controller was stopped"

        for f in forwarded:
            f.join(timeout=60)
            assert not f.is_alive(), f"{f.kind} {f.n} never answered"
            assert f.error is None, f"{f.kind} {f.n}: {f.error}"
        allowed = {"create": {ERR_NONE, ERR_REQUEST_TIMED_OUT},
                   "metadata": {ERR_LEADER_NOT_AVAILABLE, ERR_NONE},
                   "coordinator": {ERR_NONE, ERR_COORDINATOR_NOT_AVAILABLE}}
        for f in forwarded:
            assert f.result in allowed[f.kind], f"{f.kind} {f.n} answered error {f.result}"
        print("forwarded answers: " + ", ".join(
            f"{f.kind} {f.result} at +{f.at - paused_at:.1f} s" for f in forwarded) +
            f" (resumed at +{resumed_at - paused_at:.1f} s)")

        # the cluster goes on: the topics made exist, the coordinator is found
        for f in forwarded:
            if f.kind == "create" and f.result == ERR_NONE:
                c.wait_healthy(f"made-while-paused-{f.n}", 1, rf=2)

        def coordinator():
            with kw.Conn(b1.host, b1.port) as cc:
                return find_coordinator_v1(cc, "txn-after") == ERR_NONE
        wait_until(coordinator, 30, "a transaction coordinator after the pause")
        assert api_versions() == ERR_NONE

        # the forwarding line's own counts: every forwarded call went out on
        # one kept connection, the ones past their deadline counted as expired
        with urllib.request.urlopen(f"http://{b1.http}/metrics", timeout=10) as r:
            text = r.read().decode()

        def metric(name, outcome, channel="to-controller", peer="controller"):
            m = re.search(rf'^{name}{{channel="{channel}",peer="{peer}",outcome="{outcome}"}} (\d+)$', text, re.M)
            assert m, f"{name} {channel} {outcome} missing"
            return int(m.group(1))
        calls = {o: metric("kafkaiq_peer_channel_calls_total", o) for o in ("sent", "answered", "failed", "expired")}
        assert calls["answered"] >= sum(1 for f in forwarded if f.kind == "create" and f.result == ERR_NONE), calls
        assert calls["sent"] == calls["answered"] + calls["failed"] - calls["expired"], calls
        assert metric("kafkaiq_peer_channel_connects_total", "made") >= 1
        assert re.search(r'^kafkaiq_peer_channel_queued{channel="to-controller",peer="controller"} 0$', text, re.M)
        # every other line to another broker is a channel too, with its own
        # counts: the heartbeats to the controller and a fetcher per leader
        assert metric("kafkaiq_peer_channel_calls_total", "answered", "heartbeats") > 0
        fetchers = re.findall(r'^kafkaiq_peer_channel_calls_total{channel="fetcher-(\d+)-\d+",peer="(\d+)",'
                              r'outcome="sent"} (\d+)$', text, re.M)
        assert fetchers and all(leader == peer for leader, peer, _ in fetchers), fetchers
        assert sum(int(n) for _, _, n in fetchers) > 0, fetchers
        conn.close()
    finally:
        c.stop()
