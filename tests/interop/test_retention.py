"""Retention and the log start offset through real clients: DeleteRecords
(raw frames: confluent-kafka 1.7 and kafka-python 2.0 have no
delete_records) moving the start, ListOffsets earliest and a restart
keeping it, consumers positioned below it reset by auto.offset.reset to the
new start, and retention.bytes on a topic with small segments deleting old
segments in the broker's retention pass."""

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import NewTopic

import kiq_clients as kc
import kiq_wire as w
from conftest import EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="starts its own broker")

API_LIST_OFFSETS, API_DELETE_RECORDS = 2, 21
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 1, 3
EARLIEST = -2
BOUND = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("retention"), ["log.retention.check.interval.ms=100"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def delete_records(broker, topic, offsets, version=1):
    """DeleteRecords: offsets {partition: offset}; returns {partition: (error, low_watermark)}."""
    parts = [struct.pack(">iq", p, o) for p, o in offsets.items()]
    body = w.array([w.string(topic) + w.array(parts)]) + struct.pack(">i", 10000)
    with w.Conn(broker.host, broker.port) as c:
        r = w.Reader(c.call(API_DELETE_RECORDS, version, body))
    r.int32()  # throttle_time_ms
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.int32(), r.int64(), r.int16()))))
    assert [t for t, _ in topics] == [topic]
    return {p: (err, low) for p, low, err in topics[0][1]}


def earliest(broker, topic, partition=0):
    with w.Conn(broker.host, broker.port) as c:
        out = w.parse_list_offsets_v1(c.call(API_LIST_OFFSETS, 1,
                                             w.list_offsets_v1_body(topic, [partition], EARLIEST)))
    err, off = out[(topic, partition)]
    assert err == NONE
    return off


def produce(broker, topic, n):
    reports = kc.produce_confluent(broker.bootstrap, topic, kc.make_messages(n, topic))
    return sorted(off for _, off in reports.values())


def test_delete_records_moves_log_start(broker):
    topic = "ret-delete"
    kc.create_topic(broker.bootstrap, topic, 1)
    assert produce(broker, topic, 100) == list(range(100))
    assert delete_records(broker, topic, {0: 40}) == {0: (NONE, 40)}
    assert earliest(broker, topic) == 40
    # lower than the start: nothing moves, the start is answered
    assert delete_records(broker, topic, {0: 10}, version=0) == {0: (NONE, 40)}
    # beyond the high watermark; unknown partitions and topics
    assert delete_records(broker, topic, {0: 101})[0][0] == OFFSET_OUT_OF_RANGE
    assert delete_records(broker, topic, {7: 1})[7][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert delete_records(broker, "ret-no-such-topic", {0: 1})[0][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert earliest(broker, topic) == 40

    # the start survives a restart
    broker.restart()
    assert earliest(broker, topic) == 40
    assert (broker.data_dir / "log-start-offset-checkpoint").read_text().splitlines()[:2] == ["0", "1"]


def test_confluent_consumer_below_start_resets_to_it(broker):
    topic = "ret-delete"
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ret-confluent",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    got = []
    try:
        c.assign([CTopicPartition(topic, 0, 5)])
        deadline = time.monotonic() + BOUND
        eof = False
        while not eof:
            assert time.monotonic() < deadline, f"only {len(got)} records after {BOUND} s"
            for m in c.consume(num_messages=1000, timeout=1.0):
                if m.error() is None:
                    got.append(m.offset())
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    eof = True
                else:
                    raise AssertionError(f"consumer error: {m.error()}")
    finally:
        c.close()
    assert got == list(range(40, 100))


def test_kafka_python_consumer_below_start_resets_to_it(broker):
    from kafka import KafkaConsumer, TopicPartition
    topic = "ret-delete"
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_wait_ms=100, request_timeout_ms=30000)
    got = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 5)
        deadline = time.monotonic() + BOUND
        while len(got) < 60:
            assert time.monotonic() < deadline, f"only {len(got)} records after {BOUND} s"
            for recs in c.poll(timeout_ms=1000).values():
                got += [r.offset for r in recs]
    finally:
        c.close()
    assert got == list(range(40, 100))


def test_delete_records_to_high_watermark(broker):
    topic = "ret-delete"
    assert delete_records(broker, topic, {0: -1}) == {0: (NONE, 100)}
    assert earliest(broker, topic) == 100
    assert produce(broker, topic, 5) == list(range(100, 105))
    assert earliest(broker, topic) == 100


def segment_bases(broker, topic):
    return sorted(int(p.stem) for p in (broker.data_dir / f"{topic}-0").glob("*.log"))


def logs_size(path):
    """Bytes of the segment files in path; a file the broker deletes
    between the listing and the stat counts as gone."""
    size = 0
    for p in path.glob("*.log"):
        try:
            size += p.stat().st_size
        except FileNotFoundError:
            pass
    return size


def test_retention_bytes_deletes_old_segments(broker):
    topic = "ret-bytes"
    a = kc.admin(broker.bootstrap)
    fut = a.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "2048",
                                                         "retention.bytes": "4096"})],
                          operation_timeout=10, request_timeout=15)[topic]
    fut.result(timeout=20)
    kc.wait_topic(broker.bootstrap, topic, 1)
    # one record per batch so the segments fill evenly
    kc.produce_confluent(broker.bootstrap, topic, kc.make_messages(200, "rb"), extra={"linger.ms": 0,
                                                                                      "batch.num.messages": 1})
    deadline = time.monotonic() + BOUND
    while True:
        start = earliest(broker, topic)
        bases = segment_bases(broker, topic)
        size = logs_size(broker.data_dir / f"{topic}-0")
        if start > 0 and size <= 4096 + 2048:
            break
        assert time.monotonic() < deadline, f"start {start}, segments {bases}, {size} bytes after {BOUND} s"
        time.sleep(0.1)
    assert bases[0] == start
    assert bases[-1] <= 199  # the active segment stays
    got = kc.consume_kafka_python(broker.bootstrap, topic, [0])
    assert [r[1] for r in got] == list(range(start, 200))
