"""OAUTHBEARER over SASL_SSL with the newest confluent-kafka (librdkafka
2.16) and kcat (Debian's librdkafka 2.0.2): Kafka's unsecured tokens
(librdkafka makes its own from sasl.oauthbearer.config), tokens signed by
a key of a JWKS file (an RSA key made here with the openssl command, the
JWT signed with it and handed over
through oauth_cb), expired, unsigned, wrongly signed and wrong-audience
tokens refused with Kafka's invalid_token answer; re-authentication
(KIP-368): with connections.max.reauth.ms the client re-authenticates on
its connections while a consumer keeps reading (the broker counts it in
/metrics), and on a raw connection a session past its lifetime is closed
at its next request, a re-authentication in place keeps it, another
principal is refused. Delegation token requests on the wire: refused on a
PLAINTEXT listener (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) and without
delegation.token.secret.key (DELEGATION_TOKEN_AUTH_DISABLED); with Apache
Kafka's kafka-delegation-tokens: a token created, kept across a restart,
expired and removed by the controller's check."""
import base64
import json
import re
import socket
import struct
import subprocess
import time
import urllib.request
import uuid

from confluent_kafka import Consumer, Producer

from test_security import KCAT, certs, refused, round_trip, started  # noqa: F401 (certs is a fixture)
from test_security_scram import CLIENT_JAAS, KAFKA_LIB, CombinedNode


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims):
    return f"{b64url(json.dumps({'alg': 'none'}).encode())}.{b64url(json.dumps(claims).encode())}."


def broker(tmp_path, certs, *more):
    return started(tmp_path, "SASL_SSL", ["sasl.enabled.mechanisms=OAUTHBEARER", "ssl.keystore.type=PEM",
                                          f"ssl.keystore.location={certs / 'server-store.pem'}", *more])


def conf(b, certs, **more):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "sasl_ssl", "ssl.ca.location":
            str(certs / "ca.pem"), "sasl.mechanism": "OAUTHBEARER", **more}


def unsecured_conf(b, certs, principal="alice", **more):
    return conf(b, certs, **{"enable.sasl.oauthbearer.unsecure.jwt": True,
                             "sasl.oauthbearer.config": f"principal={principal}", **more})


def token_conf(b, certs, make):
    """A client handing over make()'s token through oauth_cb."""
    return conf(b, certs, oauth_cb=lambda _config: (make(), time.time() + 3600))


def metric(b, name):
    with urllib.request.urlopen(f"http://{b.http}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def invalid_token(errors):
    return any('{"status":"invalid_token"}' in e for e in errors)


def test_oauthbearer_unsecured(tmp_path, certs):
    b = broker(tmp_path, certs)
    try:
        round_trip(unsecured_conf(b, certs), "oauth-unsecured")
        assert metric(b, "kafka_server_socket_server_metrics_successful_authentication_total") >= 2
        # an expired token, the principal in a claim the broker does not read, a signed header
        now = int(time.time())
        for claims in ({"sub": "alice", "iat": now - 600, "exp": now - 60}, {"azp": "alice", "exp": now + 600}):
            errors = refused(token_conf(b, certs, lambda c=claims: unsigned(c)))
            assert invalid_token(errors), errors
        errors = refused(token_conf(b, certs, lambda: b64url(b'{"alg":"RS256"}') + "." + b64url(
            json.dumps({"sub": "alice", "exp": now + 600}).encode()) + "."))
        assert invalid_token(errors), errors
        assert metric(b, "kafka_server_socket_server_metrics_failed_authentication_total") >= 3
        # kcat on Debian's librdkafka (2.0.2), its own unsecured token
        if KCAT:
            common = [KCAT, "-b", b.bootstrap, "-X", "security.protocol=sasl_ssl", "-X",
                      f"ssl.ca.location={certs / 'ca.pem'}", "-X", "sasl.mechanism=OAUTHBEARER",
                      "-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=kcat",
                      "-t", "oauth-kcat"]
            subprocess.run(common + ["-P"], input=b"one\ntwo\n", check=True, timeout=30)
            out = subprocess.run(common + ["-C", "-e", "-o", "beginning", "-q"], check=True, timeout=30,
                                 capture_output=True).stdout
            assert out.split() == [b"one", b"two"]
        assert b.alive()
    finally:
        b.stop()


def test_oauthbearer_unsecured_options(tmp_path, certs):
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredValidatorPrincipalClaimName="azp" unsecuredValidatorRequiredScope="kafka";')
    b = broker(tmp_path, certs, f"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={jaas}")
    try:
        now = int(time.time())
        round_trip(token_conf(b, certs, lambda: unsigned({"azp": "svc", "scope": "kafka read", "exp": now + 600})),
                   "oauth-options", n=5)
        errors = refused(token_conf(b, certs, lambda: unsigned({"azp": "svc", "scope": "read", "exp": now + 600})))
        assert any('"insufficient_scope"' in e for e in errors), errors
    finally:
        b.stop()


def rsa_jwk(d, name, kid):
    subprocess.run(["openssl", "genrsa", "-out", f"{name}.key", "2048"], cwd=d, check=True, capture_output=True)
    out = subprocess.run(["openssl", "rsa", "-in", f"{name}.key", "-noout", "-modulus"], cwd=d, check=True,
                         capture_output=True, text=True).stdout
    n = bytes.fromhex(out.strip().split("=", 1)[1])
    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64url(n), "e": "AQAB"}


def rs256(d, key, kid, claims):
    signing_input = (b64url(json.dumps({"alg": "RS256", "kid": kid, "typ": "JWT"}).encode()) + "." +
                     b64url(json.dumps(claims).encode()))
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], cwd=d, input=signing_input.encode(),
                         check=True, capture_output=True).stdout
    return signing_input + "." + b64url(sig)


def test_oauthbearer_jwks(tmp_path, certs):
    d = tmp_path / "idp"
    d.mkdir()
    (d / "jwks.json").write_text(json.dumps({"keys": [rsa_jwk(d, "idp", "k1")]}))
    rsa_jwk(d, "other", "k1")  # a key of the same kid the broker does not know
    b = broker(tmp_path, certs, f"sasl.oauthbearer.jwks.endpoint.url=file://{d / 'jwks.json'}",
               "sasl.oauthbearer.expected.audience=kafka", "sasl.oauthbearer.expected.issuer=https://idp.test")
    try:
        def claims(**more):
            now = int(time.time())
            return {"sub": "carol", "aud": "kafka", "iss": "https://idp.test", "iat": now, "exp": now + 600, **more}

        round_trip(token_conf(b, certs, lambda: rs256(d, "idp.key", "k1", claims())), "oauth-jwks")
        for make in (lambda: rs256(d, "other.key", "k1", claims()),  # signed by another key
                     lambda: rs256(d, "idp.key", "k1", claims(aud="web")),  # for another audience
                     lambda: rs256(d, "idp.key", "k1", claims(iss="https://evil.test")),
                     lambda: rs256(d, "idp.key", "k1", claims(exp=int(time.time()) - 120)),  # past the 30 s skew
                     lambda: unsigned(claims())):
            errors = refused(token_conf(b, certs, make))
            assert invalid_token(errors), errors
        assert b.alive()
    finally:
        b.stop()


def test_reauthentication_while_consuming(tmp_path, certs):
    b = broker(tmp_path, certs, "connections.max.reauth.ms=2000")
    try:
        c_conf = unsecured_conf(b, certs)
        p = Producer(c_conf)
        c = Consumer(dict(c_conf, **{"group.id": "g-reauth", "auto.offset.reset": "earliest"}))
        c.subscribe(["oauth-reauth"])
        sent, got = [], []
        deadline = time.monotonic() + 60
        reauths = "kafka_server_socket_server_metrics_successful_reauthentication_total"
        try:
            # records go on being produced and read until the connections have re-authenticated
            while time.monotonic() < deadline and (metric(b, reauths) or 0) < 4:
                v = uuid.uuid4().bytes
                p.produce("oauth-reauth", v)
                sent.append(v)
                p.poll(0)
                m = c.poll(0.2)
                if m is not None and not m.error():
                    got.append(m.value())
            assert p.flush(30) == 0
            while len(got) < len(sent) and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
        finally:
            c.close()
        assert metric(b, reauths) >= 4
        assert got == sent
        assert metric(b, "kafka_server_socket_server_metrics_failed_reauthentication_total") == 0
    finally:
        b.stop()


def uvarint(n):
    out = b""
    while True:
        if n < 0x80:
            return out + bytes([n])
        out += bytes([n & 0x7F | 0x80])
        n >>= 7


def read_uvarint(data, i):
    n = shift = 0
    while True:
        byte = data[i]
        i += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return n, i
        shift += 7


def request(s, key, version, body, flexible):
    header = struct.pack(">hhih", key, version, 7, 4) + b"test" + (b"\x00" if flexible else b"")
    s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    head = b""
    while len(head) < 4:
        more = s.recv(4 - len(head))
        if not more:
            return None
        head += more
    n, data = struct.unpack(">i", head)[0], b""
    while len(data) < n:
        more = s.recv(n - len(data))
        if not more:
            return None
        data += more
    return data[4:]


def oauth(s, sub, in_s=600):
    """SaslHandshake v1 then SaslAuthenticate v2 with an unsecured token:
    (error code, error message, session lifetime ms), or None when closed."""
    assert request(s, 17, 1, struct.pack(">h", 11) + b"OAUTHBEARER", False)[:2] == b"\x00\x00"
    now = int(time.time())
    msg = f"n,,\x01auth=Bearer {unsigned({'sub': sub, 'iat': now, 'exp': now + in_s})}\x01\x01".encode()
    a = request(s, 36, 2, uvarint(len(msg) + 1) + msg + b"\x00", True)
    if a is None:
        return None
    i = 1  # the response header's tags
    code = struct.unpack(">h", a[i:i + 2])[0]
    mlen, i = read_uvarint(a, i + 2)
    message = a[i:i + mlen - 1].decode() if mlen else None
    i += max(mlen - 1, 0)
    blen, i = read_uvarint(a, i)
    i += blen - 1
    return code, message, struct.unpack(">q", a[i:i + 8])[0]


def test_session_lifetime_on_the_wire(tmp_path, certs):
    import ssl
    b = broker(tmp_path, certs, "connections.max.reauth.ms=1500")
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    try:
        def connect():
            return ctx.wrap_socket(socket.create_connection((b.host, b.port), timeout=10), server_hostname="localhost")

        with connect() as s:
            assert oauth(s, "alice") == (0, None, 1500)
            # a token expiring before connections.max.reauth.ms bounds the session itself
            code, _, life = oauth(s, "alice", in_s=1)
            assert code == 0 and 0 < life <= 1000
            assert oauth(s, "alice") == (0, None, 1500)
            # ApiVersions v0 answered while the session lasts; past it the connection is closed
            deadline, answered = time.monotonic() + 15, 0
            while time.monotonic() < deadline:
                if request(s, 18, 0, b"", False) is None:
                    break
                answered += 1
                time.sleep(0.1)  # pacing, not synchronisation: the loop ends on the close
            else:
                raise AssertionError("the expired session was not closed")
            assert answered >= 1
        with connect() as s:
            assert oauth(s, "alice")[0] == 0
            code, message, _ = oauth(s, "mallory")
            assert code == 58 and message == "Cannot change principals during re-authentication from User.alice: User.mallory"
            assert request(s, 18, 0, b"", False) is None
        assert metric(b, "kafka_server_socket_server_metrics_successful_reauthentication_total") == 2
        assert metric(b, "kafka_server_socket_server_metrics_failed_reauthentication_total") == 1
        assert b.alive()
    finally:
        b.stop()


def create_token_error(s):
    """CreateDelegationToken v2 with no renewers and the default lifetime: its error code."""
    a = request(s, 38, 2, uvarint(1) + struct.pack(">q", -1) + b"\x00", True)
    return struct.unpack(">h", a[1:3])[0]


def plain_sasl(s, user, password):
    assert request(s, 17, 1, struct.pack(">h", 5) + b"PLAIN", False)[:2] == b"\x00\x00"
    msg = b"\x00" + user + b"\x00" + password
    a = request(s, 36, 2, uvarint(len(msg) + 1) + msg + b"\x00", True)
    assert a[1:3] == b"\x00\x00"


def tokens_tool(b, certs, tmp_path, *args):
    """Apache Kafka's kafka-delegation-tokens (DelegationTokenCommand) signed in as admin with PLAIN."""
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.truststore.type=PEM\n"
                     f"ssl.truststore.location={certs / 'ca.pem'}\nsasl.jaas.config={CLIENT_JAAS}\n")
    out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, sorted(KAFKA_LIB.glob("*.jar")))),
                          "org.apache.kafka.tools.DelegationTokenCommand", "--bootstrap-server", b.bootstrap,
                          "--command-config", str(props), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def token_rows(text):
    """(token id, hmac, owner, renewers) of each row the tool printed."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TOKENID"))
    return [tuple(line.split()[:5:1][i] for i in (0, 1, 2, 4)) for line in lines[start + 1:] if line.strip()]


def test_delegation_tokens_kept(tmp_path, certs):
    import ssl
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    b = CombinedNode(tmp_path / "node", certs)
    b.start()
    try:
        # without delegation.token.secret.key tokens are disabled
        with ctx.wrap_socket(socket.create_connection((b.host, b.port), timeout=10), server_hostname="localhost") as s:
            plain_sasl(s, b"admin", b"admin-secret")
            assert create_token_error(s) == 61  # DELEGATION_TOKEN_AUTH_DISABLED
        b.stop()
        b.overrides += ["delegation.token.secret.key=py-secret", "delegation.token.expiry.check.interval.ms=500"]
        b.start()
        if not any(KAFKA_LIB.glob("*.jar")):
            return
        out = tokens_tool(b, certs, tmp_path, "--create", "--max-life-time-period", "-1",
                          "--renewer-principal", "User:bob")
        [(token_id, hmac, owner, renewers)] = token_rows(out)
        assert owner == "User:admin" and renewers == "[User:bob]"
        # the HMAC is HMAC-SHA512 of the id under the secret, as Kafka makes it
        import hashlib
        import hmac as hm
        assert base64.b64decode(hmac) == hm.new(b"py-secret", token_id.encode(), hashlib.sha512).digest()
        # kept in the metadata log: a restart describes it alike
        b.restart()
        describe = ("--describe", "--owner-principal", "User:admin")
        # the image has the log's records once the restarted quorum has committed them again
        deadline = time.monotonic() + 60
        while not (rows := token_rows(tokens_tool(b, certs, tmp_path, *describe))) and time.monotonic() < deadline:
            pass
        assert rows == [(token_id, hmac, owner, renewers)]
        # without owners the tool asks for an empty list of them: none, as Kafka answers it
        assert token_rows(tokens_tool(b, certs, tmp_path, "--describe")) == []
        # expired now: the controller's check (every 500 ms here) removes it
        tokens_tool(b, certs, tmp_path, "--expire", "--hmac", hmac, "--expiry-time-period", "0")
        deadline = time.monotonic() + 60
        while token_rows(tokens_tool(b, certs, tmp_path, *describe)) and time.monotonic() < deadline:
            pass
        assert token_rows(tokens_tool(b, certs, tmp_path, *describe)) == []
        assert b.alive()
    finally:
        b.stop()


def test_delegation_token_requests_refused(broker):
    with socket.create_connection((broker.host, broker.port), timeout=10) as s:
        assert create_token_error(s) == 64  # DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: not a SASL connection
