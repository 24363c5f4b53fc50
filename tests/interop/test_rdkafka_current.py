"""Two current librdkafkas against one broker and against `serve --brokers 3`.

node-rdkafka 3.6.1 and @confluentinc/kafka-javascript 1.10.1 (tests/interop/js,
installed by scripts/deps.sh) build the librdkafka they bundle, 2.12.0 and
2.15.1; js/rdkafka.js drives either one's producer, consumer and admin
client, and rdkafka_admin.c, compiled here against each, the admin calls
the Node API does not expose (configs, groups, cluster, topics, leader
elections, offsets). Debian's librdkafka is 2.0.2, which never sends what
2.1+ sends: an all-topics Metadata v12 with stray bytes after its fields
(once dropped here, so producers never connected), CreatePartitions,
DescribeCluster, Metadata v13 and Fetch v16 by topic id, ...

Each test runs with both librdkafkas (the `rk` fixture) against both
targets (conftest's `target`): the module's broker and a three-broker
cluster in one process (replication factor 3).
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
ADMIN_SRC = pathlib.Path(__file__).resolve().parent / "rdkafka_admin.c"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RUN_TIMEOUT = 120

pytestmark = [pytest.mark.skipif(NODE is None, reason="node is not installed: no node-rdkafka tests"),
              pytest.mark.skipif(EXTERNAL is not None, reason="starts its own cluster")]


class Librdkafka:
    """One current librdkafka: the Node module bundling it (driving
    js/rdkafka.js) and rdkafka_admin built against it."""

    def __init__(self, version, module):
        self.version = version
        self.module = module
        self.deps = JS / "node_modules" / module / "build" / "deps"
        self.tool = ROOT / "build" / "interop" / f"rdkafka_admin-{version}"

    def setup(self):
        assert (self.deps / "librdkafka.so.1").is_file(), \
            f"{self.module}'s librdkafka is missing from tests/interop/js: run scripts/deps.sh (make deps)"
        out = subprocess.run([NODE, "-e", f"console.log(require('{self.module}').librdkafkaVersion)"],
                             cwd=JS, capture_output=True, timeout=30, check=True)
        assert out.stdout.decode().strip() == self.version
        self.tool.parent.mkdir(parents=True, exist_ok=True)
        if not self.tool.exists() or self.tool.stat().st_mtime < ADMIN_SRC.stat().st_mtime:
            subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-o", str(self.tool), str(ADMIN_SRC),
                            f"-I{self.deps / 'include'}", f"-L{self.deps}", "-lrdkafka",
                            f"-Wl,-rpath,{self.deps.resolve()}"], check=True, timeout=120)

    def run(self, op, bootstrap, *args, check=True):
        """Runs js/rdkafka.js on this librdkafka; its JSON lines."""
        res = subprocess.run([NODE, str(JS / "rdkafka.js"), op, "--bootstrap", bootstrap, *map(str, args)],
                             cwd=JS, capture_output=True, timeout=RUN_TIMEOUT,
                             env={**os.environ, "KIQ_RDKAFKA_MODULE": self.module})
        if check:
            assert res.returncode == 0, f"rdkafka.js {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
        return [json.loads(line) for line in res.stdout.decode().splitlines() if line.strip()]

    def admin(self, bootstrap, op, *args):
        """One rdkafka_admin operation; its JSON result."""
        res = subprocess.run([str(self.tool), bootstrap, op, *map(str, args)], capture_output=True,
                             timeout=RUN_TIMEOUT)
        assert res.returncode == 0, f"rdkafka_admin {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
        return json.loads(res.stdout)


LIBRDKAFKAS = [Librdkafka("2.12.0", "node-rdkafka"), Librdkafka("2.15.1", "@confluentinc/kafka-javascript")]


@pytest.fixture(scope="module", params=LIBRDKAFKAS, ids=lambda lib: f"librdkafka-{lib.version}")
def rk(request):
    request.param.setup()
    return request.param


def fresh(rk, base, b):
    """A topic or group name of this librdkafka's own: both run against the
    same brokers."""
    return kc.fresh_name(f"{base}-{rk.version.replace('.', '-')}", b)


def create_topic(rk, b, n, name, partitions, *configs):
    res = rk.run("create-topic", b.bootstrap, "--topic", name, "--partitions", partitions, "--replication", n,
                  *[x for kv in configs for x in ("--config", kv)])
    assert res == [{"ok": True}], res
    wait_until(lambda: len(rk.run("metadata", b.bootstrap)[0]["topics"].get(name, [])) == partitions, 20,
               f"{name} with {partitions} partitions in the metadata")


def test_all_topics_metadata(target, rk):
    b, n = target
    t1, t2 = fresh(rk, "md-a", b), fresh(rk, "md-b", b)
    create_topic(rk, b, n, t1, 2)
    create_topic(rk, b, n, t2, 5)
    md = rk.run("metadata", b.bootstrap)[0]
    assert sorted(x["id"] for x in md["brokers"]) == list(range(n))
    for name, count in ((t1, 2), (t2, 5)):
        parts = md["topics"][name]
        assert sorted(p["id"] for p in parts) == list(range(count))
        for p in parts:
            assert len(p["replicas"]) == n and sorted(p["isrs"]) == sorted(p["replicas"]), p
            assert p["leader"] in p["replicas"], p


def test_create_and_delete_topics(target, rk):
    b, n = target
    name = fresh(rk, "lifecycle", b)
    create_topic(rk, b, n, name, 3, "retention.ms=4321000", "cleanup.policy=compact")
    again = rk.run("create-topic", b.bootstrap, "--topic", name, "--partitions", 3, "--replication", n)
    assert again[0]["error"] == 36, again  # TOPIC_ALREADY_EXISTS
    cfg = rk.admin(b.bootstrap, "describe-configs", "topic", name)["configs"]
    assert cfg["retention.ms"]["value"] == "4321000"
    assert cfg["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert cfg["cleanup.policy"]["value"] == "compact"
    assert cfg["segment.bytes"]["source"] == "STATIC_BROKER_CONFIG"  # log.segment.bytes
    assert cfg["delete.retention.ms"]["source"] == "DEFAULT_CONFIG"
    assert rk.run("delete-topic", b.bootstrap, "--topic", name) == [{"ok": True}]
    wait_until(lambda: name not in rk.run("metadata", b.bootstrap)[0]["topics"], 20, f"{name} gone")
    gone = rk.run("delete-topic", b.bootstrap, "--topic", name)
    assert gone[0]["error"] == 3, gone  # UNKNOWN_TOPIC_OR_PARTITION


def test_kafka4_topic_configs(target, rk):
    """Every topic config Kafka 4.x takes that KafkaIQ once refused as
    unknown (librdkafka's test 0077 sets file.delete.delay.ms), through
    librdkafka's CreateTopics and IncrementalAlterConfigs: described as the
    topic's own; a bad value refused naming the config."""
    from test_topic_configs import KAFKA4_NEW
    b, n = target
    name = fresh(rk, "k4cfg", b)
    create_topic(rk, b, n, name, 1, *[f"{k}={v}" for k, (v, _) in KAFKA4_NEW.items()])

    def described(which):
        cfg = rk.admin(b.bootstrap, "describe-configs", "topic", name)["configs"]
        return all((cfg[k]["value"], cfg[k]["source"]) == (v[which].strip(), "DYNAMIC_TOPIC_CONFIG")
                   for k, v in KAFKA4_NEW.items())

    wait_until(lambda: described(0), 20, f"{name}'s configs described")
    assert rk.admin(b.bootstrap, "alter-configs", "topic", name,
                    *[f"set:{k}={v}" for k, (_, v) in KAFKA4_NEW.items()]) == {"ok": True}
    wait_until(lambda: described(1), 20, f"{name}'s altered configs described")
    refused = rk.admin(b.bootstrap, "alter-configs", "topic", name, "set:compression.lz4.level=18")
    assert refused["error"] == 40 and "compression.lz4.level" in refused["message"], refused


def test_create_partitions(target, rk):
    b, n = target
    name = fresh(rk, "grow", b)
    create_topic(rk, b, n, name, 2)
    for count, code in ((2, 37), (1, 37)):  # INVALID_PARTITIONS: the same count, a decrease
        res = rk.run("create-partitions", b.bootstrap, "--topic", name, "--total", count)
        assert res[0]["error"] == code, res
    res = rk.run("create-partitions", b.bootstrap, "--topic", fresh(rk, "nowhere", b), "--total", 4)
    assert res[0]["error"] == 3, res  # UNKNOWN_TOPIC_OR_PARTITION
    # a producer and a group consumer of the topic pick the new partitions
    # up on their next metadata refresh
    grown = rk.run("grow", b.bootstrap, "--topic", name, "--group", fresh(rk, "grow-g", b),
                    "--from", 2, "--to", 5)[0]
    assert grown == {"produced": [0, 1, 2, 3, 4], "consumed": [0, 1, 2, 3, 4], "assigned": [0, 1, 2, 3, 4]}
    topic = rk.admin(b.bootstrap, "describe-topics", name)["topics"][0]
    assert topic["error"] == 0 and len(topic["partitions"]) == 5
    for p in topic["partitions"]:
        assert len(p["replicas"]) == n and sorted(p["isr"]) == sorted(p["replicas"]), p


@pytest.mark.timeout(300)
def test_produce_every_codec_with_keys(target, rk, tmp_path):
    b, n = target
    name = fresh(rk, "codecs", b)
    create_topic(rk, b, n, name, 4)
    where = {}
    sent = {}
    for codec in CODECS:
        recs = [{"k": f"key-{i % 40}", "v": f"{codec}-{i}-" + "x" * (i % 300)} for i in range(400)]
        path = tmp_path / f"{codec}.json"
        path.write_text(json.dumps(recs))
        reports = rk.run("produce", b.bootstrap, "--topic", name, "--input", path, "--codec", codec)
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


def test_group_consume_with_commits(target, rk, tmp_path):
    b, n = target
    name = fresh(rk, "group", b)
    group = fresh(rk, "group-g", b)
    create_topic(rk, b, n, name, 3)
    path = tmp_path / "in.json"
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"v{i}"} for i in range(300)]))
    first = rk.run("produce", b.bootstrap, "--topic", name, "--input", path)
    ends = {}
    for r in first:
        ends[r["p"]] = max(ends.get(r["p"], 0), r["o"] + 1)
    out = rk.run("consume-group", b.bootstrap, "--topic", name, "--group", group, "--count", 300)
    recs, committed = out[:-1], out[-1]["committed"]
    assert sorted((r["p"], r["o"]) for r in recs) == sorted((r["p"], r["o"]) for r in first)
    assert {int(p): o for p, o in committed.items() if o >= 0} == ends
    offsets = rk.admin(b.bootstrap, "group-offsets", group)["offsets"]
    assert {o["partition"]: o["offset"] for o in offsets if o["offset"] >= 0} == ends
    listed = rk.admin(b.bootstrap, "list-groups")["groups"]
    assert any(g["id"] == group for g in listed), listed
    described = rk.admin(b.bootstrap, "describe-groups", group)["groups"]
    assert len(described) == 1 and described[0]["error"] == 0, described
    assert described[0]["state"] == "Empty" and described[0]["members"] == []
    # the group resumes where it committed
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"v{i}"} for i in range(300, 350)]))
    second = rk.run("produce", b.bootstrap, "--topic", name, "--input", path)
    out = rk.run("consume-group", b.bootstrap, "--topic", name, "--group", group, "--count", 50)
    assert sorted((r["p"], r["o"]) for r in out[:-1]) == sorted((r["p"], r["o"]) for r in second)


def test_describe_cluster_and_broker_configs(target, rk):
    b, n = target
    cl = rk.admin(b.bootstrap, "describe-cluster")
    assert sorted(x["id"] for x in cl["nodes"]) == list(range(n))
    assert cl["controller"]["id"] == 0
    assert cl["cluster_id"]
    cfg = rk.admin(b.bootstrap, "describe-configs", "broker", "0")["configs"]
    assert cfg["broker.id"]["value"] == "0"
    assert cfg["num.io.threads"]["value"].isdigit()


def test_dynamic_broker_configs(target, rk):
    """IncrementalAlterConfigs on a broker resource, sent by librdkafka to
    that broker: in effect there, described as DYNAMIC_BROKER_CONFIG, and
    (in a cluster) kept by the controller while the others keep theirs;
    what cannot change is refused. librdkafka cannot name the cluster-wide
    default ("") at all: its ConfigResource_new refuses an empty name."""
    b, n = target
    last = str(n - 1)

    def value(broker, name):
        e = rk.admin(b.bootstrap, "describe-configs", "broker", broker)["configs"][name]
        return e["value"], e["source"]

    before = value("0", "log.retention.ms")
    try:
        assert rk.admin(b.bootstrap, "alter-configs", "broker", last,
                     "set:log.retention.ms=2700000") == {"ok": True}
        wait_until(lambda: value(last, "log.retention.ms") == ("2700000", "DYNAMIC_BROKER_CONFIG"), 20,
                   f"broker {last} to have its own log.retention.ms")
        if n > 1:
            assert value("0", "log.retention.ms") == before
        refused = rk.admin(b.bootstrap, "alter-configs", "broker", "0", "set:num.io.threads=9")
        assert refused["name"] == "INVALID_REQUEST", refused
        assert "num.io.threads" in refused["message"]
        assert value("0", "num.io.threads")[1] != "DYNAMIC_BROKER_CONFIG"
    finally:
        rk.admin(b.bootstrap, "alter-configs", "broker", last, "delete:log.retention.ms")
    wait_until(lambda: value(last, "log.retention.ms") == before, 20, f"broker {last} back to {before}")


def test_list_offsets(target, rk, tmp_path):
    """ListOffsets as librdkafka's admin API asks it: earliest, latest, the
    record with the largest timestamp, by timestamp."""
    b, n = target
    name = fresh(rk, "offsets", b)
    create_topic(rk, b, n, name, 1)
    path = tmp_path / "in.json"
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"v{i}"} for i in range(10)]))
    assert len(rk.run("produce", b.bootstrap, "--topic", name, "--input", path)) == 10

    def one(spec):
        [p] = rk.admin(b.bootstrap, "list-offsets", spec, f"{name}:0")["partitions"]
        assert p["error"] == 0, p
        return p["offset"], p["timestamp"]

    assert one("earliest")[0] == 0
    assert one("latest")[0] == 10
    offset, ts = one("max-timestamp")
    assert 0 <= offset < 10 and ts > 0
    assert one("0")[0] == 0
    assert one(str(ts + 3600_000))[0] == -1  # no record that late


def test_elect_leaders(target, rk):
    """ElectLeaders through the controller: every partition already led by
    its preferred replica needs no election; an unknown one is named."""
    b, n = target
    name = fresh(rk, "elect", b)
    create_topic(rk, b, n, name, 2)
    for kind in ("preferred", "unclean"):
        res = rk.admin(b.bootstrap, "elect-leaders", kind, f"{name}:0", f"{name}:1", f"{name}:7")["partitions"]
        got = {p["partition"]: p["name"] for p in res}
        assert got == {0: "ELECTION_NOT_NEEDED", 1: "ELECTION_NOT_NEEDED", 7: "UNKNOWN_TOPIC_OR_PART"}, (kind, res)
