"""A replicated cluster (issue 6): three kafkaiq processes, broker 0 hosting
the controller, topics with replication factor 3 and min.insync.replicas=2.

- Failover: an idempotent confluent-kafka producer with acks=all writes
  20,000 keyed records while the leader of a partition (not the controller's
  broker) is SIGKILLed midway. Every acknowledged record is read back
  exactly once where its delivery report put it, nothing is duplicated, a
  consumer reading all along carries on past the leader change, and the
  killed broker, restarted, rejoins every ISR.
- After catch-up the replicas of each partition hold the same batches (base
  offset, leader epoch, CRC) at the same offsets in their segment files,
  and the high watermark never went back during the failover (sampled with
  ListOffsets from whichever broker Metadata names leader, and from the
  consumer's Fetch answers).
- A follower paused with SIGSTOP leaves the ISR; with the second follower
  paused too, acks=all gets NOT_ENOUGH_REPLICAS and nothing is appended;
  resumed, both catch up and rejoin.
- Controller restart: broker 0 stopped and started again replays the
  metadata log; topics, partitions, replicas, leaders and leader epochs are
  as before, and producing and consuming still work.
- `kafkaiq serve --brokers 3`: the one-command cluster lists three brokers
  and a topic with replication factor 3 works with kcat.
"""

import json
import subprocess
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition

import conftest
import kiq_clients as kc
import kiq_wire as kw
from cluster import (CONTROLLER_ID, HOST, Cluster, OneProcessCluster, log_end, metadata, read_batches,
                     wait_until)
from conftest import BROKER_BIN, EXTERNAL

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="starts its own cluster")

API_PRODUCE = 0
API_LIST_OFFSETS = 2
ERR_NOT_ENOUGH_REPLICAS = 19

FAILOVER_TOPIC = "failover"
FAILOVER_PARTITIONS = 3
N_RECORDS = 20000
KILL_AT = 10000          # records produced before the SIGKILL
CHUNK = 250              # produced per pacing step, so the kill lands mid-stream
CHUNK_PAUSE = 0.05
ISR_BOUND = 30.0         # a restarted or resumed broker is back in every ISR
LAG_BOUND = 15.0         # replica.lag.time.max.ms (2 s) plus detection and AlterPartition
FLUSH_BOUND = 90.0

_failover = {}           # what the failover test leaves for the replica checks


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    assert BROKER_BIN.exists(), f"{BROKER_BIN} is missing: run `make` first"
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    # conftest attaches this object's stderr_tail() to failing tests' reports
    c.stderr_tail = lambda limit=6000: c.stderr_tails(max(1000, limit // len(c)))
    conftest._current[request.module.__name__] = c
    try:
        c.start()
        yield c
    finally:
        conftest._current.pop(request.module.__name__, None)
        c.stop()


@pytest.fixture(autouse=True)
def _healthy(request):
    """Each cluster test starts with every broker running and registered,
    whatever an earlier failing test left behind."""
    if "cluster" not in request.fixturenames:
        yield
        return
    c = request.getfixturevalue("cluster")
    for b in c.brokers:
        b.resume()
        if not b.alive():
            b.proc = None
            b.start()
    c.wait_registered()
    yield
    died = [b for b in c.brokers if b.proc is not None and b.proc.poll() is not None]
    if died:
        pytest.fail("brokers died during this test: " + ", ".join(
            f"{b.id} (exit code {b.proc.returncode})\n{b.stderr_tail()}" for b in died), pytrace=False)


# ---------------------------------------------------------------- helpers

class WatermarkWatch(threading.Thread):
    """Samples each partition's high watermark until stopped: ListOffsets
    (latest, as consumers ask it) to the leader the cluster's Metadata
    names. (confluent-kafka's uncached get_watermark_offsets hangs past its
    timeout once a broker is gone, so raw requests are used.)"""

    def __init__(self, cluster, topic, partitions):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.partitions = cluster, topic, list(partitions)
        self.seen = {p: [] for p in self.partitions}
        self.halt = threading.Event()

    def sample(self):
        md = self.cluster.metadata([self.topic])
        for p, st in md["topics"][self.topic]["partitions"].items():
            if st["leader"] not in md["brokers"]:
                continue
            host, port = md["brokers"][st["leader"]]
            with kw.Conn(host, port, timeout=1.0) as conn:
                err, high = kw.parse_list_offsets_v1(
                    conn.call(API_LIST_OFFSETS, 1, kw.list_offsets_v1_body(self.topic, [p])))[(self.topic, p)]
            if err == 0 and high >= 0:
                self.seen[p].append((time.monotonic(), high, st["leader"], st["leader_epoch"]))

    def run(self):
        while not self.halt.is_set():
            try:
                self.sample()
            except (OSError, AssertionError, KeyError):
                pass  # a leader is gone or moving: no sample this round
            self.halt.wait(0.05)

    def stop(self):
        self.halt.set()
        self.join(15)


class TailConsumer(threading.Thread):
    """Reads every partition from the beginning while the test produces,
    through the failover, until it has reached the given end offsets."""

    def __init__(self, bootstrap, topic, partitions):
        super().__init__(daemon=True)
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kiq-cluster-tail",
                           "enable.auto.commit": False, "enable.auto.offset.store": False,
                           "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self.topic = topic
        self.records = []
        self.next = {p: 0 for p in partitions}
        self.hw = {p: [] for p in partitions}
        self.errors = []
        self.ends = None
        self.halt = threading.Event()
        self.done = threading.Event()

    def finished(self):
        return self.ends is not None and all(self.next[p] >= e for p, e in self.ends.items())

    def run(self):
        try:
            while not self.halt.is_set() and not self.finished():
                for m in self.c.consume(num_messages=5000, timeout=0.2):
                    err = m.error()
                    if err is None:
                        self.records.append((m.partition(), m.offset(), m.key(), m.value()))
                        self.next[m.partition()] = m.offset() + 1
                    else:
                        self.errors.append(err)
                # the high watermark of the last Fetch answer, as this consumer saw it
                for p in self.next:
                    _, high = self.c.get_watermark_offsets(TopicPartition(self.topic, p), cached=True)
                    if high >= 0 and (not self.hw[p] or self.hw[p][-1][1] != high):
                        self.hw[p].append((time.monotonic(), high, None, None))
        finally:
            self.c.close()
            self.done.set()

    def read_to(self, ends, timeout):
        self.ends = dict(ends)
        if not self.done.wait(timeout):
            self.halt.set()
            self.done.wait(10)
        return self.finished()


def raw_produce(broker, topic, partition, records, acks):
    """(error, base offset) of one Produce v3 of (key, value) records."""
    batch = kw.record_batch([(k, v, []) for k, v in records])
    with kw.Conn(broker.host, broker.port) as c:
        resp = c.call(API_PRODUCE, 3, kw.produce_v3_body(topic, partition, batch, acks=acks))
    return kw.parse_produce_v3(resp)[(topic, partition)]


def snapshot(md):
    """Topics -> partitions -> (leader, leader epoch, replicas)."""
    out = {}
    for name, t in md["topics"].items():
        assert t["error"] == 0, f"topic {name}: error {t['error']}"
        out[name] = {p: (st["leader"], st["leader_epoch"], tuple(st["replicas"]))
                     for p, st in t["partitions"].items()}
    return out


def all_isrs_full(c, topics=None, via=None):
    md = c.metadata(topics, via)
    if set(md["brokers"]) != {b.id for b in c.brokers}:
        return False
    for t in md["topics"].values():
        if t["error"] != 0:
            return False
        for st in t["partitions"].values():
            if st["leader"] < 0 or sorted(st["isr"]) != sorted(st["replicas"]):
                return False
    return md


# ---------------------------------------------------------------- failover

@pytest.mark.timeout(300)
def test_failover_under_acks_all_loses_and_duplicates_nothing(cluster):
    c = cluster
    topic = FAILOVER_TOPIC
    parts = c.create_topic(topic, FAILOVER_PARTITIONS)
    # the victim leads a partition but does not host the controller
    victims = sorted({st["leader"] for st in parts.values()} - {CONTROLLER_ID})
    assert victims, f"every partition led by the controller's broker: {parts}"
    victim = c[victims[0]]
    led = [p for p, st in parts.items() if st["leader"] == victim.id]

    msgs = [(k, v) for k, v, _ in kc.make_messages(N_RECORDS, "failover")]
    values = dict(msgs)
    hw = WatermarkWatch(c, topic, parts)
    tail = TailConsumer(c.bootstrap, topic, parts)
    hw.start()
    tail.start()

    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "batch.num.messages": 500, "message.timeout.ms": 60000,
                  "retry.backoff.ms": 100, "reconnect.backoff.ms": 50,
                  "reconnect.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 1000})
    acked, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append((msg.key(), err))
        else:
            assert msg.key() not in acked, f"key {msg.key()!r} acknowledged twice"
            acked[msg.key()] = (msg.partition(), msg.offset())

    def send(batch):
        for k, v in batch:
            while True:
                try:
                    p.produce(topic, key=k, value=v, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)

    try:
        t0 = time.monotonic()
        for i in range(0, N_RECORDS, CHUNK):
            if i == KILL_AT:
                # the kill lands while acknowledged records are on the victim's partitions
                wait_until(lambda: p.poll(0.05) is not None and
                           any(part in led for part, _ in acked.values()),
                           30, "acknowledgements from the victim's partitions before the kill")
                victim.kill()
                killed_at = time.monotonic()
                tail_at_kill = len(tail.records)
            send(msgs[i:i + CHUNK])
            # a steady pace (poll returns early when it serves callbacks)
            due = t0 + (i // CHUNK + 1) * CHUNK_PAUSE
            while time.monotonic() < due:
                p.poll(max(0.0, due - time.monotonic()))
        left = p.flush(FLUSH_BOUND)
        produced_in = time.monotonic() - t0
        assert left == 0, f"{left} records neither acknowledged nor failed after {FLUSH_BOUND} s"
        fatal = [e for _, e in errors if e.fatal()]
        assert not fatal, f"the idempotent producer hit a fatal error: {fatal[:3]}"

        # the partitions the victim led have new leaders from the ISR
        after = c.partitions(topic)
        for part in led:
            st = after[part]
            assert st["leader"] not in (-1, victim.id), f"partition {part} not failed over: {st}"
            assert victim.id not in st["isr"], f"dead broker {victim.id} still in the ISR: {st}"
            assert st["leader_epoch"] > parts[part]["leader_epoch"], (
                f"partition {part}: a new leader without a new leader epoch: {st}")

        # a fresh consumer: every acknowledged record exactly once, where
        # its delivery report put it; nothing duplicated; dense offsets
        records = kc.consume_confluent_all(c.bootstrap, topic, parts)
        seen = {}
        problems = []
        for part, off, key, value, _ in records:
            if key in seen:
                problems.append(f"key {key!r} read twice: {seen[key]} and {(part, off)}")
            seen[key] = (part, off)
            if values.get(key) != value:
                problems.append(f"{part}/{off}: unexpected record {key!r}={value!r}")
        for key, where in acked.items():
            if seen.get(key) != where:
                problems.append(f"acknowledged key {key!r} at {where}, read at {seen.get(key)}")
        by_part = {}
        for part, off, *_ in records:
            by_part.setdefault(part, []).append(off)
        for part, offs in by_part.items():
            if sorted(offs) != list(range(len(offs))):
                problems.append(f"partition {part}: offsets not dense from 0")
        assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:20])
        assert len(acked) + len(errors) == N_RECORDS
        # failed records may be absent, but a failover must not fail many
        assert len(acked) >= N_RECORDS - 1000, (
            f"only {len(acked)} of {N_RECORDS} acknowledged; errors e.g. {errors[:3]}")

        # the consumer that read all along carried on past the leader change
        ends = {part: len(offs) for part, offs in by_part.items()}
        ends.update({part: 0 for part in parts if part not in ends})
        assert tail.read_to(ends, 60), (f"tail consumer stuck at {tail.next}, ends {ends}; "
                                        f"errors {tail.errors[:5]}")
        assert 0 < tail_at_kill < len(tail.records), (
            f"the tail consumer read {tail_at_kill} records before the kill, {len(tail.records)} in all")
        tail_set = {(pt, off, k, v) for pt, off, k, v in tail.records}
        assert len(tail_set) == len(tail.records), "the tail consumer read some records twice"
        assert tail_set == {(pt, off, k, v) for pt, off, k, v, _ in records}
    finally:
        hw.stop()
        tail.halt.set()
        tail.join(15)

    # the killed broker comes back and catches up into every ISR
    t1 = time.monotonic()
    victim.start()
    c.wait_registered()
    wait_until(lambda: all(set(st["isr"]) == set(st["replicas"])
                           for st in c.partitions(topic).values()),
               ISR_BOUND, f"broker {victim.id} back in the ISR of every {topic} partition")
    _failover.update(hw=hw.seen, consumer_hw=tail.hw, killed_at=killed_at, ends=ends, victim=victim.id, led=led,
                     acked=len(acked), errors=len(errors))
    print(f"failover: produced {N_RECORDS} in {produced_in:.1f} s ({len(acked)} acknowledged, "
          f"{len(errors)} failed), killed broker {victim.id} at {killed_at - t0:.1f} s, "
          f"rejoined in {time.monotonic() - t1:.1f} s")


@pytest.mark.timeout(120)
def test_replicas_identical_and_high_watermark_monotonic(cluster):
    if not _failover:
        pytest.skip("needs the failover test's topic")
    c = cluster
    parts = c.partitions(FAILOVER_TOPIC)
    for part, st in parts.items():
        logs = c.wait_replicas_identical(FAILOVER_TOPIC, part, st["replicas"], ISR_BOUND)
        batches = logs[st["replicas"][0]]
        # the batches tile the log from 0 to exactly what consumers read
        assert batches and batches[0][0] == 0, f"partition {part}: log does not start at 0"
        gaps = [(a, b) for a, b in zip(batches, batches[1:]) if b[0] != a[1] + 1]
        assert not gaps, f"partition {part}: batches not contiguous: {gaps[:3]}"
        assert log_end(batches) == _failover["ends"][part], (
            f"partition {part}: log end {log_end(batches)}, consumers read {_failover['ends'][part]}")
        _, high = kc.watermarks_confluent(c.bootstrap, FAILOVER_TOPIC, [part])[part]
        assert high == log_end(batches)
        # the batches appended after the failover carry the new leader's epoch
        if part in _failover["led"]:
            assert batches[-1][2] <= st["leader_epoch"]
            assert max(b[2] for b in batches) > min(b[2] for b in batches), (
                f"partition {part}: the failover left no new leader epoch in the log")

    # last, so that the replica checks above run whatever this finds
    killed_at = _failover["killed_at"]
    for source in ("hw", "consumer_hw"):
        for part, samples in _failover[source].items():
            # (seconds after the kill, high watermark, leader, leader epoch)
            rel = [(round(t - killed_at, 2), h, ld, ep) for t, h, ld, ep in samples]
            drops = [(a, b) for a, b in zip(rel, rel[1:]) if b[1] < a[1]]
            assert not drops, (f"partition {part}: the high watermark went back ({source}: "
                               f"ListOffsets to the leader if hw, Fetch answers if consumer_hw); "
                               f"(s after kill, hw, leader, epoch) before -> after: {drops[:5]}")
            # sampled on both sides of the leader change
            assert any(t < 0 and h > 0 for t, h, _, _ in rel), f"partition {part}: no {source} sample before the kill"
            assert any(t > 1 for t, _, _, _ in rel), (
                f"partition {part}: no {source} sample after the kill: {rel[-10:]}")
            assert rel[-1][1] <= _failover["ends"][part]


# ---------------------------------------------------------------- ISR shrink

@pytest.mark.timeout(180)
def test_paused_followers_leave_the_isr_and_rejoin(cluster):
    c = cluster
    topic = "isr-shrink"
    parts = c.create_topic(topic, 3)
    # a partition led by the controller's broker, so both followers can be paused
    part = next(p for p, st in parts.items() if st["leader"] == CONTROLLER_ID)
    leader = c[CONTROLLER_ID]
    f1, f2 = (c[r] for r in parts[part]["replicas"] if r != CONTROLLER_ID)
    n = [0]

    def write(acks, count=5):
        recs = [(b"k%d" % (n[0] + i), b"v%d" % (n[0] + i)) for i in range(count)]
        n[0] += count
        return raw_produce(leader, topic, part, recs, acks)

    # Metadata can name the leader a moment before its LeaderAndIsr lands;
    # a client retries then, and so does this first write
    wait_until(lambda: write(-1)[0] == 0, 10, f"a first acks=all write to {topic}-{part}")
    try:
        # the leader's log moves on while a follower is paused, so it lags
        f1.pause()
        t0 = time.monotonic()
        st = wait_until(lambda: write(1)[0] == 0 and (lambda st: st if set(st["isr"]) == {leader.id, f2.id}
                                                      else False)(c.partitions(topic, via=CONTROLLER_ID)[part]),
                        LAG_BOUND, f"paused broker {f1.id} out of the ISR", interval=0.2)
        shrink1 = time.monotonic() - t0
        # out for lagging (replica.lag.time.max.ms), not yet fenced for its
        # missed heartbeats (broker.session.timeout.ms, longer)
        assert f1.id not in st["offline"], f"broker {f1.id} was fenced before it lagged out: {st}"
        assert write(-1)[0] == 0, "acks=all with an ISR of 2 = min.insync.replicas must succeed"

        f2.pause()
        wait_until(lambda: write(1)[0] == 0 and
                   set(c.partitions(topic, via=CONTROLLER_ID)[part]["isr"]) == {leader.id},
                   LAG_BOUND, f"paused broker {f2.id} out of the ISR", interval=0.2)
        before = log_end(leader.batches(topic, part))
        err, _ = write(-1)
        assert err == ERR_NOT_ENOUGH_REPLICAS, f"acks=all with an ISR of 1: error {err}"
        assert log_end(leader.batches(topic, part)) == before, "a refused batch was appended"
    finally:
        f1.resume()
        f2.resume()
    t1 = time.monotonic()
    c.wait_isr(topic, part, parts[part]["replicas"], ISR_BOUND, via=CONTROLLER_ID)
    rejoin = time.monotonic() - t1
    err, _ = write(-1)
    assert err == 0, f"acks=all after the followers rejoined: error {err}"
    c.wait_replicas_identical(topic, part, parts[part]["replicas"], ISR_BOUND)
    print(f"isr: first follower out in {shrink1:.1f} s, both back in {rejoin:.1f} s")


# ---------------------------------------------------------------- controller restart

@pytest.mark.timeout(180)
def test_controller_restart_replays_the_metadata_log(cluster):
    c = cluster
    topic = "before-restart"
    c.create_topic(topic, 3)
    kc.produce_confluent(c.bootstrap, topic, kc.make_messages(500, "before"), acks="all")
    witness = c[1]
    before = snapshot(wait_until(lambda: all_isrs_full(c, via=witness.id), ISR_BOUND,
                                 "every ISR full before the restart"))
    assert topic in before and (FAILOVER_TOPIC in before or not _failover)

    controller = c[CONTROLLER_ID]
    controller.restart()
    c.wait_registered()
    changed = {}
    for b in c.brokers:
        md = wait_until(lambda: all_isrs_full(c, via=b.id), ISR_BOUND,
                        f"every ISR full in broker {b.id}'s metadata after the restart")
        after = snapshot(md)
        changes = [f"{t}-{p}: (leader, epoch, replicas) {before[t][p]} -> {after[t][p]}"
                   for t in sorted(set(before) & set(after)) for p in sorted(before[t])
                   if p in after[t] and before[t][p] != after[t][p]]
        # the replayed log has every topic, partition and replica set
        assert ({t: {p: st[2] for p, st in ps.items()} for t, ps in after.items()} ==
                {t: {p: st[2] for p, st in ps.items()} for t, ps in before.items()}), (
            f"broker {b.id}: topics or replicas changed by the controller restart: "
            f"{sorted(before)} -> {sorted(after)}\n" + "\n".join(changes))
        if changes:
            changed[b.id] = changes

    # the cluster still works: the old topic and a new one
    more = kc.make_messages(500, "after")
    reports = kc.produce_confluent(c.bootstrap, topic, more, acks="all",
                                   extra={"enable.idempotence": True})
    old = kc.consume_confluent_all(c.bootstrap, topic, range(3))
    assert len(old) == 1000
    got = {(r[0], r[1]): (r[2], r[3]) for r in old}
    for key, value, _ in more:
        assert got.get(reports[key]) == (key, value), f"key {key!r} not at {reports[key]}"

    fresh = "after-restart"
    c.create_topic(fresh, 3)
    msgs = kc.make_messages(2000, "fresh")
    reports = kc.produce_confluent(c.bootstrap, fresh, msgs, acks="all",
                                   extra={"enable.idempotence": True})
    kc.check_records(kc.consume_confluent_all(c.bootstrap, fresh, range(3)), msgs, reports)

    # leaders and leader epochs are as before, also for the partitions the
    # restarted broker (the one hosting the controller) led
    assert not changed, "\n".join(f"broker {b}: {len(ch)} partitions changed by the controller "
                                   f"restart:\n" + "\n".join(ch) for b, ch in changed.items())


# ---------------------------------------------------------------- one process

@pytest.mark.timeout(120)
def test_one_command_cluster_with_kcat(tmp_path):
    one = OneProcessCluster(tmp_path, overrides=["min.insync.replicas=2"])
    one.start()
    base = one.base
    try:
        bs = f"{HOST}:{base}"

        def listed():
            res = subprocess.run(["kcat", "-b", bs, "-L", "-J"], capture_output=True, timeout=20)
            if res.returncode != 0:
                return False
            brokers = json.loads(res.stdout)["brokers"]
            return brokers if len(brokers) == 3 else False
        brokers = wait_until(listed, 20, "kcat -L lists 3 brokers")
        assert sorted(b["id"] for b in brokers) == [0, 1, 2]
        assert sorted(b["name"] for b in brokers) == sorted(f"{HOST}:{base + i}" for i in range(3))

        topic = "one-process"
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": bs})
        a.create_topics([NewTopic(topic, 3, 3)], operation_timeout=10,
                        request_timeout=15)[topic].result(timeout=20)

        def healthy():
            md = metadata(HOST, base, [topic])["topics"].get(topic)
            if not md or md["error"] or len(md["partitions"]) != 3:
                return False
            ok = all(len(st["replicas"]) == 3 and sorted(st["isr"]) == sorted(st["replicas"])
                     and st["leader"] >= 0 for st in md["partitions"].values())
            return md["partitions"] if ok else False
        parts = wait_until(healthy, 20, f"{topic}: 3 partitions, 3 replicas, full ISRs")
        assert len({st["leader"] for st in parts.values()}) == 3, f"leaders not spread: {parts}"

        msgs = kc.make_messages(3000, "kcat")
        expect = kc.produce_kcat(bs, topic, msgs, tmp_path / "in.txt")
        got = kc.consume_kcat(bs, topic)
        assert len(got) == len(msgs), f"kcat read {len(got)} of {len(msgs)}"
        by_key = {k: v for k, v, _ in msgs}
        for part, _, key, value, _ in got:
            assert by_key.get(key) == value, f"{key!r}: {value!r}"
            assert part == expect[key][0], f"{key!r} on partition {part}, expected {expect[key][0]}"
        assert len({k for _, _, k, _, _ in got}) == len(msgs)

        # every replica holds every record
        for part in parts:
            ends = {i: log_end(read_batches(tmp_path / "data" / f"broker-{i}" / f"{topic}-{part}") or [])
                    for i in range(3)}
            want = sum(1 for g in got if g[0] == part)
            wait_until(lambda: all(log_end(read_batches(tmp_path / "data" / f"broker-{i}" /
                                                        f"{topic}-{part}") or []) == want
                                   for i in range(3)),
                       ISR_BOUND, f"{topic}-{part}: every replica at log end {want} (was {ends})")
    finally:
        one.stop()
