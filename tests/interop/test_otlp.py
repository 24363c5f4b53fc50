"""Journeys as OpenTelemetry traces: a broker with kafkaiq.otlp.endpoint set
POSTs OTLP/HTTP JSON to a receiver this test runs (a small Python HTTP
server). Batches produced by confluent-kafka arrive as one trace each: a
SERVER span named and tagged by the messaging conventions, and a span per
stage under it with its text and why; a batch whose first record carries a
W3C traceparent header is in the producer's trace, the child of its span.
Strings are escaped (a client id with quotes, a backslash and a tab).
A receiver that fails or is gone costs the broker nothing but the traces
(counted); an endpoint it cannot use stops it at start with the reason.
"""

import http.server
import json
import subprocess
import threading
import urllib.request

import pytest
from confluent_kafka import Producer

from cluster import wait_until
from conftest import BROKER_BIN, CONFIG, EXTERNAL, Broker, free_port

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="needs a broker this suite starts")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: every POST's path, content type
    and JSON body; answers `status` (200 unless a test says)."""

    def __init__(self):
        self.posts = []
        self.status = 200
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.posts.append((self.path, self.headers.get("Content-Type"), json.loads(body)))
                    status = outer.status
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self):
        with self.lock:
            posts = list(self.posts)
        return [s for _, _, doc in posts for rs in doc["resourceSpans"] for ss in rs["scopeSpans"]
                for s in ss["spans"]]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def attrs(span):
    out = {}
    for a in span["attributes"]:
        (kind, value), = a["value"].items()
        out[a["key"]] = int(value) if kind == "intValue" else value
    return out


def state(b):
    with urllib.request.urlopen(f"http://{b.http}/api/state", timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


@pytest.fixture
def otlp_broker(tmp_path, receiver):
    b = Broker(tmp_path, [f"kafkaiq.otlp.endpoint=http://127.0.0.1:{receiver.port}", "num.partitions=1"])
    b.start()
    yield b
    b.stop()


def produce_batches(bootstrap, topic, n, traceparent_first=False, client_id="otlp-writer"):
    """n batches of one record each (flushed one by one), offsets 0..n-1."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "client.id": client_id})
    errors = []
    for i in range(n):
        headers = [("traceparent", f"00-{TRACE_ID}-{PARENT_ID}-01".encode())] if i == 0 and traceparent_first else None
        p.produce(topic, value=f"v{i}".encode(), partition=0, headers=headers,
                  on_delivery=lambda err, msg: err and errors.append(err))
        assert p.flush(30) == 0 and not errors, errors


def test_one_trace_per_batch_with_spans_and_the_producer_link(otlp_broker, receiver):
    topic = "otlp-traced"
    produce_batches(otlp_broker.bootstrap, topic, 4, traceparent_first=True)

    def roots():
        return [s for s in receiver.spans() if s["kind"] == 2 and attrs(s).get("messaging.destination.name") == topic]
    found = wait_until(lambda: (lambda r: r if len(r) >= 4 else None)(roots()), 15, "a trace per batch")
    assert len(found) == 4, found
    with receiver.lock:
        assert {(path, ctype) for path, ctype, _ in receiver.posts} == {("/v1/traces", "application/json")}
    assert len({s["traceId"] for s in found}) == 4
    spans = receiver.spans()
    by_offset = {attrs(s)["messaging.kafka.offset"]: s for s in found}
    assert sorted(by_offset) == [0, 1, 2, 3]
    for offset, root in by_offset.items():
        a = attrs(root)
        assert root["name"] == f"produce {topic}"
        assert (a["messaging.system"], a["messaging.operation.type"], a["messaging.kafka.destination.partition"],
                a["messaging.destination.partition.id"], a["messaging.client.id"]) == (
            "kafka", "send", 0, "0", "otlp-writer")
        assert int(root["endTimeUnixNano"]) > int(root["startTimeUnixNano"]) > 1_600_000_000 * 10**9
        children = [s for s in spans if s.get("parentSpanId") == root["spanId"]]
        assert all(c["traceId"] == root["traceId"] and c["kind"] == 1 for c in children)
        names = [c["name"] for c in children]
        for want in ("received", "enqueued", "dequeued", "validated", "appended", "committed", "acknowledged",
                     "response_queued", "sent"):
            assert want in names, (want, names)
        by_name = {c["name"]: attrs(c) for c in children}
        assert by_name["appended"]["kafkaiq.first_offset"] == offset
        assert by_name["dequeued"]["kafkaiq.why"].startswith("queued behind ")
        assert all("kafkaiq.text" in attrs(c) for c in children)
        # each stage's span is its wait: it ends where the next begins
        ordered = sorted(children, key=lambda c: int(c["startTimeUnixNano"]))
        for x, y in zip(ordered, ordered[1:]):
            assert int(x["endTimeUnixNano"]) <= int(y["endTimeUnixNano"])
    # the batch that carried traceparent is in the producer's trace, under its span
    linked = by_offset[0]
    assert (linked["traceId"], linked["parentSpanId"]) == (TRACE_ID, PARENT_ID)
    assert all("parentSpanId" not in by_offset[o] and by_offset[o]["traceId"] != TRACE_ID for o in (1, 2, 3))
    js = state(otlp_broker)["journeys"]
    assert js["otlp_exported"] >= 4 and js["otlp_dropped"] == 0
    # the same counts in /metrics, beside the journal's
    with urllib.request.urlopen(f"http://{otlp_broker.http}/metrics", timeout=5) as r:
        text = r.read().decode()
    exported = [ln for ln in text.splitlines() if ln.startswith('kafkaiq_otlp_traces_total{outcome="exported"}')]
    assert len(exported) == 1 and float(exported[0].split()[-1]) >= 4, exported
    assert "kafkaiq_journeys_journal_written_total" in text


def test_a_client_id_json_must_escape_arrives_whole(otlp_broker, receiver):
    client_id = 'a "q\\b\tc'
    produce_batches(otlp_broker.bootstrap, "otlp-escaped", 1, client_id=client_id)
    root = wait_until(lambda: next((s for s in receiver.spans() if s["kind"] == 2 and
                                    attrs(s)["messaging.destination.name"] == "otlp-escaped"), None), 15, "its trace")
    assert attrs(root)["messaging.client.id"] == client_id


def test_a_failing_or_gone_receiver_costs_only_the_traces(otlp_broker, receiver):
    topic = "otlp-failing"
    receiver.status = 500
    produce_batches(otlp_broker.bootstrap, topic, 2)
    wait_until(lambda: state(otlp_broker)["journeys"]["otlp_failed"] >= 2, 15, "the failed exports counted")
    receiver.stop()
    produce_batches(otlp_broker.bootstrap, topic, 2)  # the broker serves on
    wait_until(lambda: state(otlp_broker)["journeys"]["otlp_failed"] >= 4, 15, "the unsent traces counted")
    assert otlp_broker.alive()


@pytest.mark.parametrize("endpoint", ["https://127.0.0.1:4318", "http://", "http://host:port", "collector:4318"])
def test_an_unusable_endpoint_stops_the_start_with_the_reason(tmp_path, endpoint):
    (tmp_path / "data").mkdir()
    res = subprocess.run([str(BROKER_BIN), "serve", str(CONFIG), "--override", f"log.dirs={tmp_path / 'data'}",
                          "--override", f"listeners=PLAINTEXT://127.0.0.1:{free_port()}",
                          "--override", f"kafkaiq.otlp.endpoint={endpoint}"],
                         capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode != 0
    assert "kafkaiq.otlp.endpoint" in res.stderr.decode(), res.stderr.decode()
