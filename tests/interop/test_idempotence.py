"""The idempotent producer: InitProducerId and the per-partition producer state.

- A broker (in a Lua script) whose interceptor handles one Produce request
  in ten (a seeded choice) but drops its answer and the connection: an
  idempotent confluent-kafka producer retries those batches, and every
  record is in the log exactly once, at the offset its delivery report gave;
  the same without idempotence writes duplicates (so the check can fail).
- Raw requests: a sequence gap gets OUT_OF_ORDER_SEQUENCE_NUMBER and appends
  nothing, an unknown producer is taken at any sequence (as Kafka), a
  retried batch gets its original offset, also after a broker restart.
- An idempotent producer goes on after a broker restart without errors or
  duplicates.
"""

import collections
import contextlib
import os
import struct
import subprocess

import pytest

import kiq_clients as kc
import kiq_wire as kw
from conftest import EXTERNAL, ROOT

API_PRODUCE, API_LIST_OFFSETS, API_INIT_PRODUCER_ID = 0, 2, 22
ERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45
ERR_INVALID_PRODUCER_EPOCH = 47
DROP_PERCENT = 10

DROPPING_BROKER_LUA = r"""
local core = require "kafkaiq.core"
local dir, drops = arg[1], arg[2]
local b = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = dir })
assert(b:start())
-- a seeded share of the Produce requests is appended but its answer is
-- lost with the connection; each drop is logged to a file
assert(b:intercept { on = "request", api = "Produce", source = string.format([[
  math.randomseed(7)
  return function(ctx)
    if math.random(100) <= %d then
      local f = io.open(%q, "a")
      f:write("dropped\n")
      f:close()
      return { drop = "after" }
    end
  end]], tonumber(arg[3]), drops) })
io.write(b:port(), "\n")
io.flush()
io.read("*l")
b:stop()
"""


@contextlib.contextmanager
def lua_broker(tmp_path, source, *args):
    """A broker in a Lua script (source) run with the data directory and
    args: yields its bootstrap address; the script stops its broker on a
    line on stdin and must exit 0."""
    if EXTERNAL:
        pytest.skip("starts its own broker")
    script = tmp_path / "broker.lua"
    script.write_text(source)
    env = dict(os.environ)
    env["LUA_PATH"] = f"{ROOT}/lua/?.lua;{ROOT}/lua/?/init.lua;;"
    env["LUA_CPATH"] = f"{ROOT}/build/lua/?.so;;"
    with open(tmp_path / "broker.stderr", "wb") as stderr:
        proc = subprocess.Popen(["luajit", str(script), str(tmp_path / "data")] + [str(a) for a in args],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
        try:
            yield f"127.0.0.1:{int(proc.stdout.readline())}"
            proc.communicate(b"\n", timeout=30)
            assert proc.returncode == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def dropping_broker(tmp_path):
    drops = tmp_path / "drops.txt"
    with lua_broker(tmp_path, DROPPING_BROKER_LUA, drops, DROP_PERCENT) as bs:
        yield bs, drops


def small_batches(idempotent):
    """Many small Produce requests, so that many answers are lost."""
    return {"enable.idempotence": idempotent, "linger.ms": 1, "batch.num.messages": 100,
            "retry.backoff.ms": 20, "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100}


def dropped(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.timeout(240)
def test_lost_answers_do_not_duplicate_with_idempotence(dropping_broker):
    bs, drops = dropping_broker
    topic = "idem-lost-answers"
    kc.create_topic(bs, topic, 3)
    msgs = kc.make_messages(5000, "idem")
    reports = kc.produce_confluent(bs, topic, msgs, acks="all", extra=small_batches(True))
    assert dropped(drops) >= 3, "the interceptor lost too few answers for the test to mean anything"
    records = kc.consume_confluent_all(bs, topic, range(3))
    # every value exactly once, offsets dense, where the delivery report said
    kc.check_records(records, msgs, reports)


@pytest.mark.timeout(240)
def test_lost_answers_duplicate_without_idempotence(dropping_broker):
    bs, drops = dropping_broker
    topic = "plain-lost-answers"
    kc.create_topic(bs, topic, 3)
    msgs = kc.make_messages(5000, "plain")
    extra = small_batches(False)
    extra["max.in.flight"] = 5
    kc.produce_confluent(bs, topic, msgs, acks="all", extra=extra)
    assert dropped(drops) >= 3
    counts = collections.Counter(value for _, _, _, value, _ in kc.consume_confluent_all(bs, topic, range(3)))
    assert set(counts) == {v for _, v, _ in msgs}
    assert max(counts.values()) > 1, "retried batches were not appended twice: the other test proves nothing"


# ---------------------------------------------------------------- raw requests

def idempotent_batch(records, producer_id, epoch, seq, base_ts=1700000000000):
    """RecordBatch v2 of (key, value) records stamped with a producer."""
    recs = b"".join(kw.encode_record(i, k, v) for i, (k, v) in enumerate(records))
    after_crc = struct.pack(">hiqqqhii", 0, len(records) - 1, base_ts, base_ts,
                            producer_id, epoch, seq, len(records)) + recs
    after_len = struct.pack(">ibI", -1, 2, kw.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_len)) + after_len


def init_producer_id(conn):
    """InitProducerId v0 without a transactional id: (error, producer id, epoch)."""
    body = kw.string(None) + struct.pack(">i", 60000)
    r = kw.Reader(conn.call(API_INIT_PRODUCER_ID, 0, body))
    r.int32()  # throttle
    return r.int16(), r.int64(), r.int16()


def produce(conn, topic, batch):
    """(error, base offset) of a Produce v3 with acks=all to partition 0."""
    return kw.parse_produce_v3(conn.call(API_PRODUCE, 3, kw.produce_v3_body(topic, 0, batch)))[(topic, 0)]


def log_end(conn, topic):
    return kw.parse_list_offsets_v1(conn.call(API_LIST_OFFSETS, 1, kw.list_offsets_v1_body(topic, [0])))[(topic, 0)]


def batch_of(i, pid, epoch, seq, n=2):
    return idempotent_batch([(b"k%d" % i, b"v%d-%d" % (i, j)) for j in range(n)], pid, epoch, seq)


@pytest.mark.timeout(120)
def test_raw_sequence_rules_survive_a_restart(broker):
    topic = kc.fresh_name("idem-raw", broker)
    kc.create_topic(broker.bootstrap, topic, 1)
    with kw.Conn(broker.host, broker.port) as c:
        err, pid, epoch = init_producer_id(c)
        assert err == 0 and pid >= 0 and epoch == 0
        err2, pid2, _ = init_producer_id(c)
        assert err2 == 0 and pid2 != pid, "producer ids must be unique"
        assert produce(c, topic, batch_of(0, pid, 0, 0)) == (0, 0)
        assert produce(c, topic, batch_of(1, pid, 0, 2)) == (0, 2)
        # a gap: refused, nothing appended
        assert produce(c, topic, batch_of(2, pid, 0, 7))[0] == ERR_OUT_OF_ORDER_SEQUENCE_NUMBER
        assert log_end(c, topic) == (0, 4)
        # a retry: the original offset, nothing appended
        assert produce(c, topic, batch_of(0, pid, 0, 0)) == (0, 0)
        assert log_end(c, topic) == (0, 4)
        # a producer this partition never saw is taken at any sequence (Kafka
        # since KIP-360: a retry after a leader change goes on), then checked
        assert produce(c, topic, batch_of(3, pid2, 0, 3)) == (0, 4)
        assert produce(c, topic, batch_of(3, pid2, 0, 7))[0] == ERR_OUT_OF_ORDER_SEQUENCE_NUMBER
        assert log_end(c, topic) == (0, 6)
    broker.restart()
    with kw.Conn(broker.host, broker.port) as c:
        err, pid3, _ = init_producer_id(c)
        assert err == 0 and pid3 not in (pid, pid2), "a restart handed out a producer id again"
        # the state came back: a retry of the last batch is still a duplicate
        assert produce(c, topic, batch_of(1, pid, 0, 2)) == (0, 2)
        assert produce(c, topic, batch_of(2, pid, 0, 5))[0] == ERR_OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(c, topic, batch_of(2, pid, 0, 4)) == (0, 6)
        # a newer epoch fences the older one
        assert produce(c, topic, batch_of(4, pid, 1, 0)) == (0, 8)
        assert produce(c, topic, batch_of(5, pid, 0, 6))[0] == ERR_INVALID_PRODUCER_EPOCH
        assert log_end(c, topic) == (0, 10)


@pytest.mark.timeout(240)
def test_idempotent_producer_across_a_restart(broker):
    from confluent_kafka import Producer
    topic = kc.fresh_name("idem-restart", broker)
    kc.create_topic(broker.bootstrap, topic, 2)
    msgs = kc.make_messages(4000, "restart")
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "batch.num.messages": 200, "message.timeout.ms": 60000,
                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500})
    reports, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append((msg.key(), err))
        else:
            reports[msg.key()] = (msg.partition(), msg.offset())

    def send(chunk):
        for key, value, headers in chunk:
            while True:
                try:
                    p.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.1)
        assert p.flush(90) == 0

    send(msgs[:2000])
    broker.restart()
    send(msgs[2000:])
    assert not errors, f"{len(errors)} delivery errors, first: {errors[:3]}"
    assert len(reports) == len(msgs)
    kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, range(2)), msgs, reports)
    assert "refused" not in broker.stderr_tail(100000), "the producer's state was lost in the restart"


def test_idempotent_producers_of_different_brokers_get_different_ids(three):
    """In a cluster each broker takes its producer ids in blocks from the
    controller (AllocateProducerIds): two idempotent producers that got
    their ids from different brokers write to one partition side by side,
    and every record of both is there. With one id for both (as when
    each broker kept its own counter), the second producer's sequence
    numbers clash with the first's: a fatal OUT_OF_ORDER_SEQUENCE_NUMBER,
    or a batch taken for a retry of the other's and not written."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    topic = kc.fresh_name("idem-ids", three)
    admin = kc.admin(three.bootstrap)
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(20)  # min.insync.replicas=2 there
    kc.wait_topic(three.bootstrap, topic, 1)
    addresses = three.bootstrap.split(",")
    msgs = {}
    for i, address in enumerate(addresses[:2]):
        p = Producer({"bootstrap.servers": address, "enable.idempotence": True, "acks": "all", "linger.ms": 0})
        errors = []
        batch = kc.make_messages(50, f"idem-ids-{i}")
        for key, value, headers in batch:
            p.produce(topic, key=key, value=value, headers=headers, partition=0,
                      on_delivery=lambda err, msg: err and errors.append(err))
            assert p.flush(30) == 0
        assert not errors, errors
        msgs.update({value: key for key, value, _ in batch})
    got = kc.consume_confluent_all(three.bootstrap, topic, range(1))
    assert sorted(value for _, _, _, value, *_ in got) == sorted(msgs), f"{len(got)} of {len(msgs)} records in the log"


# ---------------------------------------------------------------- a follower about to lead

API_ELECT_LEADERS = 43
ERR_NOT_LEADER_OR_FOLLOWER = 6


def produce_to(conn, topic, partition, batch):
    """(error, base offset) of a Produce v3 with acks=all."""
    return kw.parse_produce_v3(conn.call(API_PRODUCE, 3, kw.produce_v3_body(topic, partition, batch)))[
        (topic, partition)]


def elect_preferred(conn, topic, partition):
    """ElectLeaders v1 (preferred) of one partition: its error code."""
    body = struct.pack(">b", 0) + kw.array([kw.string(topic) + kw.array([struct.pack(">i", partition)])]) + \
        struct.pack(">i", 20000)
    r = kw.Reader(conn.call(API_ELECT_LEADERS, 1, body))
    r.int32()
    r.int16()
    [(_, [(_, err)])] = r.array(lambda r: (r.string(), r.array(lambda r: (r.int32(), r.int16(), r.string())[:2])))
    return err


@pytest.mark.timeout(180)
def test_a_follower_that_refused_a_batch_then_leads_waits_for_it(tmp_path):
    """Batch A reaches a follower (NOT_LEADER_OR_FOLLOWER); the follower then
    takes the leadership and batch B, pipelined behind A, arrives: B is
    answered NOT_LEADER_OR_FOLLOWER too (retriable, not written), not
    OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka before 2.3 takes as fatal
    when it counted A as possibly written. A then B are taken in order."""
    from cluster import CLUSTER_OVERRIDES, CONTROLLER_ID, Cluster, wait_until
    c = Cluster(tmp_path / "cluster", overrides=CLUSTER_OVERRIDES + ("auto.leader.rebalance.enable=false",))
    c.start()
    try:
        topic = "idem-new-leader"
        parts = c.create_topic(topic, 3)
        p, st = next((p, st) for p, st in sorted(parts.items()) if st["replicas"][0] != CONTROLLER_ID)
        preferred = c[st["replicas"][0]]
        # the preferred replica stops (its leadership moves) and comes back a follower
        preferred.stop()
        preferred.start()
        c.wait_isr(topic, p, st["replicas"], 30)
        leader = c[c.leader(topic, p)]
        assert leader is not preferred
        with kw.Conn(leader.host, leader.port) as lc, kw.Conn(preferred.host, preferred.port) as fc:
            err, pid, _ = init_producer_id(lc)
            assert err == 0
            assert produce_to(lc, topic, p, batch_of(0, pid, 0, 0)) == (0, 0)
            batch_a, batch_b = batch_of(1, pid, 0, 2), batch_of(2, pid, 0, 4)
            assert produce_to(fc, topic, p, batch_a)[0] == ERR_NOT_LEADER_OR_FOLLOWER
            assert elect_preferred(lc, topic, p) == 0
            wait_until(lambda: preferred.metadata([topic])["topics"][topic]["partitions"][p]["leader"] == preferred.id,
                       20, f"broker {preferred.id} leading {topic}-{p}")
            assert produce_to(fc, topic, p, batch_b)[0] == ERR_NOT_LEADER_OR_FOLLOWER
            assert produce_to(fc, topic, p, batch_a) == (0, 2)
            assert produce_to(fc, topic, p, batch_b) == (0, 4)
    finally:
        c.stop()


# ---------------------------------------------------------------- librdkafka's possibly-persisted retries

REFUSING_BROKER_LUA = r"""
local core = require "kafkaiq.core"
local dir, marks = arg[1], arg[2]
-- one I/O thread: the hooks see the requests in the order they are handled
local b = assert(core.broker_new { listeners = "PLAINTEXT://127.0.0.1:0", ["log.dirs"] = dir,
                                   ["num.io.threads"] = 1 })
assert(b:start())
local function exists(p) local f = io.open(p) if f then f:close() end return f ~= nil end
local function touch(p) io.open(p, "w"):close() end
-- Produce answers take 5 ms, so the producer keeps several requests in
-- flight; the 20th is lost with its connection before it is handled (the
-- producer cannot tell whether it was written) ...
assert(b:intercept { on = "request", api = "Produce", source = string.format([[
  local n = 0
  return function(ctx)
    n = n + 1
    if n == 20 then io.open(%q, "w"):close() return { drop = true } end
    return { delay_ms = 5 }
  end]], marks .. "/dropped") })
-- ... and its retry is refused once with NOT_ENOUGH_REPLICAS, before any
-- sequence check, while the batches pipelined behind it come to the log
assert(b:intercept { on = "produce", source = string.format([[
  local dropped, refused = %q, %q
  return function(ctx)
    local f = io.open(dropped)
    if f and not io.open(refused) then
      f:close()
      io.open(refused, "w"):close()
      return { error = 19 }
    end
    if f then f:close() end
  end]], marks .. "/dropped", marks .. "/refused") })
io.write(b:port(), "\n")
io.flush()
io.read("*l")
b:stop()
"""


@pytest.mark.timeout(120)
def test_a_retry_refused_after_a_lost_request_keeps_librdkafka_alive(tmp_path):
    """librdkafka before 2.3 (Debian's 2.0.2 here) counts batches whose
    connection was lost as possibly written; when the retry of the first is
    then refused and the next is answered OUT_OF_ORDER_SEQUENCE_NUMBER, it
    fails the producer for good ("rewound sequence number", or "sequence
    desynchronization" with one batch in flight): the soak's fatal error
    after a leader's SIGKILL, when the new leader refused the retry for want
    of in-sync replicas and its ISR grew before the next batch. The broker
    answers the batches behind the refused one with its error instead: every
    record is delivered, once, in order."""
    marks = tmp_path / "marks"
    marks.mkdir()
    with lua_broker(tmp_path, REFUSING_BROKER_LUA, marks) as bs:
        topic = "idem-refused-retry"
        kc.create_topic(bs, topic, 1)
        msgs = kc.make_messages(300, "refused")
        # one record a batch: librdkafka keeps at most five records of a
        # partition in flight, so one-record batches are what it pipelines
        reports = kc.produce_confluent(bs, topic, msgs, acks="all", extra={
            "enable.idempotence": True, "linger.ms": 0, "batch.num.messages": 1, "max.in.flight": 5,
            "retry.backoff.ms": 10, "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50})
        assert (marks / "refused").exists(), "the retry was never refused: the test proves nothing"
        kc.check_records(kc.consume_confluent_all(bs, topic, range(1)), msgs, reports)
