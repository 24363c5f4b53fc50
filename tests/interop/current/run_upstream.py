"""confluent-kafka-python's own integration tests (tests/integration of its
source, bring-your-own broker: the BROKERS variable) against a KafkaIQ
broker this script starts, and stops, on free loopback ports.

    build/venv-upstream/bin/python tests/interop/current/run_upstream.py SRC [--brokers 3] [pytest args]

SRC is a checkout of confluent-kafka-python at the tag of the release
requirements.txt pins (its PyPI sdist leaves tests/ out). The tests run
with the release from PyPI, not with SRC's own sources: SRC keeps its
package under src/, which pytest does not put on the path.
scripts/confluent-python-upstream.sh makes the venv (upstream-requirements.txt)
and calls this.

What KafkaIQ does not have is left out with pytest's --ignore and
--deselect, each for the reason in LEFT_OUT; everything else runs.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cluster import OneProcessCluster  # noqa: E402
from conftest import CONFIG, Broker  # noqa: E402

# (pytest option, path under SRC, why KafkaIQ leaves it out)
LEFT_OUT = [
    ("--ignore", "tests/integration/share_consumer", "share groups (KIP-932) are not served"),
    ("--ignore", "tests/integration/share_consumer_sasl", "share groups, over SASL"),
    ("--ignore", "tests/integration/share_consumer_oauth", "share groups, over SASL/OAUTHBEARER"),
    ("--ignore", "tests/integration/schema_registry", "needs a Schema Registry (SR_URL)"),
    ("--deselect", "tests/integration/admin/test_describe_operations.py::test_describe_operations[sasl_cluster0]",
     "a SASL cluster that trivup downloads and starts itself, and ACLs"),
    ("--deselect", "tests/integration/admin/test_user_scram_credentials.py::test_user_scram_credentials",
     "SASL/SCRAM credentials (DescribeUserScramCredentials, AlterUserScramCredentials)"),
    ("--deselect", "tests/integration/admin/test_basic_operations.py::test_basic_operations",
     "ends with ACLs (CreateAcls, DescribeAcls, DeleteAcls), which need an authorizer"),
]


def stock(cls, properties):
    """cls reading an empty properties file instead of config/server.properties,
    whose settings DescribeConfigs would report as STATIC_BROKER_CONFIG where
    the tests expect a stock broker's defaults."""
    class Stock(cls):
        def command(self):
            return [str(properties) if a == str(CONFIG) else a for a in super().command()]
    return Stock


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    src = pathlib.Path(argv[0]).resolve()
    rest = argv[1:]
    n = 1
    if rest[:1] == ["--brokers"]:
        n, rest = int(rest[1]), rest[2:]
    if not (src / "tests" / "integration" / "conftest.py").exists():
        sys.exit(f"{src}: no tests/integration/conftest.py (a confluent-kafka-python checkout is needed)")
    with tempfile.TemporaryDirectory(prefix="kiq-ckpy-") as work:
        properties = pathlib.Path(work) / "stock.properties"
        properties.write_text("")
        b = stock(Broker, properties)(work) if n == 1 else stock(OneProcessCluster, properties)(work, n)
        b.start()
        try:
            print(f"KafkaIQ ({n} broker{'s' if n > 1 else ''}) at {b.bootstrap}", flush=True)
            cmd = [sys.executable, "-m", "pytest", "tests/integration", "-p", "no:cacheprovider", "-q", "-rfEs",
                   "--timeout", "300"]
            for opt, path, why in LEFT_OUT:
                print(f"left out: {path}: {why}")
                cmd += [opt, path]
            env = dict(os.environ, BROKERS=b.bootstrap)
            rc = subprocess.call(cmd + rest, cwd=src, env=env)
        finally:
            b.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
