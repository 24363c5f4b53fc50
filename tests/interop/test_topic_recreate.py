"""Topics in a cluster (`kafkaiq serve --brokers 3`) as Kafka's clients use
them: a deleted topic's name taken again by a new topic (a new topic id) at
RF 1 and RF 3, then produced to and consumed; DescribeConfigs of a topic
answered by every broker, hosting a replica of it or not (Kafka answers
from its metadata; kafkajs always asks the controller)."""

import json
import struct
import subprocess

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import kiq_clients as kc
import kiq_wire as kw
from cluster import HOST, Cluster, OneProcessCluster, metadata, wait_until
from conftest import ROOT

API_DESCRIBE_CONFIGS = 32


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    c = OneProcessCluster(tmp_path_factory.mktemp("recreate"))
    c.start()
    yield c
    c.stop()


def wait_topic(one, topic, present, rf=None):
    """Until every broker's Metadata shows the topic with a leader and a full
    ISR for each partition (present) or does not list it (not present)."""
    def ok():
        for i in range(one.n):
            t = metadata(HOST, one.base + i, [topic])["topics"].get(topic)
            if not present:
                if t is not None and t["error"] == 0:
                    return False
                continue
            if t is None or t["error"] or not t["partitions"]:
                return False
            if any(st["leader"] < 0 or len(st["isr"]) != rf for st in t["partitions"].values()):
                return False
        return True
    wait_until(ok, 30, f"{topic} {'created' if present else 'gone'} on every broker")


@pytest.mark.parametrize("rf", [1, 3])
def test_a_deleted_topics_name_is_used_again(one, rf):
    topic = f"again-rf{rf}"
    a = AdminClient({"bootstrap.servers": one.bootstrap})
    first = kc.make_messages(300, "first")
    for rnd in range(2):
        a.create_topics([NewTopic(topic, 3, rf)], operation_timeout=10)[topic].result(20)
        wait_topic(one, topic, True, rf)
        msgs = first if rnd == 0 else kc.make_messages(300, "second")
        reports = kc.produce_confluent(one.bootstrap, topic, msgs, acks="all")
        if rnd == 0:
            a.delete_topics([topic], operation_timeout=10)[topic].result(20)
            wait_topic(one, topic, False)
    # the new topic holds what was written to it, nothing of the old one
    kc.check_records(kc.consume_confluent_all(one.bootstrap, topic, range(3)), msgs, reports)


def describe_topic_configs(port, topic):
    """DescribeConfigs v1 of one topic, straight to one broker: (error,
    {name: (value, source)})."""
    body = (kw.array([struct.pack(">b", 2) + kw.string(topic) + kw.array(None)]) + struct.pack(">b", 0))
    with kw.Conn(HOST, port) as c:
        r = kw.Reader(c.call(API_DESCRIBE_CONFIGS, 1, body))
    r.int32()  # throttle

    def entry(r):
        name, value = r.string(), r.string()
        r.int8()  # read only
        source = r.int8()
        r.int8()  # sensitive
        r.array(lambda r: (r.string(), r.string(), r.int8()))
        return name, (value, source)

    def result(r):
        err = r.int16()
        r.string()  # message
        r.int8()
        r.string()
        return err, dict(r.array(entry))
    [res] = r.array(result)
    return res


def test_every_broker_describes_a_topic_it_does_not_host(one):
    topic = "hosted-once"
    a = AdminClient({"bootstrap.servers": one.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "123456", "cleanup.policy": "compact"})],
                    operation_timeout=10)[topic].result(20)
    wait_topic(one, topic, True, 1)
    for i in range(one.n):
        err, configs = describe_topic_configs(one.base + i, topic)
        assert err == 0, f"broker {i}: error {err}"
        assert configs["retention.ms"] == ("123456", 1), f"broker {i}: {configs['retention.ms']}"  # DYNAMIC_TOPIC
        assert configs["cleanup.policy"] == ("compact", 1), f"broker {i}: {configs['cleanup.policy']}"
        assert configs["segment.bytes"][1] != 1, f"broker {i}: segment.bytes set on the topic?"
    err, _ = describe_topic_configs(one.base + 1, "no-such-topic")
    assert err == 3  # UNKNOWN_TOPIC_OR_PARTITION

    # kafkajs asks the controller, which hosts no replica of it at most brokers
    script = """
const { Kafka, ConfigResourceTypes, logLevel } = require('kafkajs');
(async () => {
  const admin = new Kafka({ clientId: 'kiq', brokers: process.argv[1].split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const r = await admin.describeConfigs({ includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: process.argv[2] }] });
  await admin.disconnect();
  const e = r.resources[0];
  console.log(JSON.stringify({ error: e.errorCode,
      retention: (e.configEntries.find(c => c.configName === 'retention.ms') || {}).configValue }));
})().catch(e => { console.error(String(e)); process.exit(1); });
"""
    js = ROOT / "tests" / "interop" / "js"
    if not (js / "node_modules" / "kafkajs").is_dir():
        pytest.skip("kafkajs not installed")
    r = subprocess.run(["node", "-e", script, one.bootstrap, topic], capture_output=True, text=True, timeout=60,
                       cwd=js)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"error": 0, "retention": "123456"}


def test_a_broker_that_missed_the_deletion_hosts_the_new_topic(tmp_path):
    """Broker 2 is down while its topic is deleted; the controller's broker
    restarts (what it had still to tell broker 2 is gone with it) and the
    name is taken by a new topic. Broker 2 comes back with the old topic's
    replicas on disk: they are stray (another topic id) and deleted, and it
    hosts the new topic's replicas in their place."""
    c = Cluster(tmp_path / "cluster")
    c.start()
    try:
        topic = "missed"
        a = AdminClient({"bootstrap.servers": c.bootstrap})
        c.create_topic(topic, 3)
        kc.produce_confluent(c.bootstrap, topic, kc.make_messages(200, "stale-incarnation"), acks="all")
        c[2].stop()
        a.delete_topics([topic], operation_timeout=10)[topic].result(20)
        c[0].kill()
        c[0].start()
        c.wait_registered()
        a = AdminClient({"bootstrap.servers": c.bootstrap})
        a.create_topics([NewTopic(topic, 3, 2)], operation_timeout=10)[topic].result(20)
        c.wait_healthy(topic, 3, rf=2)
        c[2].start()
        c.wait_registered()
        c.create_topic("after-missed", 3)  # broker 2 took the controller's word
        # every partition the new topic placed on broker 2 is in sync there
        for p, st in c.wait_healthy(topic, 3, rf=2).items():
            assert 2 not in st["replicas"] or 2 in st["isr"], st
        msgs = kc.make_messages(300, "new")
        reports = kc.produce_confluent(c.bootstrap, topic, msgs, acks="all")
        kc.check_records(kc.consume_confluent_all(c.bootstrap, topic, range(3)), msgs, reports)
        # nothing of the old topic is left on broker 2
        parts = c.partitions(topic)
        for d in sorted(c[2].data_dir.glob(f"{topic}-*")):
            assert 2 in parts[int(d.name.rsplit("-", 1)[1])]["replicas"], f"{d} left behind"
            for seg in d.glob("*.log"):
                assert b"stale-incarnation" not in seg.read_bytes(), f"{seg} holds the old topic's records"
        log = c[2].stderr_path.read_text(errors="replace")
        assert f"topic {topic} here is not the controller's" in log, log[-2000:]
    finally:
        c.stop()
