"""Hand-encoded Kafka wire protocol for the bad-input tests.

Real clients never send malformed frames, so these tests build frames
themselves: request headers, Produce v3, ListOffsets v1, Metadata v1,
ApiVersions, RecordBatch v2 (with a CRC-32C written here) and the legacy
magic-0 message set. Responses are parsed with a bounds-checked reader so a
short or garbled answer fails the test instead of raising struct errors.
"""

import socket
import struct
import time
import zlib

API_PRODUCE = 0
API_LIST_OFFSETS = 2
API_METADATA = 3
API_API_VERSIONS = 18

ERR_NONE = 0
ERR_CORRUPT_MESSAGE = 2
ERR_UNSUPPORTED_VERSION = 35
ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
ERR_INVALID_RECORD = 87


def _crc32c_table():
    poly = 0x82F63B78  # Castagnoli, reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------- encoding

def varint(n):
    """Zigzag varint, as used inside records."""
    z = (n << 1) ^ (n >> 63)
    z &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">h", len(b)) + b


def compact_string(s):
    if s is None:
        return uvarint(0)
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


def nbytes(b):
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def array(items):
    if items is None:
        return struct.pack(">i", -1)
    items = list(items)
    return struct.pack(">i", len(items)) + b"".join(items)


def _vbytes(b):
    if b is None:
        return varint(-1)
    return varint(len(b)) + b


def encode_record(offset_delta, key, value, headers=(), ts_delta=0):
    body = bytes([0]) + varint(ts_delta) + varint(offset_delta)
    body += _vbytes(key) + _vbytes(value) + varint(len(headers))
    for hk, hv in headers:
        body += _vbytes(hk.encode() if isinstance(hk, str) else hk) + _vbytes(hv)
    return varint(len(body)) + body


def record_batch(records, base_ts=None, attributes=0, timestamps=None):
    """RecordBatch v2 with records (key, value, headers), stamped base_ts
    (now by default) or each with its own of timestamps; CRC-32C is correct."""
    if base_ts is None:
        base_ts = timestamps[0] if timestamps else int(time.time() * 1000)
    deltas = [t - base_ts for t in timestamps] if timestamps else [0] * len(records)
    recs = b"".join(encode_record(i, k, v, h, deltas[i]) for i, (k, v, h) in enumerate(records))
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, base_ts, base_ts + max(deltas),
                            -1, -1, -1, len(records)) + recs
    crc = crc32c(after_crc)
    after_len = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_len)) + after_len


def corrupt_batch(batch):
    """Flips one bit in the last record's bytes, leaving the stored CRC stale."""
    b = bytearray(batch)
    b[-2] ^= 0x01
    return bytes(b)


def legacy_message_set(key, value):
    """One magic-0 message (offset, size, crc32, magic 0, attributes, key, value)."""
    body = struct.pack(">bb", 0, 0) + nbytes(key) + nbytes(value)
    msg = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return struct.pack(">qi", 0, len(msg)) + msg


def request_header(api_key, api_version, corr, client_id="kiq-interop", flexible=False):
    h = struct.pack(">hhi", api_key, api_version, corr) + string(client_id)
    if flexible:
        h += uvarint(0)  # empty tagged fields
    return h


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def produce_v3_body(topic, partition, records, acks=-1, timeout_ms=10000):
    part = struct.pack(">i", partition) + nbytes(records)
    return (string(None) + struct.pack(">hi", acks, timeout_ms) +
            array([string(topic) + array([part])]))


def list_offsets_v1_body(topic, partitions, timestamp=-1):
    parts = [struct.pack(">iq", p, timestamp) for p in partitions]
    return struct.pack(">i", -1) + array([string(topic) + array(parts)])


def metadata_v1_body(topics=None):
    return array(None if topics is None else [string(t) for t in topics])


# ---------------------------------------------------------------- decoding

class ShortResponse(AssertionError):
    pass


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ShortResponse(f"response too short: need {n} bytes at {self.pos}, "
                                f"have {len(self.data) - self.pos}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int8(self):
        return struct.unpack(">b", self.take(1))[0]

    def int16(self):
        return struct.unpack(">h", self.take(2))[0]

    def int32(self):
        return struct.unpack(">i", self.take(4))[0]

    def int64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def array(self, fn):
        n = self.int32()
        return [] if n < 0 else [fn(self) for _ in range(n)]

    def remaining(self):
        return len(self.data) - self.pos


def parse_api_versions_v0(payload):
    r = Reader(payload)
    err = r.int16()
    apis = r.array(lambda r: (r.int16(), r.int16(), r.int16()))
    return err, {k: (lo, hi) for k, lo, hi in apis}


def parse_produce_v3(payload):
    r = Reader(payload)

    def part(r):
        return r.int32(), r.int16(), r.int64(), r.int64()

    topics = r.array(lambda r: (r.string(), r.array(part)))
    r.int32()  # throttle_time_ms comes after the topics in Produce
    return {(t, p): (err, base) for t, parts in topics for p, err, base, _ in parts}


def parse_produce_v8(payload):
    """{(topic, partition): (error, base_offset, [(batch_index, message)], error_message)}"""
    r = Reader(payload)

    def part(r):
        index, err, base = r.int32(), r.int16(), r.int64()
        r.int64()  # log_append_time_ms
        r.int64()  # log_start_offset
        return index, err, base, r.array(lambda r: (r.int32(), r.string())), r.string()

    topics = r.array(lambda r: (r.string(), r.array(part)))
    return {(t, p[0]): p[1:] for t, parts in topics for p in parts}


def parse_list_offsets_v1(payload):
    r = Reader(payload)

    def part(r):
        return r.int32(), r.int16(), r.int64(), r.int64()

    topics = r.array(lambda r: (r.string(), r.array(part)))
    return {(t, p): (err, off) for t, parts in topics for p, err, _, off in parts}


def parse_metadata_v1(payload):
    r = Reader(payload)
    brokers = r.array(lambda r: (r.int32(), r.string(), r.int32(), r.string()))
    controller = r.int32()

    def part(r):
        err, idx, leader = r.int16(), r.int32(), r.int32()
        replicas = r.array(lambda r: r.int32())
        isr = r.array(lambda r: r.int32())
        return idx, err, leader, replicas, isr

    def topic(r):
        err, name, internal = r.int16(), r.string(), r.int8()
        return name, err, internal, r.array(part)

    topics = r.array(topic)
    return {"brokers": brokers, "controller": controller,
            "topics": {t[0]: t[1:] for t in topics}}


# ---------------------------------------------------------------- connection

class Conn:
    """One blocking TCP connection with a deadline on every read."""

    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.corr = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def request(self, api_key, version, body, flexible=False):
        """Sends one request; returns its correlation id."""
        self.corr += 1
        self.send_raw(frame(request_header(api_key, version, self.corr, flexible=flexible) + body))
        return self.corr

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def response(self, corr):
        """Reads one response with header v0; returns the body after correlation id."""
        size = struct.unpack(">i", self._recv_exact(4))[0]
        assert 4 <= size <= 64 * 1024 * 1024, f"bad response size {size}"
        data = self._recv_exact(size)
        got = struct.unpack(">i", data[:4])[0]
        assert got == corr, f"correlation id {got}, expected {corr}"
        return data[4:]

    def call(self, api_key, version, body, flexible=False):
        return self.response(self.request(api_key, version, body, flexible))

    def closed_by_peer(self, timeout=5.0):
        """True if the peer closes within timeout (bytes it sends first are ignored)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                if not self.sock.recv(65536):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
            except socket.timeout:
                return False
