"""The client matrix of issue 28: each librdkafka-based client produces and
consumes over SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
OAUTHBEARER, and over mutual TLS, and is refused a wrong credential with
the error (a client without a certificate: TLS 1.3's certificate_required
alert). Clients: the newest confluent-kafka (its bundled librdkafka 2.16)
in this process, Debian's confluent-kafka 1.7 (librdkafka 2.0.2) through
/usr/bin/python3, and kcat. One combined node serves the four mechanisms on
its SASL_SSL listener (alice's SCRAM credentials written with its first
metadata, its unsecured OAUTHBEARER validator requiring the scope "kafka");
a second node's one client listener is SSL with ssl.client.auth=required
(a node has one client listener)."""
import json
import pathlib
import shutil
import subprocess

import pytest

from secure_nodes import MtlsNode, SaslNode
from test_security import certs, first_errors, round_trip  # noqa: F401 (certs is a fixture)

KCAT = shutil.which("kcat")
DEBIAN_PY = "/usr/bin/python3"
INTEROP = pathlib.Path(__file__).resolve().parents[1]
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "mTLS"]

# Debian's client runs test_security's round trip and refusal in its own
# interpreter: argv[1] a JSON list (mode, conf, topic), stdout the refusal's
# errors as JSON.
DEBIAN_CLIENT = f"""
import json, sys
sys.path.insert(0, {str(INTEROP)!r})
from test_security import first_errors, round_trip
mode, conf, topic = json.loads(sys.argv[1])
if mode == "round_trip":
    round_trip(conf, topic, n=20)
    print("[]")
else:
    print(json.dumps(first_errors(conf)))
"""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory, certs):
    d = tmp_path_factory.mktemp("matrix")
    sasl = SaslNode(d / "sasl", certs)
    mtls = MtlsNode(d / "mtls", certs)
    started = []
    try:
        for b in (sasl, mtls):
            b.start()
            started.append(b)
        yield {m: mtls if m == "mTLS" else sasl for m in MECHANISMS}
    finally:
        for b in started:
            b.stop()


def cell_conf(nodes, certs, mechanism, wrong=False):
    """librdkafka's configuration for one cell; wrong: a credential the
    broker refuses (a wrong password, a token without the scope, no
    client certificate)."""
    conf = {"bootstrap.servers": nodes[mechanism].bootstrap, "ssl.ca.location": str(certs / "ca.pem")}
    if mechanism == "mTLS":
        conf["security.protocol"] = "ssl"
        if not wrong:
            conf.update({"ssl.certificate.location": str(certs / "client.pem"),
                         "ssl.key.location": str(certs / "client.key")})
        return conf
    conf.update({"security.protocol": "sasl_ssl", "sasl.mechanism": mechanism})
    if mechanism == "OAUTHBEARER":
        conf.update({"enable.sasl.oauthbearer.unsecure.jwt": "true",
                     "sasl.oauthbearer.config": "principal=alice" + ("" if wrong else " scope=kafka")})
    else:
        conf.update({"sasl.username": "alice", "sasl.password": "wrong" if wrong else "alice-secret"})
    return conf


def refusal_seen(mechanism, errors):
    """Whether a client's errors name the refusal: Kafka's messages for a
    wrong password or a token without the scope, a failed handshake for a
    client without a certificate."""
    text = "\n".join(errors)
    if mechanism == "PLAIN":
        return "Authentication failed: Invalid username or password" in text
    if mechanism.startswith("SCRAM"):
        return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}") in text
    if mechanism == "OAUTHBEARER":
        return '"insufficient_scope"' in text
    return "alert certificate required" in text


def debian(mode, conf, topic=""):
    out = subprocess.run([DEBIAN_PY, "-c", DEBIAN_CLIENT, json.dumps([mode, conf, topic])], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def kcat(conf, *args, data=None):
    cmd = [KCAT, "-b", conf["bootstrap.servers"]]
    for k, v in conf.items():
        if k != "bootstrap.servers":
            cmd += ["-X", f"{k}={v}"]
    return subprocess.run(cmd + list(args), input=data, capture_output=True, timeout=60)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_current(nodes, certs, mechanism):
    round_trip(cell_conf(nodes, certs, mechanism), f"matrix-current-{mechanism.lower()}", n=20)
    errors = first_errors(cell_conf(nodes, certs, mechanism, wrong=True))
    assert refusal_seen(mechanism, errors), errors
    assert nodes[mechanism].alive()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_debian(nodes, certs, mechanism):
    debian("round_trip", cell_conf(nodes, certs, mechanism), f"matrix-debian-{mechanism.lower()}")
    errors = debian("refused", cell_conf(nodes, certs, mechanism, wrong=True))
    assert refusal_seen(mechanism, errors), errors


@pytest.mark.skipif(not KCAT, reason="kcat is not installed")
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat(nodes, certs, mechanism):
    conf, topic = cell_conf(nodes, certs, mechanism), f"matrix-kcat-{mechanism.lower()}"
    p = kcat(conf, "-t", topic, "-P", data=b"one\ntwo\n")
    assert p.returncode == 0, p.stderr
    c = kcat(conf, "-t", topic, "-C", "-e", "-o", "beginning", "-q")
    assert c.returncode == 0 and c.stdout.split() == [b"one", b"two"], c.stderr
    bad = kcat(cell_conf(nodes, certs, mechanism, wrong=True), "-L", "-m", "5")
    assert bad.returncode != 0
    assert refusal_seen(mechanism, [bad.stderr.decode(errors="replace")]), bad.stderr
