"""A log directory on a filesystem that really fills up (a small tmpfs).

Appends are then refused with KAFKA_STORAGE_ERROR and the broker says which
directory is full, while every acknowledged record is still fetched by a
real consumer and the broker keeps serving; once files are removed, appends
resume by themselves, without a restart.
"""

import os
import struct
import subprocess
import time

import pytest

import kiq_clients as kc
import kiq_group_wire as gw
import kiq_wire as w
from conftest import Broker

STORAGE_ERROR = 56
COORDINATOR_NOT_AVAILABLE = 15
VALUE = b"v" * 60000


@pytest.fixture
def tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def produce(broker, n):
    """(error code, base offset) of a Produce v3 with one record numbered n."""
    with w.Conn(broker.host, broker.port) as c:
        batch = w.record_batch([(b"k%d" % n, VALUE + b"%d" % n, ())])
        res = w.parse_produce_v3(c.call(w.API_PRODUCE, 3, w.produce_v3_body("full", 0, batch, acks=1)))
    return res[("full", 0)]


def test_a_full_directory_serves_what_it_has_and_takes_appends_again(tmp_path, tmpfs):
    b = Broker(tmp_path / "b", ["offsets.topic.num.partitions=1", "log.index.size.max.bytes=65536"])
    b.data_dir = tmpfs / "data"
    b.start()
    try:
        kc.create_topic(b.bootstrap, "full", 1)
        kc.consume_confluent_all(b.bootstrap, "full", [0])  # its group coordinator, before the disk fills
        filler = tmpfs / "filler"
        filler.write_bytes(b"\0" * (2 << 20))
        acked = []
        for n in range(1000):
            err, base = produce(b, n)
            if err == STORAGE_ERROR:
                break
            assert err == 0, f"produce {n}: error {err}"
            acked.append((base, n))
        else:
            raise AssertionError("the tmpfs never filled up")
        assert len(acked) > 20
        # full, not offline: more appends are refused, reads go on
        assert produce(b, 9999)[0] == STORAGE_ERROR
        got = kc.consume_confluent_all(b.bootstrap, "full", [0])
        assert [(off, val) for _, off, _, val, _ in got] == [(base, VALUE + b"%d" % n) for base, n in acked]
        log = b.stderr_tail(50000)
        assert f"log directory {b.data_dir} is full" in log, log[-3000:]
        # the transaction coordinator's topic cannot be made now: each ask is
        # answered as retriable, and said in the log once, not per call
        with w.Conn(b.host, b.port) as c:
            for _ in range(30):
                err = gw.parse_find_coordinator_v1(
                    c.call(gw.API_FIND_COORDINATOR, 1, w.string("txn-on-full") + struct.pack(">b", 1)))[0]
                assert err == COORDINATOR_NOT_AVAILABLE, err
        said = [ln for ln in b.stderr_tail(200000).splitlines() if "cannot create __transaction_state" in ln]
        assert len(said) == 1, said
        # room again: appends come back by themselves
        os.remove(filler)
        deadline = time.monotonic() + 10
        while produce(b, 5000)[0] == STORAGE_ERROR:
            assert time.monotonic() < deadline, "appends did not resume once there was room"
            time.sleep(0.1)
        assert "has room again" in b.stderr_tail(50000)
        got = kc.consume_confluent_all(b.bootstrap, "full", [0])
        assert len(got) >= len(acked) + 1
        assert b.alive()
    finally:
        b.stop()
