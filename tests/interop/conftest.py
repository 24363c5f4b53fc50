"""Fixtures for the interop suite: a real `build/kafkaiq serve` per test module.

The broker gets a free loopback port and a temporary log dir, is ready when
its port accepts a connection, and must exit 0 on SIGTERM at teardown.

KIQ_BOOTSTRAP=host:port points the suite at an already running Kafka-protocol
server instead (e.g. librdkafka's mock cluster) to check the tests themselves;
tests that restart the broker are skipped then.
KIQ_BIN overrides the broker binary path.
"""

import os
import pathlib
import random
import resource
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BROKER_BIN = pathlib.Path(os.environ.get("KIQ_BIN", ROOT / "build" / "kafkaiq"))
CONFIG = ROOT / "config" / "server.properties"
EXTERNAL = os.environ.get("KIQ_BOOTSTRAP")

# current/ holds the tests of the pinned newest Python clients, run with
# build/venv's interpreter (scripts/run-tests.sh); Debian's older clients,
# which the rest of this suite uses, leave it out.
VENV = ROOT / "build" / "venv"
collect_ignore = [] if pathlib.Path(sys.prefix).resolve() == VENV.resolve() else ["current"]

READY_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0
DEFAULT_TEST_TIMEOUT = 300
SOCKET_REQUEST_MAX_BYTES = 104857600

# The many-connections test opens 1,000 sockets; the broker inherits this limit.
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
_want = 8192 if _hard == resource.RLIM_INFINITY else min(8192, _hard)
if _soft != resource.RLIM_INFINITY and _soft < _want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (_want, _hard))


def port_bindable(port):
    """True if port is free for a listener on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def ephemeral_low():
    """The low end of the range connect() takes local ports from."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_port_rng = random.Random(os.getpid() ^ time.time_ns())
# Ports handed out by this process: one chosen for a node not started yet is
# still bindable, so only this set keeps a second choice off it.
_handed_out = set()


def _claim(ports):
    """True, and ports marked handed out, if each is free and unclaimed."""
    if any(p in _handed_out or not port_bindable(p) for p in ports):
        return False
    _handed_out.update(ports)
    return True


def free_port():
    """A port free a moment ago, below the ephemeral range when one is free
    there: a port of that range, once closed, can be handed to any outgoing
    connection before the broker binds it (EADDRINUSE)."""
    low = ephemeral_low()
    for _ in range(64):
        port = _port_rng.randrange(10000, max(10001, low))
        if _claim([port]):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_block(offsets, attempts=200):
    """A base port such that base + each offset is free and not handed out
    before (for --brokers N), below the ephemeral range (see free_port)."""
    top = max(20001, ephemeral_low() - max(offsets))
    for _ in range(attempts):
        base = _port_rng.randrange(10000, top)
        if _claim([base + o for o in offsets]):
            return base
    raise AssertionError(f"no free port block for offsets {offsets}")


def wait_port(host, port, timeout, proc=None):
    """Polls connect() until it succeeds; False on timeout or if proc exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def terminate(proc, name, stderr_tail):
    """SIGTERM, then asserts the process exited 0 within STOP_TIMEOUT
    (killed and failed otherwise); stderr_tail() goes into the message."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"{name} still running {STOP_TIMEOUT} s after SIGTERM; "
                                 f"killed\nstderr:\n{stderr_tail()}")
    assert proc.returncode == 0, (f"{name} exited with {proc.returncode} on SIGTERM\n"
                                  f"stderr:\n{stderr_tail()}")


class OwnedProcess:
    """A kafkaiq process a test started (self.proc, its stderr in
    self.stderr_path), named label in failures."""

    label = "broker"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM, then asserts the process exited 0 within STOP_TIMEOUT."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        terminate(proc, self.label, self.stderr_tail)

    def stderr_tail(self, limit=6000):
        if self.stderr_path is None or not self.stderr_path.exists():
            return "(no stderr)"
        return self.stderr_path.read_bytes()[-limit:].decode(errors="replace")


class Broker(OwnedProcess):
    """A kafkaiq process this suite started and owns."""

    managed = True
    host = "127.0.0.1"

    def __init__(self, workdir, overrides=()):
        self.workdir = pathlib.Path(workdir)
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.http = f"{self.host}:{free_port()}"  # its HTTP listener
        self.overrides = list(overrides)
        self.proc = None
        self.starts = 0
        self.stderr_path = None

    @property
    def bootstrap(self):
        return f"{self.host}:{self.port}"

    def command(self):
        cmd = [str(BROKER_BIN), "serve", str(CONFIG),
               "--override", f"listeners=PLAINTEXT://{self.host}:{self.port}",
               "--override", f"log.dirs={self.data_dir}",
               "--override", f"socket.request.max.bytes={SOCKET_REQUEST_MAX_BYTES}",
               "--override", f"kafkaiq.http.listener={self.http}"]
        for kv in self.overrides:
            cmd += ["--override", kv]
        return cmd

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "broker already running"
        self.starts += 1
        self.stderr_path = self.workdir / f"broker-{self.starts}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err, cwd=self.workdir)
        if not wait_port(self.host, self.port, READY_TIMEOUT, self.proc):
            code = self.proc.poll()
            if code is None:
                self.proc.kill()
                self.proc.wait()
            raise AssertionError(
                f"broker not accepting on {self.bootstrap} within {READY_TIMEOUT} s "
                f"(exit code {code}); command {' '.join(self.command())}\n"
                f"stderr:\n{self.stderr_tail()}")


    def restart(self):
        """Clean stop, then a new process on the same port and log dir."""
        self.stop()
        self.start()

class ExternalBroker:
    """A server given by KIQ_BOOTSTRAP; it cannot be restarted or watched."""

    managed = False

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        host, _, port = bootstrap.rpartition(":")
        self.host = host or "127.0.0.1"
        self.port = int(port)

    def alive(self):
        return True

    def start(self):
        pass

    def stop(self):
        pass

    def restart(self):
        pytest.skip("restart needs a broker this suite started (KIQ_BOOTSTRAP is set)")

    def stderr_tail(self, limit=6000):
        return "(external broker: no stderr)"


_current = {}


@pytest.fixture(scope="module")
def broker(tmp_path_factory, request):
    if EXTERNAL:
        yield ExternalBroker(EXTERNAL)
        return
    assert BROKER_BIN.exists(), f"{BROKER_BIN} is missing: run `make` first"
    b = Broker(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]))
    b.start()
    _current[request.module.__name__] = b
    try:
        yield b
    finally:
        _current.pop(request.module.__name__, None)
        b.stop()


@pytest.fixture(scope="module")
def three(tmp_path_factory, request):
    """`kafkaiq serve --brokers 3`, replicating new topics three ways."""
    from cluster import OneProcessCluster
    c = OneProcessCluster(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1] + "-three"),
                          overrides=["default.replication.factor=3", "offsets.topic.replication.factor=3",
                                     "min.insync.replicas=2"])
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(params=["one", "three"])
def target(request, broker):
    """(broker, number of brokers): the module's broker, then a cluster of three in one process."""
    if request.param == "one":
        return broker, 1
    if EXTERNAL:
        pytest.skip("starts its own cluster")
    return request.getfixturevalue("three"), 3


@pytest.fixture(autouse=True)
def _broker_watch(request):
    """Restarts a broker a previous test crashed, and fails a test that crashed it."""
    if "broker" not in request.fixturenames:
        yield
        return
    b = request.getfixturevalue("broker")
    if b.managed and not b.alive():
        b.proc = None
        b.start()
    yield
    if b.managed and b.proc is not None and not b.alive():
        code = b.proc.returncode
        pytest.fail(f"broker died during this test (exit code {code})\n"
                    f"stderr:\n{b.stderr_tail()}", pytrace=False)


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test time limit")
    # kafka-python 3.0 (current/) reads its protocol schemas with
    # importlib.resources' legacy calls: a warning per message type
    config.addinivalue_line("filterwarnings", "ignore:(read|open)_text is deprecated:DeprecationWarning")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A hard per-test time limit, so a hung client call fails instead of hanging CI."""
    marker = item.get_closest_marker("timeout")
    limit = int(marker.args[0]) if marker else DEFAULT_TEST_TIMEOUT

    def on_alarm(signum, frame):
        raise TimeoutError(f"test exceeded its {limit} s limit")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attaches the broker's stderr to a failing test's report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        b = _current.get(item.module.__name__)
        if b is not None:
            rep.sections.append(("broker stderr (tail)", b.stderr_tail(3000)))
