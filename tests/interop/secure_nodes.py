"""Secured nodes shared by the security client matrix's suites (the Python
clients' pytest module and the franz-go test through with_brokers.py):
certificates made with the openssl command, a combined node whose SASL_SSL
listener serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER to
alice, and a broker whose SSL listener requires a client certificate."""
import subprocess

from conftest import Broker, free_port

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
# the unsecured validator asks for a scope, so that a token without it is a wrong credential
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredValidatorRequiredScope="kafka";')


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d):
    """Into d: a CA, a server certificate for 127.0.0.1 signed by it (PEM,
    PEM with the key in one file, PKCS12), and a client certificate for
    alice."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=kiq-test-ca", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subj, ext in (("server", "/CN=localhost", ["-extfile", "san.ext"]),
                            ("client", "/C=NL/O=KafkaIQ/OU=test/CN=alice", [])):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", subj, cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)
    (d / "server-store.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())
    openssl("pkcs12", "-export", "-inkey", "server.key", "-in", "server.pem", "-certfile", "ca.pem",
            "-out", "server.p12", "-passout", "pass:storepw", cwd=d)
    return d


class SaslNode(Broker):
    """A combined broker and controller whose client listener is SASL_SSL
    with the four mechanisms; alice's SCRAM credentials are written with
    its first metadata."""

    def __init__(self, workdir, certs_dir):
        self.certs = certs_dir
        self.control = free_port()
        super().__init__(workdir, [
            "control.plane.listener.name=CONTROLLER",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            f"listener.name.sasl_ssl.plain.sasl.jaas.config={PLAIN_JAAS}",
            f"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={OAUTH_JAAS}",
            "kafkaiq.add.scram=SCRAM-SHA-256=[name=alice,password=alice-secret];"
            "SCRAM-SHA-512=[name=alice,password=alice-secret]",
            "ssl.keystore.type=PEM", f"ssl.keystore.location={certs_dir / 'server-store.pem'}"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners=SASL_SSL://{self.host}:{self.port},CONTROLLER://{self.host}:{self.control}"
        return cmd + ["--override", f"controller.quorum.voters=0@{self.host}:{self.control}"]

    def start(self):
        """Started once alice signs in with SCRAM (her credentials are
        written when the controller is first active)."""
        super().start()
        from cluster import wait_until
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "security.protocol": "sasl_ssl",
                             "ssl.ca.location": str(self.certs / "ca.pem"), "sasl.mechanism": "SCRAM-SHA-512",
                             "sasl.username": "alice", "sasl.password": "alice-secret"})
        wait_until(lambda: admin.list_topics(timeout=2).brokers, 30, "alice signed in with SCRAM")


class MtlsNode(Broker):
    """A broker whose one client listener is SSL with
    ssl.client.auth=required (a node has one client listener)."""

    def __init__(self, workdir, certs_dir):
        super().__init__(workdir, [
            "ssl.keystore.type=PEM", f"ssl.keystore.location={certs_dir / 'server-store.pem'}",
            "ssl.truststore.type=PEM", f"ssl.truststore.location={certs_dir / 'ca.pem'}", "ssl.client.auth=required"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = f"listeners=SSL://{self.host}:{self.port}"
        return cmd
