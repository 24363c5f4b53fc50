"""Real-client helpers: topic admin, producing keyed messages and reading them
back with confluent-kafka, kafka-python and kcat, each bounded in time.

A consumed record is the tuple (partition, offset, key, value, headers) with
key/value as bytes and headers as a list of (str, bytes).
"""

import json
import os
import subprocess
import time
import zlib

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

VALUE_PAD = b"0123456789abcdefghijklmnopqrstuvwxyz" * 3

CONSUME_TIMEOUT = 90.0


def make_messages(n, tag):
    """n keyed messages of about 100-byte values with two headers each."""
    msgs = []
    for i in range(n):
        key = b"key-%05d" % i
        value = (b"%s-%05d-" % (tag.encode(), i) + VALUE_PAD)[:100]
        headers = [("idx", b"%d" % i), ("src", tag.encode())]
        msgs.append((key, value, headers))
    return msgs


def fresh_name(base, broker):
    """A topic name no earlier run has used: an external peer keeps old topics."""
    if broker.managed:
        return base
    return f"{base}-{os.getpid()}"


# ---------------------------------------------------------------- metadata / admin

def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def topic_partitions(bootstrap, topic, timeout=10.0):
    """Partition ids of topic from confluent metadata, or None if absent."""
    md = admin(bootstrap).list_topics(timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return sorted(t.partitions)


def wait_topic(bootstrap, topic, partitions=None, present=True, timeout=15.0):
    """Waits until metadata shows topic (with that many partitions) or not at all."""
    deadline = time.monotonic() + timeout
    parts = None
    while time.monotonic() < deadline:
        parts = topic_partitions(bootstrap, topic)
        if present and parts is not None and (partitions is None or len(parts) == partitions):
            return parts
        if not present and parts is None:
            return None
        time.sleep(0.2)
    raise AssertionError(f"topic {topic}: metadata shows partitions {parts}, "
                         f"wanted {'present' if present else 'absent'} "
                         f"{partitions if partitions else ''}")


def create_topic(bootstrap, topic, partitions, managed=True):
    """Creates topic with confluent's AdminClient and waits for it in metadata.

    An external peer may be unable to create topics (librdkafka's mock cluster
    names no controller, and admin calls wait for one until they time out), so
    there the topic is auto-created through a producer's metadata request and
    keeps whatever partition count the peer gives it.
    """
    if not managed:
        Producer({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
        return wait_topic(bootstrap, topic)
    a = admin(bootstrap)  # the future fails if its client is collected first
    fut = a.create_topics([NewTopic(topic, partitions, 1)],
                          operation_timeout=10, request_timeout=15)[topic]
    fut.result(timeout=20)
    return wait_topic(bootstrap, topic, partitions)


# ---------------------------------------------------------------- producing

def produce_confluent(bootstrap, topic, msgs, codec="none", acks="1", extra=None):
    """Produces msgs; returns {key: (partition, offset)} from delivery reports."""
    conf = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "compression.type": codec,
        "linger.ms": 5,
        "batch.size": 1048576,
        "batch.num.messages": 10000,
        "queue.buffering.max.messages": 200000,
        "message.timeout.ms": 60000,
    }
    conf.update(extra or {})
    p = Producer(conf)
    reports = {}
    errors = []

    # With acks=0 the broker says nothing, and librdkafka's reported offsets
    # are only positions within each batch: keep the partition alone.
    known_offsets = str(acks) != "0"

    def on_delivery(err, msg):
        if err is not None:
            errors.append((msg.key(), err))
        else:
            reports[msg.key()] = (msg.partition(), msg.offset() if known_offsets else -1)

    for key, value, headers in msgs:
        while True:
            try:
                p.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(90)
    assert left == 0, f"{left} messages still undelivered after 90 s"
    assert not errors, f"{len(errors)} delivery errors, first: {errors[:3]}"
    assert len(reports) == len(msgs), f"{len(reports)} delivery reports for {len(msgs)} messages"
    return reports


def produce_kafka_python(bootstrap, topic, msgs, codec=None, acks=1):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, compression_type=codec,
                      linger_ms=5, batch_size=262144, max_request_size=1048576,
                      request_timeout_ms=30000)
    try:
        futures = [(key, p.send(topic, key=key, value=value, headers=headers))
                   for key, value, headers in msgs]
        p.flush(timeout=90)
        reports = {}
        for key, fut in futures:
            md = fut.get(timeout=30)
            reports[key] = (md.partition, md.offset)
        return reports
    finally:
        p.close(timeout=10)


def produce_kcat(bootstrap, topic, msgs, path, codec=None):
    """Produces msgs from a file with kcat (key<TAB>value per line).

    kcat's -H puts the same headers on every message: those of msgs[0].

    kcat prints no per-message delivery reports, so the expected partition is
    what its default partitioner (consistent_random: CRC-32 of the key modulo
    the partition count) computes; a key on any other partition means the
    broker stored it elsewhere.
    """
    with open(path, "wb") as f:
        for key, value, _ in msgs:
            f.write(key + b"\t" + value + b"\n")
    headers = msgs[0][2]
    cmd = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-l", "-m", "10",
           "-X", "linger.ms=5", "-X", "batch.num.messages=10000"]
    for hk, hv in headers:
        cmd += ["-H", f"{hk}={hv.decode()}"]
    if codec:
        cmd += ["-z", codec]
    cmd.append(str(path))
    res = subprocess.run(cmd, capture_output=True, timeout=120)
    assert res.returncode == 0, f"kcat -P exited {res.returncode}: {res.stderr.decode()[-2000:]}"
    parts = topic_partitions(bootstrap, topic)
    return {key: (zlib.crc32(key) % len(parts), -1) for key, _, _ in msgs}


# ---------------------------------------------------------------- consuming

def watermarks_confluent(bootstrap, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kiq-interop-watermarks",
                  "enable.auto.commit": False})
    try:
        return {p: c.get_watermark_offsets(CTopicPartition(topic, p), timeout=10)
                for p in partitions}
    finally:
        c.close()


def consume_confluent(bootstrap, topic, start, timeout=CONSUME_TIMEOUT):
    """Reads from start {partition: offset} to each partition's end (EOF).

    confluent-kafka 1.7 refuses to build a consumer without group.id, so one
    is set, but the consumer only assign()s and never commits: no group
    protocol beyond the coordinator lookup librdkafka does on its own.
    """
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "kiq-interop-assign",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
        "fetch.wait.max.ms": 100,
    })
    out = []
    try:
        c.assign([CTopicPartition(topic, p, off) for p, off in start.items()])
        at_eof = set()
        deadline = time.monotonic() + timeout
        while at_eof != set(start):
            assert time.monotonic() < deadline, (
                f"confluent consumer: only {len(out)} records, EOF on {sorted(at_eof)} "
                f"of {sorted(start)} after {timeout} s")
            for m in c.consume(num_messages=10000, timeout=1.0):
                err = m.error()
                if err is None:
                    out.append((m.partition(), m.offset(), m.key(), m.value(),
                                list(m.headers() or [])))
                    at_eof.discard(m.partition())
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_eof.add(m.partition())
                else:
                    raise AssertionError(f"confluent consumer error: {err}")
    finally:
        c.close()
    return out


def consume_confluent_all(bootstrap, topic, partitions, timeout=CONSUME_TIMEOUT):
    return consume_confluent(bootstrap, topic, {p: OFFSET_BEGINNING for p in partitions},
                             timeout)


def consume_kafka_python(bootstrap, topic, partitions, start=None, timeout=CONSUME_TIMEOUT):
    """Reads with assign + seek (no group); start {partition: offset} or beginning."""
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      fetch_max_bytes=52428800, max_partition_fetch_bytes=10485760,
                      fetch_max_wait_ms=100, request_timeout_ms=30000)
    out = []
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        if start is None:
            c.seek_to_beginning()
        else:
            for tp in tps:
                c.seek(tp, start[tp.partition])
        end = c.end_offsets(tps)
        deadline = time.monotonic() + timeout
        while any(c.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, (
                f"kafka-python consumer: only {len(out)} records after {timeout} s; "
                f"positions {[c.position(tp) for tp in tps]} ends {[end[tp] for tp in tps]}")
            for tp, recs in c.poll(timeout_ms=1000, max_records=10000).items():
                for r in recs:
                    out.append((r.partition, r.offset, r.key, r.value, list(r.headers or [])))
    finally:
        c.close()
    return out


def _kcat_headers(h):
    if h is None:
        return []
    if isinstance(h, dict):
        return [(k, v.encode()) for k, v in h.items()]
    return [(h[i], h[i + 1].encode()) for i in range(0, len(h), 2)]


def consume_kcat(bootstrap, topic, partition=None, offset="beginning", timeout=CONSUME_TIMEOUT):
    cmd = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", str(offset), "-e", "-J", "-q",
           "-m", "10", "-X", "fetch.wait.max.ms=100"]
    if partition is not None:
        cmd += ["-p", str(partition)]
    res = subprocess.run(cmd, capture_output=True, timeout=timeout)
    assert res.returncode == 0, f"kcat -C exited {res.returncode}: {res.stderr.decode()[-2000:]}"
    out = []
    for line in res.stdout.decode().splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        key = None if j["key"] is None else j["key"].encode()
        value = None if j["payload"] is None else j["payload"].encode()
        out.append((j["partition"], j["offset"], key, value, _kcat_headers(j.get("headers"))))
    return out


# ---------------------------------------------------------------- checking

def check_records(records, msgs, reports, first_offsets=None):
    """Checks records read back against what was produced.

    Every message must come back exactly once with its key, value and headers,
    on the partition (and offset, when the producer learnt it) its delivery
    report gave; offsets in each partition must be contiguous from the first
    one read (0 unless first_offsets says otherwise).
    """
    by_key = {k: (v, h) for k, v, h in msgs}
    seen = {}
    problems = []
    for part, off, key, value, headers in records:
        if key in seen:
            problems.append(f"key {key!r} read twice (offsets {seen[key]} and {(part, off)})")
            continue
        seen[key] = (part, off)
        if key not in by_key:
            problems.append(f"unexpected key {key!r} at {part}/{off}")
            continue
        want_value, want_headers = by_key[key]
        if value != want_value:
            problems.append(f"key {key!r}: value {value!r}, expected {want_value!r}")
        if [(k, bytes(v)) for k, v in headers] != want_headers:
            problems.append(f"key {key!r}: headers {headers!r}, expected {want_headers!r}")
        rep_part, rep_off = reports[key]
        if part != rep_part:
            problems.append(f"key {key!r} on partition {part}, delivery report said {rep_part}")
        if rep_off is not None and rep_off >= 0 and off != rep_off:
            problems.append(f"key {key!r} at offset {off}, delivery report said {rep_off}")
        if len(problems) > 20:
            break
    missing = [k for k in by_key if k not in seen]
    if missing:
        problems.append(f"{len(missing)} of {len(msgs)} messages missing, e.g. {missing[:5]}")
    offsets = {}
    for part, off, *_ in records:
        offsets.setdefault(part, []).append(off)
    for part, offs in offsets.items():
        first = (first_offsets or {}).get(part, 0)
        if sorted(offs) != list(range(first, first + len(offs))):
            problems.append(f"partition {part}: offsets not contiguous from {first}: "
                            f"{sorted(offs)[:5]}...{sorted(offs)[-5:]}")
    assert not problems, "\n".join(problems[:20])
