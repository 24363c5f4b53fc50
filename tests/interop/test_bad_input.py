"""Malformed and hostile input over raw sockets.

Each case sends one kind of bad input, checks the broker's answer (a closed
connection or an error code, never appended data), then checks the broker
still serves ApiVersions and Metadata on a new connection.
"""

import select
import socket
import struct
import time

import pytest

import kiq_clients as kc
import kiq_wire as w
from conftest import SOCKET_REQUEST_MAX_BYTES

CLOSE_TIMEOUT = 5.0


def assert_serves(broker):
    """A fresh connection gets normal ApiVersions and Metadata answers."""
    assert broker.alive(), f"broker is not running\n{broker.stderr_tail()}"
    with w.Conn(broker.host, broker.port) as c:
        err, apis = w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 0, b""))
        assert err == w.ERR_NONE
        for key in (w.API_PRODUCE, w.API_LIST_OFFSETS, w.API_METADATA, w.API_API_VERSIONS):
            assert key in apis, f"api {key} not advertised: {sorted(apis)}"
        md = w.parse_metadata_v1(c.call(w.API_METADATA, 1, w.metadata_v1_body()))
        assert any(port == broker.port for _, _, port, _ in md["brokers"]), md["brokers"]


def assert_closed(conn, what):
    assert conn.closed_by_peer(CLOSE_TIMEOUT), \
        f"connection still open {CLOSE_TIMEOUT} s after {what}"


@pytest.fixture(scope="module")
def raw_topic(broker):
    name = kc.fresh_name("raw-produce", broker)
    parts = kc.create_topic(broker.bootstrap, name, 1, managed=broker.managed)
    return name, parts[0]


def log_end_offset(broker, topic, partition):
    with w.Conn(broker.host, broker.port) as c:
        res = w.parse_list_offsets_v1(c.call(w.API_LIST_OFFSETS, 1,
                                             w.list_offsets_v1_body(topic, [partition])))
    err, off = res[(topic, partition)]
    assert err == w.ERR_NONE, f"ListOffsets error {err}"
    return off


def raw_produce(broker, topic, partition, records):
    with w.Conn(broker.host, broker.port) as c:
        res = w.parse_produce_v3(c.call(w.API_PRODUCE, 3,
                                        w.produce_v3_body(topic, partition, records)))
    return res[(topic, partition)]


def test_sane_before(broker):
    assert_serves(broker)


def test_negative_frame_size(broker):
    with w.Conn(broker.host, broker.port) as c:
        c.send_raw(struct.pack(">i", -1) + w.request_header(w.API_API_VERSIONS, 0, 1))
        assert_closed(c, "a negative frame size")
    assert_serves(broker)


def test_oversized_frame_size(broker):
    """A size above socket.request.max.bytes closes at once, before any body arrives."""
    with w.Conn(broker.host, broker.port) as c:
        c.send_raw(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1) +
                   w.request_header(w.API_PRODUCE, 3, 1))
        assert_closed(c, f"a frame size of {SOCKET_REQUEST_MAX_BYTES + 1}")
    assert_serves(broker)


def test_truncated_request_then_close(broker):
    """The size promises 100 bytes; 12 arrive, then the client closes its side."""
    with w.Conn(broker.host, broker.port) as c:
        c.send_raw(struct.pack(">i", 100) + w.request_header(w.API_METADATA, 1, 1)[:12])
        c.sock.shutdown(socket.SHUT_WR)
        assert_closed(c, "a truncated frame and a half-close")
    assert_serves(broker)


@pytest.mark.parametrize("body", [
    b"",                                            # empty frame
    b"\x00\x12",                                    # api key only
    struct.pack(">hhi", 18, 0, 7),                  # no client_id length
    struct.pack(">hhih", 18, 0, 7, 100) + b"abc",   # client_id longer than the frame
], ids=["empty", "api-key-only", "no-client-id", "client-id-overrun"])
def test_frame_shorter_than_header(broker, body):
    with w.Conn(broker.host, broker.port) as c:
        c.send_raw(w.frame(body))
        assert_closed(c, f"a {len(body)}-byte frame")
    assert_serves(broker)


def test_pipelined_requests_answered_in_order(broker):
    """Requests sent back to back, many in one write and then one at a time
    while the first is still being served: each is answered once, in order
    (the connection reads on only when an answer is out)."""
    with w.Conn(broker.host, broker.port) as c:
        frames = b""
        for _ in range(50):
            c.corr += 1
            frames += w.frame(w.request_header(w.API_METADATA, 1, c.corr) + w.metadata_v1_body())
        c.send_raw(frames)
        first = c.request(w.API_API_VERSIONS, 0, b"")
        for corr in range(1, 51):
            md = w.parse_metadata_v1(c.response(corr))
            assert any(port == broker.port for _, _, port, _ in md["brokers"])
        err, _ = w.parse_api_versions_v0(c.response(first))
        assert err == w.ERR_NONE
        # a request, then the end of the stream: still answered, then closed
        last = c.request(w.API_API_VERSIONS, 0, b"")
        c.sock.shutdown(socket.SHUT_WR)
        err, _ = w.parse_api_versions_v0(c.response(last))
        assert err == w.ERR_NONE
        assert_closed(c, "the end of the stream")
    assert_serves(broker)


def test_unknown_api_key(broker):
    with w.Conn(broker.host, broker.port) as c:
        c.request(9999, 0, b"")
        assert_closed(c, "api key 9999")
    assert_serves(broker)


def test_metadata_unsupported_version(broker):
    with w.Conn(broker.host, broker.port) as c:
        c.request(w.API_METADATA, 99, w.metadata_v1_body())
        assert_closed(c, "Metadata v99")
    assert_serves(broker)


def test_api_versions_unsupported_version(broker):
    """Answered as v0 with UNSUPPORTED_VERSION and the api list; the client then
    retries a lower version on the same connection."""
    body = w.compact_string("kiq-interop") + w.compact_string("1.0") + w.uvarint(0)
    with w.Conn(broker.host, broker.port) as c:
        err, apis = w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 99, body, flexible=True))
        assert err == w.ERR_UNSUPPORTED_VERSION
        assert w.API_API_VERSIONS in apis, sorted(apis)
        lo, hi = apis[w.API_API_VERSIONS]
        assert lo == 0 and 0 <= hi < 99, (lo, hi)
        err, apis = w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 0, b""))
        assert err == w.ERR_NONE and w.API_METADATA in apis
    assert_serves(broker)


def test_raw_produce_valid_batch(broker, raw_topic):
    """The hand-encoded Produce v3 and RecordBatch are right: a good batch lands."""
    topic, part = raw_topic
    before = log_end_offset(broker, topic, part)
    batch = w.record_batch([(b"raw-key", b"raw-value", [("h", b"1")]),
                            (None, b"second", [])])
    err, base = raw_produce(broker, topic, part, batch)
    assert err == w.ERR_NONE
    assert base == before
    assert log_end_offset(broker, topic, part) == before + 2
    got = kc.consume_confluent(broker.bootstrap, topic, {part: before})
    assert [(r[1], r[2], r[3], r[4]) for r in got] == [
        (before, b"raw-key", b"raw-value", [("h", b"1")]), (before + 1, None, b"second", [])]


def test_produce_wrong_crc(broker, raw_topic):
    topic, part = raw_topic
    before = log_end_offset(broker, topic, part)
    batch = w.corrupt_batch(w.record_batch([(b"k", b"corrupted value", [])]))
    err, _ = raw_produce(broker, topic, part, batch)
    assert err == w.ERR_CORRUPT_MESSAGE
    assert log_end_offset(broker, topic, part) == before
    assert_serves(broker)


def test_produce_magic0_message_set(broker, raw_topic):
    topic, part = raw_topic
    before = log_end_offset(broker, topic, part)
    err, _ = raw_produce(broker, topic, part, w.legacy_message_set(b"k", b"old format"))
    assert err in (w.ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, w.ERR_INVALID_RECORD), err
    assert log_end_offset(broker, topic, part) == before
    assert_serves(broker)


@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\xff" * 64,
    struct.pack(">i", 32) + bytes(range(0xE0, 0x100)),
    struct.pack(">i", 8) + b"\x00\x00\x00\x00\x00\x00\x00\x00" + b"\x17" * 4096,
], ids=["http", "all-ones", "bad-api-key", "short-then-junk"])
def test_garbage_bytes(broker, data):
    with w.Conn(broker.host, broker.port) as c:
        try:
            c.send_raw(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # already closed by the broker
        assert_closed(c, f"garbage {data[:16]!r}")
    assert_serves(broker)


def test_thousand_connections_dropped(broker):
    """1,000 connections opened at once, then dropped half with RST and half with FIN."""
    socks = []
    try:
        for _ in range(1000):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            socks.append(s)
            s.connect_ex((broker.host, broker.port))
        # Wait (bounded) until the connects complete so the broker really accepts
        # them; poll(), since these descriptors go past select()'s 1024.
        poller = select.poll()
        pending = {s.fileno() for s in socks}
        for fd in pending:
            poller.register(fd, select.POLLOUT)
        deadline = time.monotonic() + 15
        while pending and time.monotonic() < deadline:
            for fd, _ in poller.poll(500):
                poller.unregister(fd)
                pending.discard(fd)
        assert not pending, f"{len(pending)} of {len(socks)} connects still pending after 15 s"
        for i, s in enumerate(socks):
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
    finally:
        for s in socks:
            s.close()
    assert_serves(broker)
    # Normal client traffic works too.
    md = kc.admin(broker.bootstrap).list_topics(timeout=10)
    assert md.brokers


def test_sane_after(broker):
    assert_serves(broker)
