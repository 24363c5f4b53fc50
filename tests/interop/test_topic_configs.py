"""Per-topic configs through real admin clients: CreateTopics with configs,
DescribeConfigs sources and synonyms, AlterConfigs, IncrementalAlterConfigs
(raw frames: confluent-kafka 1.7 and kafka-python 2.0.2 have no
incremental_alter_configs), the configs surviving a restart and going with
the topic, INVALID_CONFIG naming the bad config, and the broker acting on
max.message.bytes, message.timestamp.type and segment.bytes per topic.
Every topic config Kafka 4.x takes is taken, checked as Kafka checks it,
and documented by DescribeConfigs v3+ (saying which ones are not acted
on); message.timestamp.before/after.max.ms refuse produces with
INVALID_TIMESTAMP, with Kafka's messages."""

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import ConfigResource, NewTopic

import kiq_clients as kc
import kiq_wire as w

DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5
INVALID_CONFIG = 40
INVALID_REQUEST = 42
INVALID_TIMESTAMP = 32
MESSAGE_TOO_LARGE = 10
HOUR = 3600 * 1000
IGNORED = "Accepted and not acted on by KafkaIQ: "

# The topic configs Kafka 4.x takes that KafkaIQ refused as unknown before,
# each with a valid value other than its default, and another one.
KAFKA4_NEW = {
    "segment.jitter.ms": ("1000", "2000"),
    "file.delete.delay.ms": ("30000", "0"),
    "max.compaction.lag.ms": ("86400000", "1"),
    "compression.gzip.level": ("6", "-1"),
    "compression.lz4.level": ("12", "1"),
    "compression.zstd.level": ("-5", "22"),
    "preallocate": ("true", "false"),
    "message.timestamp.before.max.ms": ("604800000", "0"),
    "message.timestamp.after.max.ms": ("7200000", "9223372036854775807"),
    "local.retention.ms": ("3600000", "-1"),
    "local.retention.bytes": ("1048576", "-2"),
    "remote.storage.enable": ("false", "false"),
    "remote.log.copy.disable": ("true", "false"),
    "remote.log.delete.on.disable": ("true", "false"),
    "leader.replication.throttled.replicas": ("0:0", "*"),
    "follower.replication.throttled.replicas": ("*", " 0:0 , 1:0 "),
    # new in Kafka 4.4
    "errors.deadletterqueue.group.enable": ("true", "false"),
    "max.decompressed.message.bytes": ("104857600", "2147483639"),
    "remote.copy.lag.bytes": ("1048576", "-1"),
    "remote.copy.lag.ms": ("60000", "0"),
}
# Every topic config of Kafka 4.4's LogConfig.
KAFKA4_ALL = set(KAFKA4_NEW) | {
    "cleanup.policy", "compression.type", "delete.retention.ms", "flush.messages", "flush.ms",
    "index.interval.bytes", "max.message.bytes", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes",
    "segment.index.bytes", "segment.ms", "unclean.leader.election.enable"}
# Those KafkaIQ takes without acting on them, its documentation says.
NOT_ACTED_ON = {
    "compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
    "file.delete.delay.ms", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas",
    "local.retention.ms", "local.retention.bytes", "min.cleanable.dirty.ratio", "preallocate",
    "remote.storage.enable", "remote.log.copy.disable", "remote.log.delete.on.disable",
    "errors.deadletterqueue.group.enable", "remote.copy.lag.bytes", "remote.copy.lag.ms"}

pytestmark = pytest.mark.usefixtures("broker")


@pytest.fixture(autouse=True)
def _managed_only(broker):
    if not broker.managed:
        pytest.skip("needs a kafkaiq broker it can restart and whose files it can see")


def create(bootstrap, topic, config, partitions=1):
    a = kc.admin(bootstrap)
    fut = a.create_topics([NewTopic(topic, partitions, 1, config=config)],
                          operation_timeout=10, request_timeout=15)[topic]
    return fut.result(timeout=20)


def create_error(bootstrap, topic, config):
    with pytest.raises(KafkaException) as e:
        create(bootstrap, topic, config)
    return e.value.args[0]


def describe(bootstrap, topic):
    a = kc.admin(bootstrap)
    fut = a.describe_configs([ConfigResource("topic", topic)], request_timeout=15)
    return list(fut.values())[0].result(timeout=20)


def alter(bootstrap, restype, name, configs):
    a = kc.admin(bootstrap)
    fut = a.alter_configs([ConfigResource(restype, name, set_config=configs)], request_timeout=15)
    return list(fut.values())[0].result(timeout=20)


def incremental(broker, resources, validate_only=False):
    """IncrementalAlterConfigs v0: resources [(type, name, [(config, op, value)])];
    returns [(error, message, type, name)]."""
    def config(c):
        name, op, value = c
        return w.string(name) + struct.pack(">b", op) + w.string(value)
    body = w.array([struct.pack(">b", t) + w.string(n) + w.array([config(c) for c in cs])
                    for t, n, cs in resources]) + struct.pack(">b", 1 if validate_only else 0)
    with w.Conn(broker.host, broker.port) as c:
        r = w.Reader(c.call(44, 0, body))
    r.int32()
    return r.array(lambda r: (r.int16(), r.string(), r.int8(), r.string()))


def produce_raw(broker, topic, value):
    batch = w.record_batch([(b"k", value, ())])
    with w.Conn(broker.host, broker.port) as c:
        out = w.parse_produce_v3(c.call(0, 3, w.produce_v3_body(topic, 0, batch, acks=1)))
    return out[(topic, 0)]


def describe_v3(broker, topic, documentation=True):
    """DescribeConfigs v3 of one topic, all configs:
    {name: (value, source, config_type, documentation)}"""
    body = (w.array([struct.pack(">b", 2) + w.string(topic) + struct.pack(">i", -1)]) +
            struct.pack(">bb", 0, 1 if documentation else 0))
    with w.Conn(broker.host, broker.port) as c:
        r = w.Reader(c.call(32, 3, body))
    r.int32()

    def config(r):
        name, value, _ = r.string(), r.string(), r.int8()
        source, _ = r.int8(), r.int8()
        r.array(lambda r: (r.string(), r.string(), r.int8()))
        return name, (value, source, r.int8(), r.string())

    [(err, msg, _, _, configs)] = r.array(lambda r: (r.int16(), r.string(), r.int8(), r.string(),
                                                     r.array(config)))
    assert err == 0, msg
    return dict(configs)


def produce_v8(broker, topic, timestamps):
    """One batch of records stamped timestamps; the partition's
    (error, base_offset, record_errors, error_message)."""
    batch = w.record_batch([(b"k", b"v", ())] * len(timestamps), timestamps=timestamps)
    with w.Conn(broker.host, broker.port) as c:
        return w.parse_produce_v8(c.call(0, 8, w.produce_v3_body(topic, 0, batch, acks=1)))[(topic, 0)]


def now_ms():
    return int(time.time() * 1000)


def segment_files(broker, topic):
    return sorted((broker.data_dir / f"{topic}-0").glob("*.log"))


def test_create_with_configs_described_as_dynamic(broker):
    topic = kc.fresh_name("tcfg-create", broker)
    create(broker.bootstrap, topic, {"cleanup.policy": "compact", "retention.ms": "3600000"})
    d = describe(broker.bootstrap, topic)
    assert d["cleanup.policy"].value == "compact"
    assert d["cleanup.policy"].source == DYNAMIC_TOPIC_CONFIG
    assert not d["cleanup.policy"].is_default
    assert not d["cleanup.policy"].is_read_only
    syn = list(d["cleanup.policy"].synonyms.values())
    assert [(s.name, s.value, s.source) for s in syn][0] == ("cleanup.policy", "compact", 1)
    assert syn[1].name == "log.cleanup.policy"
    assert d["retention.ms"].value == "3600000"
    assert d["segment.bytes"].source != DYNAMIC_TOPIC_CONFIG


def test_bad_configs_refused_naming_them(broker):
    topic = kc.fresh_name("tcfg-bad", broker)
    err = create_error(broker.bootstrap, topic, {"no.such.config": "1"})
    assert err.code() == INVALID_CONFIG and "no.such.config" in err.str()
    err = create_error(broker.bootstrap, topic, {"cleanup.policy": "shred"})
    assert err.code() == INVALID_CONFIG and "cleanup.policy" in err.str() and "shred" in err.str()
    err = create_error(broker.bootstrap, topic, {"segment.bytes": "13"})
    assert err.code() == INVALID_CONFIG and "segment.bytes" in err.str()
    assert kc.topic_partitions(broker.bootstrap, topic) is None
    create(broker.bootstrap, topic, {})
    with pytest.raises(KafkaException) as e:
        alter(broker.bootstrap, "topic", topic, {"message.timestamp.type": "Sometime"})
    assert e.value.args[0].code() == INVALID_CONFIG
    assert "message.timestamp.type" in e.value.args[0].str()
    [(code, msg, _, _)] = incremental(broker, [(2, topic, [("min.insync.replicas", 0, "0")])])
    assert code == INVALID_CONFIG and "min.insync.replicas" in msg


def test_alter_replaces_the_whole_set(broker):
    topic = kc.fresh_name("tcfg-alter", broker)
    create(broker.bootstrap, topic, {"retention.ms": "1000"})
    alter(broker.bootstrap, "topic", topic, {"segment.ms": "60000"})
    d = describe(broker.bootstrap, topic)
    assert d["segment.ms"].value == "60000" and d["segment.ms"].source == DYNAMIC_TOPIC_CONFIG
    assert d["retention.ms"].source != DYNAMIC_TOPIC_CONFIG


def test_broker_configs_that_cannot_change_are_refused(broker):
    with pytest.raises(KafkaException) as e:
        alter(broker.bootstrap, "broker", "0", {"log.retention.hours": "1"})
    assert e.value.args[0].code() == INVALID_REQUEST
    assert "log.retention.hours" in e.value.args[0].str()
    [(code, msg, typ, _)] = incremental(broker, [(4, "0", [("num.io.threads", 0, "8")])])
    assert (code, typ) == (INVALID_REQUEST, 4) and "num.io.threads" in msg


def test_dynamic_broker_configs_reach_topics(broker):
    """confluent-kafka sets this broker's message.max.bytes; kafka-python
    (which, unlike librdkafka, can name it) the cluster-wide default's
    retention.ms. Topics without their own value take both at once.
    AlterConfigs replaces the whole cluster-wide set, which keeps
    min.insync.replicas (as Kafka 4.1+'s does, KIP-966): one without it is
    refused."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType
    topic = kc.fresh_name("tcfg-dyn", broker)
    create(broker.bootstrap, topic, {})
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        alter(broker.bootstrap, "broker", "0", {"message.max.bytes": "3000"})
        assert produce_raw(broker, topic, b"x" * 4000)[0] == MESSAGE_TOO_LARGE
        res = a.alter_configs([KConfigResource(ConfigResourceType.BROKER, "",
                                               configs={"log.retention.ms": "86400000"})])
        assert [r[0] for r in res.resources] == [INVALID_CONFIG]
        res = a.alter_configs([KConfigResource(ConfigResourceType.BROKER, "",
                                               configs={"log.retention.ms": "86400000",
                                                        "min.insync.replicas": "1"})])
        assert [r[0] for r in res.resources] == [0]
        d = describe(broker.bootstrap, topic)
        assert (d["max.message.bytes"].value, d["max.message.bytes"].source) == ("3000", 2)  # DYNAMIC_BROKER
        assert (d["retention.ms"].value, d["retention.ms"].source) == ("86400000", 3)  # DYNAMIC_DEFAULT_BROKER
    finally:
        alter(broker.bootstrap, "broker", "0", {})
        a.alter_configs([KConfigResource(ConfigResourceType.BROKER, "", configs={"min.insync.replicas": "1"})])
        a.close()
    assert produce_raw(broker, topic, b"x" * 4000)[0] == 0
    assert describe(broker.bootstrap, topic)["retention.ms"].source not in (2, 3)


def test_incremental_set_delete_append_subtract(broker):
    topic = kc.fresh_name("tcfg-incr", broker)
    create(broker.bootstrap, topic, {"retention.ms": "5000"})
    res = incremental(broker, [(2, topic, [("cleanup.policy", 2, "compact"),
                                           ("retention.ms", 1, None),
                                           ("max.message.bytes", 0, "4096")])])
    assert res[0][0] == 0, res
    d = describe(broker.bootstrap, topic)
    assert d["cleanup.policy"].value == "delete,compact"
    assert d["retention.ms"].source != DYNAMIC_TOPIC_CONFIG
    assert d["max.message.bytes"].value == "4096"
    assert incremental(broker, [(2, topic, [("cleanup.policy", 3, "delete")])])[0][0] == 0
    assert describe(broker.bootstrap, topic)["cleanup.policy"].value == "compact"
    # down to no policy at all, as Kafka 4.2+ allows (every record kept)
    assert incremental(broker, [(2, topic, [("cleanup.policy", 3, "compact")])])[0][0] == 0
    assert describe(broker.bootstrap, topic)["cleanup.policy"].value == ""
    assert incremental(broker, [(2, topic, [("cleanup.policy", 2, "compact")])])[0][0] == 0
    assert describe(broker.bootstrap, topic)["cleanup.policy"].value == "compact"
    # validate_only changes nothing; APPEND on a non-list config is refused
    assert incremental(broker, [(2, topic, [("cleanup.policy", 0, "delete")])], True)[0][0] == 0
    assert describe(broker.bootstrap, topic)["cleanup.policy"].value == "compact"
    code, msg, _, _ = incremental(broker, [(2, topic, [("retention.ms", 2, "1")])])[0]
    assert code == INVALID_CONFIG and "retention.ms" in msg
    code, _, _, _ = incremental(broker, [(2, topic, [("retention.ms", 9, "1")])])[0]
    assert code == INVALID_REQUEST


def test_configs_survive_restart_and_go_with_the_topic(broker):
    topic = kc.fresh_name("tcfg-restart", broker)
    create(broker.bootstrap, topic, {"max.message.bytes": "2000", "cleanup.policy": "compact,delete"})
    broker.restart()
    d = describe(broker.bootstrap, topic)
    assert d["max.message.bytes"].value == "2000"
    assert d["max.message.bytes"].source == DYNAMIC_TOPIC_CONFIG
    assert d["cleanup.policy"].value == "compact,delete"
    a = kc.admin(broker.bootstrap)
    a.delete_topics([topic], operation_timeout=10)[topic].result(timeout=20)
    kc.wait_topic(broker.bootstrap, topic, present=False)
    deadline = time.monotonic() + 15
    while True:
        try:
            create(broker.bootstrap, topic, {})
            break
        except KafkaException as e:  # files of the old topic still going
            assert time.monotonic() < deadline, e
            time.sleep(0.2)
    d = describe(broker.bootstrap, topic)
    assert d["max.message.bytes"].source != DYNAMIC_TOPIC_CONFIG
    assert d["cleanup.policy"].source != DYNAMIC_TOPIC_CONFIG


def test_topic_max_message_bytes_limits_produce(broker):
    topic = kc.fresh_name("tcfg-maxbytes", broker)
    create(broker.bootstrap, topic, {"max.message.bytes": "1000"})
    kc.wait_topic(broker.bootstrap, topic, 1)
    assert produce_raw(broker, topic, b"x" * 2000)[0] == MESSAGE_TOO_LARGE
    assert produce_raw(broker, topic, b"x" * 100)[0] == 0
    alter(broker.bootstrap, "topic", topic, {"max.message.bytes": "100000"})
    assert produce_raw(broker, topic, b"x" * 2000)[0] == 0


def test_log_append_time_topic_gives_broker_timestamps(broker):
    topic = kc.fresh_name("tcfg-lat", broker)
    create(broker.bootstrap, topic, {"message.timestamp.type": "LogAppendTime"})
    kc.wait_topic(broker.bootstrap, topic, 1)
    before = int(time.time() * 1000)
    batch = w.record_batch([(b"k", b"v", ())], base_ts=1000)  # a client time long past
    with w.Conn(broker.host, broker.port) as c:
        assert w.parse_produce_v3(c.call(0, 3, w.produce_v3_body(topic, 0, batch, acks=1)))[(topic, 0)][0] == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kiq-tcfg",
                  "enable.auto.commit": False})
    try:
        c.assign([CTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 20
        msg = None
        while msg is None:
            assert time.monotonic() < deadline, "no record"
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                msg = m
    finally:
        c.close()
    kind, ts = msg.timestamp()
    assert kind == 2  # TIMESTAMP_LOG_APPEND_TIME
    assert before - 1000 <= ts <= int(time.time() * 1000) + 1000


def test_segment_bytes_rolls_per_topic(broker):
    topic = kc.fresh_name("tcfg-seg", broker)
    create(broker.bootstrap, topic, {})
    kc.wait_topic(broker.bootstrap, topic, 1)
    assert produce_raw(broker, topic, b"a" * 300)[0] == 0
    assert len(segment_files(broker, topic)) == 1
    # applied to the live log: each later batch gets a segment of its own
    alter(broker.bootstrap, "topic", topic, {"segment.bytes": "400"})
    for _ in range(3):
        assert produce_raw(broker, topic, b"b" * 300)[0] == 0
    assert len(segment_files(broker, topic)) == 4


def test_kafka_python_describe_and_alter(broker):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType
    topic = kc.fresh_name("tcfg-kp", broker)
    create(broker.bootstrap, topic, {})
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        res = a.alter_configs([KConfigResource(ConfigResourceType.TOPIC, topic,
                                               configs={"retention.bytes": "123456"})])
        assert [r[0] for r in res.resources] == [0]
        res = a.alter_configs([KConfigResource(ConfigResourceType.TOPIC, topic,
                                               configs={"retention.bytes": "lots"})])
        assert res.resources[0][0] == INVALID_CONFIG and "retention.bytes" in res.resources[0][1]
        [resp] = a.describe_configs([KConfigResource(ConfigResourceType.TOPIC, topic)])
        [(err, _, _, _, entries)] = resp.resources
        assert err == 0
        found = {e[0]: e for e in entries}
        assert found["retention.bytes"][1] == "123456"
    finally:
        a.close()


def test_every_kafka4_topic_config_accepted(broker):
    """CreateTopics (confluent-kafka), IncrementalAlterConfigs and
    AlterConfigs (kafka-python) take each of Kafka 4.x's topic configs;
    DescribeConfigs lists them as the topic's own."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KConfigResource, ConfigResourceType
    topic = kc.fresh_name("tcfg-k4", broker)
    create(broker.bootstrap, topic, {k: v for k, (v, _) in KAFKA4_NEW.items()})
    d = describe(broker.bootstrap, topic)
    assert KAFKA4_ALL <= set(d)
    for name, (value, _) in KAFKA4_NEW.items():
        assert (d[name].value, d[name].source) == (value, DYNAMIC_TOPIC_CONFIG), name
    res = incremental(broker, [(2, topic, [(k, 0, v) for k, (_, v) in KAFKA4_NEW.items()])])
    assert res[0][0] == 0, res
    d = describe(broker.bootstrap, topic)
    for name, (_, value) in KAFKA4_NEW.items():
        assert d[name].value == value.strip(), name
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        res = a.alter_configs([KConfigResource(ConfigResourceType.TOPIC, topic,
                                               configs={k: v for k, (v, _) in KAFKA4_NEW.items()})])
        assert [r[0] for r in res.resources] == [0], res.resources
    finally:
        a.close()
    d = describe(broker.bootstrap, topic)
    for name, (value, _) in KAFKA4_NEW.items():
        assert d[name].value == value, name


def test_kafka4_bad_values_refused_naming_them(broker):
    topic = kc.fresh_name("tcfg-k4bad", broker)
    bad = [("compression.lz4.level", "18"), ("compression.gzip.level", "0"), ("compression.zstd.level", "fast"),
           ("segment.jitter.ms", "-1"), ("max.compaction.lag.ms", "0"), ("file.delete.delay.ms", "1e3"),
           ("message.timestamp.after.max.ms", "1h"), ("message.timestamp.before.max.ms", "-5"),
           ("local.retention.ms", "-3"), ("preallocate", "yes"), ("remote.log.copy.disable", "1"),
           ("leader.replication.throttled.replicas", "0:x"),
           ("follower.replication.throttled.replicas", "*,1:0")]
    for name, value in bad:
        err = create_error(broker.bootstrap, topic, {name: value})
        assert err.code() == INVALID_CONFIG and name in err.str() and value in err.str(), (name, err)
    # Kafka's answer without tiered storage, and its check of the lags together
    err = create_error(broker.bootstrap, topic, {"remote.storage.enable": "true"})
    assert err.code() == INVALID_CONFIG
    assert ("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
            "log storage.") in err.str()
    err = create_error(broker.bootstrap, topic, {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"})
    assert err.code() == INVALID_CONFIG
    assert "conflict topic config setting min.compaction.lag.ms (5000) > max.compaction.lag.ms (1000)" in err.str()
    assert kc.topic_partitions(broker.bootstrap, topic) is None
    create(broker.bootstrap, topic, {"min.compaction.lag.ms": "5000"})
    for name, value in bad + [("remote.storage.enable", "true"), ("max.compaction.lag.ms", "4999")]:
        [(code, msg, _, _)] = incremental(broker, [(2, topic, [(name, 0, value)])])
        assert code == INVALID_CONFIG and msg, (name, code, msg)
        assert name in msg or "remote log storage" in msg, (name, msg)
    d = describe(broker.bootstrap, topic)
    assert all(d[name].source != DYNAMIC_TOPIC_CONFIG for name, _ in bad)


def test_describe_documents_every_config(broker):
    """DescribeConfigs v3 with include_documentation: every topic config of
    Kafka 4.x, each documented, and those KafkaIQ does not act on say so."""
    topic = kc.fresh_name("tcfg-doc", broker)
    create(broker.bootstrap, topic, {})
    d = describe_v3(broker, topic)
    assert set(d) == KAFKA4_ALL
    for name, (value, source, _, doc) in d.items():
        assert source == DEFAULT_CONFIG or (source != DYNAMIC_TOPIC_CONFIG and name not in KAFKA4_NEW), name
        assert doc and len(doc) > 20, name
    assert {n for n, (_, _, _, doc) in d.items() if doc.startswith(IGNORED)} == NOT_ACTED_ON
    assert d["message.timestamp.after.max.ms"][0] == "3600000"  # Kafka 4.0's default
    assert d["max.compaction.lag.ms"][0] == "9223372036854775807"
    assert d["leader.replication.throttled.replicas"][0] == ""
    types = {n: t for n, (_, _, t, _) in d.items()}
    assert (types["leader.replication.throttled.replicas"], types["preallocate"], types["compression.gzip.level"],
            types["segment.jitter.ms"], types["min.cleanable.dirty.ratio"]) == (7, 1, 3, 5, 6)
    assert all(doc is None for _, _, _, doc in describe_v3(broker, topic, documentation=False).values())


def test_timestamps_out_of_bounds_refused(broker):
    """message.timestamp.before/after.max.ms: a batch with a record outside
    [now - before, now + after] is refused whole with INVALID_TIMESTAMP and
    Kafka's messages (Produce v8 names the record); applied when altered,
    1 hour ahead by default (Kafka 4.0), not for LogAppendTime."""
    topic = kc.fresh_name("tcfg-ts", broker)
    create(broker.bootstrap, topic, {"message.timestamp.after.max.ms": str(HOUR),
                                     "message.timestamp.before.max.ms": str(24 * HOUR)})
    kc.wait_topic(broker.bootstrap, topic, 1)
    t = now_ms()
    err, _, record_errors, message = produce_v8(broker, topic, [t, t + 2 * HOUR, t])
    assert err == INVALID_TIMESTAMP
    assert message == "One or more records have been rejected due to invalid timestamp"
    [(index, why)] = record_errors
    assert index == 1
    prefix = f"Timestamp {t + 2 * HOUR} of message with offset 1 is out of range. The timestamp should be within ["
    assert why.startswith(prefix) and why.endswith("]"), why
    lo, hi = (int(x) for x in why[len(prefix):-1].split(", "))
    assert hi - lo == 25 * HOUR and t - 24 * HOUR <= lo <= now_ms() - 24 * HOUR
    assert produce_v8(broker, topic, [t - 25 * HOUR])[0] == INVALID_TIMESTAMP
    assert produce_v8(broker, topic, [t - 23 * HOUR, t + HOUR // 2])[0] == 0
    # nothing of the refused batches was appended
    assert kc.watermarks_confluent(broker.bootstrap, topic, [0])[0] == (0, 2)
    # librdkafka's producer gets the error too
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    errors = []
    p.produce(topic, b"v", timestamp=now_ms() + 2 * HOUR, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(30) == 0
    assert len(errors) == 1 and errors[0] is not None and errors[0].code() == INVALID_TIMESTAMP, errors
    # applied as soon as it is altered
    assert incremental(broker, [(2, topic, [("message.timestamp.after.max.ms", 0, str(3 * HOUR))])])[0][0] == 0
    assert produce_v8(broker, topic, [now_ms() + 2 * HOUR])[0] == 0
    # Kafka 4.0's default: one hour ahead; LogAppendTime topics are not checked
    plain = kc.fresh_name("tcfg-ts-default", broker)
    create(broker.bootstrap, plain, {})
    lat = kc.fresh_name("tcfg-ts-lat", broker)
    create(broker.bootstrap, lat, {"message.timestamp.type": "LogAppendTime",
                                   "message.timestamp.after.max.ms": "0"})
    kc.wait_topic(broker.bootstrap, plain, 1)
    kc.wait_topic(broker.bootstrap, lat, 1)
    assert produce_v8(broker, plain, [now_ms() + 2 * HOUR])[0] == INVALID_TIMESTAMP
    assert produce_v8(broker, plain, [now_ms() + HOUR // 2, 1000])[0] == 0
    assert produce_v8(broker, lat, [now_ms() + 2 * HOUR])[0] == 0
