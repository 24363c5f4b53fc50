"""Log compaction through real clients: a topic with cleanup.policy=compact,
small segments and a short delete.retention.ms on a broker whose cleaner
runs every 100 ms. confluent-kafka writes many updates per key (lz4 batches
of several records) and tombstones for some keys; once the cleaner has run,
a consumer from the beginning sees each key once, with its latest value at
the offset the producer was given for it, and the tombstoned keys are gone
once delete.retention.ms has passed. A keyless record is refused with
INVALID_RECORD, as Kafka does on compacted topics. max.compaction.lag.ms
rolls a compacted topic's segments, so that its old records get compacted
without segment.ms or segment.bytes ever rolling them."""

import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import NewTopic

import kiq_clients as kc
import kiq_wire as w
from conftest import EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="starts its own broker")

BOUND = 30.0
KEYS = 20
ROUNDS = 15
DEAD = {f"key-{k}".encode() for k in range(5)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("compaction"), ["log.cleaner.backoff.ms=100"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def create_compacted(broker, topic):
    a = kc.admin(broker.bootstrap)
    fut = a.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact",
                                                         "segment.bytes": "2048",
                                                         "delete.retention.ms": "1000"})],
                          operation_timeout=10, request_timeout=15)[topic]
    fut.result(timeout=20)
    kc.wait_topic(broker.bootstrap, topic, 1)


def produce(broker, topic, msgs, extra=None):
    """msgs: (key, value) in order; returns [(key, value, offset)] as delivered."""
    conf = {"bootstrap.servers": broker.bootstrap, "acks": "1", "linger.ms": 5,
            "compression.type": "lz4", "batch.num.messages": 4}
    conf.update(extra or {})
    p = Producer(conf)
    out, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            out.append((msg.key(), msg.value(), msg.offset()))

    for key, value in msgs:
        p.produce(topic, key=key, value=value, on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    return out


def test_latest_value_per_key_at_its_offset(broker):
    topic = "compacted"
    create_compacted(broker, topic)
    msgs = []
    for r in range(ROUNDS):
        for k in range(KEYS):
            key = f"key-{k}".encode()
            last = r == ROUNDS - 1
            msgs.append((key, None if last and key in DEAD else f"value-{k}-round-{r}".encode() * 2))
    delivered = produce(broker, topic, msgs)
    # unique keys after the updates, so their segments are closed ones
    delivered += produce(broker, topic, [(f"pad-{i}".encode(), b"p" * 60) for i in range(60)],
                         {"compression.type": "none", "batch.num.messages": 1, "linger.ms": 0})
    latest = {}
    for key, value, offset in delivered:
        latest[key] = (value, offset)
    assert len(delivered) == len(msgs) + 60

    # Poll (bounded) until the cleaner has compacted and dropped the tombstones.
    deadline = time.monotonic() + BOUND
    while True:
        got = kc.consume_confluent_all(broker.bootstrap, topic, [0])
        keyed = [(k, v, o) for _, o, k, v, _ in got if k.startswith(b"key-")]
        seen = {k for k, _, _ in keyed}
        if len(keyed) == KEYS - len(DEAD) and not (seen & DEAD):
            break
        assert time.monotonic() < deadline, (
            f"after {BOUND} s: {len(keyed)} keyed records, tombstoned keys still there: {sorted(seen & DEAD)}")
        time.sleep(0.2)

    for key, value, offset in keyed:
        assert latest[key] == (value, offset), key
    assert {k for k, _, _ in keyed} == {f"key-{k}".encode() for k in range(KEYS)} - DEAD
    # offsets only increase, and the padding is intact at its offsets
    offsets = [o for _, o, _, _, _ in got]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    pads = {k: (v, o) for _, o, k, v, _ in got if k.startswith(b"pad-")}
    assert pads == {k: latest[k] for k in latest if k.startswith(b"pad-")}
    # neither the log start nor the log end moved
    low, high = kc.watermarks_confluent(broker.bootstrap, topic, [0])[0]
    assert (low, high) == (0, len(delivered))
    # no cleaning leftovers once the swaps are done
    assert not list((broker.data_dir / f"{topic}-0").glob("*.cleaned"))


def test_keyless_record_refused(broker):
    topic = "compacted-nokey"
    create_compacted(broker, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "1", "message.send.max.retries": 0})
    errors = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(30) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.INVALID_RECORD, errors[0]


def test_max_compaction_lag_compacts_old_records(broker):
    """With the default segment.ms (7 days) and segment.bytes (1 GiB), every
    record would stay in the active segment, which the cleaner never
    touches; max.compaction.lag.ms=1000 rolls the log whenever a record
    comes more than a second after its segment's first, so the older values
    of a key are cleaned away."""
    topic = "compacted-maxlag"
    a = kc.admin(broker.bootstrap)
    a.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact", "max.compaction.lag.ms": "1000"})],
                    operation_timeout=10, request_timeout=15)[topic].result(timeout=20)
    kc.wait_topic(broker.bootstrap, topic, 1)
    t0 = int(time.time() * 1000) - 60000
    for i, key in enumerate([b"a", b"a", b"a", b"b"]):
        batch = w.record_batch([(key, b"v%d" % i, ())], base_ts=t0 + 2000 * i)
        with w.Conn(broker.host, broker.port) as c:
            assert w.parse_produce_v3(c.call(0, 3, w.produce_v3_body(topic, 0, batch, acks=1)))[(topic, 0)] == (0, i)
    deadline = time.monotonic() + BOUND
    while True:
        got = [(k, v, o) for _, o, k, v, _ in kc.consume_confluent_all(broker.bootstrap, topic, [0])]
        if got == [(b"a", b"v2", 2), (b"b", b"v3", 3)]:
            break
        assert time.monotonic() < deadline, f"after {BOUND} s: {got}"
        time.sleep(0.2)
