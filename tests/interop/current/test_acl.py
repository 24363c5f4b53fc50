"""Authorization with Kafka's StandardAuthorizer semantics on a combined node
over SASL_PLAINTEXT (PLAIN users admin, alice, bob; admin a super user):
ACLs created, described and deleted with the newest confluent-kafka's admin
client as kafka-acls.sh would; alice allowed what her ACLs say, bob refused
with Kafka's errors (topic, group, cluster); the bindings kept across a
restart (AccessControlEntryRecords in the metadata log); and the
transaction-abort attack: WriteTxnMarkers from a principal without
ClusterAction refused with CLUSTER_AUTHORIZATION_FAILED, the victim's
transaction then committing and its records read; partial topic
authorization (a KIP-848 consumer of a topic it may not describe, a
transaction's offsets of a topic it may not read refused while the
others commit); Apache Kafka's kafka-acls adding and listing bindings."""
import pathlib
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourcePatternType,
                                   ResourceType)

from conftest import Broker, free_port
from kiq_wire import Conn, Reader, compact_string, request_header, frame, string, uvarint

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required " +
        " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
CLUSTER_AUTHORIZATION_FAILED = 31


class AclNode(Broker):
    """One node that is broker and the quorum's only controller, its client
    listener SASL_PLAINTEXT, StandardAuthorizer with admin as super user."""

    def __init__(self, workdir):
        self.control = free_port()
        super().__init__(workdir, [
            "control.plane.listener.name=CONTROLLER", "sasl.enabled.mechanisms=PLAIN",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # the control plane is PLAINTEXT: the node reaching its own controller
            # there is ANONYMOUS, which needs ClusterAction as in Kafka
            "super.users=User:admin;User:ANONYMOUS"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners=SASL_PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.control}"
        return cmd + ["--override", f"controller.quorum.voters=0@{self.host}:{self.control}"]


def conf(b, user, **more):
    c = {"bootstrap.servers": b.bootstrap, "security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
         "sasl.username": user, "sasl.password": USERS[user]}
    c.update(more)
    return c


@pytest.fixture
def node(tmp_path):
    b = AclNode(tmp_path / uuid.uuid4().hex[:8])
    b.start()
    yield b
    b.stop()


def create_topics(admin, names):
    """Creates the topics once the node's broker is registered (the first
    answers right after a start may find no broker to place them on)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            for f in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
                f.result()
            return
        except KafkaException as e:
            if e.args[0].name() == "TOPIC_ALREADY_EXISTS":
                return
            if time.monotonic() > deadline:
                raise
            names = [n for n in names if n not in admin.list_topics(timeout=10).topics]
            time.sleep(0.2)


def binding(restype, name, principal, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL):
    return AclBinding(restype, name, pattern, principal, "*", op, perm)


def error_name(f):
    with pytest.raises(KafkaException) as e:
        f.result()
    return e.value.args[0].name()


def produce(b, user, topic, values, **more):
    """The delivery errors of values produced as user (None where delivered)."""
    p = Producer(conf(b, user, **more))
    errors = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err and err.name()))
    assert p.flush(30) == 0
    return errors


def consume(b, user, topic, group, want, isolation="read_uncommitted", timeout=30, **more):
    """Values read as user in group, or the first error's name."""
    c = Consumer(conf(b, user, **{"group.id": group, "auto.offset.reset": "earliest",
                                  "isolation.level": isolation, "enable.auto.commit": False, **more}))
    c.subscribe([topic])
    got = []
    try:
        deadline = time.monotonic() + timeout
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return m.error().name()
            got.append(m.value())
        if got:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return got


def test_acls_allow_alice_refuse_bob(node):
    admin = AdminClient(conf(node, "admin"))
    create_topics(admin, ["orders", "audit"])
    acls = [binding(ResourceType.TOPIC, "orders", "User:alice", AclOperation.WRITE),
            binding(ResourceType.TOPIC, "ord", "User:alice", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
            binding(ResourceType.GROUP, "alice-", "User:alice", AclOperation.READ,
                    pattern=ResourcePatternType.PREFIXED),
            binding(ResourceType.TOPIC, "*", "User:bob", AclOperation.DESCRIBE),
            binding(ResourceType.TOPIC, "orders", "User:bob", AclOperation.READ, AclPermissionType.DENY)]
    for f in admin.create_acls(acls).values():
        assert f.result() is None
    # the same again is no change
    for f in admin.create_acls(acls[:1]).values():
        assert f.result() is None
    described = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                     AclOperation.ANY, AclPermissionType.ANY)).result()
    assert sorted(map(str, described)) == sorted(map(str, acls))
    # MATCH: every binding that applies to the topic "orders"
    matched = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.MATCH, None,
                                                   None, AclOperation.ANY, AclPermissionType.ANY)).result()
    assert len(matched) == 4
    # an invalid binding is refused with INVALID_REQUEST
    bad = AclBinding(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL, "alice", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    assert error_name(admin.create_acls([bad])[bad]) == "INVALID_REQUEST"

    # alice writes and reads orders in her group
    assert produce(node, "alice", "orders", [b"a1", b"a2"]) == [None, None]
    assert consume(node, "alice", "orders", "alice-g", 2) == [b"a1", b"a2"]
    # not audit: no binding for her (the refusal comes at once; the long
    # message timeout only keeps a loaded machine from timing the record out first)
    assert produce(node, "alice", "audit", [b"x"], **{"message.timeout.ms": 60000}) == ["TOPIC_AUTHORIZATION_FAILED"]
    # nor a group outside her prefix
    assert consume(node, "alice", "orders", "other-g", 1, timeout=60) == "GROUP_AUTHORIZATION_FAILED"

    # bob sees the topics (DESCRIBE) but may not write, and READ is denied
    bob = AdminClient(conf(node, "bob"))
    assert {"orders", "audit"} <= set(bob.list_topics(timeout=10).topics)
    assert produce(node, "bob", "orders", [b"b"], **{"message.timeout.ms": 60000}) == ["TOPIC_AUTHORIZATION_FAILED"]
    # alice, who may not describe audit, does not see it listed
    assert "audit" not in AdminClient(conf(node, "alice")).list_topics(timeout=10).topics
    # bob may not manage ACLs nor create topics
    f = bob.create_acls([binding(ResourceType.TOPIC, "orders", "User:bob", AclOperation.ALL)])
    assert error_name(next(iter(f.values()))) == "CLUSTER_AUTHORIZATION_FAILED"
    # (librdkafka takes DescribeAcls' top-level error for no bindings: asked raw, v1)
    assert bob.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                              AclOperation.ANY, AclPermissionType.ANY)).result() == []
    with sasl_conn(node, "bob") as c:
        r = Reader(c.call(29, 1, struct.pack(">b", 1) + string(None) + struct.pack(">b", 1) + string(None) +
                          string(None) + struct.pack(">bb", 1, 1)))
        r.int32()
        assert r.int16() == CLUSTER_AUTHORIZATION_FAILED
    assert error_name(bob.create_topics([NewTopic("bobs", 1, 1)])["bobs"]) == "TOPIC_AUTHORIZATION_FAILED"
    # nor delete a topic, nor change the broker's configs (message.max.bytes=100 would refuse every produce)
    assert error_name(bob.delete_topics(["orders"])["orders"]) == "TOPIC_AUTHORIZATION_FAILED"
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    broker.add_incremental_config(ConfigEntry("message.max.bytes", "100",
                                              incremental_operation=AlterConfigOpType.SET))
    assert error_name(bob.incremental_alter_configs([broker])[broker]) == "CLUSTER_AUTHORIZATION_FAILED"
    assert produce(node, "alice", "orders", [b"still-fine"]) == [None]

    # DeleteAcls lists what each filter removed
    gone = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob",
                                               None, AclOperation.ANY, AclPermissionType.DENY)])
    assert [str(a) for a in next(iter(gone.values())).result()] == [str(acls[4])]

    # the bindings are records of the metadata log: a restart keeps them
    node.restart()
    admin = AdminClient(conf(node, "admin"))
    described = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                     AclOperation.ANY, AclPermissionType.ANY)).result()
    assert sorted(map(str, described)) == sorted(map(str, acls[:4]))
    assert produce(node, "alice", "orders", [b"a4"]) == [None]


# ---- the transaction-abort attack, request by request


def uvarint_read(r):
    shift = n = 0
    while True:
        b = r.int8() & 0xFF
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n
        shift += 7


def compact_array(r, fn):
    n = uvarint_read(r) - 1
    return [] if n < 0 else [fn(r) for _ in range(n)]


def compact_str(r):
    n = uvarint_read(r) - 1
    return None if n < 0 else r.take(n).decode()


def skip_tags(r):
    for _ in range(uvarint_read(r)):
        uvarint_read(r)
        r.take(uvarint_read(r))


def sasl_conn(b, user):
    """A raw connection signed in with PLAIN."""
    c = Conn(b.host, b.port)
    r = Reader(c.call(17, 1, string("PLAIN")))  # SaslHandshake v1
    assert r.int16() == 0
    token = b"\0" + user.encode() + b"\0" + USERS[user].encode()
    r = Reader(c.call(36, 1, struct.pack(">i", len(token)) + token))  # SaslAuthenticate v1
    assert r.int16() == 0, r.string()
    return c


def flexible_call(c, api_key, version, body):
    c.corr += 1
    c.send_raw(frame(request_header(api_key, version, c.corr, flexible=True) + body))
    r = Reader(c.response(c.corr))
    skip_tags(r)  # response header v1
    return r


def open_producers(c, topic):
    """DescribeProducers v0: (producer id, epoch) of the open transactions."""
    body = uvarint(2) + compact_string(topic) + uvarint(2) + struct.pack(">i", 0) + uvarint(0) + uvarint(0)
    r = flexible_call(c, 61, 0, body)
    r.int32()

    def producer(r):
        pid, epoch = r.int64(), r.int32()
        r.int32(), r.int64(), r.int32()
        start = r.int64()
        skip_tags(r)
        return pid, epoch, start

    def partition(r):
        r.int32()
        assert r.int16() == 0
        compact_str(r)
        ps = compact_array(r, producer)
        skip_tags(r)
        return ps

    def topic_(r):
        compact_str(r)
        ps = compact_array(r, partition)
        skip_tags(r)
        return ps

    topics = compact_array(r, topic_)
    return [(pid, epoch) for parts in topics for ps in parts for pid, epoch, start in ps if start >= 0]


def abort_marker(c, topic, pid, epoch):
    """WriteTxnMarkers v1 aborting pid's transaction at partition 0: the
    partitions' error codes."""
    marker = (struct.pack(">qhb", pid, epoch, 0) + uvarint(2) + compact_string(topic) + uvarint(2) +
              struct.pack(">i", 0) + uvarint(0) + struct.pack(">i", 0) + uvarint(0))
    r = flexible_call(c, 27, 1, uvarint(2) + marker + uvarint(0))

    def part(r):
        r.int32()
        e = r.int16()
        skip_tags(r)
        return e

    def topic_(r):
        compact_str(r)
        es = compact_array(r, part)
        skip_tags(r)
        return es

    def m(r):
        r.int64()
        es = compact_array(r, topic_)
        skip_tags(r)
        return es

    return [e for ts in compact_array(r, m) for es in ts for e in es]


def test_write_txn_markers_attack_refused(node):
    admin = AdminClient(conf(node, "admin"))
    create_topics(admin, ["payments"])
    # the attacker may read and write the topic, but has no ClusterAction
    for f in admin.create_acls([binding(ResourceType.TOPIC, "payments", "User:alice", AclOperation.ALL)]).values():
        f.result()
    victim = Producer(conf(node, "admin", **{"transactional.id": "victim-tx"}))
    victim.init_transactions(30)
    victim.begin_transaction()
    for i in range(3):
        victim.produce("payments", f"pay-{i}".encode())
    assert victim.flush(30) == 0
    with sasl_conn(node, "admin") as c:
        open_txns = open_producers(c, "payments")
    assert len(open_txns) == 1
    pid, epoch = open_txns[0]
    with sasl_conn(node, "alice") as c:
        assert abort_marker(c, "payments", pid, epoch) == [CLUSTER_AUTHORIZATION_FAILED]
    # still open: the attacker changed nothing
    with sasl_conn(node, "admin") as c:
        assert open_producers(c, "payments") == [(pid, epoch)]
    victim.commit_transaction(30)
    assert consume(node, "admin", "payments", "check", 3, isolation="read_committed") == \
        [b"pay-0", b"pay-1", b"pay-2"]


def test_partial_topic_authorization(node):
    """bob may read and write "mine", not "theirs": his KIP-848 consumer
    subscribed to "theirs" is refused TOPIC_AUTHORIZATION_FAILED (Metadata
    and ConsumerGroupHeartbeat both want DESCRIBE on it); a transaction's offsets of both topics are refused
    for "theirs" (TxnOffsetCommit answers it per partition), so he aborts,
    and his next transaction commits the offsets of "mine" alone."""
    admin = AdminClient(conf(node, "admin"))
    create_topics(admin, ["mine", "theirs"])
    for f in admin.create_acls([binding(ResourceType.TOPIC, "mine", "User:bob", AclOperation.ALL),
                                binding(ResourceType.GROUP, "bob-g", "User:bob", AclOperation.READ),
                                binding(ResourceType.TRANSACTIONAL_ID, "bob-tx", "User:bob",
                                        AclOperation.WRITE)]).values():
        f.result()
    assert consume(node, "bob", "theirs", "bob-g", 1, timeout=60,
                   **{"group.protocol": "consumer"}) == "TOPIC_AUTHORIZATION_FAILED"
    p = Producer(conf(node, "bob", **{"transactional.id": "bob-tx"}))
    p.init_transactions(30)
    group = Consumer(conf(node, "bob", **{"group.id": "bob-g"}))
    try:
        p.begin_transaction()
        p.produce("mine", b"m1")
        with pytest.raises(KafkaException) as e:
            p.send_offsets_to_transaction([TopicPartition("mine", 0, 5), TopicPartition("theirs", 0, 5)],
                                          group.consumer_group_metadata(), 30)
        assert e.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED", e.value
        p.abort_transaction(30)
        p.begin_transaction()
        p.produce("mine", b"m2")
        p.send_offsets_to_transaction([TopicPartition("mine", 0, 7)], group.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert [tp.offset for tp in group.committed([TopicPartition("mine", 0)], 30)] == [7]
    finally:
        group.close()


KAFKA_LIB = pathlib.Path(__file__).resolve().parents[3] / "build" / "kafka" / "lib"


@pytest.mark.skipif(not any(KAFKA_LIB.glob("*.jar")), reason="Apache Kafka's jars are not in build/kafka/lib")
def test_kafka_acls_tool(node, tmp_path):
    """Apache Kafka's kafka-acls (the Java admin client) adds and lists
    bindings as Kafka's docs show it, signed in as the super user."""
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                     'username="admin" password="admin-secret";\n')

    def acls(*args):
        out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, sorted(KAFKA_LIB.glob("*.jar")))),
                              "org.apache.kafka.tools.AclCommand", "--bootstrap-server", node.bootstrap,
                              "--command-config", str(props), *args], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    acls("--add", "--allow-principal", "User:bob", "--operation", "Read", "--operation", "Describe",
         "--topic", "tool-topic", "--resource-pattern-type", "prefixed")
    listed = acls("--list", "--topic", "tool-topic", "--resource-pattern-type", "prefixed")
    assert "name=tool-topic, patternType=PREFIXED" in listed, listed
    assert "principal=User:bob, host=*, operation=READ, permissionType=ALLOW" in listed, listed
    assert "principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW" in listed, listed
    # the bindings apply: bob now sees a topic under the prefix
    create_topics(AdminClient(conf(node, "admin")), ["tool-topic-1"])
    assert "tool-topic-1" in AdminClient(conf(node, "bob")).list_topics(timeout=10).topics
