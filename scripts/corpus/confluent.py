"""confluent-kafka's part of the corpus workload (scripts/capture_corpus.sh):
one small run of each kind of request it sends, against BOOTSTRAP.

    /usr/bin/python3 scripts/corpus/confluent.py admin|produce|transact|consume BOOTSTRAP

admin: topics created, described, altered, grown, listed and deleted, groups
listed; produce: a plain and an idempotent lz4 producer; transact: a
transactional producer that commits (with a group's offsets) and aborts;
consume: a read-committed group member that reads the produced records,
commits, looks up offsets and leaves.
"""

import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

TOPIC = "corpus-confluent"
GROUP = "corpus-confluent-group"
TIMEOUT = 30.0
RECORDS = 5


def wait_all(futures):
    for f in futures.values():
        f.result(TIMEOUT)


def admin(bootstrap):
    a = AdminClient({"bootstrap.servers": bootstrap, "client.id": "corpus-confluent-admin"})
    wait_all(a.create_topics([NewTopic(TOPIC, 2, 1), NewTopic(TOPIC + "-gone", 1, 1)],
                             operation_timeout=TIMEOUT))
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    wait_all(a.describe_configs([res]))
    res.set_config("retention.ms", "86400000")
    wait_all(a.alter_configs([res]))
    wait_all(a.create_partitions([NewPartitions(TOPIC, 3)], operation_timeout=TIMEOUT))
    a.list_topics(timeout=TIMEOUT)
    a.list_groups(timeout=TIMEOUT)
    wait_all(a.delete_topics([TOPIC + "-gone"], operation_timeout=TIMEOUT))


def produce_with(conf):
    p = Producer(dict(conf, **{"linger.ms": 50}))
    for i in range(RECORDS):
        p.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"%d" % i)], partition=0)
    if p.flush(TIMEOUT):
        raise SystemExit("produce: records left unsent")


def produce(bootstrap):
    produce_with({"bootstrap.servers": bootstrap, "client.id": "corpus-confluent-producer"})
    produce_with({"bootstrap.servers": bootstrap, "client.id": "corpus-confluent-idempotent",
                  "enable.idempotence": True, "compression.type": "lz4"})


def transact(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "corpus-confluent-txn",
                  "transactional.id": "corpus-confluent-txn"})
    p.init_transactions(TIMEOUT)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP + "-txn"})
    for commit in (True, False):
        p.begin_transaction()
        p.produce(TOPIC, key=b"t", value=b"commit" if commit else b"abort", partition=1)
        if commit:
            p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 1)], c.consumer_group_metadata(), TIMEOUT)
            p.commit_transaction(TIMEOUT)
        else:
            p.abort_transaction(TIMEOUT)
    c.close()


def consume(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "corpus-confluent-consumer",
                  "group.id": GROUP, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.subscribe([TOPIC])
    got = 0
    while got < 2 * RECORDS:
        m = c.poll(TIMEOUT)
        if m is None:
            raise SystemExit(f"consume: {got} of {2 * RECORDS} records")
        if m.error():
            raise KafkaException(m.error())
        got += 1
    c.commit(asynchronous=False)
    parts = [TopicPartition(TOPIC, p) for p in range(3)]
    c.committed(parts, TIMEOUT)
    c.offsets_for_times([TopicPartition(TOPIC, 0, 0)], TIMEOUT)
    c.get_watermark_offsets(TopicPartition(TOPIC, 0), TIMEOUT)
    c.close()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("admin", "produce", "transact", "consume"):
        raise SystemExit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
