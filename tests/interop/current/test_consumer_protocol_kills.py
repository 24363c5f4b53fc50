"""A consumer protocol (KIP-848) group of three consumer processes (the
pinned confluent-kafka-python, consumer_member.py) through SIGKILLs of
members and a new member joining: every record is read, and a record is
read twice only where at-least-once allows it (a killed member's last
record of a partition, read but maybe not committed, or a commit a
rebalance refused). The whole history (each acknowledged send with its
offset, each record read, each assignment change) is also checked by
`kafkaiq.check` (scripts/soak_check.lua): no lost write, no read skipping
or going back over an offset within an assignment, nothing unseen.
"""

import collections
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import BROKER_BIN, ROOT, Broker

PARTITIONS = 6
PER_ROUND = 600
WAIT = 60
MEMBER = pathlib.Path(__file__).with_name("consumer_member.py")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """Quick heartbeats; a killed member's session ends after 6 s."""
    b = Broker(tmp_path_factory.mktemp("consumer-protocol-kills"),
               ["group.consumer.heartbeat.interval.ms=200", "group.consumer.session.timeout.ms=6000"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


def produce(bs, topic, start, n, acks):
    """Sends values start..start+n-1; acks: value -> (partition, offset)."""
    p = Producer({"bootstrap.servers": bs})

    def acked(err, m):
        assert err is None, err
        acks[int(m.value())] = (m.partition(), m.offset())

    for i in range(start, start + n):
        p.produce(topic, b"%d" % i, partition=i % PARTITIONS, on_delivery=acked)
    assert p.flush(WAIT) == 0


def wait_for(what, cond, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


class Members:
    def __init__(self, bs, group, topic, logs):
        self.bs, self.group, self.topic, self.logs = bs, group, topic, logs
        self.procs = {}
        self.killed = []

    def start(self, name):
        self.procs[name] = subprocess.Popen([sys.executable, str(MEMBER), self.bs, self.group, self.topic, name,
                                             str(self.logs / name)])

    def kill(self, name):
        p = self.procs.pop(name)
        p.send_signal(signal.SIGKILL)
        p.wait(WAIT)
        self.killed.append(name)

    def stop_all(self):
        """SIGTERM to each member left; how each exited (None: killed when it did not)."""
        for p in self.procs.values():
            p.send_signal(signal.SIGTERM)
        codes = {}
        for name, p in self.procs.items():
            try:
                codes[name] = p.wait(WAIT)
            except subprocess.TimeoutExpired:
                codes[name] = None
                p.kill()
                p.wait()
        return codes

    def names(self):
        return list(self.procs) + self.killed

    def lines(self, name):
        path = self.logs / name
        text = path.read_text() if path.exists() else ""
        # a SIGKILL may cut the last line short
        return [line.split() for line in text.split("\n")[:-1]]

    def read(self):
        """Each value read, with who read it, in each member's order."""
        out = collections.defaultdict(list)
        for name in list(self.procs) + self.killed:
            for f in self.lines(name):
                if f[0] not in ("uncommitted", "reset"):
                    out[int(f[0])].append(name)
        return out


def described(admin, group):
    """Each member's partitions; none before the group is a consumer group."""
    d = admin.describe_consumer_groups([group])[group].result(WAIT)
    if d.type != ConsumerGroupType.CONSUMER:
        return {}
    return {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members}


def test_members_killed_every_record_read(broker, tmp_path):
    bs, topic, group = broker.bootstrap, "kip848-kills", "kip848-kills"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(WAIT)
    members = Members(bs, group, topic, tmp_path)
    acks = {}
    try:
        for name in ("m1", "m2", "m3"):
            members.start(name)
        wait_for("two partitions each for three members",
                 lambda: sorted(map(len, described(admin, group).values())) == [2, 2, 2])
        produce(bs, topic, 0, PER_ROUND, acks)
        wait_for("a third of the records read", lambda: len(members.read()) >= PER_ROUND // 3)

        # m1 dies mid-stream: once its session ends, m2 and m3 go on from its commits
        members.kill("m1")
        wait_for("the first round read", lambda: len(members.read()) >= PER_ROUND)
        wait_for("m1's session ended", lambda: len(described(admin, group)) == 2)
        produce(bs, topic, PER_ROUND, PER_ROUND, acks)

        # m4 joins, then m2 dies while the second round flows
        members.start("m4")
        wait_for("two partitions each for m2, m3 and m4",
                 lambda: sorted(map(len, described(admin, group).values())) == [2, 2, 2])
        wait_for("some of the second round read", lambda: len(members.read()) >= PER_ROUND + PER_ROUND // 3)
        members.kill("m2")
        produce(bs, topic, 2 * PER_ROUND, PER_ROUND, acks)
        wait_for("every record read", lambda: len(members.read()) >= 3 * PER_ROUND)
        wait_for("m3 and m4 own three partitions each",
                 lambda: sorted(map(len, described(admin, group).values())) == [3, 3])
    finally:
        codes = members.stop_all()
    assert codes == {"m3": 0, "m4": 0}, "survivors closed cleanly"

    read = members.read()
    assert sorted(read) == list(range(3 * PER_ROUND)), "a record was not read"
    # what at-least-once lets be read again: a killed member's last record of
    # each partition, and records whose commit was refused
    allowed = set()
    for name in members.killed:
        last = {}
        for f in members.lines(name):
            if f[0] not in ("uncommitted", "reset"):
                last[int(f[1])] = int(f[0])
        allowed |= set(last.values())
    for name in ["m1", "m2", "m3", "m4"]:
        allowed |= {int(f[1]) for f in members.lines(name) if f[0] == "uncommitted"}
    twice = {v: by for v, by in read.items() if len(by) > 1}
    assert set(twice) <= allowed, f"read twice beyond at-least-once: {dict(sorted(twice.items())[:20])}"
    # the group's commits: every record of every partition
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(WAIT)
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == \
        [(p, 3 * PER_ROUND // PARTITIONS) for p in range(PARTITIONS)]

    # the same history through kafkaiq.check
    history = tmp_path / "history"
    with open(history, "w") as h:
        for v, (p, off) in sorted(acks.items()):
            h.write(f"send {v} {topic} {p}\nack {v} {topic} {p} {off}\n")
        for name in members.names():
            for f in members.lines(name):
                if f[0] == "reset":
                    h.write(f"reset {name}\n")
                elif f[0] != "uncommitted":
                    h.write(f"poll {name} {topic} {f[1]} {f[2]} {f[0]}\n")
    checked = subprocess.run([str(BROKER_BIN), "run", str(ROOT / "scripts" / "soak_check.lua"), str(history)],
                             capture_output=True, text=True, timeout=WAIT)
    assert checked.returncode == 0, checked.stdout + checked.stderr
