"""SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_SSL with credentials kept by
the controller (KIP-554): set and described with the newest confluent-kafka's
admin client and with Apache Kafka's kafka-configs, written to the metadata
log as UserScramCredentialRecords (so a restart keeps them), used to produce
and consume; a wrong password refused with Kafka's message. The node is a
combined broker and controller; its certificates are made at test time."""
import pathlib
import shutil
import subprocess
import time
import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

from conftest import Broker, free_port
from test_security import certs, refused, round_trip  # noqa: F401 (certs is a fixture)

KCAT = shutil.which("kcat")
KAFKA_LIB = pathlib.Path(__file__).resolve().parents[3] / "build" / "kafka" / "lib"
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
CLIENT_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'


class CombinedNode(Broker):
    """One node that is broker and the quorum's only controller, its client
    listener SASL_SSL."""

    def __init__(self, workdir, certs_dir):
        self.control = free_port()
        super().__init__(workdir, [
            "control.plane.listener.name=CONTROLLER", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}", "ssl.keystore.type=PEM",
            f"ssl.keystore.location={certs_dir / 'server-store.pem'}"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners=SASL_SSL://{self.host}:{self.port},CONTROLLER://{self.host}:{self.control}"
        return cmd + ["--override", f"controller.quorum.voters=0@{self.host}:{self.control}"]


def conf(b, certs_dir, mechanism, user, password):
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "sasl_ssl", "ssl.ca.location":
            str(certs_dir / "ca.pem"), "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def described(admin, users):
    out = {}
    for user, f in admin.describe_user_scram_credentials(users).items():
        try:
            out[user] = sorted((i.mechanism, i.iterations) for i in f.result().scram_credential_infos)
        except KafkaException as e:
            out[user] = e.args[0].name()
    return out


def test_scram_credentials(tmp_path, certs):
    b = CombinedNode(tmp_path / uuid.uuid4().hex[:8], certs)
    b.start()
    try:
        admin = AdminClient(conf(b, certs, "PLAIN", "admin", "admin-secret"))
        ups = [UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                            b"alice-secret"),
               UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                            b"alice-secret")]
        for f in admin.alter_user_scram_credentials(ups).values():
            f.result()
        assert described(admin, ["alice", "nobody"]) == {
            "alice": [(ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192)],
            "nobody": "RESOURCE_NOT_FOUND"}
        # deleting what is not there is refused, and nothing of that user changes
        fs = admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])
        with pytest.raises(KafkaException) as e:
            fs["carol"].result()
        assert e.value.args[0].name() == "RESOURCE_NOT_FOUND"

        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            round_trip(conf(b, certs, mechanism, "alice", "alice-secret"), f"scram-{mechanism.lower()}")
            errors = refused(conf(b, certs, mechanism, "alice", "wrong"))
            assert any("Authentication failed during authentication due to invalid credentials with SASL "
                       f"mechanism {mechanism}" in e for e in errors), errors

        # kcat on Debian's librdkafka (2.0.2), whose final message puts its own nonce in front
        if KCAT:
            common = [KCAT, "-b", b.bootstrap, "-X", "security.protocol=sasl_ssl", "-X",
                      f"ssl.ca.location={certs / 'ca.pem'}", "-X", "sasl.mechanism=SCRAM-SHA-512",
                      "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret", "-t", "scram-kcat"]
            subprocess.run(common + ["-P"], input=b"one\ntwo\n", check=True, timeout=30)
            out = subprocess.run(common + ["-C", "-e", "-o", "beginning", "-q"], check=True, timeout=30,
                                 capture_output=True).stdout
            assert out.split() == [b"one", b"two"]

        # kafka-configs, as Kafka's docs set a user up
        if any(KAFKA_LIB.glob("*.jar")):
            props = tmp_path / "admin.properties"
            props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nssl.truststore.type=PEM\n"
                             f"ssl.truststore.location={certs / 'ca.pem'}\n"
                             f"sasl.jaas.config={CLIENT_JAAS}\n")
            out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, sorted(KAFKA_LIB.glob("*.jar")))),
                                  "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.bootstrap,
                                  "--command-config", str(props), "--alter", "--add-config",
                                  "SCRAM-SHA-512=[password=bob-secret]", "--entity-type", "users",
                                  "--entity-name", "bob"], capture_output=True, text=True, timeout=120)
            assert out.returncode == 0 and "Completed updating config for user bob" in out.stdout, out.stdout + out.stderr
            round_trip(conf(b, certs, "SCRAM-SHA-512", "bob", "bob-secret"), "scram-bob", n=5)

        # the credentials are the metadata log's: a restart keeps them
        b.restart()
        round_trip(conf(b, certs, "SCRAM-SHA-256", "alice", "alice-secret"), "scram-after-restart", n=5)
        assert b.alive()
    finally:
        b.stop()
