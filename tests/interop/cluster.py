"""A replicated kafkaiq cluster for the interop suite: one `build/kafkaiq
serve` process per broker, broker 0 the controller quorum's lone voter
unless a test names more voters (combined nodes).

Each broker gets a free client (PLAINTEXT) port, a free control-plane port
and its own log dir; the voters' control planes are the quorum. A broker
can be stopped (SIGTERM, must exit 0), killed (SIGKILL), paused (SIGSTOP),
resumed (SIGCONT) and started again on the same ports and log dir.

The cluster's state is read with a hand-encoded Metadata v7 request (it
carries leader epochs and offline replicas, which confluent-kafka's
list_topics leaves out), and each replica's log straight from its segment
files (RecordBatch v2 headers: base offset, leader epoch, CRC).
"""

import os
import pathlib
import signal
import struct
import subprocess
import time

import kiq_wire as kw
from conftest import (BROKER_BIN, CONFIG, READY_TIMEOUT, OwnedProcess, free_port, free_port_block,
                      terminate, wait_port)

API_METADATA = 3
HOST = "127.0.0.1"
CONTROLLER_ID = 0

REGISTER_TIMEOUT = 20.0  # every broker sees all the others in its Metadata

# Fast failure detection, so the failover tests stay short.
CLUSTER_OVERRIDES = (
    "default.replication.factor=3",
    "offsets.topic.replication.factor=3",
    "offsets.topic.num.partitions=6",
    "min.insync.replicas=2",
    # a paused follower lags out of the ISR (leader's AlterPartition) before
    # its missed heartbeats fence it (the controller's doing)
    "broker.session.timeout.ms=4500",
    "broker.heartbeat.interval.ms=500",
    "replica.lag.time.max.ms=2000",
    "replica.fetch.wait.max.ms=100",
    "log.segment.bytes=262144",
    "num.partitions=3",
)


def free_ports(n):
    """n distinct free ports."""
    ports = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def wait_until(fn, timeout, what, interval=0.1):
    """Polls fn() until it returns something truthy; that value, or an
    AssertionError naming what and fn's last value (or exception)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except (OSError, AssertionError, ConnectionError) as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout} s (last: {last})")
        time.sleep(interval)


# ---------------------------------------------------------------- Metadata v7

def metadata_v7_body(topics=None):
    return kw.array(None if topics is None else [kw.string(t) for t in topics]) + struct.pack(">b", 0)


def parse_metadata_v7(payload):
    """{"brokers": {id: (host, port)}, "controller": id,
        "topics": {name: {"error": e, "partitions": {idx: {...}}}}}
    with each partition as error, leader, leader_epoch, replicas, isr, offline."""
    r = kw.Reader(payload)
    r.int32()  # throttle_time_ms
    brokers = {}
    for node, host, port, _rack in r.array(lambda r: (r.int32(), r.string(), r.int32(), r.string())):
        brokers[node] = (host, port)
    r.string()  # cluster_id
    controller = r.int32()

    def ints(r):
        return r.array(lambda r: r.int32())

    def part(r):
        err, idx, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
        replicas, isr, offline = ints(r), ints(r), ints(r)
        return idx, {"error": err, "leader": leader, "leader_epoch": epoch,
                     "replicas": replicas, "isr": isr, "offline": offline}

    def topic(r):
        err, name = r.int16(), r.string()
        r.int8()  # is_internal
        return name, {"error": err, "partitions": dict(r.array(part))}

    topics = dict(r.array(topic))
    return {"brokers": brokers, "controller": controller, "topics": topics}


def metadata(host, port, topics=None, timeout=5.0):
    with kw.Conn(host, port, timeout=timeout) as c:
        return parse_metadata_v7(c.call(API_METADATA, 7, metadata_v7_body(topics)))


# ---------------------------------------------------------------- FindCoordinator

def find_coordinator(broker, txn_id):
    """The transaction coordinator's node id as broker (.host, .port) answers
    FindCoordinator v1 (key type 1); None while it has none."""
    with kw.Conn(broker.host, broker.port) as c:
        r = kw.Reader(c.call(10, 1, kw.string(txn_id) + struct.pack(">b", 1)))
        r.int32()
        err = r.int16()
        r.string()
        node = r.int32()
    return node if err == 0 else None


def coordinator_of(broker, txn_id, timeout=20):
    """find_coordinator, asked until it answers."""
    def ask():
        node = find_coordinator(broker, txn_id)
        return None if node is None else [node]
    return wait_until(ask, timeout, f"the transaction coordinator of {txn_id}")[0]


# ---------------------------------------------------------------- segment files

def read_batches(partition_dir):
    """[(base_offset, last_offset, leader_epoch, crc)] of the RecordBatch v2
    batches in a partition directory's .log segments, in offset order. A
    trailing partial batch (being written right now) is left out."""
    out = []
    d = pathlib.Path(partition_dir)
    if not d.is_dir():
        return None
    for seg in sorted(d.glob("*.log"), key=lambda p: int(p.stem)):
        data = seg.read_bytes()
        pos = 0
        while pos + 21 <= len(data):
            base, length, epoch, magic, crc = struct.unpack_from(">qiibI", data, pos)
            if length <= 0 or pos + 12 + length > len(data):
                break
            assert magic == 2, f"{seg}: magic {magic} at byte {pos}"
            last_delta = struct.unpack_from(">i", data, pos + 23)[0]
            out.append((base, base + last_delta, epoch, crc))
            pos += 12 + length
    return out


def log_end(batches):
    return batches[-1][1] + 1 if batches else 0


# ---------------------------------------------------------------- processes

class ClusterBroker:
    """One kafkaiq process of a Cluster; its ports and log dir survive
    restarts. A controller-only node (process.roles=controller) has no
    client port: it listens on its control port alone."""

    def __init__(self, cluster, node_id, port, control_port, http_port, role=None):
        self.cluster = cluster
        self.id = node_id
        self.role = role
        self.port = port if role != "controller" else control_port
        self.control_port = control_port
        self.http = f"{HOST}:{http_port}"  # its HTTP listener
        self.host = HOST
        self.workdir = cluster.workdir / f"b{node_id}"
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.paused = False
        self.starts = 0
        self.stderr_path = None

    @property
    def bootstrap(self):
        return f"{self.host}:{self.port}"

    def command(self):
        c = self.cluster
        listeners = (f"{c.listener}://{self.host}:{self.port}," if self.role != "controller" else "") + \
            f"CONTROLLER://{self.host}:{self.control_port}"
        cmd = [str(BROKER_BIN), "serve", str(CONFIG),
               "--override", f"broker.id={self.id}",
               "--override", f"listeners={listeners}",
               "--override", "control.plane.listener.name=CONTROLLER",
               "--override", f"controller.quorum.voters={c.voters_spec}",
               "--override", f"log.dirs={self.data_dir}",
               "--override", f"kafkaiq.http.listener={self.http}"]
        if self.role:
            cmd += ["--override", f"process.roles={self.role}"]
        for kv in c.overrides:
            cmd += ["--override", kv]
        return cmd

    def start(self):
        assert not self.alive(), f"broker {self.id} already running"
        self.starts += 1
        self.paused = False
        self.stderr_path = self.workdir / f"broker-{self.starts}.stderr"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err, cwd=self.workdir)
        if not wait_port(self.host, self.port, READY_TIMEOUT, self.proc):
            code = self.proc.poll()
            if code is None:
                self.proc.kill()
                self.proc.wait()
            raise AssertionError(f"broker {self.id} not accepting on {self.bootstrap} within "
                                 f"{READY_TIMEOUT} s (exit code {code})\n{self.stderr_tail()}")

    def alive(self):
        proc = self.proc  # other threads read this while the test kills or restarts
        return proc is not None and proc.poll() is None

    def stop(self):
        """SIGTERM; asserts a clean exit 0 within STOP_TIMEOUT."""
        if self.proc is None:
            return
        self.resume()
        proc, self.proc = self.proc, None
        terminate(proc, f"broker {self.id}", self.stderr_tail)

    def kill(self):
        """SIGKILL, waits for the process to be gone."""
        assert self.alive(), f"broker {self.id} is not running"
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        assert self.proc.returncode == -signal.SIGKILL
        self.proc = None
        self.paused = False

    def pause(self):
        assert self.alive()
        self.proc.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.paused and self.alive():
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def restart(self):
        self.stop()
        self.start()

    def metadata(self, topics=None, timeout=5.0):
        return metadata(self.host, self.port, topics, timeout)

    def partition_dir(self, topic, partition):
        return self.data_dir / f"{topic}-{partition}"

    def batches(self, topic, partition):
        return read_batches(self.partition_dir(topic, partition))

    def stderr_tail(self, limit=4000):
        if self.stderr_path is None or not self.stderr_path.exists():
            return f"--- broker {self.id}: no stderr"
        data = self.stderr_path.read_bytes()[-limit:].decode(errors="replace")
        return f"--- broker {self.id} ({self.stderr_path}):\n{data}"


class Cluster:
    """n brokers in n processes; the controller quorum's voters are
    broker 0 alone unless voters names more (combined nodes), or, with
    controllers, that many controller-only processes (ids n, n + 1, ...)."""

    listener = "PLAINTEXT"  # the client listener's name (and protocol, by Kafka's default map)

    def __init__(self, workdir, n=3, overrides=CLUSTER_OVERRIDES, voters=(CONTROLLER_ID,), controllers=0):
        self.workdir = pathlib.Path(workdir)
        self.overrides = list(overrides)
        ports = free_ports(3 * (n + controllers))
        role = "broker" if controllers else None
        self.brokers = [ClusterBroker(self, i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], role)
                        for i in range(n)]
        self.controllers = [ClusterBroker(self, i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], "controller")
                            for i in range(n, n + controllers)]
        self.voters = tuple(c.id for c in self.controllers) if controllers else tuple(voters)
        nodes = {b.id: b for b in self.brokers + self.controllers}
        self.voters_spec = ",".join(f"{v}@{HOST}:{nodes[v].control_port}" for v in self.voters)

    def __getitem__(self, i):
        return self.brokers[i]

    def __len__(self):
        return len(self.brokers)

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self):
        for b in self.controllers + self.brokers:
            b.start()
        self.wait_registered()

    def stop(self):
        """Stops every broker, the controller last; asserts clean exits."""
        for b in self.brokers + self.controllers:
            b.resume()
        problems = []
        for b in sorted(self.brokers + self.controllers, key=lambda b: b.id in self.voters):
            try:
                b.stop()
            except AssertionError as e:
                problems.append(str(e))
        assert not problems, "\n".join(problems)

    def alive(self):
        return [b for b in self.brokers if b.alive() and not b.paused]

    def any_alive(self):
        live = self.alive()
        assert live, "no broker running"
        return live[0]

    def metadata(self, topics=None, via=None):
        b = self.brokers[via] if via is not None else self.any_alive()
        return b.metadata(topics)

    def wait_registered(self, timeout=REGISTER_TIMEOUT):
        """Until every running broker's Metadata lists all running brokers
        and names one controller, a voter."""
        want = {b.id for b in self.alive()}

        def ok():
            named = set()
            for b in self.alive():
                md = b.metadata()
                named.add(md["controller"] if set(md["brokers"]) == want else None)
            if self.controllers:  # each broker names a broker, which forwards
                return None not in named
            return len(named) == 1 and named.pop() in self.voters
        wait_until(ok, timeout, f"brokers {sorted(want)} registered and seen by all")

    def partitions(self, topic, via=None):
        md = self.metadata([topic], via)
        t = md["topics"].get(topic)
        assert t is not None and t["error"] == 0, f"topic {topic}: {t}"
        return t["partitions"]

    def create_topic(self, topic, partitions, rf=3, timeout=20.0):
        """Creates topic with confluent's AdminClient; waits until every
        running broker's Metadata shows each partition with a leader and the
        full ISR."""
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": self.bootstrap})
        fut = a.create_topics([NewTopic(topic, partitions, rf)],
                              operation_timeout=10, request_timeout=15)[topic]
        fut.result(timeout=20)
        return self.wait_healthy(topic, partitions, rf, timeout)

    def wait_healthy(self, topic, partitions, rf=3, timeout=20.0, via_all=True):
        """Every partition has a leader and an ISR of rf; returns them."""
        def ok():
            parts = None
            for b in (self.alive() if via_all else [self.any_alive()]):
                p = b.metadata([topic])["topics"].get(topic)
                if p is None or p["error"] != 0 or len(p["partitions"]) != partitions:
                    return False
                for st in p["partitions"].values():
                    if st["leader"] < 0 or len(st["isr"]) != rf or len(st["replicas"]) != rf:
                        return False
                parts = parts or p["partitions"]
            return parts
        return wait_until(ok, timeout, f"topic {topic}: {partitions} partitions with a leader "
                                       f"and an ISR of {rf}")

    def leader(self, topic, partition, via=None):
        return self.partitions(topic, via)[partition]["leader"]

    def wait_isr(self, topic, partition, want, timeout, via=None):
        """Until the partition's ISR (from Metadata) is exactly the set want."""
        want = set(want)

        def ok():
            st = self.partitions(topic, via)[partition]
            return st if set(st["isr"]) == want else False
        return wait_until(ok, timeout, f"{topic}-{partition}: ISR {sorted(want)}")

    def replica_logs(self, topic, partition, replicas):
        return {r: self.brokers[r].batches(topic, partition) for r in replicas}

    def wait_replicas_identical(self, topic, partition, replicas, timeout):
        """Until every replica's segment files hold the same batches (base
        offset, last offset, leader epoch, CRC) at the same offsets."""
        def ok():
            logs = self.replica_logs(topic, partition, replicas)
            first = logs[replicas[0]]
            if first is None or any(l != first for l in logs.values()):
                return False
            return logs
        try:
            return wait_until(ok, timeout, "", interval=0.3)
        except AssertionError:
            logs = self.replica_logs(topic, partition, replicas)
            raise AssertionError(f"{topic}-{partition}: replicas differ after {timeout} s: "
                                 + describe_divergence(logs)) from None

    def stderr_tails(self, limit=4000):
        return "\n".join(b.stderr_tail(limit) for b in self.brokers + self.controllers)


def describe_divergence(logs):
    """A short account of how replica logs ({replica: batches}) differ."""
    lines = []
    ref_id = min(logs)
    ref = logs[ref_id] or []
    for r, batches in sorted(logs.items()):
        if batches is None:
            lines.append(f"replica {r}: no partition directory")
            continue
        first_diff = next((i for i, (a, b) in enumerate(zip(ref, batches)) if a != b), None)
        lines.append(f"replica {r}: {len(batches)} batches, log end {log_end(batches)}"
                     + ("" if first_diff is None else
                        f", first differs from replica {ref_id} at batch {first_diff}: "
                        f"{batches[first_diff]} vs {ref[first_diff]}"))
    return "; ".join(lines)


class OneProcessCluster(OwnedProcess):
    """`kafkaiq serve --brokers n`: a whole cluster in one process, broker i
    serving clients on base + i and the controller's requests on
    base + 100 + i, its data under workdir/data/broker-i. Ready once every
    broker's Metadata lists all n."""

    managed = True
    host = HOST
    label = "cluster"

    def __init__(self, workdir, n=3, overrides=()):
        self.workdir = pathlib.Path(workdir)
        self.n = n
        self.overrides = list(overrides)
        self.base = free_port_block(list(range(n)) + [100 + i for i in range(n)] + [200 + i for i in range(n)])
        self.port = self.base
        self.http = [f"{HOST}:{self.base + 200 + i}" for i in range(n)]  # each broker's HTTP listener
        self.data_dir = self.workdir / "data"
        self.stderr_path = self.workdir / "cluster.stderr"
        self.proc = None

    @property
    def bootstrap(self):
        return ",".join(f"{HOST}:{self.base + i}" for i in range(self.n))

    def command(self):
        cmd = [str(BROKER_BIN), "serve", "--brokers", str(self.n), str(CONFIG),
               "--override", f"listeners=PLAINTEXT://{HOST}:{self.base}",
               "--override", f"log.dirs={self.data_dir}",
               "--override", f"kafkaiq.http.listener={HOST}:{self.base + 200}"]
        for kv in self.overrides:
            cmd += ["--override", kv]
        return cmd

    def start(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         cwd=self.workdir)
        for i in range(self.n):
            if not wait_port(HOST, self.base + i, READY_TIMEOUT, self.proc):
                self.stop()
                raise AssertionError(f"broker {i} not accepting on {self.base + i}\n{self.stderr_tail()}")
        for i in range(self.n):
            wait_until(lambda: len(metadata(HOST, self.base + i)["brokers"]) == self.n, REGISTER_TIMEOUT,
                       f"broker {i} lists {self.n} brokers")


