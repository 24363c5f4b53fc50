"""Security protocols of the client listener (listener.security.protocol.map):
TLS with the server's key store as PEM (a file, or inline) or PKCS12,
mutual TLS with a trust store and ssl.client.auth=required, the principal
taken from the client certificate's subject; bad input on a TLS port. The
certificates are made here with the openssl command, into the test's
temporary directory."""
import errno
import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from conftest import Broker
from secure_nodes import SaslNode, make_certs

KCAT = shutil.which("kcat")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 signed by it (PEM, PEM with
    the key in one file, PKCS12), and a client certificate for alice."""
    return make_certs(tmp_path_factory.mktemp("certs"))


class TlsBroker(Broker):
    """A broker whose one client listener is NAME://127.0.0.1:port."""

    def __init__(self, workdir, listener, overrides=()):
        super().__init__(workdir, overrides)
        self.listener = listener

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners={self.listener}://{self.host}:{self.port}"
        return cmd


def started(tmp_path, listener, overrides):
    b = TlsBroker(tmp_path / uuid.uuid4().hex[:8], listener, overrides)
    b.start()
    return b


def round_trip(conf, topic, n=200, size=3000):
    """Produces n records and reads them back through conf's connection."""
    p = Producer(conf)
    sent = [os.urandom(size) for _ in range(n)]
    for v in sent:
        p.produce(topic, v)
    assert p.flush(30) == 0, "records left undelivered"
    c = Consumer(dict(conf, **{"group.id": f"g-{topic}", "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    assert got == sent


def ssl_conf(b, certs, **more):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "ssl",
            "ssl.ca.location": str(certs / "ca.pem"), **more}


def test_ssl_pem_keystore(tmp_path, certs):
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}"])
    try:
        # a large fetch takes the copy path (no sendfile through TLS) in 16 KiB records
        round_trip(ssl_conf(b, certs), "tls-pem", n=400, size=40000)
        assert b.alive()
    finally:
        b.stop()


def test_ssl_inline_pem_and_kcat(tmp_path, certs):
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM",
                                  f"ssl.keystore.certificate.chain={(certs / 'server.pem').read_text()}",
                                  f"ssl.keystore.key={(certs / 'server.key').read_text()}"])
    try:
        round_trip(ssl_conf(b, certs), "tls-inline")
        if KCAT:
            common = [KCAT, "-b", b.bootstrap, "-X", "security.protocol=ssl",
                      "-X", f"ssl.ca.location={certs / 'ca.pem'}", "-t", "tls-kcat"]
            subprocess.run(common + ["-P"], input=b"one\ntwo\n", check=True, timeout=30)
            out = subprocess.run(common + ["-C", "-e", "-o", "beginning", "-q"], check=True, timeout=30,
                                 capture_output=True).stdout
            assert out.split() == [b"one", b"two"]
    finally:
        b.stop()


def test_mutual_tls_pkcs12(tmp_path, certs):
    b = started(tmp_path, "CLIENTS", [
        "listener.security.protocol.map=CLIENTS:SSL", "kafkaiq.log.level=debug",
        "ssl.keystore.type=PKCS12", f"ssl.keystore.location={certs / 'server.p12'}", "ssl.keystore.password=storepw",
        "ssl.truststore.type=PEM", f"ssl.truststore.location={certs / 'ca.pem'}", "ssl.client.auth=required"])
    try:
        round_trip(ssl_conf(b, certs, **{"ssl.certificate.location": str(certs / "client.pem"),
                                         "ssl.key.location": str(certs / "client.key")}), "mtls")
        # the key store's password is a secret: DescribeConfigs tells none
        mtls = ssl_conf(b, certs, **{"ssl.certificate.location": str(certs / "client.pem"),
                                     "ssl.key.location": str(certs / "client.key")})
        res = ConfigResource(ConfigResource.Type.BROKER, "0")
        admin = AdminClient(mtls)
        entries = admin.describe_configs([res])[res].result(timeout=10)
        assert entries["ssl.keystore.password"].is_sensitive
        assert entries["ssl.keystore.password"].value is None
        assert entries["ssl.client.auth"].value == "required"
        # Kafka's default principal builder: the subject's whole DN, RFC 2253 order
        assert "as User:CN=alice,OU=test,O=KafkaIQ,C=NL" in b.stderr_tail(1 << 20)
        # no client certificate: the handshake is refused, the broker stays up
        admin = AdminClient(ssl_conf(b, certs))
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=3)
        assert b.alive()
    finally:
        b.stop()


def test_mutual_tls_session_resumed(tmp_path, certs):
    """A client verified by its certificate resumes its TLS session (as the
    JVM does on its second connection), and the resumed connection is
    served."""
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}",
                                  "ssl.truststore.type=PEM", f"ssl.truststore.location={certs / 'ca.pem'}",
                                  "ssl.client.auth=required"])
    try:
        ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
        ctx.load_cert_chain(str(certs / "client.pem"), str(certs / "client.key"))
        session = None
        for attempt in range(2):
            with ctx.wrap_socket(socket.create_connection((b.host, b.port), timeout=10),
                                 server_hostname="127.0.0.1", session=session) as s:
                s.sendall(frame(18, 0, attempt, b""))  # ApiVersions v0; TLS 1.3 tickets come after the handshake
                assert answer(s)[:2] == b"\x00\x00"
                assert s.session_reused == (attempt == 1)
                session = s.session
        assert b.alive()
    finally:
        b.stop()


def test_principal_mapping_rules(tmp_path, certs):
    mtls = ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}",
            "ssl.truststore.type=PEM", f"ssl.truststore.location={certs / 'ca.pem'}", "ssl.client.auth=required",
            "kafkaiq.log.level=debug"]
    client = {"ssl.certificate.location": str(certs / "client.pem"), "ssl.key.location": str(certs / "client.key")}
    b = started(tmp_path, "SSL", mtls + ["ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=test,.*$/$1/U"])
    try:
        round_trip(ssl_conf(b, certs, **client), "mapped", n=5)
        assert "as User:ALICE" in b.stderr_tail(1 << 20)
    finally:
        b.stop()
    # no rule takes the name: the connection is refused, the broker stays up
    b = started(tmp_path, "SSL", mtls + ["ssl.principal.mapping.rules=RULE:^CN=bob,.*$/bob/"])
    try:
        admin = AdminClient(ssl_conf(b, certs, **client))
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=3)
        assert "No rules apply to CN=alice,OU=test,O=KafkaIQ,C=NL" in b.stderr_tail(1 << 20)
        assert b.alive()
    finally:
        b.stop()


def test_tls_garbage_closed_cleanly(tmp_path, certs):
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}"])
    try:
        for garbage in (os.urandom(5000), b"\x00\x00\x00\x10" + bytes(16), b"\x16\x03\x01\xff\xff" + bytes(300)):
            s = socket.create_connection((b.host, b.port), timeout=10)
            try:
                s.sendall(garbage)
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):  # an alert at most, then the close
                    pass
            except OSError as e:  # refused before all of it was sent: reset (a timeout fails)
                assert e.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN), e
            s.close()
        assert b.alive()
        round_trip(ssl_conf(b, certs), "after-garbage", n=10)
    finally:
        b.stop()


def test_garbage_after_tls_handshake(tmp_path, certs):
    """After the TLS handshake: bytes that are no TLS record, and a TLS
    record of bytes that are no Kafka frame, or a SASL request on this
    SSL listener: each connection closed with the reason logged, the
    broker serving the next client."""
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}"])
    try:
        ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))

        def tls():
            return ctx.wrap_socket(socket.create_connection((b.host, b.port), timeout=10), server_hostname="127.0.0.1")
        with tls() as s:
            os.write(s.fileno(), os.urandom(3000))  # under the TLS layer
            with pytest.raises((ssl.SSLError, ConnectionResetError)):
                while s.recv(4096):
                    pass
        with tls() as s:
            s.sendall(b"\x7f\xff\xff\xff" + os.urandom(100))  # a frame size past socket.request.max.bytes
            assert closed(s)
        with tls() as s:
            a = handshake(s)  # SaslHandshake on a listener without SASL
            assert struct.unpack(">h", a[:2])[0] == 34  # ILLEGAL_SASL_STATE
            assert closed(s)
        with tls() as s:
            code, message = authenticate(s, b"\x00alice\x00x")
            assert (code, message) == (34, "SaslAuthenticate on a listener without SASL")
            assert closed(s)
        log = b.stderr_tail(1 << 20)
        assert re.search(r"connection 127\.0\.0\.1:\d+: TLS .*; closing", log), log
        assert "frame size 2147483647 outside" in log, log
        assert b.alive()
        round_trip(ssl_conf(b, certs), "after-tls-garbage", n=10)
    finally:
        b.stop()


def test_bad_tls_configs_refused(tmp_path, certs):
    for overrides, reason in (
            ([], "ssl.keystore.type JKS is not read here"),
            (["ssl.keystore.type=PEM"], "needs ssl.keystore.location"),
            (["ssl.keystore.type=PKCS12", f"ssl.keystore.location={certs / 'server.p12'}",
              "ssl.keystore.password=wrong"], "ssl.keystore.password"),
            (["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}",
              "ssl.client.auth=required"], "needs a trust store"),
            (["listener.security.protocol.map=PLAINTEXT:PLAINTEXT"], "no security protocol for listener SSL"),
            # brokers reach each other on the client listener, with its protocol
            (["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}",
              "inter.broker.listener.name=INTERNAL"], "brokers reach each other on the client listener, SSL"),
            (["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}",
              "security.inter.broker.protocol=PLAINTEXT"], "security.inter.broker.protocol PLAINTEXT: the client "
                                                           "listener SSL")):
        b = TlsBroker(tmp_path / uuid.uuid4().hex[:8], "SSL", overrides)
        with pytest.raises(AssertionError):
            b.start()
        assert reason in b.stderr_tail(), b.stderr_tail()


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="b\\"ob";')


def sasl_broker(tmp_path, certs, listener, mechanisms="PLAIN"):
    overrides = [f"sasl.enabled.mechanisms={mechanisms}",
                 f"listener.name.{listener.lower()}.plain.sasl.jaas.config={JAAS}"]
    if listener == "SASL_SSL":
        overrides += ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}"]
    return started(tmp_path, listener, overrides)


def sasl_conf(b, certs, listener, user, password, mechanism="PLAIN"):
    conf = {"bootstrap.servers": b.bootstrap, "security.protocol": listener.lower(),
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    if listener == "SASL_SSL":
        conf["ssl.ca.location"] = str(certs / "ca.pem")
    return conf


def refused(conf):
    """The errors a client reports when its credentials are refused."""
    errors = []
    admin = AdminClient(dict(conf, error_cb=lambda e: errors.append(e.str())))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)  # serves error_cb
    return errors


def first_errors(conf, bound=30):
    """The errors a client reports when its credentials are refused, as
    soon as it reports one (bounded)."""
    errors = []
    p = Producer(dict(conf, error_cb=lambda e: errors.append(e.str())))
    deadline = time.monotonic() + bound
    while not errors and time.monotonic() < deadline:
        p.poll(0.1)
    return errors


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_plain(tmp_path, certs, listener):
    b = sasl_broker(tmp_path, certs, listener)
    try:
        round_trip(sasl_conf(b, certs, listener, "alice", "alice-secret"), f"plain-{listener.lower()}")
        round_trip(sasl_conf(b, certs, listener, "bob", 'b"ob'), f"plain-bob-{listener.lower()}", n=5)
        for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
            errors = refused(sasl_conf(b, certs, listener, user, password))
            assert any("Authentication failed: Invalid username or password" in e for e in errors), errors
        assert b.alive()
    finally:
        b.stop()


def frame(key, version, corr, body, flexible=False):
    header = struct.pack(">hhih", key, version, corr, 4) + b"test" + (b"\x00" if flexible else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


def answer(s):
    """One response frame's body after the correlation id, or None when the
    connection is closed instead."""
    head = b""
    while len(head) < 4:
        more = s.recv(4 - len(head))
        if not more:
            return None
        head += more
    n, data = struct.unpack(">i", head)[0], b""
    while len(data) < n:
        more = s.recv(n - len(data))
        assert more, "connection closed inside a response"
        data += more
    return data[4:]


def closed(s):
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def handshake(s, mechanism=b"PLAIN"):
    s.sendall(frame(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism))
    return answer(s)


def authenticate(s, token):
    """SaslAuthenticate v2: (error code, error message)."""
    s.sendall(frame(36, 2, 2, bytes([len(token) + 1]) + token + b"\x00", flexible=True))
    a = answer(s)
    assert a is not None, "closed without an answer"
    code, mlen = struct.unpack(">hB", a[1:4])  # after the response header's tag byte
    return code, a[4:4 + mlen - 1].decode() if mlen else None


def test_sasl_bad_input(tmp_path, certs):
    b = sasl_broker(tmp_path, certs, "SASL_PLAINTEXT", "PLAIN,SCRAM-SHA-256")
    try:
        def conn():
            return socket.create_connection((b.host, b.port), timeout=10)
        # Metadata before authenticating: closed, as Kafka does
        with conn() as s:
            s.sendall(frame(3, 1, 1, struct.pack(">i", -1)))
            assert answer(s) is None
        # an unknown mechanism: UNSUPPORTED_SASL_MECHANISM (33) with the enabled ones, then closed
        with conn() as s:
            a = handshake(s, b"GSSAPI")
            assert struct.unpack(">h", a[:2])[0] == 33 and b"PLAIN" in a and b"SCRAM-SHA-256" in a
            assert closed(s)
        # malformed PLAIN tokens and a SCRAM message of nonsense: SASL_AUTHENTICATION_FAILED (58), closed
        for mechanism, token in ((b"PLAIN", b"alice"), (b"PLAIN", b"\x00alice\x00x\x00y"),
                                 (b"SCRAM-SHA-256", b"p=tls-unique,,n=alice,r=abc"),
                                 (b"SCRAM-SHA-256", os.urandom(64))):
            with conn() as s:
                assert struct.unpack(">h", handshake(s, mechanism)[:2])[0] == 0
                code, message = authenticate(s, token)
                assert code == 58
                assert message.startswith("Authentication failed during authentication due to invalid credentials "
                                          f"with SASL mechanism {mechanism.decode()}"), message
                assert closed(s)
        # SaslAuthenticate before the handshake: ILLEGAL_SASL_STATE (34), closed
        with conn() as s:
            assert authenticate(s, b"\x00alice\x00alice-secret")[0] == 34
            assert closed(s)
        # the right password still works, and after it any request
        with conn() as s:
            assert struct.unpack(">h", handshake(s)[:2])[0] == 0
            assert authenticate(s, b"\x00alice\x00alice-secret") == (0, None)
            s.sendall(frame(3, 1, 3, struct.pack(">i", -1)))
            assert answer(s) is not None
        assert b.alive()
    finally:
        b.stop()


def raw_token(s, token):
    """A SASL token without Kafka headers (after a SaslHandshake v0): the
    server's token, or None when the connection is closed instead."""
    s.sendall(struct.pack(">i", len(token)) + token)
    return answer_raw(s)


def answer_raw(s):
    head = b""
    while len(head) < 4:
        more = s.recv(4 - len(head))
        if not more:
            return None
        head += more
    n, data = struct.unpack(">i", head)[0], b""
    while len(data) < n:
        more = s.recv(n - len(data))
        assert more, "connection closed inside a token"
        data += more
    return data


def test_sasl_handshake_v0_raw_tokens(tmp_path, certs):
    """Clients before KIP-152 send SaslHandshake v0, then each token as a
    frame of its own: PLAIN's answered with an empty one, a wrong password
    with a closed connection, SCRAM's messages with the server's; kafka-python
    2.0 (Debian's) signs in so with PLAIN and SCRAM-SHA-256 over SASL_SSL."""
    b = SaslNode(tmp_path / uuid.uuid4().hex[:8], certs)
    b.start()
    try:
        ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))

        def v0(mechanism=b"PLAIN"):
            s = ctx.wrap_socket(socket.create_connection((b.host, b.port), timeout=10), server_hostname="127.0.0.1")
            s.sendall(frame(17, 0, 1, struct.pack(">h", len(mechanism)) + mechanism))
            assert struct.unpack(">h", answer(s)[:2])[0] == 0
            return s
        with v0() as s:
            assert raw_token(s, b"\x00alice\x00alice-secret") == b""
            s.sendall(frame(3, 1, 2, struct.pack(">i", -1)))  # authenticated: Kafka requests again
            assert answer(s) is not None
        with v0() as s:
            assert raw_token(s, b"\x00alice\x00wrong") is None
        with v0(b"SCRAM-SHA-256") as s:
            assert raw_token(s, b"n,,n=alice,r=abcdefgh").startswith(b"r=abcdefgh")
        assert b.alive()

        from kafka import KafkaConsumer, KafkaProducer
        from kafka.errors import KafkaError
        for mechanism in ("PLAIN", "SCRAM-SHA-256"):
            sasl = dict(bootstrap_servers=b.bootstrap, security_protocol="SASL_SSL", ssl_cafile=str(certs / "ca.pem"),
                        sasl_mechanism=mechanism, sasl_plain_username="alice", sasl_plain_password="alice-secret")
            topic = f"v0-{mechanism.lower()}"
            p = KafkaProducer(**sasl)
            for i in range(5):
                p.send(topic, f"v{i}".encode()).get(timeout=30)
            p.close()
            c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **sasl)
            assert [m.value for m in c][:5] == [f"v{i}".encode() for i in range(5)]
            c.close()
            with pytest.raises(KafkaError):
                KafkaProducer(**dict(sasl, sasl_plain_password="wrong", api_version_auto_timeout_ms=5000))
        assert b.alive()
    finally:
        b.stop()


def test_sasl_on_plaintext_listener(broker):
    with socket.create_connection((broker.host, broker.port), timeout=10) as s:
        a = handshake(s)
        assert struct.unpack(">h", a[:2])[0] == 34  # ILLEGAL_SASL_STATE
        assert closed(s)
    assert broker.alive()
