"""Exactly-once with confluent-kafka (librdkafka 2.0.2): on one broker,
zombie fencing, a transaction the coordinator aborts past its timeout, and
a consume-transform-produce application SIGKILLed at seeded random moments
whose output holds every input exactly once; on three broker processes, the
coordinator's broker SIGKILLed after EndTxn and before its marker, the
transaction completed by the new coordinator.
"""

import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="starts brokers with its own settings")

HERE = pathlib.Path(__file__).parent


@pytest.fixture(scope="module")
def eos_broker(tmp_path_factory):
    # the coordinator looks for timed-out transactions every 200 ms
    b = Broker(tmp_path_factory.mktemp("eos"),
               overrides=["transaction.abort.timed.out.transaction.cleanup.interval.ms=200"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def create(bootstrap, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def end_offset(bootstrap, topic, partition=0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def read(bootstrap, topic, partitions=1, isolation="read_committed", timeout=30):
    """Every record a consumer in isolation gets from topic, up to where each
    partition ends, as (partition, offset, key, value). partitions: how many
    (0..n-1), or a list of them."""
    parts = list(range(partitions)) if isinstance(partitions, int) else list(partitions)
    ends = {p: end_offset(bootstrap, topic, p) for p in parts}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-read-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    got, at_end = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < len(parts):
            assert time.monotonic() < deadline, f"{isolation} read of {topic} stopped short: {len(got)} records"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= ends[m.partition()]:
                    at_end.add(m.partition())
                continue
            got.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return got


def test_zombie_is_fenced(eos_broker):
    """Two producers with one transactional.id: the second fences the first,
    whose open transaction is aborted; nothing the first sends afterwards is
    committed, and its commit fails as fenced."""
    bs = eos_broker.bootstrap
    topic = "eos-zombie"
    create(bs, topic)
    old = Producer({"bootstrap.servers": bs, "transactional.id": "zombie"})
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(topic, b"before-fence", partition=0)
    old.flush(30)
    new = Producer({"bootstrap.servers": bs, "transactional.id": "zombie"})
    new.init_transactions(30)
    # its produce is refused for its old epoch (the partition saw the
    # abort marker of the newer one), which the client takes as fatal
    with pytest.raises(KafkaException) as failed:
        old.produce(topic, b"after-fence", partition=0)
        old.flush(10)
        old.commit_transaction(30)
    assert failed.value.args[0].code() == KafkaError._FENCED, str(failed.value)
    new.begin_transaction()
    new.produce(topic, b"from-the-new-one", partition=0)
    new.commit_transaction(30)
    assert [v for _, _, _, v in read(bs, topic)] == [b"from-the-new-one"]
    # the zombie's first record is in the log, aborted
    assert b"before-fence" in [v for _, _, _, v in read(bs, topic, isolation="read_uncommitted")]


def test_timed_out_transaction_is_aborted(eos_broker):
    """A transaction left open past transaction.timeout.ms is aborted by the
    coordinator: read_committed consumers move past it and see what was
    committed after it."""
    bs = eos_broker.bootstrap
    topic = "eos-timeout"
    create(bs, topic)
    stuck = Producer({"bootstrap.servers": bs, "transactional.id": "stuck", "transaction.timeout.ms": 1500})
    stuck.init_transactions(30)
    stuck.begin_transaction()
    for i in range(5):
        stuck.produce(topic, f"left-open-{i}".encode(), partition=0)
    stuck.flush(30)
    other = Producer({"bootstrap.servers": bs, "transactional.id": "after-stuck"})
    other.init_transactions(30)
    other.begin_transaction()
    other.produce(topic, b"committed-after", partition=0)
    other.commit_transaction(30)
    # 5 open records, the other's record and its marker, then the abort marker
    deadline = time.monotonic() + 30
    while end_offset(bs, topic) < 8:
        assert time.monotonic() < deadline, "the coordinator never aborted the timed-out transaction"
        time.sleep(0.1)
    assert [v for _, _, _, v in read(bs, topic)] == [b"committed-after"]


def test_consume_transform_produce_survives_sigkill(eos_broker, tmp_path):
    """The application is SIGKILLed at seeded random moments and restarted:
    the output topic holds each input exactly once, in input order per
    partition."""
    bs = eos_broker.bootstrap
    inp, out, total, partitions = "eos-in", "eos-out", 2000, 2
    create(bs, inp, partitions)
    create(bs, out, partitions)
    p = Producer({"bootstrap.servers": bs})
    for i in range(total):
        p.produce(inp, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0
    rng = random.Random(20261202)
    cmd = [sys.executable, str(HERE / "eos_app.py"), bs, inp, out, "eos-group", "eos-app"]
    kills = 0
    log = tmp_path / "app.log"
    deadline = time.monotonic() + 240
    with open(log, "ab") as sink:
        while True:
            assert time.monotonic() < deadline, f"the application never finished:\n{log.read_text()[-3000:]}"
            app = subprocess.Popen(cmd, stdout=sink, stderr=sink)
            if kills < 4:
                time.sleep(rng.uniform(0.5, 2.5))
                if app.poll() is None:
                    app.send_signal(signal.SIGKILL)
                    app.wait()
                    kills += 1
                    continue
            rc = app.wait(timeout=max(1, deadline - time.monotonic()))
            if rc == 0:
                break
    assert kills >= 1
    got = read(bs, out, partitions)
    values = sorted(v for _, _, _, v in got)
    want = sorted(b"out-v%d" % i for i in range(total))
    dupes = len(values) - len(set(values))
    assert dupes == 0, f"{dupes} outputs written twice after {kills} kills"
    assert values == want, f"{len(want) - len(values)} inputs lost after {kills} kills"
    for part in range(partitions):
        seq = [int(v[5:]) for pp, _, _, v in got if pp == part]
        assert seq == sorted(seq)


@pytest.mark.timeout(240)
def test_coordinator_killed_before_its_markers(tmp_path):
    """3 brokers, one process each. The broker leading the transaction's
    data partition is paused so its marker cannot be written; EndTxn
    (commit) is answered once PrepareCommit is replicated; then the
    coordinator's broker is SIGKILLed and the paused broker stays paused
    until the controller has fenced it and another broker coordinates. The
    new coordinator finds the PrepareCommit, writes the marker once the
    paused broker is back, and
    the transaction completes: a read_committed consumer sees all of its
    records, and saw none of them before."""
    from cluster import CLUSTER_OVERRIDES, Cluster, coordinator_of, find_coordinator, wait_until

    c = Cluster(tmp_path / "cluster", 3, overrides=CLUSTER_OVERRIDES + ("transaction.state.log.num.partitions=6",))
    c.start()
    try:
        c.wait_registered()
        topic = "eos-failover"
        # one replica each (so pausing its broker stops the partition), which
        # acks=all (transactional producers use nothing else) needs allowed
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        for f in admin.create_topics([NewTopic(topic, 3, 1, config={"min.insync.replicas": "1"})]).values():
            f.result(30)
        c.wait_healthy(topic, 3, rf=1)
        # coordinator and data leader on brokers 1 and 2: broker 0 hosts the
        # controller, which must stay up to move leaderships
        txn_id = coordinator = None
        for i in range(200):
            node = coordinator_of(c[0], f"failover-{i}")
            if node in (1, 2):
                txn_id, coordinator = f"failover-{i}", node
                break
        assert txn_id, "no transactional id hashes to a partition led by broker 1 or 2"
        data_leader = 3 - coordinator
        partition = next(p for p in range(3) if c.leader(topic, p) == data_leader)
        p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": txn_id,
                      "transaction.timeout.ms": 120000})
        p.init_transactions(60)
        p.begin_transaction()
        values = [f"failover-{i}".encode() for i in range(20)]
        for v in values:
            p.produce(topic, v, partition=partition)
        assert p.flush(30) == 0
        c[data_leader].pause()
        p.commit_transaction(60)
        c[coordinator].kill()
        # FindCoordinator names the killed broker until the controller fences
        # it (broker.session.timeout.ms), as Kafka's does
        wait_until(lambda: find_coordinator(c[0], txn_id) not in (None, coordinator), 60,
                   "another transaction coordinator")
        c[data_leader].resume()
        live = f"{c[0].bootstrap},{c[data_leader].bootstrap}"
        # the new coordinator writes the marker: the 20 records and the COMMIT
        # marker (a second one when the killed coordinator's WriteTxnMarkers,
        # sent before it died, reaches the resumed leader too: harmless)
        # (the paused broker was fenced too: its partition has no leader until
        # the controller takes it back)
        def marked():
            try:
                return end_offset(live, topic, partition) >= 21
            except KafkaException:
                return False
        wait_until(marked, 60, "the COMMIT marker")
        got = [v for _, _, _, v in read(live, topic, [partition])]
        assert got == values
        # the killed broker comes back and follows what happened meanwhile
        c[coordinator].start()
        c.wait_registered()
        assert [v for _, _, _, v in read(c.bootstrap, topic, 3)] == values
    finally:
        c.stop()
