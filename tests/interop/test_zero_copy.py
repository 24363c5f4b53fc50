"""Zero-copy fetch: sendfile() from the segment files versus the copy path.

Two brokers with small segments, one with kafkaiq.fetch.sendfile=true (the
default) and one with it off, get the same batches. Raw Fetch responses are
byte-identical between them, also when a fetch spans segments; confluent-kafka,
kafka-python and kcat read identical data from both; a parked fetch completes
with data appended while it waited; a client that disconnects mid-response
leaves the broker serving on; and a broker with a fetch interceptor (which
needs the bytes, so takes the copy path) still serves every client while the
interceptor sees the records.
"""

import os
import pathlib
import select
import struct
import subprocess
import time

import pytest

import kiq_clients as kc
import kiq_wire as kw
from conftest import EXTERNAL, ROOT, Broker

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="starts its own brokers")

SEGMENT_BYTES = 65536
PARTITIONS = 2
N = 4000
API_PRODUCE, API_FETCH = 0, 1


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    started = {}
    try:
        for name, on in (("on", "true"), ("off", "false")):
            b = Broker(tmp_path_factory.mktemp(f"zero-copy-{name}"),
                       [f"log.segment.bytes={SEGMENT_BYTES}", f"kafkaiq.fetch.sendfile={on}"])
            b.start()
            started[name] = b
        yield started
    finally:
        for b in started.values():
            b.stop()


def fetch_v4_body(topic, partition, offset, max_wait_ms=0, min_bytes=1, max_bytes=52428800,
                  partition_max_bytes=10485760):
    part = struct.pack(">iqi", partition, offset, partition_max_bytes)
    return (struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0) +
            kw.array([kw.string(topic) + kw.array([part])]))


def parse_fetch_v4(payload):
    """{(topic, partition): (error, high_watermark, records bytes)}"""
    r = kw.Reader(payload)
    r.int32()  # throttle_time_ms

    def aborted(r):
        return r.int64(), r.int64()

    def part(r):
        p, err, hw, _lso = r.int32(), r.int16(), r.int64(), r.int64()
        r.array(aborted)
        n = r.int32()
        return p, err, hw, b"" if n < 0 else r.take(n)

    topics = r.array(lambda r: (r.string(), r.array(part)))
    assert r.remaining() == 0
    return {(t, p): (err, hw, recs) for t, parts in topics for p, err, hw, recs in parts}


def batch_offsets(records):
    """Base offsets of the whole batches in records (a trailing partial one is skipped)."""
    out, pos = [], 0
    while pos + 12 <= len(records):
        base, length = struct.unpack(">qi", records[pos:pos + 12])
        if pos + 12 + length > len(records):
            break
        out.append(base)
        pos += 12 + length
    return out


def produce_raw(b, topic, partition, batches):
    with kw.Conn(b.host, b.port) as c:
        for batch in batches:
            res = kw.parse_produce_v3(c.call(API_PRODUCE, 3, kw.produce_v3_body(topic, partition, batch)))
            assert res[(topic, partition)][0] == 0, res


def fetch_raw(b, topic, partition, offset, **kw_args):
    with kw.Conn(b.host, b.port) as c:
        return parse_fetch_v4(c.call(API_FETCH, 4, fetch_v4_body(topic, partition, offset, **kw_args)))


def segment_files(b, topic, partition):
    return sorted(pathlib.Path(b.data_dir, f"{topic}-{partition}").glob("*.log"))


def test_raw_fetch_identical_across_segments(brokers):
    """The same batches give byte-identical Fetch answers from both paths, also
    for a fetch that starts in one segment and runs on into the next ones."""
    topic = "zc-raw"
    # fixed timestamps: both brokers store the very same bytes
    batches = [kw.record_batch([(b"k%d-%d" % (i, j), os.urandom(300), [("h", b"v")]) for j in range(20)],
                               base_ts=1700000000000 + i) for i in range(60)]
    for b in brokers.values():
        kc.create_topic(b.bootstrap, topic, 1)
        produce_raw(b, topic, 0, batches)
        assert len(segment_files(b, topic, 0)) >= 3
    answers = {}
    for name, b in brokers.items():
        got = []
        for offset in (0, 20 * 25 + 7, 20 * 59):
            for pmax in (10485760, 20000, 1):
                got.append(fetch_raw(b, topic, 0, offset, partition_max_bytes=pmax)[(topic, 0)])
        answers[name] = got
    assert answers["on"] == answers["off"]
    whole = answers["on"][0]
    assert whole[0] == 0 and whole[1] == 1200
    assert len(whole[2]) > 2 * SEGMENT_BYTES  # spans segments
    assert batch_offsets(whole[2])[:3] == [0, 20, 40]
    # a fetch from inside a batch starts with that batch; max bytes 1 still gives one
    assert batch_offsets(answers["on"][3][2])[0] == 500
    assert len(batch_offsets(answers["on"][5][2])) == 1


@pytest.fixture(scope="module")
def produced(brokers):
    topic = "zc-clients"
    msgs = kc.make_messages(N, "zc")
    reports = {}
    for name, b in brokers.items():
        kc.create_topic(b.bootstrap, topic, PARTITIONS)
        reports[name] = kc.produce_confluent(b.bootstrap, topic, msgs, extra={"linger.ms": 5, "batch.size": 8192})
        assert reports[name] == reports["on"] or name == "on"
        for p in range(PARTITIONS):
            assert len(segment_files(b, topic, p)) >= 2, "the fetches should span segments"
    return topic, msgs, reports["on"]


def test_confluent_reads_identical(brokers, produced):
    topic, msgs, reports = produced
    got = {n: sorted(kc.consume_confluent_all(b.bootstrap, topic, range(PARTITIONS)))
           for n, b in brokers.items()}
    assert got["on"] == got["off"]
    kc.check_records(got["on"], msgs, reports)


def test_kafka_python_reads_identical(brokers, produced):
    topic, msgs, reports = produced
    got = {n: sorted(kc.consume_kafka_python(b.bootstrap, topic, range(PARTITIONS)))
           for n, b in brokers.items()}
    assert got["on"] == got["off"]
    kc.check_records(got["on"], msgs, reports)


def test_kcat_reads_identical(brokers, produced):
    topic, msgs, reports = produced
    got = {n: sorted(kc.consume_kcat(b.bootstrap, topic)) for n, b in brokers.items()}
    assert got["on"] == got["off"]
    assert len(got["on"]) == N


@pytest.mark.parametrize("path", ["on", "off"])
def test_parked_fetch_locates_when_it_completes(brokers, path):
    b = brokers[path]
    topic = f"zc-parked-{path}"
    kc.create_topic(b.bootstrap, topic, 1)
    first = kw.record_batch([(b"a", b"first", [])], base_ts=1700000000000)
    produce_raw(b, topic, 0, [first])
    with kw.Conn(b.host, b.port, timeout=15.0) as c:
        corr = c.request(API_FETCH, 4, fetch_v4_body(topic, 0, 1, max_wait_ms=10000))
        # nothing past offset 1 yet: the fetch waits in the purgatory
        ready, _, _ = select.select([c.sock], [], [], 0.3)
        assert not ready, "the fetch was answered without data"
        started = time.monotonic()
        produce_raw(b, topic, 0, [kw.record_batch([(b"b", b"late" * 100, [])], base_ts=1700000000001)])
        err, hw, recs = parse_fetch_v4(c.response(corr))[(topic, 0)]
        assert time.monotonic() - started < 8.0, "answered by the timeout, not by the append"
    assert (err, hw) == (0, 2)
    assert batch_offsets(recs) == [1]
    assert b"late" * 100 in recs


def test_client_disconnects_mid_response(brokers):
    b = brokers["on"]
    topic = "zc-disconnect"
    nparts = 12
    kc.create_topic(b.bootstrap, topic, nparts)
    # 12 x 640 KB: more than the socket buffers hold (one partition's answer
    # is at most 8 segments, so the size comes from many partitions)
    for p in range(nparts):
        produce_raw(b, topic, p, [kw.record_batch([(b"k", os.urandom(16000), [])], base_ts=1700000000000 + i)
                                  for i in range(40)])
    parts = [struct.pack(">iqi", p, 0, 52428800) for p in range(nparts)]
    body = (struct.pack(">iiiib", -1, 0, 1, 104857600, 0) +
            kw.array([kw.string(topic) + kw.array(parts)]))
    for _ in range(3):
        with kw.Conn(b.host, b.port) as c:
            c.request(API_FETCH, 4, body)
            head = c._recv_exact(4096)  # some of it, then gone
            assert struct.unpack(">i", head[:4])[0] > 4 * 1024 * 1024
    # the broker serves on, and the same fetch read to the end is whole
    with kw.Conn(b.host, b.port) as c:
        answer = parse_fetch_v4(c.call(API_FETCH, 4, body))
    for p in range(nparts):
        err, hw, recs = answer[(topic, p)]
        assert (err, hw) == (0, 40)
        assert batch_offsets(recs) == list(range(len(batch_offsets(recs))))
        assert len(batch_offsets(recs)) >= 8 * SEGMENT_BYTES // 16200
    assert b.alive()


INTERCEPTED_BROKER_LUA = r"""
local core = require "kafkaiq.core"
local dir = arg[1]
local b = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = dir,
                                   ["log.segment.bytes"] = arg[2] })
assert(b:start())
-- fails on purpose once it has seen records: the failure count shows it ran
-- with the bytes in hand, and a failing interceptor passes the answer through
assert(b:intercept { on = "fetch", source = [[
  return function(ctx)
    if #ctx.records > 0 then error("saw " .. #ctx.records .. " records") end
  end]] })
io.write(b:port(), "\n")
io.flush()
io.read("*l")
local failures = 0
for _, i in ipairs(b:intercepts()) do failures = failures + i.failures end
io.write(failures, "\n")
b:stop()
"""


def test_fetch_interceptor_takes_the_copy_path(tmp_path):
    script = tmp_path / "broker.lua"
    script.write_text(INTERCEPTED_BROKER_LUA)
    env = dict(os.environ)
    env["LUA_PATH"] = f"{ROOT}/lua/?.lua;{ROOT}/lua/?/init.lua;;"
    env["LUA_CPATH"] = f"{ROOT}/build/lua/?.so;;"
    data = tmp_path / "data"
    stderr = open(tmp_path / "broker.stderr", "wb")
    proc = subprocess.Popen(["luajit", str(script), str(data), str(SEGMENT_BYTES)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
    try:
        port = int(proc.stdout.readline())
        bs = f"127.0.0.1:{port}"
        topic = "zc-hooked"
        msgs = kc.make_messages(1000, "hooked")
        kc.create_topic(bs, topic, 1)
        reports = kc.produce_confluent(bs, topic, msgs)
        kc.check_records(kc.consume_confluent_all(bs, topic, [0]), msgs, reports)
        kc.check_records(kc.consume_kafka_python(bs, topic, [0]), msgs, reports)
        assert len(kc.consume_kcat(bs, topic)) == 1000
        out, _ = proc.communicate(b"\n", timeout=30)
        assert proc.returncode == 0
        assert int(out.split()[-1]) >= 3, "the interceptor never saw records"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
