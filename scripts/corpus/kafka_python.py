"""kafka-python's part of the corpus workload (scripts/capture_corpus.sh): one
small run of each kind of request it sends, against BOOTSTRAP.

    /usr/bin/python3 scripts/corpus/kafka_python.py admin|produce|consume BOOTSTRAP

admin: create, describe, alter, grow and delete topics; produce: records with
each codec; consume: a group member that reads them, heartbeats, commits,
looks up offsets and leaves, then the group listed, described and its
offsets read.
"""

import math
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

TOPIC = "corpus-kafka-python"
GROUP = "corpus-kafka-python-group"
CODECS = ("gzip", "snappy", "lz4", "zstd")
RECORDS = 2
TIMEOUT_MS = 30000
HEARTBEAT_MS = 100


def heartbeat_answered(consumer):
    """True once a heartbeat was answered (the slowest answer's time is -inf
    before)."""
    return not math.isinf(consumer.metrics()["consumer-coordinator-metrics"]["heartbeat-response-time-max"])


def admin(bootstrap):
    a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="corpus-kafka-python-admin",
                         request_timeout_ms=TIMEOUT_MS)
    a.create_topics([NewTopic(TOPIC, 2, 1), NewTopic(TOPIC + "-gone", 1, 1)], timeout_ms=TIMEOUT_MS)
    a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "86400000"})])
    a.create_partitions({TOPIC: NewPartitions(3)}, timeout_ms=TIMEOUT_MS)
    a.delete_topics([TOPIC + "-gone"], timeout_ms=TIMEOUT_MS)
    a.close()


def produce(bootstrap):
    for codec in (None,) + CODECS:
        p = KafkaProducer(bootstrap_servers=bootstrap, client_id="corpus-kafka-python-producer",
                          compression_type=codec, linger_ms=50)
        for i in range(RECORDS):
            p.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"%d" % i)], partition=0)
        p.flush(TIMEOUT_MS / 1000)
        p.close()


def consume(bootstrap):
    want = RECORDS * (1 + len(CODECS))
    c = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, client_id="corpus-kafka-python-consumer",
                      group_id=GROUP, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    got = 0
    for _ in c:
        got += 1
        if got == want:
            break
    if got < want:
        raise SystemExit(f"consume: {got} of {want} records")
    # stays in the group until a heartbeat was answered
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not heartbeat_answered(c):
        if time.monotonic() > deadline:
            raise SystemExit("consume: no heartbeat answered")
        c.poll(HEARTBEAT_MS)
    c.commit()
    tp = TopicPartition(TOPIC, 0)
    c.offsets_for_times({tp: 0})
    c.end_offsets([tp])
    c.close()
    a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="corpus-kafka-python-admin")
    a.list_consumer_groups()
    a.describe_consumer_groups([GROUP])
    a.list_consumer_group_offsets(GROUP)
    a.close()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("admin", "produce", "consume"):
        raise SystemExit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
