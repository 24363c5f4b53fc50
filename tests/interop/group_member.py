"""One consumer-group member as its own process, and the class tests drive it with.

Run as a script (with /usr/bin/python3) it subscribes to one topic with
confluent-kafka or kafka-python, and writes JSON lines to stdout:

    {"ev": "assigned", "parts": [0, 1]}          after every rebalance
    {"ev": "revoked", "parts": [0, 1]}
    {"ev": "rec", "p": 0, "o": 17, "k": "key-00017"}   every record consumed
    {"ev": "commit", "offsets": {"0": 18}, "err": null} every synchronous commit
    {"ev": "exit"}

It commits synchronously after every batch (after --commit-delay-ms), so all
it printed is committed unless a commit line says otherwise, and it leaves
the group and exits 0 when stdin closes or on SIGTERM.
"""

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


# ---------------------------------------------------------------- the member process

def _emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _watch_stop(stop):
    """Stops on SIGTERM or when the parent closes our stdin."""
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def read_stdin():
        # Raw reads: a thread blocked in the buffered reader would hold its
        # lock while the interpreter shuts down after SIGTERM.
        while os.read(sys.stdin.fileno(), 4096):
            pass
        stop.set()

    threading.Thread(target=read_stdin, daemon=True).start()


def run_confluent(args, stop):
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout,
        "heartbeat.interval.ms": max(100, args.session_timeout // 6),
        "partition.assignment.strategy": args.assignor,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000,
    }
    c = Consumer(conf)

    def on_assign(consumer, parts):
        _emit({"ev": "assigned", "parts": sorted(p.partition for p in parts)})

    def on_revoke(consumer, parts):
        _emit({"ev": "revoked", "parts": sorted(p.partition for p in parts)})

    c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while not stop.is_set():
            msgs = c.consume(num_messages=500, timeout=0.2)
            nxt = {}
            for m in msgs:
                if m.error() is not None:
                    _emit({"ev": "error", "what": str(m.error())})
                    continue
                _emit({"ev": "rec", "p": m.partition(), "o": m.offset(),
                       "k": m.key().decode() if m.key() is not None else None})
                nxt[m.partition()] = m.offset() + 1
            if not nxt:
                continue
            if args.commit_delay_ms:
                stop.wait(args.commit_delay_ms / 1000)
            tps = [TopicPartition(args.topic, p, o) for p, o in sorted(nxt.items())]
            try:
                res = c.commit(offsets=tps, asynchronous=False)
                failed = {str(tp.partition): str(tp.error) for tp in res if tp.error}
                ok = {str(tp.partition): tp.offset for tp in res if not tp.error}
                _emit({"ev": "commit", "offsets": ok, "err": failed or None})
            except KafkaException as e:
                _emit({"ev": "commit", "offsets": {}, "err": str(e)})
    finally:
        c.close()


def run_kafka_python(args, stop):
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    assignor = {"range": RangePartitionAssignor,
                "roundrobin": RoundRobinPartitionAssignor}[args.assignor]
    c = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                      client_id=args.name, enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=args.session_timeout,
                      heartbeat_interval_ms=max(100, args.session_timeout // 6),
                      partition_assignment_strategy=[assignor], fetch_max_wait_ms=100,
                      metadata_max_age_ms=2000,
                      request_timeout_ms=max(30000, args.session_timeout + 5000))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            _emit({"ev": "revoked", "parts": sorted(tp.partition for tp in revoked)})

        def on_partitions_assigned(self, assigned):
            _emit({"ev": "assigned", "parts": sorted(tp.partition for tp in assigned)})

    c.subscribe([args.topic], listener=Listener())
    try:
        while not stop.is_set():
            batches = c.poll(timeout_ms=200, max_records=500)
            nxt = {}
            for tp, recs in batches.items():
                for r in recs:
                    _emit({"ev": "rec", "p": r.partition, "o": r.offset,
                           "k": r.key.decode() if r.key is not None else None})
                    nxt[tp] = r.offset + 1
            if not nxt:
                continue
            try:
                c.commit({tp: OffsetAndMetadata(o, "") for tp, o in nxt.items()})
                _emit({"ev": "commit", "offsets": {str(tp.partition): o for tp, o in nxt.items()},
                       "err": None})
            except KafkaError as e:
                _emit({"ev": "commit", "offsets": {}, "err": repr(e)})
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--name", default="kiq-member")
    ap.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
    ap.add_argument("--assignor", default="range")
    ap.add_argument("--session-timeout", type=int, default=10000)
    # A slow member (confluent only): what it printed stays uncommitted this
    # long, so a kill can land between consuming and committing.
    ap.add_argument("--commit-delay-ms", type=int, default=0)
    args = ap.parse_args()
    stop = threading.Event()
    _watch_stop(stop)
    if args.client == "confluent":
        run_confluent(args, stop)
    else:
        run_kafka_python(args, stop)
    _emit({"ev": "exit"})


# ---------------------------------------------------------------- the test side

class Member:
    """A member process this test started; its events are collected as they come.

    Stdout is read by a thread into a queue; pump() moves what arrived into
    the lists, so tests poll conditions with deadlines instead of sleeping.
    """

    def __init__(self, name, argv, cwd=None, stderr_path=None):
        self.name = name
        self.stderr_path = stderr_path
        err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, cwd=cwd or HERE)
        if stderr_path:
            err.close()
        self._q = queue.Queue()
        self.events = []
        self.records = []         # (partition, offset, key)
        self.committed = {}       # partition -> highest successfully committed offset
        self.commit_errors = []
        self.assignment = None    # partitions held now; None before the first assignment
        self.rebalances = 0
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def python(cls, broker, group, topic, name, client="confluent", assignor="range",
               session_timeout=10000, commit_delay_ms=0, stderr_dir=None):
        argv = [PYTHON, os.path.join(HERE, "group_member.py"), "--bootstrap", broker.bootstrap,
                "--group", group, "--topic", topic, "--name", name, "--client", client,
                "--assignor", assignor, "--session-timeout", str(session_timeout),
                "--commit-delay-ms", str(commit_delay_ms)]
        path = os.path.join(stderr_dir, f"{name}.stderr") if stderr_dir else None
        return cls(name, argv, stderr_path=path)

    def _read(self):
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def pump(self):
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return
            if line is None:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                self.events.append({"ev": "junk", "line": line[:200].decode(errors="replace")})
                continue
            self.events.append(ev)
            kind = ev.get("ev")
            if kind == "rec":
                self.records.append((ev["p"], ev["o"], ev["k"]))
            elif kind == "assigned":
                self.assignment = set(ev["parts"])
                self.rebalances += 1
            elif kind == "revoked":
                self.assignment = set()
            elif kind == "commit":
                for p, o in ev["offsets"].items():
                    self.committed[int(p)] = max(o, self.committed.get(int(p), -1))
                if ev["err"]:
                    self.commit_errors.append(ev["err"])

    def alive(self):
        return self.proc.poll() is None

    def stderr_tail(self, limit=3000):
        if not self.stderr_path or not os.path.exists(self.stderr_path):
            return "(no stderr)"
        with open(self.stderr_path, "rb") as f:
            return f.read()[-limit:].decode(errors="replace")

    def describe(self):
        self.pump()
        return (f"{self.name}: alive={self.alive()} assignment={sorted(self.assignment or [])} "
                f"records={len(self.records)} committed={self.committed} "
                f"commit_errors={self.commit_errors[:3]} last events={self.events[-4:]}\n"
                f"  stderr: {self.stderr_tail(1500)}")

    def stop(self, timeout=20.0):
        """Closes stdin (the member leaves the group) and waits; kills if it hangs."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.pump()
        return self.proc.returncode

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait(10)
        self.pump()


def wait_for(cond, timeout, what, members=()):
    """Polls cond() (pumping members' output first) until true or timeout."""
    deadline = time.monotonic() + timeout
    while True:
        for m in members:
            m.pump()
        if cond():
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n" +
                                 "\n".join(m.describe() for m in members))
        time.sleep(0.05)


if __name__ == "__main__":
    main()
