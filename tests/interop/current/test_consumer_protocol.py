"""The new consumer protocol (KIP-848, `group.protocol=consumer`) with the
pinned confluent-kafka-python (build/venv; its librdkafka speaks
ConsumerGroupHeartbeat): three members share a six-partition topic while
members join and leave; every record is consumed once, by one member at a
time (a partition is assigned to a member only after its previous owner
revoked it), and the stable assignment is balanced. The group's epoch and
its committed offsets survive a broker restart; the admin client describes
and lists the group as a consumer one. A mixed group: classic librdkafka
members stay when a consumer-protocol member joins (the group upgraded,
the assignor serving them all) and leaves (a classic group again).
"""

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker

PARTITIONS = 6
WAIT = 60


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    """A broker whose consumer protocol members heartbeat every 200 ms."""
    b = Broker(tmp_path_factory.mktemp("consumer-protocol"),
               ["group.consumer.heartbeat.interval.ms=200", "group.consumer.session.timeout.ms=10000"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def create(bs, topic):
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(WAIT)
    return a


def produce(bs, topic, start, n):
    p = Producer({"bootstrap.servers": bs})
    for i in range(start, start + n):
        p.produce(topic, b"%d" % i, partition=i % PARTITIONS)
    assert p.flush(WAIT) == 0


class Member:
    """A consumer that records what it is given and gives up, in a log shared
    by all members (callbacks run inside poll, and every member is polled
    from this one thread, so the log is in the order things happened)."""

    def __init__(self, bs, group, name, owners, seen, protocol="consumer"):
        self.name, self.owners, self.seen = name, owners, seen
        conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol,
                "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": name}
        if protocol == "classic":
            conf["heartbeat.interval.ms"] = 200  # it learns of a rebalance from its heartbeat
        self.c = Consumer(conf)
        self.c.subscribe([TOPIC[0]], on_assign=self.assigned, on_revoke=self.revoked, on_lost=self.revoked)

    def assigned(self, c, parts):
        for tp in parts:
            assert self.owners.get(tp.partition) in (None, self.name), \
                f"partition {tp.partition} given to {self.name} while {self.owners[tp.partition]} owns it"
            self.owners[tp.partition] = self.name

    def revoked(self, c, parts):
        for tp in parts:
            if self.owners.get(tp.partition) == self.name:
                del self.owners[tp.partition]

    def poll(self):
        m = self.c.poll(0.05)
        if m is None or m.error():
            return
        assert self.owners.get(m.partition()) == self.name, f"{self.name} got a record of a partition it does not own"
        self.seen.append(int(m.value()))
        # committed before the next poll, so before any revocation: the next owner starts here
        self.c.commit(message=m, asynchronous=False)

    def owned(self):
        return sorted(p for p, o in self.owners.items() if o == self.name)

    def close(self):
        self.c.close()


TOPIC = ["kip848"]


def pump(members, until, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for m in members:
            m.poll()


def test_members_join_and_leave_each_record_once(fast):
    bs = fast.bootstrap
    a = create(bs, TOPIC[0])
    owners, seen = {}, []
    group = "kip848-group"
    produce(bs, TOPIC[0], 0, 300)
    m1 = Member(bs, group, "m1", owners, seen)
    members = [m1]
    pump(members, lambda: len(m1.owned()) == PARTITIONS)
    pump(members, lambda: len(seen) >= 60)
    m2 = Member(bs, group, "m2", owners, seen)
    members.append(m2)
    m3 = Member(bs, group, "m3", owners, seen)
    members.append(m3)
    pump(members, lambda: all(len(m.owned()) == 2 for m in members))
    produce(bs, TOPIC[0], 300, 300)
    pump(members, lambda: len(seen) >= 450)
    # one leaves: its partitions go to the others
    m2.close()
    members.remove(m2)
    pump(members, lambda: all(len(m.owned()) == 3 for m in members))
    pump(members, lambda: len(seen) >= 600)
    assert sorted(seen) == list(range(600)), "a record was consumed twice or not at all"

    d = a.describe_consumer_groups([group])[group].result(WAIT)
    assert d.type == ConsumerGroupType.CONSUMER
    assert sorted(len(m.assignment.topic_partitions) for m in d.members) == [3, 3]
    listed = a.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(WAIT)
    assert group in [g.group_id for g in listed.valid]
    classic = a.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(WAIT)
    assert group not in [g.group_id for g in classic.valid]
    for m in members:
        m.close()


def test_epoch_and_offsets_survive_restart(fast):
    bs = fast.bootstrap
    topic, group = "kip848-restart", "kip848-restart"
    TOPIC[0] = topic
    a = create(bs, topic)
    produce(bs, topic, 0, 60)
    owners, seen = {}, []
    m = Member(bs, group, "r1", owners, seen)
    pump([m], lambda: len(seen) >= 60)
    m.close()
    fast.restart()
    a = AdminClient({"bootstrap.servers": bs})
    # reloaded from __consumer_offsets: still a consumer protocol group, now empty
    d = a.describe_consumer_groups([group])[group].result(WAIT)
    assert d.type == ConsumerGroupType.CONSUMER and not d.members
    produce(bs, topic, 60, 60)
    owners2, seen2 = {}, []
    m = Member(bs, group, "r2", owners2, seen2)
    pump([m], lambda: len(seen2) >= 60)
    assert sorted(seen2) == list(range(60, 120)), "committed offsets were lost in the restart"
    m.close()


def test_mixed_group_classic_and_consumer_members(fast):
    bs = fast.bootstrap
    topic, group = "kip848-mixed", "kip848-mixed"
    TOPIC[0] = topic
    a = create(bs, topic)
    owners, seen = {}, []
    produce(bs, topic, 0, 300)
    classic = [Member(bs, group, n, owners, seen, "classic") for n in ("c1", "c2")]
    members = list(classic)
    pump(members, lambda: all(len(m.owned()) == 3 for m in members))
    assert a.describe_consumer_groups([group])[group].result(WAIT).type == ConsumerGroupType.CLASSIC
    pump(members, lambda: len(seen) >= 300)

    # a consumer-protocol member joins: one consumer group, two partitions each
    m1 = Member(bs, group, "m1", owners, seen)
    members.append(m1)
    produce(bs, topic, 300, 300)
    pump(members, lambda: all(len(m.owned()) == 2 for m in members))
    d = a.describe_consumer_groups([group])[group].result(WAIT)
    assert d.type == ConsumerGroupType.CONSUMER
    assert sorted(len(m.assignment.topic_partitions) for m in d.members) == [2, 2, 2]
    pump(members, lambda: len(seen) >= 600)

    # it leaves: only the classic members stay, a classic group again
    m1.close()
    members.remove(m1)
    produce(bs, topic, 600, 300)
    pump(members, lambda: all(len(m.owned()) == 3 for m in members))
    pump(members, lambda: len(seen) >= 900)
    assert sorted(seen) == list(range(900)), "a record was consumed twice or not at all"
    assert a.describe_consumer_groups([group])[group].result(WAIT).type == ConsumerGroupType.CLASSIC
    for m in members:
        m.close()
