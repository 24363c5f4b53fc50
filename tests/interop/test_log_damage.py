"""Damaged and lost log data under a `kafkaiq serve` broker, seen by real
clients and by `kafkaiq verify`.

A batch altered on disk is found by the scrubber and from then on never
reaches a librdkafka consumer (which checks no CRC by default): the records
before it are read, its fetch is answered CORRUPT_MESSAGE, which librdkafka
hands to the application as a consumer error.
"""

import time
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CTopicPartition

import kiq_clients as kc
from cluster import wait_until
from conftest import EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="alters its own broker's files")

RECORDS = 60
VALUE_PAD = b"x" * 100


def value(i):
    return b"value-%03d-" % i + VALUE_PAD


def produce_one_by_one(bootstrap, topic, n):
    """n records, each its own batch, every one acknowledged."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    acked = []
    for i in range(n):
        p.produce(topic, value=value(i), partition=0,
                  on_delivery=lambda err, msg: acked.append(msg.offset()) if err is None else None)
        assert p.flush(10) == 0
    assert acked == list(range(n))


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
