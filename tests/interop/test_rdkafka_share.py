"""librdkafka 2.15's share consumer (KIP-932, a preview) against a share group.

@confluentinc/kafka-javascript 1.10.1 (tests/interop/js, installed by
scripts/deps.sh) bundles librdkafka 2.15.1, whose share consumer API
(rd_kafka_share_consumer_new, rd_kafka_share_poll,
rd_kafka_share_acknowledge_type, ...) rdkafka_share.c drives, compiled here
against it; js/rdkafka.js creates the topics and produces with the same
librdkafka. The broker's share groups run with a 1 s acquisition lock and a
delivery limit of 3, so expiry and the limit come within seconds.
"""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import EXTERNAL, ROOT, Broker

JS = pathlib.Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")
MODULE = "@confluentinc/kafka-javascript"
VERSION = "2.15.1"
DEPS = JS / "node_modules" / MODULE / "build" / "deps"
SRC = pathlib.Path(__file__).resolve().parent / "rdkafka_share.c"
TOOL = ROOT / "build" / "interop" / f"rdkafka_share-{VERSION}"
LIMIT = 3
RUN_TIMEOUT = 120

pytestmark = [pytest.mark.skipif(NODE is None, reason="node is not installed: no librdkafka 2.15 share consumer"),
              pytest.mark.skipif(EXTERNAL is not None, reason="starts its own broker with short share locks")]


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    assert (DEPS / "librdkafka.so.1").is_file(), \
        f"{MODULE}'s librdkafka is missing from tests/interop/js: run scripts/deps.sh (make deps)"
    out = subprocess.run([NODE, "-e", f"console.log(require('{MODULE}').librdkafkaVersion)"],
                         cwd=JS, capture_output=True, timeout=30, check=True)
    assert out.stdout.decode().strip() == VERSION
    TOOL.parent.mkdir(parents=True, exist_ok=True)
    if not TOOL.exists() or TOOL.stat().st_mtime < SRC.stat().st_mtime:
        subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O1", "-o", str(TOOL), str(SRC), f"-I{DEPS / 'include'}",
                        f"-L{DEPS}", "-lrdkafka", f"-Wl,-rpath,{DEPS.resolve()}"], check=True, timeout=120)
    b = Broker(tmp_path_factory.mktemp("rdkafka_share"),
               ["group.share.record.lock.duration.ms=1000", f"group.share.delivery.count.limit={LIMIT}",
                "kafkaiq.share.auto.offset.reset=earliest"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def node(op, b, *args):
    res = subprocess.run([NODE, str(JS / "rdkafka.js"), op, "--bootstrap", b.bootstrap, *map(str, args)], cwd=JS,
                         capture_output=True, timeout=RUN_TIMEOUT, env={**os.environ, "KIQ_RDKAFKA_MODULE": MODULE})
    assert res.returncode == 0, f"rdkafka.js {op} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return [json.loads(line) for line in res.stdout.decode().splitlines() if line.strip()]


def topic_with(b, tmp_path, name, partitions, n):
    """A topic of n records; their (partition, offset)s."""
    assert node("create-topic", b, "--topic", name, "--partitions", partitions, "--replication", 1) == [{"ok": True}]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([{"k": f"k{i}", "v": f"{name}-{i}"} for i in range(n)]))
    reports = node("produce", b, "--topic", name, "--input", path)
    assert len(reports) == n
    return {(r["p"], r["o"]) for r in reports}


def share(b, scenario, group, topic, *args):
    res = subprocess.run([str(TOOL), b.bootstrap, scenario, group, topic, *map(str, args)], capture_output=True,
                         timeout=RUN_TIMEOUT)
    assert res.returncode == 0, f"rdkafka_share {scenario} exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return json.loads(res.stdout)


def test_two_share_consumers_get_every_record_once(share_broker, tmp_path):
    sent = topic_with(share_broker, tmp_path, "share-all", 2, 300)
    r = share(share_broker, "consume", "share-all-g", "share-all", len(sent))
    # every record came, to one of the two, once: all were accepted in time
    assert r["distinct"] == 300 and r["deliveries"] == 300, r
    assert sum(r["per_consumer"]) == 300, r
    assert r["max_delivery_count"] == 1, r


def test_an_expired_lock_redelivers(share_broker, tmp_path):
    topic_with(share_broker, tmp_path, "share-expire", 1, 5)
    r = share(share_broker, "expire", "share-expire-g", "share-expire")
    # the holder acknowledged nothing; each of its records came to the other
    # consumer once the lock ran out, at its second delivery
    assert r["held"] == 5 and r["first_offset"] == 0, r
    assert r["redelivered"] == 5, r
    assert r["delivery_counts"] == [2] * 5, r


def test_the_delivery_limit_archives(share_broker, tmp_path):
    topic_with(share_broker, tmp_path, "share-limit", 1, 4)
    r = share(share_broker, "limit", "share-limit-g", "share-limit", LIMIT, 4)
    # released at every delivery: each record came LIMIT times, then no more
    assert r["records"] == 4 and r["deliveries"] == 4 * LIMIT, r
    assert r["max_delivery_count"] == LIMIT, r
    assert r["after_limit"] == 0, r
