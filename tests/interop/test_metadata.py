"""Cluster metadata as each real client sees it."""

import json
import re
import subprocess

import pytest

import kiq_clients as kc

TOPIC = "meta-topic"


@pytest.fixture(scope="module")
def topic(broker):
    parts = kc.create_topic(broker.bootstrap, TOPIC, 3, managed=broker.managed)
    return TOPIC, parts


def test_kcat_metadata_list(broker, topic):
    res = subprocess.run(["kcat", "-L", "-b", broker.bootstrap, "-m", "10"],
                         capture_output=True, timeout=30)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    assert re.search(rf"broker -?\d+ at {re.escape(broker.host)}:{broker.port}\b", out), out
    m = re.search(rf'topic "{TOPIC}" with (\d+) partitions', out)
    assert m, out
    assert int(m.group(1)) == len(topic[1])
    for p in topic[1]:
        assert re.search(rf"partition {p}, leader -?\d+, replicas: ", out), out


def test_kcat_metadata_json(broker, topic):
    res = subprocess.run(["kcat", "-L", "-J", "-b", broker.bootstrap, "-m", "10"],
                         capture_output=True, timeout=30)
    assert res.returncode == 0, res.stderr.decode()
    md = json.loads(res.stdout)
    brokers = {b["id"]: b["name"] for b in md["brokers"]}
    assert f"{broker.host}:{broker.port}" in brokers.values(), md["brokers"]
    topics = {t["topic"]: t for t in md["topics"]}
    assert TOPIC in topics, list(topics)
    t = topics[TOPIC]
    assert "error" not in t, t
    assert sorted(p["partition"] for p in t["partitions"]) == topic[1]
    for p in t["partitions"]:
        assert p["leader"] in brokers, p
        replicas = [r["id"] for r in p["replicas"]]
        isrs = [r["id"] for r in p["isrs"]]
        assert p["leader"] in replicas and p["leader"] in isrs, p


def test_confluent_list_topics(broker, topic):
    md = kc.admin(broker.bootstrap).list_topics(timeout=10)
    assert any(b.host == broker.host and b.port == broker.port for b in md.brokers.values()), \
        md.brokers
    assert md.controller_id in md.brokers, (md.controller_id, md.brokers)
    t = md.topics[TOPIC]
    assert t.error is None
    assert sorted(t.partitions) == topic[1]
    for p in t.partitions.values():
        assert p.error is None
        assert p.leader in md.brokers
        assert p.leader in p.replicas and p.leader in p.isrs


def test_confluent_single_topic_metadata(broker, topic):
    md = kc.admin(broker.bootstrap).list_topics(topic=TOPIC, timeout=10)
    assert list(md.topics) == [TOPIC]
    assert sorted(md.topics[TOPIC].partitions) == topic[1]


def test_kafka_python_admin_and_consumer_topics(broker, topic):
    from kafka import KafkaAdminClient, KafkaConsumer
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        assert TOPIC in a.list_topics()
        cluster = a.describe_cluster()
        assert any(b["port"] == broker.port for b in cluster["brokers"]), cluster
    finally:
        a.close()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                      request_timeout_ms=10000)
    try:
        assert TOPIC in c.topics()
        assert sorted(c.partitions_for_topic(TOPIC)) == topic[1]
    finally:
        c.close()
