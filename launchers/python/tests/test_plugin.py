"""The pytest launcher with the usual Python client (confluent-kafka): start
one broker and a cluster, produce and consume, inject faults through the
control API and see the client's error and retry, and the broker stopped
when a test fails."""
import os
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkaiq_pytest import KafkaIQError


def topic_name():
    return "launcher-" + uuid.uuid4().hex[:8]


def create(bootstrap, topic, partitions=1, rf=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=10).values():
        f.result(timeout=20)


def produce(bootstrap, topic, values, **conf):
    results = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **conf})
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: results.append(err))
    assert p.flush(30) == 0
    return results


def consume(bootstrap, topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return got


def test_one_broker_serves_a_real_client(kafkaiq):
    assert kafkaiq.bootstrap.startswith("127.0.0.1:")
    topic = topic_name()
    create(kafkaiq.bootstrap, topic)
    assert produce(kafkaiq.bootstrap, topic, [b"a", b"b", b"c"]) == [None, None, None]
    assert consume(kafkaiq.bootstrap, topic, 3) == [b"a", b"b", b"c"]


def test_a_retriable_fault_is_retried_and_the_record_lands_once(kafkaiq):
    topic = topic_name()
    create(kafkaiq.bootstrap, topic)
    fid = kafkaiq.fault(api="Produce", topic=topic, error="NOT_LEADER_OR_FOLLOWER", times=1)
    assert produce(kafkaiq.bootstrap, topic, [b"x"], **{"enable.idempotence": True}) == [None]
    rule = [f for f in kafkaiq.faults() if f["id"] == fid][0]
    assert (rule["fired"], rule["error"]) == (1, "NOT_LEADER_OR_FOLLOWER")
    assert rule["matched"] >= 2  # the refused request and the retry
    assert consume(kafkaiq.bootstrap, topic, 1) == [b"x"]
    kafkaiq.remove_fault(fid)


def test_a_fatal_fault_reaches_the_application(kafkaiq):
    topic = topic_name()
    create(kafkaiq.bootstrap, topic)
    fid = kafkaiq.fault(api="Produce", topic=topic, error="TOPIC_AUTHORIZATION_FAILED")
    errors = produce(kafkaiq.bootstrap, topic, [b"y"])
    assert errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert kafkaiq.remove_fault(fid) == [fid]
    assert produce(kafkaiq.bootstrap, topic, [b"z"]) == [None]


def test_the_control_api_explains_a_rule_it_refuses(kafkaiq):
    with pytest.raises(KafkaIQError, match="unknown error 'NOT_AN_ERROR'"):
        kafkaiq.fault(api="Produce", error="NOT_AN_ERROR")
    with pytest.raises(KafkaIQError, match="404 no fault rule 4242"):
        kafkaiq.remove_fault(4242)


def test_a_cluster_of_three_replicates_acks_all(kafkaiq_cluster):
    assert len(kafkaiq_cluster.brokers) == 3
    assert len(set(b["port"] for b in kafkaiq_cluster.brokers)) == 3
    topic = topic_name()
    create(kafkaiq_cluster.bootstrap, topic, partitions=3, rf=3)
    values = [b"r%d" % i for i in range(30)]
    assert produce(kafkaiq_cluster.bootstrap, topic, values, acks="all") == [None] * 30
    assert sorted(consume(kafkaiq_cluster.bootstrap, topic, 30)) == sorted(values)
    replicas = kafkaiq_cluster.state(broker=1)["topics"][topic]["partitions"]
    assert len(replicas) == 3


def test_a_controller_quorum_apart_from_the_brokers(kafkaiq_factory):
    k = kafkaiq_factory(brokers=2, controllers=3)
    assert [b["id"] for b in k.brokers] == [0, 1]
    assert [c["id"] for c in k.controllers] == [2, 3, 4]
    assert all("port" not in c for c in k.controllers)
    topic = topic_name()
    create(k.bootstrap, topic, partitions=2, rf=2)
    assert produce(k.bootstrap, topic, [b"before"], acks="all") == [None]
    for c in k.controllers[:1]:
        assert k.kill(c["id"])["queued"] is True
        k.wait(broker=c["id"], state="stopped")
    create(k.bootstrap, topic + "-after", partitions=1, rf=2)
    assert produce(k.bootstrap, topic, [b"after"], acks="all") == [None]
    assert sorted(consume(k.bootstrap, topic, 2)) == [b"after", b"before"]


def test_a_bad_start_says_why(kafkaiq_factory):
    with pytest.raises(KafkaIQError, match="num.partitions"):
        kafkaiq_factory(overrides={"num.partitions": "many"})


def test_the_broker_is_stopped_when_a_test_fails(pytester):
    pidfile = pytester.path / "pid"
    pytester.makepyfile(test_inner="""
        def test_fails(kafkaiq_factory):
            k = kafkaiq_factory()
            open(%r, "w").write(str(k.pid))
            assert False, "the test fails"
    """ % str(pidfile))
    result = pytester.runpytest_subprocess("-p", "kafkaiq_pytest.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_killed_broker_comes_back_and_the_data_with_it(kafkaiq_factory):
    k = kafkaiq_factory(brokers=3, overrides={"min.insync.replicas": 2})
    topic = topic_name()
    create(k.bootstrap, topic, partitions=1, rf=3)
    k.wait(topic=topic, partition=0, isr=3)
    # broker 0 runs the one controller: the leader killed is another
    assert k.move_leader(topic, 0, 1) == {"topic": topic, "partition": 0, "leader": 1}
    k.wait(topic=topic, partition=0, leader=1)
    assert produce(k.bootstrap, topic, [b"before"], acks="all") == [None]
    assert k.kill(1)["queued"] is True
    k.wait(broker=1, state="stopped")
    assert produce(k.bootstrap, topic, [b"during"], acks="all") == [None]
    k.restart(1)
    k.wait(broker=1, state="ready")
    k.wait(topic=topic, partition=0, isr=3, timeout_ms=30000)
    k.wait(topic=topic, partition=0, high_watermark=2)
    assert k.elect_preferred() == 1
    k.wait(topic=topic, partition=0, leader=1)
    assert sorted(consume(k.bootstrap, topic, 2)) == [b"before", b"during"]


def test_leadership_moves_only_to_a_replica_in_sync(kafkaiq_factory):
    k = kafkaiq_factory(brokers=3)
    topic = topic_name()
    create(k.bootstrap, topic, partitions=1, rf=2)
    k.wait(topic=topic, partition=0, isr=2)
    outsider = ({0, 1, 2} - set(_replicas(k, topic))).pop()
    with pytest.raises(KafkaIQError, match="409 broker %d holds no replica of %s-0" % (outsider, topic)):
        k.move_leader(topic, 0, outsider)
    with pytest.raises(KafkaIQError, match="404 no partition nothing-0"):
        k.move_leader("nothing", 0, 1)
    with pytest.raises(KafkaIQError, match="400 leaders take"):
        k._call("POST", "/api/leaders", {"topic": topic})


def _replicas(k, topic):
    md = AdminClient({"bootstrap.servers": k.bootstrap}).list_topics(topic, timeout=10)
    return md.topics[topic].partitions[0].replicas


def test_a_wait_that_cannot_be_met_says_what_it_saw(kafkaiq):
    with pytest.raises(KafkaIQError, match="408 timed out after .* ms waiting for high watermark 5 of nothing-0"):
        kafkaiq.wait(topic="nothing", partition=0, high_watermark=5, timeout_ms=100)
    with pytest.raises(KafkaIQError, match="409 this broker runs alone"):
        kafkaiq.kill(0)


def test_a_cut_follower_leaves_the_isr_and_rejoins_when_healed(kafkaiq_factory):
    k = kafkaiq_factory(brokers=3, overrides={"replica.lag.time.max.ms": 1000})
    topic = topic_name()
    create(k.bootstrap, topic, partitions=1, rf=3)
    k.wait(topic=topic, partition=0, isr=3)
    leader = k.wait(topic=topic, partition=0, leader="any")["value"]
    follower = (leader + 1) % 3
    k.link(leader, follower, "cut")
    assert produce(k.bootstrap, topic, [b"a"], acks="all") == [None]
    assert {"from": leader, "to": follower} in k._call("GET", "/api/brokers")["links"]
    k.wait(topic=topic, partition=0, isr=2, timeout_ms=20000)
    k.link(leader, follower, "heal")
    k.wait(topic=topic, partition=0, isr=3, timeout_ms=20000)


def test_a_day_ahead_retention_deletes_what_it_kept(kafkaiq_factory):
    k = kafkaiq_factory(overrides={"kafkaiq.clock": "manual", "log.retention.hours": 1})
    topic = topic_name()
    create(k.bootstrap, topic)
    assert produce(k.bootstrap, topic, [b"old-1", b"old-2"]) == [None, None]
    k.wait(topic=topic, partition=0, high_watermark=2)
    with pytest.raises(KafkaIQError, match="408"):
        k.wait(topic=topic, partition=0, log_start_offset=2, timeout_ms=300)
    clock = k.advance_clock(24 * 3600 * 1000)
    assert clock["ahead_ms"] >= 24 * 3600 * 1000
    k.wait(topic=topic, partition=0, log_start_offset=2)


def test_the_system_clock_does_not_move(kafkaiq):
    with pytest.raises(KafkaIQError, match="409 the clock is the system's"):
        kafkaiq.advance_clock(1000)
