"""One `kafkaiq serve` process on free ports, found through its ready file,
and its control API over HTTP. Only the standard library."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


class KafkaIQError(RuntimeError):
    """The broker did not start, or the control API refused a call (its
    message is the broker's)."""


def find_binary():
    """$KAFKAIQ_BIN, else `kafkaiq` on PATH."""
    path = os.environ.get("KAFKAIQ_BIN") or shutil.which("kafkaiq")
    if not path:
        raise KafkaIQError("kafkaiq not found: install it (make install, or the Debian package) "
                           "or set KAFKAIQ_BIN")
    return path


class KafkaIQ:
    """A running `kafkaiq serve`: `bootstrap` (host:port,...), `brokers`
    (each one's id, host, port, control_port, http), `controllers` (the
    controller-only nodes with controllers=N: id, host, control_port, http)
    and `http` (broker 0's control API). Use as a context manager, or call
    stop()."""

    def __init__(self, brokers=1, overrides=None, binary=None, start_timeout=30.0, controllers=0):
        self.binary = binary or find_binary()
        self.dir = tempfile.mkdtemp(prefix="kafkaiq-")
        ready = os.path.join(self.dir, "ready.json")
        args = [self.binary, "serve", "--ready-file", ready,
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", "kafkaiq.http.listener=127.0.0.1:0",
                "--override", "log.dirs=" + os.path.join(self.dir, "data")]
        if brokers > 1 or controllers:
            args[2:2] = ["--brokers", str(brokers)] + (["--controllers", str(controllers)] if controllers else [])
        for key, value in (overrides or {}).items():
            args += ["--override", "%s=%s" % (key, value)]
        self._log = open(os.path.join(self.dir, "kafkaiq.log"), "wb")
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = self.started_at + start_timeout
        while not os.path.exists(ready):
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = self.log()
                self.stop()
                raise KafkaIQError("kafkaiq serve did not start: " + log[-2000:])
            time.sleep(0.005)
        with open(ready) as f:
            info = json.load(f)
        self.ready_after = time.monotonic() - self.started_at
        self.bootstrap = info["bootstrap"]
        self.brokers = info["brokers"]
        self.controllers = info.get("controllers", [])
        self.http = info["http"]
        self.pid = info["pid"]

    def log(self):
        """What the brokers logged so far."""
        with open(os.path.join(self.dir, "kafkaiq.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def _call(self, method, path, body=None, broker=0):
        url = "http://%s%s" % (self.brokers[broker]["http"], path)
        timeout = 30 + (int(path.split("timeout_ms=")[1]) / 1000 if "timeout_ms=" in path else 0)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read()).get("error", "")
            except ValueError:
                message = ""
            raise KafkaIQError("%s %s: %d %s" % (method, path, e.code, message)) from None

    def fault(self, broker=0, **rule):
        """Adds a fault rule (api, version, min_version, max_version,
        client_id, topic, partition, error, delay_ms, action, times, after,
        probability, seed) to one broker; its id."""
        return self._call("POST", "/api/faults", rule, broker)["id"]

    def faults(self, broker=0):
        """One broker's rules, each with its matched and fired counts."""
        return self._call("GET", "/api/faults", None, broker)["faults"]

    def remove_fault(self, fault_id=None, broker=0):
        """One rule, or every rule of the broker when fault_id is None."""
        path = "/api/faults" if fault_id is None else "/api/faults/%d" % fault_id
        return self._call("DELETE", path, None, broker)["removed"]

    def kill(self, broker_id, via=0):
        """Kills a broker (no clean shutdown); returns at once, wait() for it."""
        return self._call("POST", "/api/brokers/%d/kill" % broker_id, None, via)

    def restart(self, broker_id, via=0):
        """Stops a broker cleanly if it runs, then starts it on the same ports."""
        return self._call("POST", "/api/brokers/%d/restart" % broker_id, None, via)

    def pause(self, broker_id, via=0):
        """The broker stops heartbeating and replicating, as SIGSTOP looks to the others."""
        return self._call("POST", "/api/brokers/%d/pause" % broker_id, None, via)

    def resume(self, broker_id, via=0):
        return self._call("POST", "/api/brokers/%d/resume" % broker_id, None, via)

    def link(self, leader, follower, action, delay_ms=None, via=0):
        """Replication from leader to follower: "cut", "heal", "slow"
        (delay_ms per fetch) or "drop" (fetches unanswered)."""
        body = {"from": leader, "to": follower, "action": action}
        if delay_ms is not None:
            body["delay_ms"] = delay_ms
        return self._call("POST", "/api/links", body, via)

    def move_leader(self, topic, partition, to, via=0):
        """Replica `to` leads the partition from now on (it goes first in
        the replicas); wait(leader=to) for the brokers to know it."""
        return self._call("POST", "/api/leaders", {"topic": topic, "partition": partition, "to": to}, via)

    def elect_preferred(self, via=0):
        """Every partition's first replica leads again where it can; how many moved."""
        return self._call("POST", "/api/leaders", {"preferred": True}, via)["moved"]

    def wait(self, timeout_ms=10000, via=0, **condition):
        """Until a condition holds: broker=ID, state="ready"|"running"|"stopped";
        topic=T, partition=P with leader="any"|ID, isr=N (exactly) or
        high_watermark=N (at least);
        group=G, state="Stable". Raises KafkaIQError when the bound passes."""
        query = "&".join("%s=%s" % (k, urllib.parse.quote(str(v))) for k, v in
                         dict(condition, timeout_ms=timeout_ms).items())
        return self._call("GET", "/api/wait?" + query, None, via)

    def advance_clock(self, ms, via=0):
        """Moves the process's clock ms ahead (started with
        overrides={"kafkaiq.clock": "manual"}): retention, rolls, session and
        transaction timeouts and timestamps follow it."""
        return self._call("POST", "/api/clock", {"advance_ms": ms}, via)

    def state(self, broker=0):
        """What /api/state shows for one broker."""
        return self._call("GET", "/api/state", None, broker)

    def stop(self):
        """SIGTERM (a clean shutdown), SIGKILL after 20 s; the data goes."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
