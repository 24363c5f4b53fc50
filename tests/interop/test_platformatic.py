"""@platformatic/kafka 1.35 (tests/interop/js, installed by scripts/deps.sh)
producing and consuming end to end, against one broker and a three-broker
cluster in one process. It asks for the newest versions it implements, and
its Fetch v12 writes topic ids where names belong: it consumes only from a
broker serving Fetch v13+ (topics by id, KIP-516).
"""

import json
import pathlib
import shutil
import subprocess

import pytest

import kiq_clients as kc

JS = pathlib.Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: no platformatic tests")


@pytest.fixture(scope="module", autouse=True)
def platformatic_installed():
    assert (JS / "node_modules" / "@platformatic" / "kafka").is_dir(), \
        "@platformatic/kafka is missing from tests/interop/js: run scripts/deps.sh (make deps)"


def platformatic(op, bootstrap, *args):
    res = subprocess.run([NODE, str(JS / "platformatic.mjs"), op, "--bootstrap", bootstrap, *map(str, args)],
                         cwd=JS, capture_output=True, timeout=120)
    assert res.returncode == 0, f"platformatic.mjs {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return [json.loads(line) for line in res.stdout.decode().splitlines() if line.strip()]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])  # zstd needs Node 22
def test_produce_and_consume_in_a_group(target, codec):
    b, n = target
    topic = kc.fresh_name(f"plat-{codec}", b)
    group = kc.fresh_name(f"plat-{codec}-g", b)
    assert platformatic("create-topic", b.bootstrap, "--topic", topic, "--partitions", 3,
                        "--replication", n) == [{"ok": True}]
    sent = platformatic("produce", b.bootstrap, "--topic", topic, "--count", 60, "--compression", codec)
    assert len(sent) == 60
    where = {(r["p"], r["o"]): r["k"] for r in sent}
    assert len(where) == 60, "two records at one offset"
    out = platformatic("consume", b.bootstrap, "--topic", topic, "--group", group, "--count", 60)
    recs, committed = out[:-1], out[-1]["committed"]
    assert sorted((r["p"], r["o"], r["k"]) for r in recs) == sorted((p, o, k) for (p, o), k in where.items())
    assert all(r["v"] == "v" + r["k"][1:] for r in recs)
    ends = {}
    for p, o in where:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert {int(p): o for p, o in committed.items()} == ends
    # what platformatic wrote, another client reads the same
    got = kc.consume_confluent_all(b.bootstrap, topic, [0, 1, 2])
    assert sorted((p, o, k.decode()) for p, o, k, _, _ in got) == sorted((p, o, k) for (p, o), k in where.items())
