"""What one peer may take of a broker: every limit bounded, named and counted.

Each test starts its own broker process with small limits and attacks it
over raw sockets the way a hostile or broken peer would: requests declared
huge and sent slowly, connections that never speak, too many connections
from one address or in all, the open files limit. Each checks the bound
holds (RSS, closed connections, refused ones), the metric named after the
limit counts it, and the broker serves a well-behaved client afterwards.
"""

import json
import pathlib
import resource
import selectors
import socket
import struct
import time
import urllib.request

import pytest

import kiq_clients as kc
import kiq_wire as w
from conftest import Broker

MiB = 1024 * 1024


def wait_until(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    assert cond(), f"not within {timeout} s: {what}"


def metrics(broker):
    with urllib.request.urlopen(f"http://{broker.http}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def closed(broker, limit):
    return metrics(broker).get(f'kafkaiq_connections_closed_total{{limit="{limit}"}}', 0)


def rss_bytes(broker):
    with open(f"/proc/{broker.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def serves(broker, source=None, timeout=10.0):
    """An ApiVersions answer on a new connection (from source, an address)."""
    try:
        s = socket.create_connection((broker.host, broker.port), timeout=timeout,
                                     source_address=(source, 0) if source else None)
        with s:
            s.sendall(w.frame(w.request_header(w.API_API_VERSIONS, 0, 1)))
            return len(s.recv(4)) == 4
    except OSError:  # refused or closed at once: not served
        return False


def processors_bytes_in(broker):
    with urllib.request.urlopen(f"http://{broker.http}/api/state", timeout=10) as r:
        return sum(p["bytes_in"] for p in json.load(r)["processors"])


def raise_open_files(need):
    """Raises this process's soft open files limit (the broker started next
    inherits it) to at least need; skips when the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"needs {need} open files, the hard limit (ulimit -Hn) is {hard}")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def open_once_used(broker, n, batch=500, timeout=20):
    """n connections that each made one ApiVersions request and read its
    answer, left open; opened batch at a time with non-blocking sockets."""
    request = w.frame(w.request_header(w.API_API_VERSIONS, 0, 1))
    socks = []
    sel = selectors.DefaultSelector()
    try:
        while len(socks) < n:
            got = {}
            for _ in range(min(batch, n - len(socks))):
                s = socket.create_connection((broker.host, broker.port), timeout=5)
                s.setblocking(False)
                socks.append(s)
                s.send(request)
                got[s] = b""
                sel.register(s, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout
            while got and time.monotonic() < deadline:
                for key, _ in sel.select(0.5):
                    s = key.fileobj
                    data = s.recv(65536)
                    got[s] += data
                    assert data, f"once-used connection {socks.index(s)} closed by the broker"
                    answer = got[s]
                    if len(answer) >= 4 and len(answer) >= 4 + struct.unpack(">i", answer[:4])[0]:
                        sel.unregister(s)
                        del got[s]
            unanswered = len(got)
            assert unanswered == 0, (f"{unanswered} of the last {batch} once-used connections not answered "
                                     f"within {timeout} s ({len(socks) - unanswered} answered)")
    except BaseException:
        for s in socks:
            s.close()
        raise
    finally:
        sel.close()
    return socks


def served_within(broker, bound):
    """Seconds a new client took to get ApiVersions and Metadata answered;
    fails past bound."""
    began = time.monotonic()
    try:
        with w.Conn(broker.host, broker.port, timeout=bound) as c:
            err, _ = w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 0, b""))
            assert err == w.ERR_NONE
            md = w.parse_metadata_v1(c.call(w.API_METADATA, 1, w.metadata_v1_body([])))
            assert md["brokers"], md
    except socket.timeout:
        raise AssertionError(f"a new client was not served within {bound} s") from None
    took = time.monotonic() - began
    assert took <= bound, f"a new client took {took:.2f} s to be served"
    return took


def start(tmp_path, *overrides):
    b = Broker(tmp_path, overrides)
    b.start()
    return b


def test_declared_requests_are_held_to_the_memory_pool(tmp_path):
    """200 connections each declaring a 100 MiB request and sending 5 MiB
    of it: the broker reads only what queued.max.request.bytes allows, RSS
    stays under the pool plus a little, the senders are closed by the read
    timeout, and the pool drains back to nothing."""
    pool = 32 * MiB
    b = start(tmp_path, f"queued.max.request.bytes={pool}", "kafkaiq.request.read.timeout.ms=3000")
    try:
        assert serves(b)
        base = rss_bytes(b)
        socks = []
        for _ in range(200):
            s = socket.create_connection((b.host, b.port), timeout=5)
            s.setblocking(False)
            s.send(struct.pack(">i", 100 * MiB))
            socks.append([s, 5 * MiB])
        chunk = b"\0" * (256 * 1024)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline and any(left > 0 for _, left in socks):
            for entry in socks:
                s, left = entry
                if left <= 0:
                    continue
                try:
                    entry[1] -= s.send(chunk[:min(left, len(chunk))])
                except (BlockingIOError, ConnectionError):
                    pass
        m = metrics(b)
        used = m["kafka_network_socketserver_memorypoolused"]
        assert used <= pool, m
        assert m["kafkaiq_memory_pool_refused_total"] > 0, "the pool never ran out"
        grown = rss_bytes(b) - base
        print(f"\n200 x 100 MiB declared, 5 MiB sent each: RSS +{grown / MiB:.1f} MiB, pool used "
              f"{used / MiB:.1f} of {pool / MiB:.0f} MiB, starved {m['kafkaiq_connections_starved']:.0f}")
        # the pool, plus allocator slack and the scrape's own memory
        assert grown < pool + 24 * MiB, f"RSS grew by {grown / MiB:.0f} MiB with a {pool / MiB:.0f} MiB pool"
        wait_until(lambda: closed(b, "kafkaiq.request.read.timeout.ms") >= 200, 30, "the slow senders closed")
        wait_until(lambda: metrics(b)["kafka_network_socketserver_memorypoolused"] == 0, 10, "the pool drained")
        for s, _ in socks:
            s.close()
        assert serves(b)
    finally:
        b.stop()


@pytest.mark.timeout(240)
def test_slow_and_once_used_connections_leave_room_for_new_clients(tmp_path):
    """With the default queued.max.request.bytes, 150 connections trickling
    a partial request and 9,000 that made one request and went idle cost the
    memory pool about what they sent, not a buffer each: a new client is
    served (ApiVersions, Metadata) within 1 s while they are all held."""
    slow, used = 150, 9000
    raise_open_files(slow + used + 500)
    b = start(tmp_path)
    socks = []
    try:
        socks += open_once_used(b, used)
        sent = used * len(w.frame(w.request_header(w.API_API_VERSIONS, 0, 1)))
        # a Metadata request declared 1,000 bytes long, of which the size and a few bytes come
        partial = struct.pack(">i", 1000) + struct.pack(">hhi", w.API_METADATA, 1, 1)
        trickling = []
        for _ in range(slow):
            s = socket.create_connection((b.host, b.port), timeout=5)
            s.sendall(partial)
            trickling.append(s)
        socks += trickling
        sent += slow * len(partial)
        for _ in range(2):  # a byte a second from each, twice
            began = time.monotonic()
            for s in trickling:
                s.sendall(b"x")
            sent += slow
            time.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
        wait_until(lambda: processors_bytes_in(b) >= sent, 10, "the broker read every byte sent")
        took = served_within(b, 1.0)
        m = metrics(b)
        used_bytes = m["kafka_network_socketserver_memorypoolused"]
        print(f"\n{used} once-used and {slow} trickling connections held: a new client served in "
              f"{took * 1000:.0f} ms, memory pool used {used_bytes / 1024:.0f} KiB")
        assert used_bytes < 1 * MiB, f"{used_bytes / MiB:.1f} MiB of the pool held for {sent} bytes sent"
        assert m["kafkaiq_connections_starved"] == 0, m
    finally:
        for s in socks:
            s.close()
        b.stop()


def test_idle_and_half_sent_requests_are_closed(tmp_path):
    b = start(tmp_path, "connections.max.idle.ms=1500", "kafkaiq.request.read.timeout.ms=1000")
    try:
        silent = w.Conn(b.host, b.port)
        # a byte every 200 ms keeps it from being idle, never makes a request
        slow = w.Conn(b.host, b.port)
        slow.send_raw(struct.pack(">i", 100))
        busy = w.Conn(b.host, b.port)
        deadline = time.monotonic() + 4
        slow_open = True
        while time.monotonic() < deadline:
            err, _ = w.parse_api_versions_v0(busy.call(w.API_API_VERSIONS, 0, b""))
            assert err == w.ERR_NONE
            if slow_open:
                try:
                    slow.send_raw(b"x")
                except (BrokenPipeError, ConnectionResetError):
                    slow_open = False
            time.sleep(0.2)
        assert silent.closed_by_peer(2), "a silent connection outlived connections.max.idle.ms"
        assert not slow_open or slow.closed_by_peer(2), "a dribbled request outlived the read timeout"
        m = metrics(b)
        assert m['kafkaiq_connections_closed_total{limit="connections.max.idle.ms"}'] >= 1, m
        assert m['kafkaiq_connections_closed_total{limit="kafkaiq.request.read.timeout.ms"}'] >= 1, m
        busy.close()
        assert "kafkaiq.request.read.timeout.ms" in b.stderr_tail(20000)
    finally:
        b.stop()


def test_connections_per_address_with_overrides(tmp_path):
    b = start(tmp_path, "max.connections.per.ip=2", "max.connections.per.ip.overrides=127.0.0.2:4")
    try:
        for source, allowed in (("127.0.0.1", 2), ("127.0.0.2", 4)):
            # the readiness probe's (or the last round's) connections hold slots until closed
            wait_until(lambda: metrics(b)["kafkaiq_connections_open"] == 0, 10, "no connection open")
            held = [socket.create_connection((b.host, b.port), source_address=(source, 0)) for _ in range(allowed)]
            over = w.Conn.__new__(w.Conn)
            over.sock = socket.create_connection((b.host, b.port), source_address=(source, 0))
            assert over.closed_by_peer(5), f"connection {allowed + 1} from {source} was kept"
            held.pop().close()
            wait_until(lambda: serves(b, source), 5, f"a slot from {source} given back")
            for s in held:
                s.close()
        assert metrics(b)['kafkaiq_connections_closed_total{limit="max.connections.per.ip"}'] >= 2
        assert "max.connections.per.ip" in b.stderr_tail(20000)
    finally:
        b.stop()


def test_max_connections_makes_new_ones_wait(tmp_path):
    b = start(tmp_path, "max.connections=3")
    try:
        wait_until(lambda: metrics(b)["kafkaiq_connections_open"] == 0, 10, "the readiness probe closed")
        held = [w.Conn(b.host, b.port) for _ in range(3)]
        for c in held:
            assert w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 0, b""))[0] == w.ERR_NONE
        waiting = socket.create_connection((b.host, b.port), timeout=1)  # the backlog takes it
        waiting.sendall(w.frame(w.request_header(w.API_API_VERSIONS, 0, 1)))
        with pytest.raises(socket.timeout):
            waiting.recv(4)
        assert metrics(b)["kafkaiq_connections_open"] == 3
        held.pop().close()
        waiting.settimeout(5)
        assert len(waiting.recv(4)) == 4, "the waiting connection was not served once a slot freed"
        waiting.close()
        for c in held:
            c.close()
    finally:
        b.stop()


class LimitedBroker(Broker):
    """A broker started with an open files limit of nofile."""

    def __init__(self, workdir, nofile):
        super().__init__(workdir)
        self.nofile = nofile

    def command(self):
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", "--"] + super().command()


def test_accept_does_not_wedge_at_the_open_files_limit(tmp_path):
    b = start(tmp_path / "count")
    in_use = len(list(pathlib.Path(f"/proc/{b.proc.pid}/fd").iterdir()))
    b.stop()
    b = LimitedBroker(tmp_path / "limited", in_use + 16)
    b.start()
    try:
        held = []
        refused = 0
        for _ in range(40):
            c = w.Conn.__new__(w.Conn)
            c.sock = socket.create_connection((b.host, b.port), timeout=5)
            if c.closed_by_peer(0.3):
                refused += 1
                c.sock.close()
            else:
                held.append(c)
        assert refused > 0, "every connection was kept past the open files limit"
        assert held, "no connection was kept at all"
        for c in held:
            c.sock.close()
        wait_until(lambda: serves(b), 10, "new connections served once descriptors freed")
        assert metrics(b)['kafkaiq_connections_closed_total{limit="open files"}'] >= refused
        assert "ulimit -n" in b.stderr_tail(20000)
    finally:
        b.stop()


def test_malformed_frames_are_logged_at_a_bounded_rate(tmp_path):
    b = start(tmp_path)
    try:
        for _ in range(50):
            c = w.Conn(b.host, b.port)
            c.send_raw(struct.pack(">i", -5))
            assert c.closed_by_peer(5)
            c.close()
        assert serves(b)
        lines = [ln for ln in b.stderr_tail(200000).splitlines() if "frame size -5" in ln]
        assert len(lines) == 1, f"{len(lines)} lines for 50 bad frames"
    finally:
        b.stop()


def test_refused_requests_are_logged_at_a_bounded_rate(tmp_path):
    """Requests a peer can repeat as fast as it likes, each refused with a
    warning (an unknown api key, an unsupported version, a batch with a
    wrong CRC): a line or two for hundreds of them, not one each."""
    b = start(tmp_path)
    n = 200
    try:
        topic = "bounded-log"
        kc.create_topic(b.bootstrap, topic, 1)
        for api_key, version, flexible in ((9999, 0, False), (w.API_METADATA, 99, True)):
            for _ in range(n):
                with w.Conn(b.host, b.port) as c:
                    c.request(api_key, version, w.metadata_v1_body(), flexible=flexible)
                    assert c.closed_by_peer(5)
        bad = w.corrupt_batch(w.record_batch([(b"k", b"v", [])]))
        with w.Conn(b.host, b.port) as c:
            for _ in range(n):
                res = w.parse_produce_v3(c.call(w.API_PRODUCE, 3, w.produce_v3_body(topic, 0, bad)))
                assert res[(topic, 0)][0] == w.ERR_CORRUPT_MESSAGE
        assert serves(b)
        log = b.stderr_tail(1000000).splitlines()
        for what in ("unknown api key 9999", "unsupported Metadata version 99", f"produce to {topic}-0"):
            lines = [ln for ln in log if what in ln]
            assert 1 <= len(lines) <= 2, f"{len(lines)} lines saying {what!r} for {n} requests"
    finally:
        b.stop()
