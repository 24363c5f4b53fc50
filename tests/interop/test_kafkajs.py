"""kafkajs 2.2.4 against the broker: its producer (plain, gzip, idempotent)
read back by confluent-kafka, kafkajs group members consuming what
confluent-kafka produced, and a kafkajs member sharing a group with
confluent-kafka members under the "range" protocol (kafkajs has no range
assignor of its own; js/group_consumer.js brings one under that name).

kafkajs comes from tests/interop/js/node_modules, installed by scripts/deps.sh
(`make deps`); the module is skipped only when node itself is missing.
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

import kiq_clients as kc
from group_member import Member, wait_for
from test_groups import (CONSUME_TIMEOUT, STABLE_TIMEOUT, check_exactly_once, committed_offsets,
                         end_offsets, make_messages, members, names, stable)  # noqa: F401

JS = pathlib.Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: no kafkajs tests")


@pytest.fixture(scope="module", autouse=True)
def kafkajs_installed():
    assert (JS / "node_modules" / "kafkajs").is_dir(), \
        "kafkajs is missing from tests/interop/js/node_modules: run scripts/deps.sh (make deps)"


@pytest.fixture
def js_members(tmp_path):
    """Starts kafkajs member processes; all are stopped at teardown."""
    started = []

    def start(broker, group, topic, name, assigner="range", session_timeout=10000):
        argv = [NODE, str(JS / "group_consumer.js"), "--bootstrap", broker.bootstrap,
                "--group", group, "--topic", topic, "--name", name,
                "--assigner", assigner, "--session-timeout", str(session_timeout)]
        m = Member(name, argv, cwd=str(JS), stderr_path=str(tmp_path / f"{name}.stderr"))
        started.append(m)
        return m

    yield start
    for m in started:
        m.stop(timeout=15)


def produce_kafkajs(broker, topic, msgs, parts, path, codec="none", idempotent=False):
    """Produces msgs with kafkajs, spread over parts; returns {key: (partition, offset)}."""
    recs = [{"k": k.decode(), "v": v.decode(), "h": [[hk, hv.decode()] for hk, hv in h],
             "p": parts[i % len(parts)]} for i, (k, v, h) in enumerate(msgs)]
    path.write_text(json.dumps(recs))
    cmd = [NODE, str(JS / "producer.js"), "--bootstrap", broker.bootstrap, "--topic", topic,
           "--input", str(path), "--codec", codec]
    if idempotent:
        cmd.append("--idempotent")
    # Every record names its partition, so the default-partitioner notice is noise.
    env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
    res = subprocess.run(cmd, capture_output=True, timeout=120, cwd=str(JS), env=env)
    assert res.returncode == 0, \
        f"kafkajs producer exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    reports = {}
    for line in res.stdout.decode().splitlines():
        if line.strip():
            j = json.loads(line)
            reports[j["k"].encode()] = (j["p"], j["o"])
    assert len(reports) == len(msgs), f"{len(reports)} reports for {len(msgs)} records"
    return reports


@pytest.mark.timeout(180)
@pytest.mark.parametrize("codec,idempotent", [("none", False), ("gzip", False), ("none", True)],
                         ids=["plain", "gzip", "idempotent"])
def test_kafkajs_produce_confluent_read(broker, tmp_path, codec, idempotent):
    tag = f"js-{codec}-{'idem' if idempotent else 'plain'}"
    topic = kc.fresh_name(f"kafkajs-{tag}", broker)
    parts = kc.create_topic(broker.bootstrap, topic, 3, managed=broker.managed)
    msgs = make_messages(3000, tag)
    reports = produce_kafkajs(broker, topic, msgs, parts, tmp_path / "in.json", codec, idempotent)
    kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, parts), msgs, reports)


@pytest.mark.timeout(240)
def test_kafkajs_group_consumes_confluent_records(broker, js_members):
    topic, group, parts = names(broker, "kafkajs-alone")
    # kafkajs's own assignor, under its own protocol name.
    ms = [js_members(broker, group, topic, f"js{i}", assigner="roundrobin") for i in range(2)]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT,
             "two kafkajs members to split the partitions", ms)
    msgs = make_messages(4000, "js-alone")
    reports = kc.produce_confluent(broker.bootstrap, topic, msgs)
    wait_for(lambda: sum(len(m.records) for m in ms) >= len(msgs), CONSUME_TIMEOUT,
             f"{len(msgs)} records across the kafkajs members", ms)
    check_exactly_once(ms, msgs, reports)
    ends = end_offsets(broker, topic, parts)
    wait_for(lambda: all(m.committed.get(p) == ends[p] for m in ms for p in m.assignment),
             30, f"the kafkajs members to commit {ends}", ms)
    for m in ms:
        assert not m.commit_errors, m.describe()
        assert m.stop() == 0, m.describe()
    assert committed_offsets(broker, group, topic, parts) == ends


@pytest.mark.timeout(240)
@pytest.mark.parametrize("leader", ["kafkajs", "confluent"])
def test_kafkajs_and_confluent_share_a_range_group(broker, members, js_members, leader):
    topic, group, parts = names(broker, f"kafkajs-mixed-{leader}")

    def start(client, name):
        if client == "kafkajs":
            return js_members(broker, group, topic, name)
        return members(broker, group, topic, name)

    other = "confluent" if leader == "kafkajs" else "kafkajs"
    first = start(leader, f"{leader}-1")
    wait_for(lambda: first.assignment == set(parts), STABLE_TIMEOUT,
             f"{leader} to hold every partition alone", [first])
    ms = [first, start(other, f"{other}-1"), start(leader, f"{leader}-2")]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT,
             "kafkajs and confluent members to split the partitions", ms)

    msgs = make_messages(3000, f"js-mixed-{leader}")
    reports = kc.produce_confluent(broker.bootstrap, topic, msgs)
    wait_for(lambda: sum(len(m.records) for m in ms) >= len(msgs), CONSUME_TIMEOUT,
             f"{len(msgs)} records across the members", ms)
    check_exactly_once(ms, msgs, reports)
    for m in ms:
        assert m.stop() == 0, m.describe()


def test_kafkajs_transactions(broker):
    """kafkajs transactions with its own API: commits and aborts in turn, and
    offsets sent in a committed transaction; a read_committed consumer
    (confluent-kafka) gets exactly the committed records, and the group's
    offset is the last committed transaction's."""
    from confluent_kafka import TopicPartition
    from test_exactly_once import read

    topic = "kafkajs-txn"
    kc.create_topic(broker.bootstrap, topic, 1)
    out = subprocess.run([NODE, str(JS / "transactions.js"), "--bootstrap", broker.bootstrap, "--topic", topic,
                          "--group", "kafkajs-txn-group"],
                         cwd=str(JS), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    got = [v.decode() for _, _, _, v in read(broker.bootstrap, topic)]
    assert got == result["committed"]
    everything = [v.decode() for _, _, _, v in read(broker.bootstrap, topic, isolation="read_uncommitted")]
    assert sorted(everything) == sorted(result["committed"] + result["aborted"])
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kafkajs-txn-group"})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        c.close()
    assert tp.offset == 3  # round 2's sendOffsets; round 3 aborted
