"""confluent-kafka-python, the pinned newest release (build/venv; it bundles
a current librdkafka), on one broker and on `serve --brokers 3`: what its
own integration tests (tests/integration of its source, which its PyPI
release leaves out; run_upstream.py runs them by hand) go through, kept
short: an idempotent producer with headers and zstd, a consumer group that
commits by hand and a member that resumes from those commits, the admin
client (cluster, topics, configs incl. incremental APPEND and SUBTRACT down
to an empty cleanup.policy, list offsets, delete records, groups and their
offsets) and transactions read with read_committed, on three brokers over
a one-replica topic whose leader is not the coordinator's broker.
"""

import time

from confluent_kafka import (ConsumerGroupTopicPartitions, Consumer, IsolationLevel, KafkaError, Producer,
                             TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   OffsetSpec, ResourceType)

import kiq_clients as kc
from cluster import coordinator_of

PARTITIONS = 3
RECORDS = 60
WAIT = 30


def admin(bs):
    return AdminClient({"bootstrap.servers": bs})


def create(bs, topic, partitions, rf, config=None):
    a = admin(bs)
    a.create_topics([NewTopic(topic, partitions, rf, config=config or {})])[topic].result(WAIT)
    return a


def produce(bs, topic, values, extra=None, timestamps=None):
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "compression.codec": "zstd",
                  **(extra or {})})
    for i, v in enumerate(values):
        p.produce(topic, v, key=b"k" + v, headers=[("v", v)], timestamp=timestamps[i] if timestamps else 0)
    assert p.flush(WAIT) == 0
    return p


def consumer(bs, group, extra=None):
    return Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **(extra or {})})


def poll_until(c, n, timeout=WAIT):
    """Records polled until there are n of them (a bounded wait)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    return got


def test_produce_group_commits_and_resume(target):
    broker, n = target
    bs = broker.bootstrap
    topic, group = f"ck-group-{n}", f"ck-group-{n}"
    a = create(bs, topic, PARTITIONS, n)
    values = [b"v%d" % i for i in range(RECORDS)]
    produce(bs, topic, values)

    c = consumer(bs, group)
    c.subscribe([topic])
    got = poll_until(c, RECORDS)
    assert sorted(m.value() for m in got) == sorted(values)
    assert all(m.key() == b"k" + m.value() and m.headers() == [("v", m.value())] for m in got)
    assert {m.partition() for m in got} == set(range(PARTITIONS))
    c.commit(asynchronous=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = {tp.partition: c.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
    assert {tp.partition: tp.offset for tp in c.committed(tps, timeout=10)} == ends
    c.close()

    # the group's next member starts from the commits: only what came after
    more = [b"w%d" % i for i in range(10)]
    produce(bs, topic, more)
    c = consumer(bs, group)
    c.subscribe([topic])
    got = poll_until(c, len(more))
    assert sorted(m.value() for m in got) == sorted(more)
    c.commit(asynchronous=False)
    c.close()

    listed = {g.group_id: g for g in a.list_consumer_groups(request_timeout=10).result(WAIT).valid}
    assert group in listed
    (desc,) = a.describe_consumer_groups([group], request_timeout=10).values()
    assert desc.result(WAIT).members == []
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(WAIT)
    assert sum(tp.offset for tp in res.topic_partitions) == RECORDS + len(more)
    # an empty group's offsets can be set by the admin client
    a.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])])[group].result(WAIT)
    res = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])[group].result(WAIT)
    assert [tp.offset for tp in res.topic_partitions] == [1]
    a.delete_consumer_groups([group], request_timeout=10)[group].result(WAIT)
    a.delete_topics([topic])[topic].result(WAIT)


def topic_configs(a, topic, want):
    """The topic's configs once they show want (name: value): an altered
    config reaches each broker with the controller's next metadata update,
    as in Kafka, so another broker may answer with the old one for a moment."""
    res = ConfigResource(ResourceType.TOPIC, topic)
    deadline = time.monotonic() + WAIT
    while True:
        conf = a.describe_configs([res])[res].result(WAIT)
        if all(conf[k].value == v for k, v in want.items()) or time.monotonic() > deadline:
            return conf
        time.sleep(0.1)


def test_admin_cluster_configs_offsets_records(target):
    broker, n = target
    bs = broker.bootstrap
    topic = f"ck-admin-{n}"
    a = admin(bs)
    cluster = a.describe_cluster(request_timeout=10).result(WAIT)
    assert sorted(node.id for node in cluster.nodes) == list(range(n))
    assert cluster.controller.id in range(n)

    create(bs, topic, 1, n, {"compression.type": "gzip"})
    (desc,) = a.describe_topics(TopicCollection([topic])).values()
    assert [len(p.replicas) for p in desc.result(WAIT).partitions] == [n]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "10000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(WAIT)
    conf = topic_configs(a, topic, {"cleanup.policy": "delete,compact", "retention.ms": "10000"})
    assert (conf["cleanup.policy"].value, conf["retention.ms"].value) == ("delete,compact", "10000")
    assert conf["compression.type"].value == "gzip"
    # no policy at all (Kafka 4.2+: every record kept)
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete,compact", incremental_operation=AlterConfigOpType.SUBTRACT),
        ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE)])
    a.incremental_alter_configs([res])[res].result(WAIT)
    conf = topic_configs(a, topic, {"cleanup.policy": ""})
    assert conf["cleanup.policy"].value == ""
    assert conf["compression.type"].source != ConfigResource.Type.TOPIC  # back to the broker's

    # the newest timestamp on the sixth record, which max-timestamp finds
    now = int(time.time() * 1000)
    produce(bs, topic, [b"r%d" % i for i in range(10)], timestamps=[now + (100 if i == 5 else i) for i in range(10)])
    tp = TopicPartition(topic, 0)

    def offset(spec):
        return a.list_offsets({tp: spec}, isolation_level=IsolationLevel.READ_COMMITTED)[tp].result(WAIT).offset
    assert (offset(OffsetSpec.earliest()), offset(OffsetSpec.latest())) == (0, 10)
    assert offset(OffsetSpec.max_timestamp()) == 5
    assert offset(OffsetSpec.for_timestamp(now + 3)) == 3
    deleted = a.delete_records([TopicPartition(topic, 0, 4)])
    assert next(iter(deleted.values())).result(WAIT).low_watermark == 4
    assert offset(OffsetSpec.earliest()) == 4
    a.delete_topics([topic])[topic].result(WAIT)


def test_transactions_read_committed(target):
    """An aborted transaction, then a committed one that also commits a
    group's offsets: read_committed sees the committed records alone. On
    three brokers the topic has one replica, led away from the coordinator."""
    broker, n = target
    bs = broker.bootstrap
    topic, group = f"ck-txn-{n}", f"ck-txn-{n}"
    a = create(bs, topic, 1, 1, {"min.insync.replicas": "1"})
    kc.wait_topic(bs, topic, 1)
    leader = a.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    txn_id = next(t for t in (f"ck-txn-{n}-{i}" for i in range(200))
                  if n == 1 or coordinator_of(broker, t) != leader)
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
    p.init_transactions(WAIT)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b"aborted-%d" % i)
    assert p.flush(WAIT) == 0  # in the log, not purged from the queue by the abort
    p.abort_transaction(WAIT)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b"committed-%d" % i)
    meta = consumer(bs, group).consumer_group_metadata()
    p.send_offsets_to_transaction([TopicPartition(topic, 0, 12)], meta, WAIT)
    p.commit_transaction(WAIT)

    c = consumer(bs, f"{group}-reader", {"isolation.level": "read_committed", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + WAIT
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            # 5 aborted, their marker, 5 committed, their marker
            if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= 12:
                break
            continue
        got.append(m.value())
    c.close()
    assert got == [b"committed-%d" % i for i in range(5)]
    res = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])[group].result(WAIT)
    assert [tp.offset for tp in res.topic_partitions] == [12]
