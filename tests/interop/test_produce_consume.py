"""Produce 10,000 keyed messages per codec and acks level, read every one back.

Each (producer, codec, acks) combination gets its own 3-partition topic,
produced once per module and then read by confluent-kafka, kafka-python and
kcat. Every read checks key, value, headers, that each key is on the partition
(and offset) its delivery report gave, and that offsets are contiguous.
"""

import pytest

import kiq_clients as kc

N = 10000
PARTITIONS = 3
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
ACKS = ["0", "1", "all"]
CONFLUENT = [(c, a) for c in CODECS for a in ACKS]
# kafka-python: every codec at acks=1, and the other acks levels once each.
KAFKA_PYTHON = [(c, "1") for c in CODECS] + [("gzip", "0"), ("lz4", "all")]
KCAT_CODECS = ["none", "snappy", "zstd"]


class Produced:
    """Topics produced so far in this module, so each combination is produced once."""

    def __init__(self, broker, tmp_path_factory):
        self.broker = broker
        self.tmp = tmp_path_factory.mktemp("kcat-input")
        self.topics = {}

    def get(self, client, codec, acks="1"):
        key = (client, codec, acks)
        if key not in self.topics:
            topic = kc.fresh_name(f"pc-{client}-{codec}-{acks}", self.broker)
            # Marked before producing, so a failed produce is not retried by
            # every test that reads this topic.
            self.topics[key] = None
            bs = self.broker.bootstrap
            parts = kc.create_topic(bs, topic, PARTITIONS, managed=self.broker.managed)
            msgs = kc.make_messages(N, f"{client}-{codec}-{acks}")
            if client == "confluent":
                reports = kc.produce_confluent(bs, topic, msgs, codec, acks)
            elif client == "kafka-python":
                reports = kc.produce_kafka_python(bs, topic, msgs,
                                                  None if codec == "none" else codec,
                                                  "all" if acks == "all" else int(acks))
            else:
                # kcat's -H puts the same headers on every message.
                msgs = [(k, v, [h for h in hs if h[0] == "src"]) for k, v, hs in msgs]
                reports = kc.produce_kcat(bs, topic, msgs, self.tmp / f"{topic}.txt",
                                          None if codec == "none" else codec)
            self.topics[key] = (topic, parts, msgs, reports)
        if self.topics[key] is None:
            pytest.fail(f"producing {key} failed in an earlier test")
        return self.topics[key]


@pytest.fixture(scope="module")
def produced(broker, tmp_path_factory):
    return Produced(broker, tmp_path_factory)


def _ids(combos):
    return [f"{c}-acks{a}" for c, a in combos]


@pytest.mark.parametrize("codec,acks", CONFLUENT, ids=_ids(CONFLUENT))
def test_confluent_produce_confluent_read(broker, produced, codec, acks):
    topic, parts, msgs, reports = produced.get("confluent", codec, acks)
    kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, parts), msgs, reports)


@pytest.mark.parametrize("codec,acks", CONFLUENT, ids=_ids(CONFLUENT))
def test_confluent_produce_kafka_python_read(broker, produced, codec, acks):
    topic, parts, msgs, reports = produced.get("confluent", codec, acks)
    kc.check_records(kc.consume_kafka_python(broker.bootstrap, topic, parts), msgs, reports)


@pytest.mark.parametrize("codec,acks", CONFLUENT, ids=_ids(CONFLUENT))
def test_confluent_produce_kcat_read(broker, produced, codec, acks):
    topic, parts, msgs, reports = produced.get("confluent", codec, acks)
    kc.check_records(kc.consume_kcat(broker.bootstrap, topic), msgs, reports)


@pytest.mark.parametrize("codec,acks", KAFKA_PYTHON, ids=_ids(KAFKA_PYTHON))
def test_kafka_python_produce(broker, produced, codec, acks):
    topic, parts, msgs, reports = produced.get("kafka-python", codec, acks)
    kc.check_records(kc.consume_kafka_python(broker.bootstrap, topic, parts), msgs, reports)
    kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, parts), msgs, reports)


@pytest.mark.parametrize("codec", KCAT_CODECS)
def test_kcat_produce(broker, produced, codec):
    topic, parts, msgs, reports = produced.get("kcat", codec)
    kc.check_records(kc.consume_kcat(broker.bootstrap, topic), msgs, reports)
    kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, parts), msgs, reports)


def _middle(broker, produced):
    """A topic with known offsets, and the middle offset of each partition."""
    topic, parts, msgs, reports = produced.get("confluent", "lz4", "1")
    marks = kc.watermarks_confluent(broker.bootstrap, topic, parts)
    for p in parts:
        assert marks[p][0] == 0, marks
        assert marks[p][1] == sum(1 for rp, _ in reports.values() if rp == p), marks
    start = {p: marks[p][1] // 2 for p in parts}
    want = [m for m in msgs if reports[m[0]][1] >= start[reports[m[0]][0]]]
    assert len(want) < N
    return topic, parts, start, want, reports


def test_confluent_consume_from_middle(broker, produced):
    topic, parts, start, want, reports = _middle(broker, produced)
    got = kc.consume_confluent(broker.bootstrap, topic, start)
    kc.check_records(got, want, reports, first_offsets=start)


def test_kafka_python_consume_from_middle(broker, produced):
    topic, parts, start, want, reports = _middle(broker, produced)
    got = kc.consume_kafka_python(broker.bootstrap, topic, parts, start=start)
    kc.check_records(got, want, reports, first_offsets=start)


def test_kcat_consume_from_middle(broker, produced):
    topic, parts, start, want, reports = _middle(broker, produced)
    p = parts[0]
    got = kc.consume_kcat(broker.bootstrap, topic, partition=p, offset=start[p])
    kc.check_records(got, [m for m in want if reports[m[0]][0] == p], reports,
                     first_offsets=start)


def test_restart_reads_everything_again(broker, produced):
    if not broker.managed:
        pytest.skip("restart needs a broker this suite started (KIQ_BOOTSTRAP is set)")
    # Whatever ran before, have a librdkafka and a kafka-python topic to check.
    produced.get("confluent", "zstd", "all")
    produced.get("kafka-python", "gzip", "0")
    topics = [v for v in produced.topics.values() if v is not None]
    before = {t[0]: kc.watermarks_confluent(broker.bootstrap, t[0], t[1]) for t in topics}

    broker.restart()

    for topic, parts, msgs, reports in topics:
        assert kc.watermarks_confluent(broker.bootstrap, topic, parts) == before[topic], topic
        kc.check_records(kc.consume_confluent_all(broker.bootstrap, topic, parts), msgs, reports)
    topic, parts, msgs, reports = produced.get("kafka-python", "gzip", "0")
    kc.check_records(kc.consume_kafka_python(broker.bootstrap, topic, parts), msgs, reports)

    # New messages continue each partition's offsets after the restart.
    topic, parts = topics[0][0], topics[0][1]
    more = kc.make_messages(300, "after-restart")
    more = [(b"after-" + k, v, h) for k, v, h in more]
    new_reports = kc.produce_confluent(broker.bootstrap, topic, more, acks="all")
    for key, (p, off) in new_reports.items():
        assert off >= before[topic][p][1], (key, p, off, before[topic][p])
    marks = kc.watermarks_confluent(broker.bootstrap, topic, parts)
    for p in parts:
        added = sum(1 for rp, _ in new_reports.values() if rp == p)
        assert marks[p][1] == before[topic][p][1] + added, (p, marks, before[topic])
