"""Topic creation and deletion through both admin clients."""

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic as CNewTopic

import kiq_clients as kc


def confluent_create(bootstrap, topic, partitions, replication=1):
    a = kc.admin(bootstrap)  # the futures fail if their client is collected first
    fut = a.create_topics([CNewTopic(topic, partitions, replication)],
                          operation_timeout=10, request_timeout=15)[topic]
    return fut.result(timeout=20)


def confluent_delete(bootstrap, topic):
    a = kc.admin(bootstrap)
    fut = a.delete_topics([topic], operation_timeout=10, request_timeout=15)[topic]
    return fut.result(timeout=20)


def kp_admin(bootstrap):
    from kafka import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)


def kp_create(bootstrap, topic, partitions, replication=1):
    from kafka.admin import NewTopic
    a = kp_admin(bootstrap)
    try:
        return a.create_topics([NewTopic(topic, partitions, replication)], timeout_ms=10000)
    finally:
        a.close()


def check_partitions(bootstrap, topic, n):
    md = kc.admin(bootstrap).list_topics(topic=topic, timeout=10)
    t = md.topics[topic]
    assert t.error is None, t.error
    assert sorted(t.partitions) == list(range(n))
    for p in t.partitions.values():
        assert p.error is None, p.error
        assert p.leader in md.brokers, (p.leader, md.brokers)
        assert p.replicas == [p.leader] and p.isrs == [p.leader], (p.replicas, p.isrs)


def test_confluent_create_three_partitions(broker):
    confluent_create(broker.bootstrap, "tp-confluent", 3)
    kc.wait_topic(broker.bootstrap, "tp-confluent", 3)
    check_partitions(broker.bootstrap, "tp-confluent", 3)


def test_kafka_python_create_three_partitions(broker):
    kp_create(broker.bootstrap, "tp-kafka-python", 3)
    kc.wait_topic(broker.bootstrap, "tp-kafka-python", 3)
    check_partitions(broker.bootstrap, "tp-kafka-python", 3)
    from kafka import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        assert sorted(c.partitions_for_topic("tp-kafka-python")) == [0, 1, 2]
    finally:
        c.close()


def test_confluent_duplicate_create(broker):
    confluent_create(broker.bootstrap, "tp-dup-confluent", 3)
    kc.wait_topic(broker.bootstrap, "tp-dup-confluent", 3)
    with pytest.raises(KafkaException) as ei:
        confluent_create(broker.bootstrap, "tp-dup-confluent", 3)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, ei.value
    check_partitions(broker.bootstrap, "tp-dup-confluent", 3)


def test_kafka_python_duplicate_create(broker):
    from kafka.errors import TopicAlreadyExistsError
    kp_create(broker.bootstrap, "tp-dup-kafka-python", 3)
    kc.wait_topic(broker.bootstrap, "tp-dup-kafka-python", 3)
    with pytest.raises(TopicAlreadyExistsError):
        kp_create(broker.bootstrap, "tp-dup-kafka-python", 3)


def test_confluent_delete(broker):
    confluent_create(broker.bootstrap, "tp-del-confluent", 3)
    kc.wait_topic(broker.bootstrap, "tp-del-confluent", 3)
    assert confluent_delete(broker.bootstrap, "tp-del-confluent") is None
    kc.wait_topic(broker.bootstrap, "tp-del-confluent", present=False)
    from kafka import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        assert "tp-del-confluent" not in c.topics()
    finally:
        c.close()


def test_kafka_python_delete(broker):
    kp_create(broker.bootstrap, "tp-del-kafka-python", 3)
    kc.wait_topic(broker.bootstrap, "tp-del-kafka-python", 3)
    a = kp_admin(broker.bootstrap)
    try:
        resp = a.delete_topics(["tp-del-kafka-python"], timeout_ms=10000)
        assert [(t, e) for t, e in resp.topic_error_codes] == [("tp-del-kafka-python", 0)]
        kc.wait_topic(broker.bootstrap, "tp-del-kafka-python", present=False)
        assert "tp-del-kafka-python" not in a.list_topics()
    finally:
        a.close()


def test_delete_unknown_topic(broker):
    with pytest.raises(KafkaException) as ei:
        confluent_delete(broker.bootstrap, "tp-never-created")
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART, ei.value


def test_recreate_after_delete(broker):
    confluent_create(broker.bootstrap, "tp-recreate", 3)
    kc.wait_topic(broker.bootstrap, "tp-recreate", 3)
    msgs = kc.make_messages(10, "old")
    kc.produce_confluent(broker.bootstrap, "tp-recreate", msgs)
    confluent_delete(broker.bootstrap, "tp-recreate")
    kc.wait_topic(broker.bootstrap, "tp-recreate", present=False)
    confluent_create(broker.bootstrap, "tp-recreate", 2)
    kc.wait_topic(broker.bootstrap, "tp-recreate", 2)
    # The new topic starts empty: nothing of the deleted one survives.
    marks = kc.watermarks_confluent(broker.bootstrap, "tp-recreate", [0, 1])
    assert marks == {0: (0, 0), 1: (0, 0)}, marks


@pytest.mark.parametrize("name,partitions,replication,code", [
    ("tp-zero-partitions", 0, 1, 37),         # INVALID_PARTITIONS
    ("tp-too-many-replicas", 1, 3, 38),       # INVALID_REPLICATION_FACTOR
    ("bad/topic name", 1, 1, 17),             # INVALID_TOPIC_EXCEPTION
])
def test_create_invalid(broker, name, partitions, replication, code):
    """kafka-python does no local checks, so the broker's own error code shows."""
    from kafka.errors import for_code
    with pytest.raises(for_code(code)):
        kp_create(broker.bootstrap, name, partitions, replication)
    assert kc.topic_partitions(broker.bootstrap, name) is None


def test_topics_survive_restart(broker):
    confluent_create(broker.bootstrap, "tp-durable", 3)
    kc.wait_topic(broker.bootstrap, "tp-durable", 3)
    confluent_create(broker.bootstrap, "tp-durable-deleted", 1)
    confluent_delete(broker.bootstrap, "tp-durable-deleted")
    kc.wait_topic(broker.bootstrap, "tp-durable-deleted", present=False)
    broker.restart()
    check_partitions(broker.bootstrap, "tp-durable", 3)
    assert kc.topic_partitions(broker.bootstrap, "tp-durable-deleted") is None
