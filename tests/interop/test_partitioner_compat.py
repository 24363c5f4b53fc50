"""kafkaiq.partitioner against librdkafka's own partitioners, key by key.

confluent-kafka produces 12,000 random binary keys (1-64 bytes, every byte
value) to a 7-partition topic with `partitioner` set to murmur2_random and
then consistent_random; the partitions its delivery reports give must equal
what our Lua partitioner functions compute, and where the Lua producer puts
the same keys with the same partitioner names.
"""

import os
import random
import subprocess

import pytest
from confluent_kafka import Producer

import kiq_clients as kc
from conftest import ROOT

KEYS = 12000
PARTITIONS = 7
PARTITIONERS = ["murmur2_random", "consistent_random"]
LUA_NAMES = {"murmur2_random": "murmur2", "consistent_random": "consistent_random"}

# Prints, for each hex key in the file, the partition the named partitioner
# function picks among n.
FUNCTIONS_LUA = r"""
local P = require "kafkaiq.partitioner"
local name, n, path = arg[1], tonumber(arg[2]), arg[3]
local f = assert(P[name], name)
for line in io.lines(path) do
  local key = line:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
  io.write(f(key, n), "\n")
end
"""

# Produces each hex key with the named partitioner and prints "hexkey partition".
PRODUCE_LUA = r"""
local client = require "kafkaiq.client"
local bootstrap, topic, name, path = arg[1], arg[2], arg[3], arg[4]
local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local p = client.producer { bootstrap = bootstrap, partitioner = name, acks = 1, linger_ms = 50,
  batch_size = 1048576,
  on_delivery = function(err, r)
    assert(not err, err)
    io.write(hex(r.key), " ", r.partition, "\n")
  end }
for line in io.lines(path) do
  local key = line:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)
  assert(p:send(topic, key, "v"))
end
assert(p:close(60000))
"""


def lua(tmp_path, source, *args):
    script = tmp_path / "script.lua"
    script.write_text(source)
    env = dict(os.environ)
    env["LUA_PATH"] = f"{ROOT}/lua/?.lua;{ROOT}/lua/?/init.lua;;"
    env["LUA_CPATH"] = f"{ROOT}/build/lua/?.so;;"
    res = subprocess.run(["luajit", str(script), *map(str, args)], capture_output=True,
                         timeout=120, env=env, cwd=ROOT)
    assert res.returncode == 0, f"luajit exited {res.returncode}: {res.stderr.decode()[-3000:]}"
    return res.stdout.decode().splitlines()


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """KEYS distinct random keys of 1-64 bytes, the same on every run."""
    rng = random.Random(20240611)
    seen = set()
    out = []
    while len(out) < KEYS:
        k = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        if k not in seen:
            seen.add(k)
            out.append(k)
    path = tmp_path_factory.mktemp("keys") / "keys.hex"
    path.write_text("".join(k.hex() + "\n" for k in out))
    return out, path


def librdkafka_partitions(bootstrap, topic, keys, partitioner):
    """{key: partition} from confluent-kafka's delivery reports."""
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": partitioner, "acks": "1",
                  "linger.ms": 50, "queue.buffering.max.messages": 100000})
    parts, errors = {}, []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            parts[msg.key()] = msg.partition()

    for k in keys:
        p.produce(topic, key=k, value=b"v", on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    assert len(parts) == len(keys)
    return parts


def compare(want, got, what):
    bad = [(k, want[k], got.get(k)) for k in want if want[k] != got.get(k)]
    assert not bad, (f"{what}: {len(bad)} of {len(want)} keys differ from librdkafka, e.g. "
                     + "; ".join(f"{k.hex()}: librdkafka {w}, ours {g}" for k, w, g in bad[:5]))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("partitioner", PARTITIONERS)
def test_partitioner_matches_librdkafka(broker, tmp_path, keys, partitioner):
    key_list, path = keys
    bs = broker.bootstrap
    topic = kc.fresh_name(f"compat-{partitioner}", broker)
    parts = kc.create_topic(bs, topic, PARTITIONS, managed=broker.managed)
    assert len(parts) == PARTITIONS
    want = librdkafka_partitions(bs, topic, key_list, partitioner)
    # every partition used: a broken comparison cannot pass by all-zero answers
    assert set(want.values()) == set(range(PARTITIONS))

    ours = lua(tmp_path, FUNCTIONS_LUA, LUA_NAMES[partitioner], PARTITIONS, path)
    assert len(ours) == len(key_list)
    compare(want, {k: int(p) for k, p in zip(key_list, ours)}, f"partitioner.{LUA_NAMES[partitioner]}")

    produced = {}
    for line in lua(tmp_path, PRODUCE_LUA, bs, topic, partitioner, path):
        k, p = line.split()
        produced[bytes.fromhex(k)] = int(p)
    compare(want, produced, f"Lua producer with partitioner={partitioner!r}")
