"""The Grafana dashboard shipped in docs/grafana/kafkaiq.json against a live
`serve --brokers 3`: every metric name its PromQL queries (panels and
template variables) use is served by some broker's /metrics once a
producer (librdkafka, pushing its KIP-714 telemetry) and a consumer have
run. And the series jmx_exporter users chart that KafkaIQ lacked move:
produce and fetch requests per topic and their failures, replication bytes
in and out, the controller's operations, and labels named as the common
jmx_exporter configs name them (clientId, not clientid; delayedOperation)."""

import json
import pathlib
import re
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cluster import OneProcessCluster

DASHBOARD = pathlib.Path(__file__).resolve().parents[3] / "docs" / "grafana" / "kafkaiq.json"
WAIT = 60
NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
               "offset"}


def metric_names(expr):
    """The metric names a PromQL expression reads: identifiers outside label
    matchers, ranges, strings and grouping clauses that are not a call."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        if m.group(0) in NOT_METRICS or e[m.end():].lstrip().startswith("("):
            continue
        names.add(m.group(0))
    return names


def dashboard_names():
    d = json.loads(DASHBOARD.read_text())
    names = set()

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                names.update(metric_names(t["expr"]))
            walk(p.get("panels", []))

    walk(d["panels"])
    for v in d["templating"]["list"]:
        m = re.match(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", v.get("query", "") if v["type"] == "query" else "")
        if m:
            names.add(m.group(1))
    return names


def test_metric_names_of_promql():
    assert metric_names('sum by (request) (rate(a_sum{job=~"$job"}[$__rate_interval])) / '
                        'sum by (request) (rate(a_count{x="by (y)"}[1m]))') == {"a_sum", "a_count"}
    assert metric_names('max by (instance) (m{clientId="Replica"}) and on (instance) n offset 5m') == {"m", "n"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = OneProcessCluster(tmp_path_factory.mktemp("grafana"),
                          overrides=["default.replication.factor=3", "offsets.topic.replication.factor=3",
                                     "min.insync.replicas=2", "kafkaiq.telemetry.push.interval.ms=500"])
    c.start()
    yield c
    c.stop()


def scrape(address):
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(texts, name, **labels):
    """The values of name's samples with those labels, over every broker's text."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    out = []
    for text in texts:
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                head = line.rsplit(" ", 1)[0]
                if all(w in head for w in want) and head.split("{")[0] == name:
                    out.append(float(line.rsplit(" ", 1)[1]))
    return out


def test_dashboard_queries_are_served(cluster):
    topic = f"dash-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "dash-producer", "acks": "all"})
    for i in range(50):
        p.produce(topic, b"v%d" % i, partition=0)
    assert p.flush(WAIT) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "dash", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 10 ** 6)])  # out of range: a failed fetch, then earliest
    got, deadline = 0, time.monotonic() + WAIT
    while got < 50 and time.monotonic() < deadline:
        m = c.poll(0.5)
        got += m is not None and m.error() is None
    assert got == 50

    want = dashboard_names()
    assert len(want) >= 30, want

    def served():
        texts = [scrape(a) for a in cluster.http]
        have = set()
        for text in texts:
            have.update(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0)
                        for line in text.splitlines() if line and not line.startswith("#"))
        return texts, have

    deadline = time.monotonic() + WAIT
    texts, have = served()
    while (want - have or not sum(samples(texts, "kafka_server_brokertopicmetrics_replicationbytesin_total"))) \
            and time.monotonic() < deadline:
        p.poll(0.5)  # the producer pushes its telemetry from its own threads
        texts, have = served()
    c.close()
    assert not want - have, f"the dashboard queries metrics no broker serves: {sorted(want - have)}"

    assert sum(samples(texts, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic=topic)) >= 1
    assert sum(samples(texts, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic=topic)) == 0
    assert sum(samples(texts, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic=topic)) >= 1
    assert sum(samples(texts, "kafka_server_brokertopicmetrics_failedfetchrequests_total", topic=topic)) >= 1
    assert sum(samples(texts, "kafka_server_brokertopicmetrics_replicationbytesin_total")) > 0
    assert sum(samples(texts, "kafka_server_brokertopicmetrics_replicationbytesout_total")) > 0
    assert sum(samples(texts, "kafka_controller_kafkacontroller_eventqueueoperationsstartedcount")) > 0
    assert samples(texts, "kafka_server_replicafetchermanager_maxlag", clientId="Replica")
    assert samples(texts, "kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Produce")
    assert not any("clientid=" in t for t in texts)
