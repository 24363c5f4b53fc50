"""kafka-python 3.0 (the pinned release, in build/venv) on one broker and on
`serve --brokers 3`: an idempotent producer with headers and gzip, a
consumer group that commits by hand and one that resumes from those
commits, and the admin client (topics, configs with incremental ALTER,
cluster, list offsets, delete records, groups and their offsets).
"""

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic, OffsetSpec
from kafka.structs import OffsetAndMetadata

PARTITIONS = 3
RECORDS = 60


def poll_until(consumer, n, timeout=30):
    """Records polled until there are n of them (a bounded wait)."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += records
    return got


def produce(bs, topic, start, n, timestamps=None):
    """Records start..start+n-1 (timestamps[i] as the i-th one's, if given)."""
    p = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=True, compression_type="gzip")
    futures = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("i", b"%d" % i)],
                      timestamp_ms=timestamps[i - start] if timestamps else None)
               for i in range(start, start + n)]
    p.flush(30)
    p.close()
    return [f.get(10) for f in futures]


def test_produce_group_commits_and_resume(target):
    broker, n = target
    bs = broker.bootstrap
    topic, group = f"kp-group-{n}", f"kp-group-{n}"
    admin = KafkaAdminClient(bootstrap_servers=bs)
    admin.create_topics([NewTopic(topic, PARTITIONS, n)], wait_for_metadata=True)
    metas = produce(bs, topic, 0, RECORDS)
    assert {m.partition for m in metas} == set(range(PARTITIONS))

    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    got = poll_until(c, RECORDS)
    assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(RECORDS))
    assert all(r.headers == [("i", r.value[1:])] and r.key == b"k" + r.value[1:] for r in got)
    c.commit()
    ends = c.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    for tp, end in ends.items():
        assert c.committed(tp) == end
    c.close()

    # the group's next member starts from the commits: only what came after
    produce(bs, topic, RECORDS, 10)
    c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    got = poll_until(c, 10)
    assert sorted(r.value for r in got) == sorted(b"v%d" % i for i in range(RECORDS, RECORDS + 10))
    c.commit()
    c.close()

    groups = {g["group_id"]: g for g in admin.list_groups()}
    assert groups[group]["group_state"] == "Empty"
    assert admin.describe_groups([group])[group]["members"] == []
    committed = admin.list_group_offsets({group: None})[group]
    assert {tp: om.offset for tp, om in committed.items()} == {
        tp: end + sum(1 for r in got if r.partition == tp.partition) for tp, end in ends.items()}
    # an empty group's offsets can be set by the admin client
    tp0 = TopicPartition(topic, 0)
    admin.alter_group_offsets(group, {tp0: OffsetAndMetadata(1, "", -1)})
    assert admin.list_group_offsets({group: [tp0]})[group][tp0].offset == 1
    assert admin.delete_groups([group]) == {group: "OK"}
    admin.delete_topics([topic])
    admin.close()


def modified_configs(admin, topic, want):
    """The topic's modified configs once they are want (name: value or None
    for one back at its default): an altered config reaches each broker with
    the controller's next metadata update, as in Kafka, so another broker
    may answer with the old one for a moment."""
    res = ConfigResource(ConfigResourceType.TOPIC, topic)
    deadline = time.monotonic() + 30
    while True:
        conf = admin.describe_configs([res])["topic"][topic]
        if all(conf.get(k, {}).get("value") == v for k, v in want.items()) or time.monotonic() > deadline:
            return conf
        time.sleep(0.1)


def test_admin_configs_offsets_and_records(target):
    broker, n = target
    bs = broker.bootstrap
    topic = f"kp-admin-{n}"
    admin = KafkaAdminClient(bootstrap_servers=bs)
    cluster = admin.describe_cluster()
    assert sorted(b["broker_id"] for b in cluster["brokers"]) == list(range(n))
    assert cluster["controller_id"] in range(n)

    admin.create_topics([NewTopic(topic, 1, n, topic_configs={"retention.ms": "86400000"})],
                        wait_for_metadata=True)
    (desc,) = admin.describe_topics([topic])
    assert [len(p["replica_nodes"]) for p in desc["partitions"]] == [n]
    conf = modified_configs(admin, topic, {"retention.ms": "86400000"})
    assert conf["retention.ms"]["value"] == "86400000"
    assert conf["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={
        "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
        "retention.ms": (AlterConfigOp.DELETE, None),
        "max.message.bytes": (AlterConfigOp.SET, "100000"),
    })])
    conf = modified_configs(admin, topic, {"cleanup.policy": "delete,compact", "retention.ms": None,
                                           "max.message.bytes": "100000"})
    assert conf["cleanup.policy"]["value"] == "delete,compact"
    assert "retention.ms" not in conf  # back to its default: not a modified config any more
    assert conf["max.message.bytes"]["value"] == "100000"

    # the newest timestamp on the sixth record, which max-timestamp finds
    now = int(time.time() * 1000)
    produce(bs, topic, 0, 10, [now + (100 if i == 5 else i) for i in range(10)])
    tp = TopicPartition(topic, 0)
    offsets = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST})
    assert offsets[tp].offset == 0
    assert admin.list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset == 10
    assert admin.list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp].offset == 5
    admin.delete_records({tp: 4})
    assert admin.list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp].offset == 4
    admin.delete_topics([topic])
    admin.close()
