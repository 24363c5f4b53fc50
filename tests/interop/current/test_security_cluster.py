"""Security between nodes: a three-broker cluster whose client listeners
are SASL_SSL, the listener brokers also reach each other on (replica
fetches, transaction markers), and whose control-plane listeners are
SASL_SSL too (raft, heartbeats, forwarding, the controller's pushes; PLAIN
as the controller user), brokers signing in with SCRAM-SHA-512 as the
inter-broker user (written with the cluster's first metadata, as
kafka-storage format --add-scram does) over TLS checked against the test CA. A SCRAM-SHA-512 user is set and
described at a broker that hosts no controller (both forwarded to it) and
signs in at every broker.
confluent-kafka produces with acks=all as that user, a partition's leader is killed, and everything
acknowledged is still read; a transaction's markers reach leaders on other
brokers. A client that claims a broker's client id without its principal
is not taken for one: its COMMIT marker is refused. Certificates are made at test time.

With StandardAuthorizer on every node: ACL bindings created at a broker
that hosts no controller (forwarded there) are enforced at every broker
(pushed with the controller's UpdateMetadata), and a client without
ClusterAction is refused the controller's APIs on the control plane; a
delegation token created at one broker signs in (SCRAM with
tokenauth) at the others; a client quota set at a broker hosting no
controller throttles alice at another such broker."""
import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                  ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                  UserScramCredentialUpsertion)

import kiq_wire as kw
from cluster import CLUSTER_OVERRIDES, Cluster, wait_until
from test_security import certs  # noqa: F401 (a fixture)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
        'password="controller-secret" user_controller="controller-secret" user_alice="alice-secret";')
BROKER_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
               'password="broker-secret";')


class SecureCluster(Cluster):
    """Cluster over SASL_SSL; its state read through confluent-kafka's admin."""
    listener = "SASL_SSL"

    def __init__(self, workdir, certs_dir, jaas=JAAS, extra=()):
        self.certs = certs_dir
        super().__init__(workdir, 3, CLUSTER_OVERRIDES + extra + (
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
            f"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={BROKER_JAAS}",
            # the inter-broker user, written with the cluster's first metadata
            "kafkaiq.add.scram=SCRAM-SHA-512=[name=broker,password=broker-secret]",
            "security.inter.broker.protocol=SASL_SSL", "inter.broker.listener.name=SASL_SSL",
            # the control plane too: raft, heartbeats, forwarding, the controller's pushes
            "listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
            "sasl.mechanism.controller.protocol=PLAIN",
            f"listener.name.sasl_ssl.plain.sasl.jaas.config={jaas}", "ssl.keystore.type=PEM",
            f"ssl.keystore.location={certs_dir / 'server-store.pem'}", "ssl.truststore.type=PEM",
            f"ssl.truststore.location={certs_dir / 'ca.pem'}"))

    def conf(self, user="alice", password="alice-secret", **extra):
        return dict({"bootstrap.servers": self.bootstrap, "security.protocol": "sasl_ssl",
                     "ssl.ca.location": str(self.certs / "ca.pem"), "sasl.mechanism": "PLAIN",
                     "sasl.username": user, "sasl.password": password}, **extra)

    def wait_registered(self, timeout=30):
        admin = AdminClient(self.conf())
        wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == len(self.brokers), timeout,
                   "all brokers registered")

    def partitions(self, topic):
        md = AdminClient(self.conf()).list_topics(topic, timeout=5)
        return md.topics[topic].partitions


def consume_all(conf, topic, want, isolation="read_uncommitted"):
    c = Consumer(dict(conf, **{"group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                               "isolation.level": isolation, "enable.auto.commit": False}))
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    return got


ACL_JAAS = JAAS[:-1] + ' user_admin="admin-secret" user_bob="bob-secret";'


class AclCluster(SecureCluster):
    """SecureCluster with StandardAuthorizer on every node: the nodes' users
    (broker, controller) and admin are super users."""

    def __init__(self, workdir, certs_dir):
        super().__init__(workdir, certs_dir, ACL_JAAS, (
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:broker;User:controller;User:admin", "delegation.token.secret.key=cluster-secret"))

    def wait_registered(self, timeout=30):
        admin = AdminClient(self.conf("admin", "admin-secret"))
        wait_until(lambda: len(admin.list_topics(timeout=5).brokers) == len(self.brokers), timeout,
                   "all brokers registered")

    def partitions(self, topic):
        return AdminClient(self.conf("admin", "admin-secret")).list_topics(topic, timeout=5).topics[topic].partitions


class SaslConn:
    """A hand-made connection over TLS, signed in with PLAIN, whose client id
    is whatever the test claims."""

    def __init__(self, host, port, ca, user, password, client_id):
        ctx = ssl.create_default_context(cafile=str(ca))
        self.sock = ctx.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)
        self.client_id, self.corr = client_id, 0
        r = kw.Reader(self.call(17, 1, kw.string("PLAIN")))  # SaslHandshake v1
        assert r.int16() == 0
        r = kw.Reader(self.call(36, 1, kw.nbytes(f"\0{user}\0{password}".encode())))  # SaslAuthenticate v1
        assert r.int16() == 0, r.string()

    def call(self, api, version, body, flexible=False):
        self.corr += 1
        h = struct.pack(">hhi", api, version, self.corr) + kw.string(self.client_id) + (b"\0" if flexible else b"")
        self.sock.sendall(kw.frame(h + body))
        size = struct.unpack(">i", self.recv(4))[0]
        data = self.recv(size)
        assert struct.unpack(">i", data[:4])[0] == self.corr
        return data[5:] if flexible else data[4:]  # a flexible response header's empty tags

    def recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf


def commit_marker_error(conn, topic, partition):
    """A COMMIT marker (WriteTxnMarkers v1) for an unknown producer: the
    partition's error code."""
    part = kw.uvarint(2) + struct.pack(">i", partition)
    t = kw.compact_string(topic) + part + b"\0"
    marker = struct.pack(">qhb", 4242, 0, 1) + kw.uvarint(2) + t + struct.pack(">i", 0) + b"\0"
    r = kw.Reader(conn.call(27, 1, kw.uvarint(2) + marker + b"\0", flexible=True))
    r.take(1)  # one marker
    r.int64()
    r.take(1)  # one topic
    r.take(r.int8() - 1)  # its name
    r.take(1)  # one partition
    assert r.int32() == partition
    return r.int16()


def test_sasl_ssl_cluster_survives_a_leader(tmp_path, certs):
    c = SecureCluster(tmp_path / "c", certs)
    c.start()
    try:
        admin = AdminClient(c.conf())
        topic = "secure-rf3"
        for f in admin.create_topics([NewTopic(topic, 3, 3)]).values():
            f.result()
        # every follower fetches from its leader over SASL_SSL: the ISR grows to all three
        wait_until(lambda: all(sorted(p.isrs) == [0, 1, 2] and p.leader >= 0 for p in c.partitions(topic).values()),
                   30, "every partition's ISR all three")

        # a SCRAM credential set at broker 2, which hosts no controller (forwarded
        # to it), then used at every broker: those that are no voters have it
        # from the controller's UpdateMetadata
        at2 = AdminClient(dict(c.conf(), **{"bootstrap.servers": c[2].bootstrap}))
        up = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret")
        for f in at2.alter_user_scram_credentials([up]).values():
            f.result()
        infos = at2.describe_user_scram_credentials(["bob"])["bob"].result().scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_512, 4096)]
        bob = c.conf("bob", "bob-secret", **{"sasl.mechanism": "SCRAM-SHA-512"})
        for b in c.brokers:
            wait_until(lambda: AdminClient(dict(bob, **{"bootstrap.servers": b.bootstrap})).list_topics(timeout=3),
                       20, f"bob signed in at broker {b.id}")
        p = Producer(dict(bob, acks="all", **{"enable.idempotence": True}))
        sent = [f"before-{i}".encode() for i in range(300)]
        for i, v in enumerate(sent):
            p.produce(topic, v, partition=i % 3)
        assert p.flush(30) == 0, "records left undelivered"

        # kill a leader that is not the controller (broker 0, the lone voter)
        parts = c.partitions(topic)
        victim_part = next(pid for pid, pm in parts.items() if pm.leader != 0)
        victim = parts[victim_part].leader
        c[victim].kill()
        wait_until(lambda: c.partitions(topic)[victim_part].leader not in (-1, victim), 30, "a new leader")

        after = [f"after-{i}".encode() for i in range(100)]
        for i, v in enumerate(after):
            p.produce(topic, v, partition=i % 3)
        assert p.flush(30) == 0, "records left undelivered after the kill"

        got = consume_all(c.conf(), topic, len(sent) + len(after))
        assert sorted(got) == sorted(sent + after)

        # a transaction over partitions led by other brokers: the coordinator's
        # markers go to those leaders over SASL_SSL, signed in as the broker
        tp = Producer(c.conf(**{"transactional.id": "secure-txn"}))
        tp.init_transactions(30)
        tp.begin_transaction()
        for i in range(30):
            tp.produce(topic, f"txn-{i}".encode(), partition=i % 3)
        tp.commit_transaction(30)
        committed = consume_all(c.conf(), topic, len(sent) + len(after) + 30, "read_committed")
        assert sum(v.startswith(b"txn-") for v in committed) == 30

        # a client signed in as alice that names itself as a broker is no
        # broker: its COMMIT marker is refused (the transaction-abort attack
        # needs a broker's principal, not only its client id)
        leader = c.partitions(topic)[0].leader
        claimed = next(b.id for b in c.brokers if b.alive() and b.id != leader)
        fake = SaslConn(c[leader].host, c[leader].port, certs / "ca.pem", "alice", "alice-secret",
                        f"kafkaiq-broker-{claimed}")
        assert commit_marker_error(fake, topic, 0) == 31  # CLUSTER_AUTHORIZATION_FAILED

        c[victim].start()
        wait_until(lambda: all(sorted(pm.isrs) == [0, 1, 2] for pm in c.partitions(topic).values()), 30,
                   "the restarted broker back in every ISR")
    finally:
        c.stop()



def topic_error(conn, topic):
    """Metadata v1 for topic: its error code."""
    return kw.parse_metadata_v1(conn.call(3, 1, kw.metadata_v1_body([topic])))["topics"][topic][0]


def heartbeat_error(conn):
    """BrokerHeartbeat v0 (flexible) for broker 1: the top-level error code."""
    body = struct.pack(">iqq??", 1, 1, 0, False, False) + b"\0"
    r = kw.Reader(conn.call(63, 0, body, flexible=True))
    r.int32()  # throttle_time_ms
    return r.int16()


def create_token(conn):
    """CreateDelegationToken v1 for the connection's user: (error, token id, HMAC)."""
    r = kw.Reader(conn.call(38, 1, struct.pack(">iq", 0, -1)))
    err = r.int16()
    r.string(), r.string()  # the owner
    r.int64(), r.int64(), r.int64()  # issued, expires, max
    token_id = r.string()
    return err, token_id, r.take(r.int32())


def create_token_for(conn, owner):
    """CreateDelegationToken v3 (flexible) for owner, a User: its error code."""
    body = kw.compact_string("User") + kw.compact_string(owner) + kw.uvarint(1) + struct.pack(">q", -1) + b"\0"
    return kw.Reader(conn.call(38, 3, body, flexible=True)).int16()


def described_tokens(conn):
    """DescribeDelegationToken v1 of every owner: (error, how many tokens)."""
    r = kw.Reader(conn.call(41, 1, struct.pack(">i", -1)))
    return r.int16(), r.int32()


def token_sign_in(host, port, ca, token_id, token_hmac):
    """SCRAM-SHA-512 as the token (tokenauth=true, its password the HMAC's
    base64): SaslAuthenticate's error code, and the connection."""
    conn = SaslConn.__new__(SaslConn)
    ctx = ssl.create_default_context(cafile=str(ca))
    conn.sock = ctx.wrap_socket(socket.create_connection((host, port), timeout=10), server_hostname=host)
    conn.client_id, conn.corr = "token", 0
    assert kw.Reader(conn.call(17, 1, kw.string("SCRAM-SHA-512"))).int16() == 0

    def step(data):
        r = kw.Reader(conn.call(36, 1, kw.nbytes(data)))
        err = r.int16()
        r.string()
        n = r.int32()
        return err, r.take(n) if n > 0 else b""

    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={token_id},r={nonce},tokenauth=true"
    err, server_first = step(("n,," + first_bare).encode())
    if err:
        return err, conn
    attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
    password = base64.b64encode(token_hmac)
    salted = hashlib.pbkdf2_hmac("sha512", password, base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first.decode()},{without_proof}".encode()
    sig = hmac.new(hashlib.sha512(client_key).digest(), auth, hashlib.sha512).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()
    err, _ = step(f"{without_proof},p={proof}".encode())
    return err, conn


def alter_quota_error(conn, user, key, value):
    """AlterClientQuotas v0 setting user's quota key: the entry's error code."""
    entity = kw.array([kw.string("user") + kw.string(user)])
    ops = kw.array([kw.string(key) + struct.pack(">d?", value, False)])
    r = kw.Reader(conn.call(49, 0, kw.array([entity + ops]) + b"\0"))
    r.int32()  # throttle_time_ms
    assert r.int32() == 1
    return r.int16()


def produce_throttle(conn, topic, partition):
    """One Produce v3 of 64 KiB, acks=1: (its partition's error, throttle_time_ms)."""
    batch = kw.record_batch([(None, b"q" * 65536, ())])
    r = kw.Reader(conn.call(0, 3, kw.produce_v3_body(topic, partition, batch, acks=1)))
    parts = r.array(lambda r: (r.string(), r.array(lambda r: (r.int32(), r.int16(), r.int64(), r.int64()))))
    return parts[0][1][0][1], r.int32()


def test_acls_and_control_plane_in_a_cluster(tmp_path, certs):
    c = AclCluster(tmp_path / "c", certs)
    c.start()
    try:
        ca = certs / "ca.pem"
        # admin at broker 2, which hosts no controller: the topic and the
        # binding are forwarded to the controller on broker 0
        at2 = AdminClient(c.conf("admin", "admin-secret", **{"bootstrap.servers": c[2].bootstrap}))
        topic = "acl-everywhere"
        for f in at2.create_topics([NewTopic(topic, 1, 3)]).values():
            f.result()
        allow = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                            AclOperation.ALL, AclPermissionType.ALLOW),
                 AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:alice", "*",
                            AclOperation.READ, AclPermissionType.ALLOW)]
        for f in at2.create_acls(allow).values():
            f.result()
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                      AclPermissionType.ANY)
        assert sorted(at2.describe_acls(everything).result(), key=str) == sorted(allow, key=str)
        # alice may describe the topic at every broker once its bindings
        # arrived there; bob, named by no binding, never
        for b in c.brokers:
            alice = SaslConn(b.host, b.port, ca, "alice", "alice-secret", "alice")
            wait_until(lambda: topic_error(alice, topic) == 0, 20, f"alice allowed at broker {b.id}")
            bob = SaslConn(b.host, b.port, ca, "bob", "bob-secret", "bob")
            assert topic_error(bob, topic) == 29  # TOPIC_AUTHORIZATION_FAILED
        # alice's delegation token, made at broker 2 (forwarded to the
        # controller for her), signs in as her at every broker: those that
        # host no controller have it from the controller's UpdateMetadata
        err, token_id, token_hmac = create_token(SaslConn(c[2].host, c[2].port, ca, "alice", "alice-secret", "a"))
        assert err == 0 and token_id and len(token_hmac) == 64
        # KIP-373: bob may not make a token for alice (no CREATE_TOKENS on
        # User:alice) nor see hers (no DESCRIBE on it, no DESCRIBE_TOKENS on
        # her); alice sees her own, admin (a super user) every one
        bob2 = SaslConn(c[2].host, c[2].port, ca, "bob", "bob-secret", "bob")
        assert create_token_for(bob2, "alice") == 65  # DELEGATION_TOKEN_AUTHORIZATION_FAILED
        assert described_tokens(SaslConn(c[1].host, c[1].port, ca, "bob", "bob-secret", "bob")) == (0, 0)
        assert described_tokens(SaslConn(c[1].host, c[1].port, ca, "alice", "alice-secret", "alice")) == (0, 1)
        assert described_tokens(SaslConn(c[1].host, c[1].port, ca, "admin", "admin-secret", "admin")) == (0, 1)
        for b in c.brokers:
            signed = wait_until(lambda: (lambda e, conn: conn if e == 0 else None)(
                *token_sign_in(b.host, b.port, ca, token_id, token_hmac)), 20, f"the token signed in at broker {b.id}")
            assert topic_error(signed, topic) == 0  # as alice
        p = Producer(c.conf(acks="all"))
        p.produce(topic, b"from-alice")
        assert p.flush(30) == 0, "alice's record undelivered"
        assert consume_all(c.conf(), topic, 1) == [b"from-alice"]

        # a byte-rate quota for alice set at broker 2 (forwarded) throttles
        # her at the leader of a partition other than broker 0, which hosts no
        # controller either: the quotas come with the controller's UpdateMetadata
        qtopic = "quota-everywhere"
        for f in at2.create_topics([NewTopic(qtopic, 3, 1)]).values():
            f.result()
        alice_topic = AclBinding(ResourceType.TOPIC, qtopic, ResourcePatternType.LITERAL, "User:alice", "*",
                                 AclOperation.ALL, AclPermissionType.ALLOW)
        for f in at2.create_acls([alice_topic]).values():
            f.result()
        allow.append(alice_topic)
        admin2 = SaslConn(c[2].host, c[2].port, ca, "admin", "admin-secret", "admin")
        assert alter_quota_error(admin2, "alice", "producer_byte_rate", 1024.0) == 0
        led, leader = wait_until(lambda: next(((pid, pm.leader) for pid, pm in c.partitions(qtopic).items()
                                               if pm.leader > 0), None), 20, "a partition led by broker 1 or 2")
        alice_q = SaslConn(c[leader].host, c[leader].port, ca, "alice", "alice-secret", "alice-q")
        wait_until(lambda: (lambda e, t: e == 0 and t > 0)(*produce_throttle(alice_q, qtopic, led)), 30,
                   f"alice throttled at broker {leader}")

        # deleted at broker 1 (forwarded too): alice refused at every broker
        at1 = AdminClient(c.conf("admin", "admin-secret", **{"bootstrap.servers": c[1].bootstrap}))
        for f in at1.delete_acls([everything]).values():
            assert sorted(f.result(), key=str) == sorted(allow, key=str)
        for b in c.brokers:
            alice = SaslConn(b.host, b.port, ca, "alice", "alice-secret", "alice")
            wait_until(lambda: topic_error(alice, topic) == 29, 20, f"alice refused at broker {b.id}")

        # the control plane: alice may sign in there but holds no
        # ClusterAction, so the controller refuses her a heartbeat; the
        # controller user (a super user) is answered
        ctl = c[0]
        alice = SaslConn(ctl.host, ctl.control_port, ca, "alice", "alice-secret", "alice")
        assert heartbeat_error(alice) == 31  # CLUSTER_AUTHORIZATION_FAILED
        node = SaslConn(ctl.host, ctl.control_port, ca, "controller", "controller-secret", "controller")
        assert heartbeat_error(node) != 31
    finally:
        c.stop()
