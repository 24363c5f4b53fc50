"""Transactions with confluent-kafka (librdkafka 2.0.2), as far as the
coordinator goes yet: init_transactions finds the transaction coordinator
(FindCoordinator key type 1) and gets a producer id and epoch
(InitProducerId with the transactional id) on one broker and on a cluster
of three, for a first producer of a transactional.id and for a second one
(the epochs and fencing themselves: tests/lua/transactions_spec.lua).
Before, init_transactions timed out.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kiq_clients as kc
from conftest import EXTERNAL

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="reads kafkaiq's own state")


def test_init_transactions(target):
    broker, n = target
    first = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"interop-tx-{n}"})
    first.init_transactions(30)
    # the same transactional.id again: the coordinator bumps the epoch
    second = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"interop-tx-{n}"})
    second.init_transactions(30)
    del first, second


def _consume_all(bootstrap, topic, isolation, expect_end, timeout=30):
    """Every record of topic's partition 0 up to offset expect_end (the log
    end) for a consumer in isolation, as (offset, value) pairs."""
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"txn-read-{isolation}-{topic}",
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= expect_end:
                    return got
                continue
            got.append((m.offset(), m.value()))
    finally:
        c.close()
    raise AssertionError(f"{isolation} consumer did not reach offset {expect_end}; got {got}")


def test_commit_and_abort_in_turn(target):
    """Transactions committed and aborted in turn: a read_committed consumer
    gets exactly the committed records, a read_uncommitted one all of them;
    the markers take one offset each and are never delivered."""
    broker, n = target
    topic = f"txn-turns-{n}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1 if n == 1 else 3)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"turns-{n}"})
    p.init_transactions(30)
    committed, aborted = [], []
    for round_ in range(6):
        p.begin_transaction()
        values = [f"r{round_}-{i}".encode() for i in range(5)]
        for v in values:
            p.produce(topic, v, partition=0)
        p.flush(30)
        if round_ % 2 == 0:
            p.commit_transaction(30)
            committed += values
        else:
            p.abort_transaction(30)
            aborted += values
    # 30 records and 6 markers
    end = 36
    lo, hi = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm"}).get_watermark_offsets(
        TopicPartition(topic, 0), timeout=10)
    assert hi == end
    rc = _consume_all(broker.bootstrap, topic, "read_committed", end)
    assert [v for _, v in rc] == committed
    ru = _consume_all(broker.bootstrap, topic, "read_uncommitted", end)
    assert sorted(v for _, v in ru) == sorted(committed + aborted)
    # dense offsets, each round's five records then its marker
    assert [o for o, _ in ru] == [r * 6 + i for r in range(6) for i in range(5)]


def test_marker_reaches_a_broker_hosting_nothing_of_the_topic_here(three):
    """A transaction over a topic of one partition and one replica whose
    coordinator is on another broker, which has nothing of the topic: it
    sends the marker to the leader. Before, it took the topic for a deleted
    one and dropped the marker, so the transaction never became readable."""
    from cluster import coordinator_of

    topic = "txn-rf1"
    admin = AdminClient({"bootstrap.servers": three.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"min.insync.replicas": "1"})])[topic].result(30)
    kc.wait_topic(three.bootstrap, topic, 1)
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    txn_id = next(t for t in (f"rf1-{i}" for i in range(200)) if coordinator_of(three, t) != leader)
    p = Producer({"bootstrap.servers": three.bootstrap, "transactional.id": txn_id})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, f"v{i}".encode())
    p.commit_transaction(30)
    got = _consume_all(three.bootstrap, topic, "read_committed", 6)
    assert [v for _, v in got] == [f"v{i}".encode() for i in range(5)]
