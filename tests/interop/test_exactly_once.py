"""Exactly-once with confluent-kafka (librdkafka 2.0.2) against one broker:
zombie fencing, a transaction the coordinator aborts past its timeout, and
a consume-transform-produce application SIGKILLed at seeded random moments
whose output holds every input exactly once.
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
    partition ends, as (partition, offset, key, value)."""
    ends = {p: end_offset(bootstrap, topic, p) for p in range(partitions)}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-read-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, at_end = [], set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
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
