#!/usr/bin/python3
"""Journeys' cost at one record per request: a broker (`kafkaiq serve`) fed
RATE records/s for SECONDS by confluent-kafka, one record a Produce request
(batch.num.messages=1, one partition, acks=1), with journeys off, on (the
ring and its journal), on without the journal, and on with OTLP export to a
receiver that takes everything; each configuration ROUNDS times,
alternating, and per configuration the broker's median CPU (user + system,
from /proc, as % of one core) and its cost over journeys off. Prints
figures; asserts nothing. The machine's other load moves them: compare
rows of one run.

  scripts/bench_journeys.py [--rate 5000] [--seconds 10] [--rounds 3]
                            [--bin build/kafkaiq] [--only NAME,...]
                            [--before OLDER_KAFKAIQ]
"""

import argparse
import http.server
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from confluent_kafka import Producer

ROOT = pathlib.Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def run(binary, overrides, rate, seconds):
    work = tempfile.mkdtemp(prefix="kiq-bench-journeys-")
    port = free_port()
    cmd = [binary, "serve", str(ROOT / "config" / "server.properties"),
           "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={work}/data"]
    for kv in overrides:
        cmd += ["--override", kv]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"broker did not start: {' '.join(cmd)}")
                time.sleep(0.05)
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "1", "linger.ms": 0,
                      "batch.num.messages": 1, "queue.buffering.max.messages": 1000000, "log_level": 0})
        for _ in range(200):  # the topic made and its leader known before the clock starts
            p.produce("bench-journeys", b"warm", partition=0)
        p.flush(30)
        start_cpu, start = cpu_seconds(proc.pid), time.monotonic()
        sent = 0
        total = rate * seconds
        while sent < total:
            due = int((time.monotonic() - start) * rate) + 1
            while sent < min(due, total):
                p.produce("bench-journeys", b"x" * 100, partition=0)
                sent += 1
            p.poll(0)
            time.sleep(0.001)
        p.flush(30)
        elapsed = time.monotonic() - start
        used = cpu_seconds(proc.pid) - start_cpu
        return 100.0 * used / elapsed, sent / elapsed
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=str(ROOT / "build" / "kafkaiq"))
    ap.add_argument("--only", default="")
    ap.add_argument("--before", help="another kafkaiq (an older build): its journeys off and on join the rotation")
    a = ap.parse_args()
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    configs = [
        ("off", a.bin, ["kafkaiq.journey.enable=false"]),
        ("on", a.bin, ["kafkaiq.journey.enable=true"]),
        ("on-no-journal", a.bin, ["kafkaiq.journey.enable=true", "kafkaiq.journey.retention.bytes=0"]),
        ("on-otlp", a.bin, ["kafkaiq.journey.enable=true",
                            f"kafkaiq.otlp.endpoint=http://127.0.0.1:{sink.server_address[1]}"]),
    ]
    if a.only:
        configs = [c for c in configs if c[0] in a.only.split(",")]
    if a.before:
        configs += [("before-off", a.before, ["kafkaiq.journey.enable=false"]),
                    ("before-on", a.before, ["kafkaiq.journey.enable=true"])]
    cpu = {name: [] for name, _, _ in configs}
    print(f"# {a.bin}" + (f" and {a.before}" if a.before else "")
          + f": {a.rate} records/s, one a request, {a.seconds} s, {a.rounds} rounds")
    for r in range(a.rounds):
        for name, binary, overrides in configs:
            pct, got = run(binary, overrides, a.rate, a.seconds)
            cpu[name].append(pct)
            print(f"round {r + 1} {name:14s} broker CPU {pct:6.1f} %  ({got:.0f} records/s)", flush=True)
    for name, _, _ in configs:
        # each build against its own journeys-off
        ref = "before-off" if name.startswith("before-") else configs[0][0]
        m, base = statistics.median(cpu[name]), statistics.median(cpu[ref])
        print(f"median {name:14s} broker CPU {m:6.1f} %  {100.0 * (m - base) / base:+6.1f} % over {ref}")
    sink.shutdown()


if __name__ == "__main__":
    sys.exit(main())
