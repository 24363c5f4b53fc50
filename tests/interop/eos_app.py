"""A consume-transform-produce application, as exactly-once pipelines are
written with confluent-kafka: consume a few records from the input topic,
write one output per input in a transaction together with the group's
consumed offsets (send_offsets_to_transaction), commit, repeat. It runs
until it has consumed every input partition to its end, or is killed; the
test kills it at random moments and starts it again.

usage: eos_app.py BOOTSTRAP INPUT OUTPUT GROUP TXN_ID
"""

import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, inp, out, group, txn_id = sys.argv[1:6]

consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": group,
    # a restarted instance takes the killed one's place at once
    "group.instance.id": "eos-app",
    "session.timeout.ms": 6000,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "isolation.level": "read_committed",
})
producer = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": txn_id,
    "transaction.timeout.ms": 10000,
    "linger.ms": 5,
})
producer.init_transactions(60)
consumer.subscribe([inp])

def finished():
    """Every input partition consumed up to its end."""
    assigned = consumer.assignment()
    if len(assigned) < partitions:
        return False
    # a partition this instance has read nothing of has no position yet:
    # its group's committed offset says where it is
    committed = {tp.partition: tp.offset for tp in consumer.committed(list(assigned), timeout=10)}
    for tp in consumer.position(list(assigned)):
        at = tp.offset if tp.offset >= 0 else committed.get(tp.partition, -1)
        hi = consumer.get_watermark_offsets(TopicPartition(inp, tp.partition), timeout=10)[1]
        if at < hi:
            return False
    return True


partitions = len(consumer.list_topics(inp, timeout=10).topics[inp].partitions)
while True:
    msgs = consumer.consume(num_messages=10, timeout=1.0)
    msgs = [m for m in msgs if not m.error()]
    if not msgs:
        if finished():
            break
        continue
    producer.begin_transaction()
    consumed = {}
    for m in msgs:
        producer.produce(out, key=m.key(), value=b"out-" + m.value(), partition=m.partition())
        consumed[m.partition()] = m.offset() + 1
    offsets = [TopicPartition(inp, p, o) for p, o in sorted(consumed.items())]
    producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
    try:
        producer.commit_transaction(30)
    except KafkaException as e:
        print(f"eos_app: commit failed: {e}", file=sys.stderr, flush=True)
        sys.exit(3)
    print(f"eos_app: committed {offsets}", flush=True)
consumer.close()
