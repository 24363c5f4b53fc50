"""A current librdkafka against one broker and against `serve --brokers 3`.

node-rdkafka 3.6.1 (tests/interop/js, installed by scripts/deps.sh) builds
the librdkafka 2.12.0 it bundles; js/rdkafka.js drives its producer,
consumer and admin client, and rdkafka_admin.c, compiled here against that
same librdkafka, its admin calls node-rdkafka does not expose (configs,
groups, cluster, topics, leader elections, offsets). Debian's librdkafka is
2.0.2, which never sends what 2.1+ sends: an all-topics Metadata v12 with
stray bytes after its fields (once dropped here, so producers never
connected), CreatePartitions, DescribeCluster, ...

Each test runs against both targets (conftest's `target`): the module's
broker and a three-broker cluster in one process (replication factor 3).
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

import kiq_clients as kc
from cluster import wait_until
from conftest import EXTERNAL, ROOT

JS = pathlib.Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")
RDKAFKA_DEPS = JS / "node_modules" / "node-rdkafka" / "build" / "deps"
ADMIN_SRC = pathlib.Path(__file__).resolve().parent / "rdkafka_admin.c"
ADMIN_BIN = ROOT / "build" / "interop" / "rdkafka_admin"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RUN_TIMEOUT = 120

pytestmark = [pytest.mark.skipif(NODE is None, reason="node is not installed: no node-rdkafka tests"),
              pytest.mark.skipif(EXTERNAL is not None, reason="starts its own cluster")]


@pytest.fixture(scope="module", autouse=True)
def librdkafka_2_12():
    assert (RDKAFKA_DEPS / "librdkafka.so.1").is_file(), \
        "node-rdkafka's librdkafka is missing from tests/interop/js: run scripts/deps.sh (make deps)"
    out = subprocess.run([NODE, "-e", "console.log(require('node-rdkafka').librdkafkaVersion)"],
                         cwd=JS, capture_output=True, timeout=30, check=True)
    assert out.stdout.decode().strip() == "2.12.0"


@pytest.fixture(scope="module")
def admin_tool():
    """rdkafka_admin built against node-rdkafka's librdkafka 2.12."""
    ADMIN_BIN.parent.mkdir(parents=True, exist_ok=True)
    if not ADMIN_BIN.exists() or ADMIN_BIN.stat().st_mtime < ADMIN_SRC.stat().st_mtime:
        subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-o", str(ADMIN_BIN), str(ADMIN_SRC),
                        f"-I{RDKAFKA_DEPS / 'include'}", f"-L{RDKAFKA_DEPS}", "-lrdkafka",
                        f"-Wl,-rpath,{RDKAFKA_DEPS.resolve()}"], check=True, timeout=120)
    return ADMIN_BIN


def rdkafka(op, bootstrap, *args, check=True):
    """Runs js/rdkafka.js; its JSON lines."""
    res = subprocess.run([NODE, str(JS / "rdkafka.js"), op, "--bootstrap", bootstrap, *map(str, args)],
                         cwd=JS, capture_output=True, timeout=RUN_TIMEOUT)
    if check:
        assert res.returncode == 0, f"rdkafka.js {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return [json.loads(line) for line in res.stdout.decode().splitlines() if line.strip()]


def admin(tool, bootstrap, op, *args):
    res = subprocess.run([str(tool), bootstrap, op, *map(str, args)], capture_output=True, timeout=RUN_TIMEOUT)
    assert res.returncode == 0, f"rdkafka_admin {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return json.loads(res.stdout)


def create_topic(b, n, name, partitions, *configs):
    res = rdkafka("create-topic", b.bootstrap, "--topic", name, "--partitions", partitions, "--replication", n,
                  *[x for kv in configs for x in ("--config", kv)])
    assert res == [{"ok": True}], res
    wait_until(lambda: len(rdkafka("metadata", b.bootstrap)[0]["topics"].get(name, [])) == partitions, 20,
               f"{name} with {partitions} partitions in the metadata")


def test_all_topics_metadata(target):
    b, n = target
    t1, t2 = kc.fresh_name("md-a", b), kc.fresh_name("md-b", b)
    create_topic(b, n, t1, 2)
    create_topic(b, n, t2, 5)
    md = rdkafka("metadata", b.bootstrap)[0]
    assert sorted(x["id"] for x in md["brokers"]) == list(range(n))
    for name, count in ((t1, 2), (t2, 5)):
        parts = md["topics"][name]
        assert sorted(p["id"] for p in parts) == list(range(count))
        for p in parts:
            assert len(p["replicas"]) == n and sorted(p["isrs"]) == sorted(p["replicas"]), p
            assert p["leader"] in p["replicas"], p


def test_create_and_delete_topics(target, admin_tool):
    b, n = target
    name = kc.fresh_name("lifecycle", b)
    create_topic(b, n, name, 3, "retention.ms=4321000", "cleanup.policy=compact")
    again = rdkafka("create-topic", b.bootstrap, "--topic", name, "--partitions", 3, "--replication", n)
    assert again[0]["error"] == 36, again  # TOPIC_ALREADY_EXISTS
    cfg = admin(admin_tool, b.bootstrap, "describe-configs", "topic", name)["configs"]
    assert cfg["retention.ms"]["value"] == "4321000"
    assert cfg["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert cfg["cleanup.policy"]["value"] == "compact"
    assert cfg["segment.bytes"]["source"] == "STATIC_BROKER_CONFIG"  # log.segment.bytes
    assert cfg["delete.retention.ms"]["source"] == "DEFAULT_CONFIG"
    assert rdkafka("delete-topic", b.bootstrap, "--topic", name) == [{"ok": True}]
    wait_until(lambda: name not in rdkafka("metadata", b.bootstrap)[0]["topics"], 20, f"{name} gone")
    gone = rdkafka("delete-topic", b.bootstrap, "--topic", name)
    assert gone[0]["error"] == 3, gone  # UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions(target, admin_tool):
    b, n = target
    name = kc.fresh_name("grow", b)
    create_topic(b, n, name, 2)
    for count, code in ((2, 37), (1, 37)):  # INVALID_PARTITIONS: the same count, a decrease
        res = rdkafka("create-partitions", b.bootstrap, "--topic", name, "--total", count)
        assert res[0]["error"] == code, res
    res = rdkafka("create-partitions", b.bootstrap, "--topic", kc.fresh_name("nowhere", b), "--total", 4)
    assert res[0]["error"] == 3, res  # UNKNOWN_TOPIC_OR_PARTITION
    # a producer and a group consumer of the topic pick the new partitions
    # up on their next metadata refresh
    grown = rdkafka("grow", b.bootstrap, "--topic", name, "--group", kc.fresh_name("grow-g", b),
                    "--from", 2, "--to", 5)[0]
    assert grown == {"produced": [0, 1, 2, 3, 4], "consumed": [0, 1, 2, 3, 4], "assigned": [0, 1, 2, 3, 4]}
    topic = admin(admin_tool, b.bootstrap, "describe-topics", name)["topics"][0]
    assert topic["error"] == 0 and len(topic["partitions"]) == 5
    for p in topic["partitions"]:
        assert len(p["replicas"]) == n and sorted(p["isr"]) == sorted(p["replicas"]), p


@pytest.mark.timeout(300)
def test_produce_every_codec_with_keys(target, tmp_path):
    b, n = target
    name = kc.fresh_name("codecs", b)
    create_topic(b, n, name, 4)
    where = {}
    sent = {}
    for codec in CODECS:
        recs = [{"k": f"key-{i % 40}", "v": f"{codec}-{i}-" + "x" * (i % 300)} for i in range(400)]
        path = tmp_path / f"{codec}.json"
        path.write_text(json.dumps(recs))
        reports = rdkafka("produce", b.bootstrap, "--topic", name, "--input", path, "--codec", codec)
        assert len(reports) == len(recs)
        for r, rep in zip(recs, reports):
            assert rep["k"] == r["k"]
            # the same key always lands on the same partition, whatever the codec
            assert where.setdefault(r["k"], rep["p"]) == rep["p"], (codec, r["k"])
            sent[(rep["p"], rep["o"])] = (r["k"].encode(), r["v"].encode())
    got = kc.consume_confluent_all(b.bootstrap, name, list(range(4)))
    assert len(got) == len(sent)
    for part, off, key, value, _ in got:
        assert sent[(part, off)] == (key, value), (part, off)


def test_group_consume_with_commits(target, admin_tool, tmp_path):
    b, n = target
    name = kc.fresh_name("group", b)
    group = kc.fresh_name("group-g", b)
    create_topic(b, n, name, 3)
    path = tmp_path / "in.json"
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"v{i}"} for i in range(300)]))
    first = rdkafka("produce", b.bootstrap, "--topic", name, "--input", path)
    ends = {}
    for r in first:
        ends[r["p"]] = max(ends.get(r["p"], 0), r["o"] + 1)
    out = rdkafka("consume-group", b.bootstrap, "--topic", name, "--group", group, "--count", 300)
    recs, committed = out[:-1], out[-1]["committed"]
    assert sorted((r["p"], r["o"]) for r in recs) == sorted((r["p"], r["o"]) for r in first)
    assert {int(p): o for p, o in committed.items() if o >= 0} == ends
    offsets = admin(admin_tool, b.bootstrap, "group-offsets", group)["offsets"]
    assert {o["partition"]: o["offset"] for o in offsets if o["offset"] >= 0} == ends
    listed = admin(admin_tool, b.bootstrap, "list-groups")["groups"]
    assert any(g["id"] == group for g in listed), listed
    described = admin(admin_tool, b.bootstrap, "describe-groups", group)["groups"]
    assert len(described) == 1 and described[0]["error"] == 0, described
    assert described[0]["state"] == "Empty" and described[0]["members"] == []
    # the group resumes where it committed
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"v{i}"} for i in range(300, 350)]))
    second = rdkafka("produce", b.bootstrap, "--topic", name, "--input", path)
    out = rdkafka("consume-group", b.bootstrap, "--topic", name, "--group", group, "--count", 50)
    assert sorted((r["p"], r["o"]) for r in out[:-1]) == sorted((r["p"], r["o"]) for r in second)


def test_describe_cluster_and_broker_configs(target, admin_tool):
    b, n = target
    cl = admin(admin_tool, b.bootstrap, "describe-cluster")
    assert sorted(x["id"] for x in cl["nodes"]) == list(range(n))
    assert cl["controller"]["id"] == 0
    assert cl["cluster_id"]
    cfg = admin(admin_tool, b.bootstrap, "describe-configs", "broker", "0")["configs"]
    assert cfg["broker.id"]["value"] == "0"
    assert cfg["num.io.threads"]["value"].isdigit()


def test_dynamic_broker_configs(target, admin_tool):
    """IncrementalAlterConfigs on a broker resource, sent by librdkafka to
    that broker: in effect there, described as DYNAMIC_BROKER_CONFIG, and
    (in a cluster) kept by the controller while the others keep theirs;
    what cannot change is refused. librdkafka cannot name the cluster-wide
    default ("") at all: its ConfigResource_new refuses an empty name."""
    b, n = target
    last = str(n - 1)

    def value(broker, name):
        e = admin(admin_tool, b.bootstrap, "describe-configs", "broker", broker)["configs"][name]
        return e["value"], e["source"]

    before = value("0", "log.retention.ms")
    try:
        assert admin(admin_tool, b.bootstrap, "alter-configs", "broker", last,
                     "set:log.retention.ms=2700000") == {"ok": True}
        wait_until(lambda: value(last, "log.retention.ms") == ("2700000", "DYNAMIC_BROKER_CONFIG"), 20,
                   f"broker {last} to have its own log.retention.ms")
        if n > 1:
            assert value("0", "log.retention.ms") == before
        refused = admin(admin_tool, b.bootstrap, "alter-configs", "broker", "0", "set:num.io.threads=9")
        assert refused["name"] == "INVALID_REQUEST", refused
        assert "num.io.threads" in refused["message"]
        assert value("0", "num.io.threads")[1] != "DYNAMIC_BROKER_CONFIG"
    finally:
        admin(admin_tool, b.bootstrap, "alter-configs", "broker", last, "delete:log.retention.ms")
    wait_until(lambda: value(last, "log.retention.ms") == before, 20, f"broker {last} back to {before}")
