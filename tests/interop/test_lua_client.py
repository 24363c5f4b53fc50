"""The Lua client (kafkaiq.client, run in luajit subprocesses) against real clients.

Records the Lua producer writes are read back by confluent-kafka and kcat with
keys, values and headers intact and on the partitions its delivery reports
named; records confluent-kafka and kcat write are read by the Lua consumer.
A last test runs the Lua client against librdkafka's mock cluster (three
brokers, so partitions have different leaders) and checks its assign-mode
commit with confluent-kafka.
"""

import os
import pathlib
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition

import kiq_clients as kc
from conftest import ROOT, wait_port

N = 2000
PARTITIONS = 3
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
LUA_TIMEOUT = 120
MOCK_PEER_SRC = pathlib.Path(__file__).resolve().parent / "mock_peer.c"

# Reads messages (hex key, hex value, hex header pairs) from a file, produces
# them, and prints one line per delivery report: hex key, partition, offset.
PRODUCE_LUA = r"""
local client = require "kafkaiq.client"
local bootstrap, topic, codec, acks, path = arg[1], arg[2], arg[3], arg[4], arg[5]
local function unhex(s) return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end
local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local failures = 0
local p = client.producer { bootstrap = bootstrap, compression = codec, acks = acks,
  linger_ms = 5, batch_size = 65536,
  on_delivery = function(err, r)
    if err then
      failures = failures + 1
      io.stderr:write("delivery failed: ", err, "\n")
    else
      io.write(hex(r.key), " ", r.partition, " ", r.offset, "\n")
    end
  end }
for line in io.lines(path) do
  local f = {}
  for w in line:gmatch("%S+") do f[#f + 1] = w end
  local headers = {}
  for i = 3, #f, 2 do headers[#headers + 1] = { unhex(f[i]), unhex(f[i + 1]) } end
  assert(p:send(topic, unhex(f[1]), unhex(f[2]), { headers = headers }))
  p:poll()
end
local ok, err = p:close(60000)
if not ok or failures > 0 then
  io.stderr:write("flush: ", tostring(err), "\n")
  os.exit(1)
end
"""

# Reads `want` records from every partition of a topic, starting at offset 0,
# and prints each: partition, offset, hex key, hex value, hex header pairs
# ("-" for a null key or value).
CONSUME_LUA = r"""
local client = require "kafkaiq.client"
local core = require "kafkaiq.core"
local bootstrap, topic, partitions, want = arg[1], arg[2], tonumber(arg[3]), tonumber(arg[4])
local function hex(s)
  if s == nil then return "-" end
  if s == "" then return "=" end
  return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end
local c = client.consumer { bootstrap = bootstrap, fetch_max_wait_ms = 100 }
local list = {}
for p = 0, partitions - 1 do list[#list + 1] = { topic = topic, partition = p, offset = 0 } end
assert(c:assign(list))
local n, deadline = 0, core.now_ms() + 60000
while n < want do
  if core.now_ms() > deadline then
    io.stderr:write("only ", n, " of ", want, " records\n")
    os.exit(1)
  end
  for _, r in ipairs(assert(c:poll(500))) do
    local h = {}
    for _, kv in ipairs(r.headers) do h[#h + 1] = hex(kv[1]) .. " " .. hex(kv[2]) end
    io.write(r.partition, " ", r.offset, " ", hex(r.key), " ", hex(r.value), " ", table.concat(h, " "), "\n")
    n = n + 1
  end
end
c:close()
"""


def lua_env():
    env = dict(os.environ)
    env["LUA_PATH"] = f"{ROOT}/lua/?.lua;{ROOT}/lua/?/init.lua;;"
    env["LUA_CPATH"] = f"{ROOT}/build/lua/?.so;;"
    return env


def run_lua(tmp_path, source, *args, timeout=LUA_TIMEOUT):
    """Runs a Lua chunk with luajit; returns its stdout lines."""
    script = tmp_path / "script.lua"
    script.write_text(source)
    res = subprocess.run(["luajit", str(script), *map(str, args)], capture_output=True,
                         timeout=timeout, env=lua_env(), cwd=ROOT)
    assert res.returncode == 0, (f"luajit exited {res.returncode}\n"
                                 f"stderr:\n{res.stderr.decode(errors='replace')[-3000:]}")
    return res.stdout.decode().splitlines()


def unhex(s):
    if s == "-":
        return None
    if s == "=":
        return b""
    return bytes.fromhex(s)


def write_messages(path, msgs):
    with open(path, "w") as f:
        for key, value, headers in msgs:
            words = [key.hex(), value.hex()]
            for hk, hv in headers:
                words += [hk.encode().hex(), hv.hex()]
            f.write(" ".join(words) + "\n")


def produce_lua(tmp_path, bootstrap, topic, msgs, codec="none", acks="all"):
    """Produces msgs with the Lua producer; returns {key: (partition, offset)}."""
    path = tmp_path / "messages.txt"
    write_messages(path, msgs)
    reports = {}
    for line in run_lua(tmp_path, PRODUCE_LUA, bootstrap, topic, codec, acks, path):
        key, part, off = line.split()
        reports[bytes.fromhex(key)] = (int(part), int(off))
    assert len(reports) == len(msgs), f"{len(reports)} delivery reports for {len(msgs)} messages"
    return reports


def consume_lua(tmp_path, bootstrap, topic, partitions, want):
    out = []
    for line in run_lua(tmp_path, CONSUME_LUA, bootstrap, topic, partitions, want):
        f = line.split()
        headers = [(unhex(f[i]).decode(), unhex(f[i + 1])) for i in range(4, len(f), 2)]
        out.append((int(f[0]), int(f[1]), unhex(f[2]), unhex(f[3]), headers))
    return out


def murmur2_partition(key, n):
    """Java's murmur2 partitioner, written out here to cross-check the reports."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    i = 0
    while i + 4 <= len(key):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
        i += 4
    rest = len(key) & 3
    if rest == 3:
        h ^= key[i + 2] << 16
    if rest >= 2:
        h ^= key[i + 1] << 8
    if rest >= 1:
        h ^= key[i]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % n


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", CODECS)
def test_lua_produced_read_by_confluent_and_kcat(broker, tmp_path, codec):
    bs = broker.bootstrap
    topic = kc.fresh_name(f"lua-prod-{codec}", broker)
    parts = kc.create_topic(bs, topic, PARTITIONS, managed=broker.managed)
    msgs = kc.make_messages(N, f"lua-{codec}")
    reports = produce_lua(tmp_path, bs, topic, msgs, codec)
    for key, (part, _) in reports.items():
        assert part == murmur2_partition(key, len(parts)), f"key {key!r} on partition {part}"
    kc.check_records(kc.consume_confluent_all(bs, topic, parts), msgs, reports)
    kc.check_records(kc.consume_kcat(bs, topic), msgs, reports)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("acks", ["0", "1"])
def test_lua_produced_with_acks(broker, tmp_path, acks):
    bs = broker.bootstrap
    topic = kc.fresh_name(f"lua-acks-{acks}", broker)
    parts = kc.create_topic(bs, topic, PARTITIONS, managed=broker.managed)
    msgs = kc.make_messages(N, f"lua-acks-{acks}")
    reports = produce_lua(tmp_path, bs, topic, msgs, "lz4", acks)
    if acks == "0":
        assert all(off == -1 for _, off in reports.values())
    kc.check_records(kc.consume_confluent_all(bs, topic, parts), msgs, reports)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", CODECS)
def test_lua_reads_confluent_produced(broker, tmp_path, codec):
    bs = broker.bootstrap
    topic = kc.fresh_name(f"lua-cons-confluent-{codec}", broker)
    parts = kc.create_topic(bs, topic, PARTITIONS, managed=broker.managed)
    msgs = kc.make_messages(N, f"confluent-{codec}")
    reports = kc.produce_confluent(bs, topic, msgs, codec, "all")
    kc.check_records(consume_lua(tmp_path, bs, topic, len(parts), N), msgs, reports)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_lua_reads_kcat_produced(broker, tmp_path, codec):
    bs = broker.bootstrap
    topic = kc.fresh_name(f"lua-cons-kcat-{codec}", broker)
    parts = kc.create_topic(bs, topic, PARTITIONS, managed=broker.managed)
    # kcat's -H puts the same headers on every message.
    msgs = [(k, v, [h for h in hs if h[0] == "src"]) for k, v, hs in kc.make_messages(N, f"kcat-{codec}")]
    reports = kc.produce_kcat(bs, topic, msgs, tmp_path / "kcat.txt",
                              None if codec == "none" else codec)
    kc.check_records(consume_lua(tmp_path, bs, topic, len(parts), N), msgs, reports)


def test_lua_reads_null_keys_and_values(broker, tmp_path):
    """confluent-kafka's null key and value come back as nil, empty ones as ""."""
    from confluent_kafka import Producer
    bs = broker.bootstrap
    topic = kc.fresh_name("lua-nulls", broker)
    kc.create_topic(bs, topic, 1, managed=broker.managed)
    p = Producer({"bootstrap.servers": bs})
    p.produce(topic, key=None, value=None, partition=0)
    p.produce(topic, key=b"", value=b"", partition=0)
    assert p.flush(30) == 0
    got = consume_lua(tmp_path, bs, topic, 1, 2)
    assert [(r[2], r[3]) for r in got] == [(None, None), (b"", b"")]


# ---------------------------------------------------------------- any broker: librdkafka's mock cluster

MOCK_LUA = r"""
local client = require "kafkaiq.client"
local bootstrap, topic, partitions, n = arg[1], arg[2], tonumber(arg[3]), tonumber(arg[4])
local a = client.admin { bootstrap = bootstrap }
local d = assert(a:describe_topics { topic })[1]
assert(d.partition_count == partitions, "partition count " .. d.partition_count)
local leaders = {}
for p = 0, partitions - 1 do leaders[d.partitions[p].leader] = true end
local nleaders = 0
for _ in pairs(leaders) do nleaders = nleaders + 1 end
print("leaders", nleaders)
local delivered = 0
local p = client.producer { bootstrap = bootstrap, compression = "snappy",
  on_delivery = function(err) assert(not err, err); delivered = delivered + 1 end }
for i = 1, n do assert(p:send(topic, "key-" .. i, "value-" .. i, { headers = { { "i", tostring(i) } } })) end
assert(p:close(30000))
print("delivered", delivered)
local committed = {}
local c = client.consumer { bootstrap = bootstrap, group_id = "lua-assign-commit", fetch_max_wait_ms = 50,
  interceptors = { on_commit = function(offsets) committed[#committed + 1] = #offsets end } }
local list = {}
for q = 0, partitions - 1 do list[#list + 1] = { topic, q, 0 } end
assert(c:assign(list))
local got, seen = 0, {}
for _ = 1, 200 do
  for _, r in ipairs(assert(c:poll(200))) do
    assert(r.value == "value-" .. r.key:sub(5), "value of " .. r.key)
    assert(r.headers[1][2] == r.key:sub(5), "header of " .. r.key)
    assert(not seen[r.key], "read twice: " .. r.key)
    seen[r.key] = true
    got = got + 1
  end
  if got >= n then break end
end
print("consumed", got)
assert(c:commit())
print("on_commit", committed[1])
for q = 0, partitions - 1 do print("position", q, c:position(topic, q)) end
"""


@pytest.fixture
def mock_cluster(tmp_path):
    """librdkafka's mock cluster (3 brokers, topic 'mock-t' with 6 partitions)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc missing: no mock peer")
    binary = tmp_path / "mock_peer"
    res = subprocess.run(["gcc", "-O1", "-o", str(binary), str(MOCK_PEER_SRC), "-lrdkafka"],
                         capture_output=True, timeout=120)
    assert res.returncode == 0, f"cannot build {MOCK_PEER_SRC}: {res.stderr.decode()[-500:]}"
    out = open(tmp_path / "mock.out", "w+")
    proc = subprocess.Popen([str(binary), "-b", "3", "-t", "mock-t:6"], stdout=out,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        bootstrap = ""
        while not bootstrap and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            out.seek(0)
            bootstrap = out.readline().strip()
        assert bootstrap, "mock cluster printed no bootstrap servers"
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        assert wait_port(host, int(port), 10, proc)
        yield bootstrap
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out.close()


@pytest.mark.timeout(180)
def test_lua_client_against_librdkafka_mock(mock_cluster, tmp_path):
    n = 600
    lines = run_lua(tmp_path, MOCK_LUA, mock_cluster, "mock-t", 6, n)
    info = {}
    positions = {}
    for line in lines:
        f = line.split()
        if f[0] == "position":
            positions[int(f[1])] = int(f[2])
        else:
            info[f[0]] = int(f[1])
    assert info["leaders"] > 1, "the mock put every partition on one broker"
    assert info["delivered"] == n
    assert info["consumed"] == n
    assert info["on_commit"] == 6
    assert sum(positions.values()) == n
    c = Consumer({"bootstrap.servers": mock_cluster, "group.id": "lua-assign-commit",
                  "enable.auto.commit": False})
    try:
        committed = c.committed([CTopicPartition("mock-t", p) for p in range(6)], timeout=20)
    finally:
        c.close()
    assert {tp.partition: tp.offset for tp in committed} == positions


# ---------------------------------------------------------------- a scripted fake broker

FAKE_LUA = r"""
local connection = require "kafkaiq.client.connection"
local client = require "kafkaiq.client"
local host, port = arg[1]:match("^(.*):(%d+)$")
local c, err = connection.open(host, tonumber(port), { client_id = "fake", connect_timeout_ms = 5000, request_timeout_ms = 5000 })
if not c then print("open", err) os.exit(0) end
print("versions", c:version(18), c:version(3), tostring(c:version(0)))
local resp
resp, err = c:request(3, { topics = {} })
print("metadata", tostring(resp), err)
print("alive", tostring(c:alive()))
local a = client.admin { bootstrap = arg[1], retries = 0 }
local r
r, err = a:describe_topics()
print("admin", tostring(r), err)
"""


class FakeBroker:
    """Answers ApiVersions v3 with UNSUPPORTED_VERSION (v0 layout, max 2), then v2
    properly, then every other request with a wrong correlation id."""

    def __init__(self):
        import socket
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @staticmethod
    def read_frame(conn):
        def exact(n):
            buf = b""
            while len(buf) < n:
                chunk = conn.recv(n - len(buf))
                if not chunk:
                    raise EOFError
                buf += chunk
            return buf
        size = int.from_bytes(exact(4), "big")
        return exact(size)

    def serve(self):
        import struct
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    while True:
                        frame = self.read_frame(conn)
                        key, version, corr = struct.unpack(">hhi", frame[:8])
                        self.requests.append((key, version))
                        apis = [(18, 0, 2), (3, 0, 1)]
                        if key == 18 and version > 2:
                            body = struct.pack(">ihi", corr, 35, len(apis))
                            body += b"".join(struct.pack(">hhh", *a) for a in apis)
                        elif key == 18:
                            body = struct.pack(">ihi", corr, 0, len(apis))
                            body += b"".join(struct.pack(">hhh", *a) for a in apis)
                            body += struct.pack(">i", 0)
                        else:
                            body = struct.pack(">i", corr + 7) + b"\0" * 16
                        conn.sendall(struct.pack(">i", len(body)) + body)
                except (EOFError, OSError):
                    pass

    def close(self):
        self.sock.close()


def test_lua_client_negotiates_down_and_checks_correlation_ids(tmp_path):
    fake = FakeBroker()
    try:
        lines = run_lua(tmp_path, FAKE_LUA, f"127.0.0.1:{fake.port}", timeout=60)
    finally:
        fake.close()
    out = {line.split()[0]: " ".join(line.split()[1:]) for line in lines}
    # ApiVersions fell back from 4 to the broker's 2; Metadata is min(ours, 1);
    # Produce is absent from the broker's list, so it has no version.
    assert out["versions"] == "2 1 nil"
    assert fake.requests[:3] == [(18, 4), (18, 2), (3, 1)]
    assert "correlation id mismatch" in out["metadata"], out["metadata"]
    assert out["alive"] == "false"
    assert out["admin"].startswith("nil describe_topics:"), out["admin"]
    assert "correlation id mismatch" in out["admin"], out["admin"]
