"""Damaged and lost log data under a `kafkaiq serve` broker, seen by real
clients and by `kafkaiq verify`.

A batch altered on disk is found by the scrubber and from then on never
reaches a librdkafka consumer (which checks no CRC by default): the records
before it are read, its fetch is answered CORRUPT_MESSAGE, which librdkafka
hands to the application as a consumer error.

An active segment file deleted under the broker is written back from the
file it still holds open, so every acknowledged record survives a restart.
One cut under it loses what was cut: the partition is marked (metric, HTTP
state, `kafkaiq verify` exit 1) across restarts until an operator
acknowledges the loss with `kafkaiq verify --acknowledge`.
"""

import json
import os
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition

import kiq_clients as kc
from cluster import wait_until
from conftest import BROKER_BIN, EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="alters its own broker's files")

RECORDS = 60
VALUE_PAD = b"x" * 100


def value(i):
    return b"value-%03d-" % i + VALUE_PAD


def produce_one_by_one(bootstrap, topic, n, first=0):
    """Records first..first+n-1, each its own batch, every one acknowledged;
    their offsets."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    acked = []
    for i in range(first, first + n):
        p.produce(topic, value=value(i), partition=0,
                  on_delivery=lambda err, msg: acked.append(msg.offset()) if err is None else None)
        assert p.flush(10) == 0
    assert len(acked) == n
    return acked


def verify(*args):
    r = subprocess.run([str(BROKER_BIN), "verify", *map(str, args)], capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(errors="replace")


def data_loss(broker, topic):
    with urllib.request.urlopen(f"http://{broker.http}/api/state", timeout=5) as r:
        st = json.load(r)
    if topic in st["topics"]:
        return st["topics"][topic]["partitions"]["0"].get("data_loss")
    raise AssertionError(f"no topic {topic} in the state")


def metric(broker, name):
    with urllib.request.urlopen(f"http://{broker.http}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def read_until_error(bootstrap, topic, timeout=20.0):
    """(values, error) from offset 0 until the first consumer error."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kiq-damage", "enable.auto.commit": False,
                  "enable.partition.eof": False, "fetch.wait.max.ms": 100})
    got = []
    try:
        c.assign([CTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                return got, m.error()
            got.append(m.value())
    finally:
        c.close()
    raise AssertionError(f"no consumer error within {timeout} s; {len(got)} records read")


def test_a_batch_the_scrubber_found_damaged_never_reaches_a_consumer(tmp_path):
    b = Broker(tmp_path / "b", ["log.segment.bytes=4096", "kafkaiq.log.scrub.interval.ms=200"])
    b.start()
    try:
        kc.create_topic(b.bootstrap, "dmg", 1)
        produce_one_by_one(b.bootstrap, "dmg", RECORDS)
        segs = sorted((b.data_dir / "dmg-0").glob("*.log"))
        assert len(segs) > 2
        # one character of a value in the middle of a closed segment
        data = segs[1].read_bytes()
        first = int(segs[1].name[:-4])
        damaged = first + 3
        at = data.index(value(damaged))
        with open(segs[1], "r+b") as f:
            f.seek(at)
            f.write(b"V")
        wait_until(lambda: metric(b, "kafkaiq_log_damaged_partitions") == 1, 10, "the scrubber to find the damage")
        got, err = read_until_error(b.bootstrap, "dmg")
        assert err.code() == KafkaError.INVALID_MSG, err  # CORRUPT_MESSAGE (2)
        assert got == [value(i) for i in range(damaged)]
        assert b"V" + value(damaged)[1:] not in got
    finally:
        b.stop()


def test_an_active_segment_deleted_under_the_broker_loses_nothing(tmp_path):
    b = Broker(tmp_path / "b", ["log.segment.bytes=4096"])
    b.start()
    try:
        kc.create_topic(b.bootstrap, "del", 1)
        produce_one_by_one(b.bootstrap, "del", RECORDS)
        active = sorted((b.data_dir / "del-0").glob("*.log"))[-1]
        os.remove(active)
        wait_until(active.exists, 10, "the deleted segment file to be written back")
        produce_one_by_one(b.bootstrap, "del", 5, RECORDS)
        b.restart()
        got = kc.consume_confluent(b.bootstrap, "del", {0: 0})
        assert [v for _, _, _, v, _ in got] == [value(i) for i in range(RECORDS + 5)]
        assert data_loss(b, "del") is None
        assert metric(b, "kafkaiq_log_data_loss_partitions") == 0
    finally:
        b.stop()
    assert verify(b.data_dir)[0] == 0


def test_a_segment_cut_under_the_broker_stays_marked_until_acknowledged(tmp_path):
    b = Broker(tmp_path / "b", ["log.segment.bytes=4096"])
    b.start()
    part = b.data_dir / "cut-0"
    try:
        kc.create_topic(b.bootstrap, "cut", 1)
        produce_one_by_one(b.bootstrap, "cut", RECORDS)
        active = sorted(part.glob("*.log"))[-1]
        base = int(active.name[:-4])
        os.truncate(active, 0)
        wait_until(lambda: metric(b, "kafkaiq_log_data_loss_partitions") == 1, 10, "the cut to be found")
        assert (data_loss(b, "cut")["from"], data_loss(b, "cut")["to"]) == (base, RECORDS)
        # what is left is served, and appends go on past the gap
        produce_one_by_one(b.bootstrap, "cut", 5, RECORDS)
        left = [value(i) for i in range(base)] + [value(i) for i in range(RECORDS, RECORDS + 5)]
        for _ in range(2):
            got = kc.consume_confluent(b.bootstrap, "cut", {0: 0})
            assert [v for _, _, _, v, _ in got] == left
            b.stop()
            rc, out = verify(b.data_dir)
            assert rc == 1, out
            assert f"cut-0: data loss not acknowledged: offsets {base}..{RECORDS - 1}" in out, out
            b.start()
            assert metric(b, "kafkaiq_log_data_loss_partitions") == 1
        rc, out = verify("--acknowledge", part)
        assert rc == 0, out
        wait_until(lambda: metric(b, "kafkaiq_log_data_loss_partitions") == 0, 10, "the acknowledgement")
        assert data_loss(b, "cut") is None
    finally:
        b.stop()
    assert verify(b.data_dir)[0] == 0
