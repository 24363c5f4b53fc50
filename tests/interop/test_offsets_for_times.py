"""ListOffsets by timestamp answers the first *record* at or after the time,
not the start of the batch holding it: ten records with increasing
timestamps go out in one batch, and confluent-kafka's offsets_for_times and
kafka-python's offsets_for_times must land on each exact record."""

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def topic(broker):
    name = "times"
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 200, "acks": "all"})
    offsets = []
    for i in range(10):
        p.produce(name, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=BASE_TS + 10 * i,
                  on_delivery=lambda err, m: offsets.append((err, m.offset())))
    assert p.flush(20) == 0
    assert [e for e, _ in offsets] == [None] * 10
    assert sorted(o for _, o in offsets) == list(range(10))
    return name


def test_confluent_offsets_for_times_hits_each_record(broker, topic):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "times"})
    try:
        for i in range(10):
            # exactly a record's time, and just after the previous one's
            for ts in (BASE_TS + 10 * i, BASE_TS + 10 * i - 5):
                got = c.offsets_for_times([CTopicPartition(topic, 0, ts)], timeout=10)
                assert got[0].error is None
                assert got[0].offset == i, (ts, got[0].offset)
        late = c.offsets_for_times([CTopicPartition(topic, 0, BASE_TS + 1000)], timeout=10)
        assert late[0].offset == -1  # nothing that late: the end
    finally:
        c.close()


def test_kafka_python_offsets_for_times_gives_record_timestamp(broker, topic):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = KTopicPartition(topic, 0)
        got = c.offsets_for_times({tp: BASE_TS + 31})[tp]
        assert got.offset == 4
        assert got.timestamp == BASE_TS + 40
    finally:
        c.close()
