"""KIP-714 client telemetry: the broker offers every client a subscription
(kafkaiq.telemetry.metrics, all by default), so the pinned newest
confluent-kafka (librdkafka 2.16, which pushes by default) pushes its
metrics, compressed as it chose; the push appears in /api/clients, in
/metrics as kafkaiq_client_* series labelled with its client id and
instance id, and beside the journey of a batch it produced. Malformed
pushes (unknown subscription, undecodable or corrupt payload, a codec not
offered, too large, no instance id, sooner than the interval) get Kafka's
error codes and the broker stays up; a gzip-compressed one is taken."""

import gzip
import json
import struct
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer

from conftest import Broker
from kiq_wire import Conn, Reader, uvarint

API_GET_TELEMETRY_SUBSCRIPTIONS = 71
API_PUSH_TELEMETRY = 72
ERR_INVALID_REQUEST = 42
ERR_UNSUPPORTED_COMPRESSION_TYPE = 76
ERR_INVALID_RECORD = 87
ERR_UNKNOWN_SUBSCRIPTION_ID = 117
ERR_TELEMETRY_TOO_LARGE = 118
ERR_THROTTLING_QUOTA_EXCEEDED = 89
WAIT = 30


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("telemetry"), ["kafkaiq.telemetry.push.interval.ms=500"])
    b.start()
    yield b
    b.stop()


def get_json(node, path):
    with urllib.request.urlopen(f"http://{node.http}{path}", timeout=10) as r:
        return json.load(r)


def get_text(node, path):
    with urllib.request.urlopen(f"http://{node.http}{path}", timeout=10) as r:
        return r.read().decode()


def test_librdkafka_pushes_by_default(node):
    client_id = f"tele-{uuid.uuid4().hex[:8]}"
    topic = f"tele-{uuid.uuid4().hex[:8]}"
    delivered = []
    p = Producer({"bootstrap.servers": node.bootstrap, "client.id": client_id})
    for i in range(5):
        p.produce(topic, b"v%d" % i, on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert p.flush(WAIT) == 0
    assert all(err is None for err, _ in delivered)
    partition, offset = delivered[0][1].partition(), delivered[0][1].offset()

    deadline = time.monotonic() + WAIT
    clients = []
    while time.monotonic() < deadline and not (clients and clients[0]["pushes"]):
        p.poll(0.2)  # the client pushes from its own threads; polling keeps it serving callbacks
        clients = get_json(node, f"/api/clients?client_id={client_id}")["clients"]
    assert clients, "no push from librdkafka within the bound"
    c = clients[0]
    assert c["client_id"] == client_id
    assert c["pushes"] >= 1 and c["address"] == "127.0.0.1"
    names = {m["name"] for m in c["metrics"]}
    assert "org.apache.kafka.producer.record.queue.time.avg" in names, names
    assert "org.apache.kafka.producer.connection.creation.total" in names, names

    text = get_text(node, "/metrics")
    assert "# TYPE kafkaiq_client_producer_record_queue_time_avg gauge" in text
    labels = f'client_id="{client_id}",client_instance_id="{c["client_instance_id"]}"'
    assert f"kafkaiq_client_producer_connection_creation_total{{{labels}}}" in text

    jr = get_json(node, f"/api/journey?topic={topic}&partition={partition}&offset={offset}")
    assert jr["client_telemetry"]["client_instance_id"] == c["client_instance_id"]
    assert jr["client_telemetry"]["metric_count"] == len(c["metrics"])
    p.flush(1)


def subscribe(conn, instance=b"\0" * 16):
    body = conn.call(API_GET_TELEMETRY_SUBSCRIPTIONS, 0, instance + uvarint(0), flexible=True)
    r = Reader(body)
    r.take(1)  # response header's tagged fields
    throttle, err = r.int32(), r.int16()
    instance, sub = r.take(16), r.int32()
    codecs = list(r.take(r.take(1)[0] - 1))
    interval, max_bytes, delta = r.int32(), r.int32(), r.int8()
    metrics = []
    for _ in range(r.take(1)[0] - 1):
        metrics.append(r.take(r.take(1)[0] - 1).decode())
    return {"error": err, "instance": instance, "subscription": sub, "codecs": codecs, "interval": interval,
            "max_bytes": max_bytes, "delta": delta, "metrics": metrics}


def push(conn, instance, sub, payload, codec=0, terminating=False):
    body = (instance + struct.pack(">i?b", sub, terminating, codec) + uvarint(len(payload) + 1) + payload +
            uvarint(0))
    r = Reader(conn.call(API_PUSH_TELEMETRY, 0, body, flexible=True))
    r.take(1)
    r.int32()
    return r.int16()


# MetricsData{ResourceMetrics{ScopeMetrics{Metric{name "m", gauge{point as_double 2.5}}}}}
POINT = b"\x21" + struct.pack("<d", 2.5)
GAUGE = b"\x0a" + bytes([len(POINT)]) + POINT
METRIC = b"\x0a\x01m\x2a" + bytes([len(GAUGE)]) + GAUGE
SCOPE = b"\x12" + bytes([len(METRIC)]) + METRIC
RM = b"\x12" + bytes([len(SCOPE)]) + SCOPE
PAYLOAD = b"\x0a" + bytes([len(RM)]) + RM


def test_subscription_and_bad_pushes(node):
    host, port = node.bootstrap.split(":")
    with Conn(host, int(port)) as conn:
        s = subscribe(conn)
        assert s["error"] == 0 and s["instance"] != b"\0" * 16
        assert s["metrics"] == [""]  # all metrics
        assert s["interval"] == 500 and s["max_bytes"] > 0 and s["codecs"] == [4, 3, 1, 2]
        assert subscribe(conn, s["instance"])["subscription"] == s["subscription"]
        inst, sub = s["instance"], s["subscription"]

        def asked_push(payload, **kw):
            """A push right after asking for the subscription: never too soon."""
            subscribe(conn, inst)
            return push(conn, inst, sub, payload, **kw)

        assert asked_push(gzip.compress(PAYLOAD), codec=1) == 0  # the codec the client chose
        assert push(conn, inst, sub, PAYLOAD) == ERR_THROTTLING_QUOTA_EXCEEDED  # within its 500 ms
        assert asked_push(PAYLOAD) == 0
        assert push(conn, inst, sub ^ 1, PAYLOAD) == ERR_UNKNOWN_SUBSCRIPTION_ID
        assert push(conn, b"\0" * 16, sub, PAYLOAD) == ERR_INVALID_REQUEST
        assert asked_push(PAYLOAD[:-3]) == ERR_INVALID_RECORD  # truncated protobuf
        assert asked_push(b"\x0b") == ERR_INVALID_RECORD  # a wire type protobuf has retired
        assert asked_push(PAYLOAD, codec=1) == ERR_INVALID_RECORD  # not gzip
        assert asked_push(PAYLOAD, codec=9) == ERR_UNSUPPORTED_COMPRESSION_TYPE
        assert asked_push(b"\0" * (s["max_bytes"] + 1)) == ERR_TELEMETRY_TOO_LARGE

        # the last good push is what is shown; the broker still answers
        kept = [c for c in get_json(node, "/api/clients")["clients"] if c["client_id"] == "kiq-interop"]
        assert len(kept) == 1 and kept[0]["metrics"] == [
            {"name": "m", "kind": "gauge", "value": 2.5, "attributes": {}}]
        assert 'kafkaiq_client_m{client_id="kiq-interop"' in get_text(node, "/metrics")
        assert push(conn, inst, sub, b"", terminating=True) == 0  # a closing client's, however soon
