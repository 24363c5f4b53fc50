"""Crash test: a confluent-kafka producer with acks=1 writes keyed records
to a topic with flush.messages=1 while the broker process is killed with
SIGKILL at a random (seeded) moment, for several rounds. After each restart
every acknowledged record is at its acknowledged offset with its key and
value, the partition's offsets are dense from 0, and a consumer continues
from where the previous round's consumer stopped."""

import random
import signal
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

import kiq_clients as kc
from conftest import EXTERNAL, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="kills its own broker")

ROUNDS = 4
SEED = 20261129
KILL_AFTER = (0.3, 1.5)  # seconds of producing before SIGKILL
PRODUCE_BOUND = 10.0     # the broker must be dead within this
DELIVERY_BOUND = 30.0    # pending deliveries settle within this after restart


def create_durable_topic(bootstrap, topic):
    a = kc.admin(bootstrap)
    fut = a.create_topics([NewTopic(topic, 1, 1, config={"flush.messages": "1"})],
                          operation_timeout=10, request_timeout=15)[topic]
    fut.result(timeout=20)
    kc.wait_topic(bootstrap, topic, 1)


def produce_until_killed(broker, topic, rnd, rng, acked):
    """Produces until SIGKILL lands (sent after a random delay), restarts the
    broker, lets the producer settle, and records every acknowledged record
    into acked {offset: (key, value)}. Returns how many were sent."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "1",
                  "enable.idempotence": False, "linger.ms": 2,
                  "message.timeout.ms": 20000, "retry.backoff.ms": 50,
                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200})
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
            return
        assert msg.offset() not in acked or acked[msg.offset()] == (msg.key(), msg.value()), (
            f"offset {msg.offset()} acknowledged twice with different records")
        acked[msg.offset()] = (msg.key(), msg.value())

    kill_at = time.monotonic() + rng.uniform(*KILL_AFTER)
    deadline = time.monotonic() + PRODUCE_BOUND
    sent = 0
    while broker.alive():
        assert time.monotonic() < deadline, "the broker outlived its SIGKILL"
        if time.monotonic() >= kill_at:
            broker.proc.send_signal(signal.SIGKILL)
            broker.proc.wait(5)
            break
        try:
            p.produce(topic, key=f"k{sent % 37}".encode(), value=f"round{rnd}-rec{sent}".encode(),
                      on_delivery=on_delivery)
            sent += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    assert broker.proc.returncode == -signal.SIGKILL
    broker.proc = None
    broker.start()
    left = p.flush(DELIVERY_BOUND)
    assert left == 0, f"{left} records neither delivered nor failed after {DELIVERY_BOUND} s"
    return sent


@pytest.mark.timeout(240)
def test_sigkill_loses_no_acknowledged_record(tmp_path):
    rng = random.Random(SEED)
    broker = Broker(tmp_path / "crash")
    broker.start()
    topic = "crash-durable"
    acked = {}
    read_to = 0       # where the consumer of the previous round stopped
    consumed = {}     # offset -> (key, value) seen by the continuing consumers
    try:
        create_durable_topic(broker.bootstrap, topic)
        for rnd in range(ROUNDS):
            before = len(acked)
            sent = produce_until_killed(broker, topic, rnd, rng, acked)
            assert sent > 0
            # progress each round, or the kill proved nothing
            assert len(acked) > before, f"round {rnd}: nothing acknowledged"

            records = kc.consume_confluent(broker.bootstrap, topic, {0: 0})
            log = {off: (k, v) for _, off, k, v, _ in records}
            assert sorted(log) == list(range(len(log))), f"round {rnd}: offsets not dense"
            missing = [o for o, kv in acked.items() if log.get(o) != kv]
            assert not missing, (f"round {rnd}: {len(missing)} acknowledged records lost or changed, "
                                 f"first at offsets {sorted(missing)[:5]}\n{broker.stderr_tail()}")
            low, high = kc.watermarks_confluent(broker.bootstrap, topic, [0])[0]
            assert (low, high) == (0, len(log))

            # the consumer reads on from where the last one stopped
            more = kc.consume_confluent(broker.bootstrap, topic, {0: read_to})
            offs = [off for _, off, _, _, _ in more]
            assert offs == list(range(read_to, high)), f"round {rnd}: consumer did not read on"
            for _, off, k, v, _ in more:
                consumed[off] = (k, v)
            read_to = high
        assert all(log[o] == kv for o, kv in consumed.items())
        # the recovery ran: every restart after SIGKILL was unclean
        assert "recovering logs" in broker.stderr_tail(200000)
    finally:
        broker.stop()
