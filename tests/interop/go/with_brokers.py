#!/usr/bin/env python3
"""Runs a command against kafkaiq brokers this script starts and stops.

usage: with_brokers.py N COMMAND [ARG]...

Starts `build/kafkaiq serve` on free loopback ports with a temporary log dir,
with `--brokers N` when N > 1 (one process, broker 0 hosting the controller,
min.insync.replicas=2), and runs COMMAND once every broker's Metadata lists
all N, with KGO_SEEDS (what franz-go's tests read) and KIQ_BOOTSTRAP (the
Sarama scenario's) set to the brokers' addresses. COMMAND's stdout is left
alone, so `go test -json` stays parseable; the broker's log is shown on
stderr when the command fails. With KGO_TEST_SCRAM set (franz-go's
user:password(:256|512)) a second node is started beside them, a combined
broker and controller whose listener is SASL_PLAINTEXT with SCRAM, that
user written with its first metadata (kafkaiq.add.scram), and its address
is given as KGO_TEST_SCRAM_SEEDS (franz-go's SCRAM tests). With
KIQ_TEST_SECURITY=1 the security matrix's two nodes are started too
(secure_nodes.py: SASL_SSL with PLAIN, SCRAM and OAUTHBEARER for alice; SSL
requiring a client certificate), their addresses given as
KIQ_SASL_SSL_BOOTSTRAP and KIQ_MTLS_BOOTSTRAP and the certificates'
directory as KIQ_CERTS. The brokers are
then stopped with SIGTERM and must exit 0. Exits with the command's status, or 1 when the broker failed to
start or stop cleanly.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from cluster import CONTROLLER_ID, free_port_block, metadata, wait_until  # noqa: E402
from conftest import Broker  # noqa: E402
from secure_nodes import MtlsNode, SaslNode, make_certs  # noqa: E402

REGISTER_TIMEOUT = 20.0


class Brokers(Broker):
    """One serve process of n brokers: broker i on port + i, its control
    plane on port + 100 + i (as serve --brokers places them)."""

    def __init__(self, workdir, n):
        super().__init__(workdir, ["min.insync.replicas=2"] if n > 1 else [])
        self.n = n
        if n > 1:
            self.port = free_port_block(list(range(n)) + [100 + i for i in range(n)])
            self.http = f"{self.host}:0"  # a free port for each broker

    @property
    def ports(self):
        return [self.port + i for i in range(self.n)]

    @property
    def bootstrap(self):
        return ",".join(f"{self.host}:{p}" for p in self.ports)

    def command(self):
        cmd = super().command()
        return cmd[:2] + ["--brokers", str(self.n)] + cmd[2:] if self.n > 1 else cmd

    def start(self):
        super().start()
        want = set(range(self.n))

        def registered():
            for p in self.ports:
                md = metadata(self.host, p)
                if set(md["brokers"]) != want or md["controller"] != CONTROLLER_ID:
                    return False
            return True
        wait_until(registered, REGISTER_TIMEOUT, f"brokers {sorted(want)} registered and seen by all")


class ScramNode(Broker):
    """One combined node whose client listener is SASL_PLAINTEXT, serving
    SCRAM-SHA-256 and -512, with user's credential from the start."""

    def __init__(self, workdir, user_spec):
        self.user, self.password, *alg = user_spec.split(":")
        self.mechanism = f"SCRAM-SHA-{alg[0] if alg else 256}"
        self.control = free_port_block([0])
        super().__init__(workdir, [
            "control.plane.listener.name=CONTROLLER", "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
            f"kafkaiq.add.scram={self.mechanism}=[name={self.user},password={self.password}]"])

    def command(self):
        cmd = super().command()
        cmd[cmd.index(f"listeners=PLAINTEXT://{self.host}:{self.port}")] = \
            f"listeners=SASL_PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.control}"
        return cmd + ["--override", f"controller.quorum.voters=0@{self.host}:{self.control}"]

    def start(self):
        """Started once the user signs in (its credential is written when
        the controller first becomes active)."""
        super().start()
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "security.protocol": "sasl_plaintext",
                             "sasl.mechanism": self.mechanism, "sasl.username": self.user,
                             "sasl.password": self.password})
        wait_until(lambda: admin.list_topics(timeout=2).brokers, REGISTER_TIMEOUT, f"{self.user} signed in")


class Stopped(Exception):
    pass


def on_signal(signum, _frame):
    raise Stopped(f"signal {signum}")


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or int(argv[1]) < 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    n, command = int(argv[1]), argv[2:]
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="kiq-go-"))
    brokers = Brokers(workdir, n)
    scram = ScramNode(workdir / "scram", os.environ["KGO_TEST_SCRAM"]) if os.environ.get("KGO_TEST_SCRAM") else None
    secured = []
    if os.environ.get("KIQ_TEST_SECURITY"):
        certs = make_certs(pathlib.Path(tempfile.mkdtemp(prefix="certs-", dir=workdir)))
        secured = [SaslNode(workdir / "sasl", certs), MtlsNode(workdir / "mtls", certs)]
    proc = None
    status = 1
    try:
        brokers.start()
        print(f"with_brokers: {n} broker(s) at {brokers.bootstrap}", file=sys.stderr, flush=True)
        env = dict(os.environ, KGO_SEEDS=brokers.bootstrap, KIQ_BOOTSTRAP=brokers.bootstrap)
        if scram:
            scram.start()
            env["KGO_TEST_SCRAM_SEEDS"] = scram.bootstrap
        for b in secured:
            b.start()
        if secured:
            env.update(KIQ_SASL_SSL_BOOTSTRAP=secured[0].bootstrap, KIQ_MTLS_BOOTSTRAP=secured[1].bootstrap,
                       KIQ_CERTS=str(certs))
        # its own process group, so that stopping it reaches the test binary
        # `go test` runs too
        proc = subprocess.Popen(command, env=env, start_new_session=True)
        status = proc.wait()
    except (Stopped, AssertionError, OSError) as e:
        print(f"with_brokers: {e}", file=sys.stderr)
    finally:
        # a second signal must not cut the broker's clean stop short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if status != 0:
            print(f"with_brokers: the broker's log:\n{brokers.stderr_tail(20000)}", file=sys.stderr)
        for b in secured + ([scram] if scram else []) + [brokers]:
            try:
                b.stop()
            except AssertionError as e:
                print(f"with_brokers: {e}", file=sys.stderr)
                status = status or 1
        shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
