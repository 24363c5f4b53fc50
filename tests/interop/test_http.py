"""The brokers' HTTP listeners with real parts: a record produced by
confluent-kafka (acks=all) and read by its consumer has a whole journey
through the JSON of every broker and through `kafkaiq journey --http`, in a
cluster in one process and in one of three processes (merged by the wall
clock, with why each wait happened); a batch whose ring slot was reused,
then whose broker restarted, is still explained from the journey journal; an acks=0 record to a
topic with flush.messages=1 has its fsync timed under flushed and no
response; a record written while a follower is paused is stuck before the
high watermark waiting for it, then sees it leave the ISR and come back,
with the reasons; Debian's Prometheus server scrapes /metrics and its query
API returns the request-time quantiles and an under-replicated partition
once a follower is paused; bad requests get HTTP errors and leave the broker
serving.
"""

import base64
import http.client
import json
import pathlib
import shutil
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

import kiq_clients as kc
from cluster import CLUSTER_OVERRIDES, CONTROLLER_ID, Cluster, wait_until
from conftest import BROKER_BIN, EXTERNAL, Broker, free_port
from test_security import certs  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="needs kafkaiq's own HTTP listeners")

PROMETHEUS = shutil.which("prometheus")


def get(address, path, timeout=5):
    """(status, body) of GET http://address/path."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def journey_part(address, **query):
    status, body = get(address, "/api/journey?" + urllib.parse.urlencode(query))
    return json.loads(body) if status == 200 else None


def merged(addresses, topic, partition, offset):
    parts = [p for p in (journey_part(a, topic=topic, partition=partition, offset=offset) for a in addresses) if p]
    return sorted((s for p in parts for s in p["stages"]), key=lambda s: s["t_ns"]), parts


def produce_traced(bootstrap, topic, trace, n=3, compression="none"):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": compression})
    # the partition's leader known first: records produced while it is not
    # may leave in two batches (the journey would cover only the first)
    p.list_topics(topic, timeout=10)
    errors = []
    for i in range(n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0,
                  headers=[("kafkaiq-trace", trace.encode())] if i == 0 else None,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(30) == 0 and not errors, errors


def consume_all(bootstrap, topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"http-{topic}", "auto.offset.reset": "earliest",
                  "client.id": "journey-consumer"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    c.close()
    assert len(got) == n, f"consumed {len(got)} of {n}"


def check_file(data_dir, topic, stage):
    """The segment file named by an appended/replicated stage holds a batch
    at its position starting at its first offset, `bytes` long."""
    path = pathlib.Path(data_dir) / f"{topic}-0" / stage["file"]
    with open(path, "rb") as f:
        f.seek(stage["position"])
        base, length = struct.unpack(">qi", f.read(12))
    assert (base, length + 12) == (stage["first_offset"], stage["bytes"]), (path, stage)


def check_whole(stages, leader, followers):
    names = [s["stage"] for s in stages]
    for want in ("received", "enqueued", "dequeued", "validated", "appended", "committed", "acknowledged",
                 "response_queued", "sent", "records_fetched"):
        assert want in names, f"{want} missing from {names}"
    order = [names.index(n) for n in ("received", "enqueued", "dequeued", "validated", "appended", "committed",
                                      "acknowledged", "sent")]
    assert order == sorted(order), names
    assert next(s for s in stages if s["stage"] == "received")["broker"] == leader
    for f in followers:
        for stage, who in (("follower_fetched", "peer"), ("follower_leo", "peer"), ("replicated", "broker")):
            assert any(s["stage"] == stage and s.get(who) == f for s in stages), (f, stage, stages)
    fetched = next(s for s in stages if s["stage"] == "records_fetched")
    assert fetched["client_id"].startswith("journey-consumer")


def run_journey_command(addresses, *args):
    res = subprocess.run([str(BROKER_BIN), "journey", "--http", ",".join(addresses), *args], capture_output=True,
                         timeout=30)
    return res.returncode, res.stdout.decode(), res.stderr.decode()


def test_journey_in_one_process_cluster(three):
    c = three
    topic = "http-journey"
    admin = kc.admin(c.bootstrap)
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(20)
    wait_until(lambda: all(journey_part(a, topic="x", partition=0, offset=0) is None for a in c.http), 5, "HTTP up")
    produce_traced(c.bootstrap, topic, "one-process")
    consume_all(c.bootstrap, topic, 3)
    found = [p for p in (journey_part(a, trace="one-process") for a in c.http) if p]
    assert len(found) == 1, found
    leader = found[0]["broker"]
    assert found[0]["first_offset"] == 0 and found[0]["trace"] == "one-process"
    followers = [i for i in range(3) if i != leader]
    stages, parts = wait_until(
        lambda: (lambda m: m if any(s["stage"] == "records_fetched" for s in m[0]) else None)(
            merged(c.http, topic, 0, 0)), 10, "the journey with its consumer fetch")
    assert len(parts) == 3
    check_whole(stages, leader, followers)
    for s in stages:
        if s["stage"] in ("appended", "replicated"):
            check_file(c.data_dir / f"broker-{s['broker']}", topic, s)
    # the command draws the same journey
    rc, out, err = run_journey_command(c.http, "--trace", "one-process")
    assert rc == 0, err
    assert out.startswith(f"journey of {topic}-0, offsets 0..2 (trace one-process), from 3 brokers"), out
    for words in ("network thread", "request queue: joined behind", "I/O thread", "offsets 0..2 assigned",
                  "appended to 00000000000000000000.log at byte 0", "committed, visible to consumers",
                  "acknowledged: acks=all, error 0", "response sent", 'consumer "journey-consumer'):
        assert words in out, f"{words!r} not in:\n{out}"
    for f in followers:
        assert f"follower {f} fetched it" in out and f"broker {f} (follower of {leader})" in out, out
    rc, out2, _ = run_journey_command(c.http, topic, "0", "1")
    assert rc == 0 and out2.splitlines()[0] == out.splitlines()[0]


def journey_lines(out):
    """{stage words: +ms} of the command's output lines, by their first words."""
    lines = {}
    for ln in out.splitlines()[1:]:
        ms, _, text = ln.partition(" ms  ")
        if text:
            lines.setdefault(text, float(ms))
    return lines


def line_at(lines, start):
    return next(((t, ms) for t, ms in lines.items() if t.startswith(start)), (None, None))


def events_settled(address):
    """Every request the broker received has finished (sent, or ended without a response)."""
    text = get(address, "/metrics")[1]
    return metric(text, "kafkaiq_events_total", point="sent") == metric(text, "kafkaiq_events_total", point="received")


def test_journey_of_an_acks0_record_with_its_fsync(broker):
    """acks=0: no answer, no response, and the journey says so; with
    flush.messages=1 the append's fsync is timed under flushed, after the
    appended stage."""
    topic = kc.fresh_name("http-acks0", broker)
    from confluent_kafka.admin import NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"flush.messages": "1"})])[topic].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": 0, "linger.ms": 0})
    p.produce(topic, value=b"fire and forget", partition=0, headers=[("kafkaiq-trace", b"http-acks0")])
    assert p.flush(30) == 0
    del p
    part = wait_until(lambda: (lambda j: j if j and any(s["stage"] == "no_response" for s in j["stages"])
                               and events_settled(broker.http) else None)(journey_part(broker.http, trace="http-acks0")),
                      10, "the acks=0 produce handled to its end")
    names = [s["stage"] for s in part["stages"]]
    for absent in ("acknowledged", "response_queued", "sent"):
        assert absent not in names, names
    nr = next(s for s in part["stages"] if s["stage"] == "no_response")
    assert nr["acks"] == 0 and nr["text"].startswith("no response goes out (acks=0)"), nr
    app = next(s for s in part["stages"] if s["stage"] == "appended")
    fl = next(s for s in part["stages"] if s["stage"] == "flushed")
    assert fl["after"] == app["after"] and "flusher" not in fl, fl
    # appended is stamped before the fsync began, flushed once it ended
    assert fl["t_ns"] - app["t_ns"] >= fl["fsync_us"] * 1000, (app, fl)
    assert part["verdict"]["state"] == "committed", part["verdict"]
    rc, out, err = run_journey_command([broker.http], "--trace", "http-acks0")
    assert rc == 0, err
    assert "no response goes out (acks=0)" in out and "response sent" not in out and "acknowledged" not in out, out
    lines = journey_lines(out)
    appended, at = line_at(lines, f"offsets {app['first_offset']}..")
    flushed, ft = line_at(lines, "broker 0 fsynced the log up to offset")
    assert appended and flushed and "after the append (flush.messages): the fsync took" in flushed, out
    took = float(flushed.rsplit("took ", 1)[1].split(" ms")[0])
    assert ft - at >= took - 0.002, out  # the times printed to the µs
    assert out.rstrip().splitlines()[-1].startswith("verdict: committed"), out


def test_journey_of_a_follower_out_of_the_isr_and_back(tmp_path):
    """A record written while a follower is paused: stuck before the high
    watermark waiting for it (kafkaiq journey and the JSON say so), then the
    follower's leaving the ISR and its coming back are stages of its
    journey, with the reason."""
    # the stuck verdict is looked for in the first half of the lag, before
    # the follower leaves the ISR: long enough for a loaded machine
    lag_ms = 10000
    overrides = [o for o in CLUSTER_OVERRIDES if not o.startswith(("replica.lag.time.max.ms", "broker.session.timeout.ms"))]
    c = Cluster(tmp_path, overrides=overrides + [f"replica.lag.time.max.ms={lag_ms}", "broker.session.timeout.ms=30000"])
    c.start()
    try:
        topic = "isr-journey"
        c.create_topic(topic, 1, rf=3)
        c.wait_healthy(topic, 1)
        leader = c.leader(topic, 0)
        # the controller must answer the leader's AlterPartition: it stays up
        follower = next(b for b in c.brokers if b.id not in (leader, CONTROLLER_ID))
        up = [b.http for b in c.brokers if b is not follower]  # a stopped process would hold each call 5 s
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": 1, "linger.ms": 0})
        p.produce(topic, value=b"before", partition=0, headers=[("kafkaiq-trace", b"isr-before")])
        assert p.flush(30) == 0
        # the follower replicates: the leader saw it take the first record
        wait_until(lambda: any(s["stage"] == "follower_leo" and s["peer"] == follower.id for s in (
            journey_part(c.brokers[leader].http, trace="isr-before") or {"stages": []})["stages"]), 10,
            "the follower replicating")
        follower.pause()
        try:
            p.produce(topic, value=b"while paused", partition=0, headers=[("kafkaiq-trace", b"isr-cli")])
            assert p.flush(30) == 0
            # the other follower has it, the paused one not: the leader waits for it
            want = f"waiting for follower {follower.id} in the ISR to have it"
            rc, out, err = wait_until(lambda: (lambda r: r if want in r[1] else None)(
                run_journey_command(up, "--trace", "isr-cli")), lag_ms / 2000, "the command's verdict")
            assert out.rstrip().splitlines()[-1].startswith("verdict: stuck before the high watermark"), out
            lead = next(j for j in (journey_part(a, trace="isr-cli") for a in up) if j)
            assert lead["verdict"]["state"] == "stuck" and lead["verdict"]["waiting_for"] == [follower.id], lead
            # it leaves the ISR: a stage of the record's journey, with why
            shrink = f"ISR shrink: follower {follower.id} left the ISR (now 2 replicas)"
            rc, out, err = wait_until(lambda: (lambda r: r if shrink in r[1] else None)(
                run_journey_command(up, "--trace", "isr-cli")), lag_ms / 1000 + 20, "the shrink in the journey")
            part = journey_part(c.brokers[leader].http, trace="isr-cli")
            st = next(s for s in part["stages"] if s["stage"] == "isr_shrunk")
            assert st["peer"] == follower.id and st["lag"] >= 1 and st["since_caught_up_ms"] > lag_ms and st["lagged"], st
            assert part["verdict"]["state"] == "committed", part["verdict"]
        finally:
            follower.resume()
        back = f"ISR expand: follower {follower.id} is back in the ISR (now 3 replicas)"
        addresses = [b.http for b in c.brokers]
        rc, out, err = wait_until(lambda: (lambda r: r if back in r[1] else None)(
            run_journey_command(addresses, "--trace", "isr-cli")), 30, "the expand in the journey")
        lines = journey_lines(out)
        (_, t_shrink), (_, t_commit), (_, t_back) = (line_at(lines, w) for w in (
            "ISR shrink", "high watermark", "ISR expand"))
        assert t_shrink <= t_commit <= t_back, out
        assert "longer than replica.lag.time.max.ms allows" in line_at(lines, "ISR shrink")[0], out
        assert out.rstrip().splitlines()[-1].startswith("verdict: committed"), out
        p.flush(10)
    finally:
        c.stop()


def test_a_journey_outlives_its_ring_slot_and_a_restart(tmp_path):
    b = Broker(tmp_path, ["kafkaiq.journey.max.batches=16"])
    b.start()
    try:
        topic = "lasting"
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1", "linger.ms": 0})
        for i in range(30):
            p.produce(topic, value=f"v{i}".encode(), partition=0,
                      headers=[("kafkaiq-trace", b"lasting-0")] if i == 0 else None)
            assert p.flush(30) == 0
        # offset 0's ring slot went to a newer batch: the journal explains it
        first = wait_until(lambda: journey_part(b.http, topic=topic, partition=0, offset=0), 10, "offset 0's journey")
        assert (first["first_offset"], first["trace"]) == (0, "lasting-0")
        assert [s["stage"] for s in first["stages"]][:5] == ["received", "enqueued", "dequeued", "validated", "appended"]
        assert all(s["wall_us"] > 1_600_000_000 * 10**6 for s in first["stages"])
        b.restart()  # SIGTERM: the broker saves its ring on the way out
        for offset in (0, 20, 29):
            part = journey_part(b.http, topic=topic, partition=0, offset=offset)
            assert part and part["first_offset"] == offset, (offset, part)
        rc, out, err = run_journey_command([b.http], "--trace", "lasting-0")
        assert rc == 0, err
        assert out.startswith(f"journey of {topic}-0, offsets 0..0 (trace lasting-0), from 1 broker\n"), out
        assert "why: queued behind " in out, out
        rc, _, err = run_journey_command([b.http], topic, "0", "30")
        assert rc == 1 and "no broker keeps a journey" in err, err
    finally:
        b.stop()


def test_peers_and_state_of_a_one_process_cluster(three):
    """Each broker's page finds the others of its process through
    /api/peers, and /api/state has what the page draws."""
    c = three
    for address in c.http:
        status, body = get(address, "/api/peers")
        assert status == 200, body
        peers = json.loads(body)["brokers"]
        assert sorted((p["broker"], p["http"]) for p in peers) == [(i, a) for i, a in enumerate(c.http)], peers
    status, body = get(c.http[0], "/api/state")
    state = json.loads(body)
    assert state["acceptor"]["accepted"] >= 1 and len(state["processors"]) == state["threads"]["network"]
    assert {"connections", "muted", "requests", "bytes_in", "bytes_out", "idle_ns", "up_ns"} <= set(state["processors"][0])
    assert state["io"]["threads"] == state["threads"]["io"] and state["io"]["up_ns"] > 0
    assert state["control_plane"]["processor"]["requests"] > 0  # the controller's requests came that way
    view = state["controller_view"]  # broker 0 hosts the controller
    assert sorted(x["id"] for x in view["brokers"]) == [0, 1, 2] and not any(x["fenced"] for x in view["brokers"])
    assert isinstance(state["request_queue"]["waits"], dict)
    assert state["node_id"] == 0 and state["purgatory"]["waiting"] >= 0 and set(state["fetch_bytes"]) == {"sendfile", "copied"}
    # a partition as b:state() shows it (one builder, server/broker_state.h and
    # replica/partition_state.h), with the newest segments only
    produce_traced(c.bootstrap, "state-shape", "state-shape")

    def hosted():
        st = json.loads(get(c.http[0], "/api/state")[1])
        t = st["topics"].get("state-shape")
        if t:
            assert t["name"] == "state-shape" and sorted(t["partitions"], key=int) == [str(i) for i in range(t["partition_count"])]
        return [p for p in t["partitions"].values() if p["hosted"]] if t else []
    parts = wait_until(hosted, 20, "broker 0 hosting state-shape")
    for p in parts:
        assert {"partition", "leader_epoch", "log_start_offset", "log_end_offset", "high_watermark",
                "last_stable_offset", "aborted_transactions", "size", "offline", "role", "leader",
                "partition_epoch", "replicas", "isr", "segment_count", "segments"} <= set(p), p
        assert 1 <= len(p["segments"]) <= min(p["segment_count"], 8), p
        assert {"base_offset", "next_offset", "size", "max_timestamp"} <= set(p["segments"][-1])
        if p["role"] == "leader" and len(p["replicas"]) > 1:
            assert set(p["followers"]) == {str(r) for r in p["replicas"] if r != p["leader"]}, p


def test_journey_in_three_processes(tmp_path):
    c = Cluster(tmp_path)
    c.start()
    try:
        topic = "proc-journey"
        c.create_topic(topic, 1, rf=3)
        c.wait_healthy(topic, 1)
        produce_traced(c.bootstrap, topic, "three-processes", compression="lz4")  # found inside a compressed batch
        consume_all(c.bootstrap, topic, 3)
        addresses = [b.http for b in c.brokers]
        rc, out, err = wait_until(
            lambda: (lambda r: r if r[0] == 0 and "consumer" in r[1] else None)(
                run_journey_command(addresses, "--trace", "three-processes")), 10, "the command's journey")
        # three processes share no monotonic clock: merged by the wall clock
        assert "from 3 brokers in several processes (wall clock)" in out.splitlines()[0], out
        # the stages, each with why it waited when the broker says, then the leader's verdict
        lines, verdict = out.splitlines()[1:-1], out.splitlines()[-1]
        whys = [ln.strip() for ln in lines if ln.lstrip().startswith("why: ")]
        lines = [ln for ln in lines if not ln.lstrip().startswith("why: ")]
        assert any(w.startswith("why: queued behind ") for w in whys), out
        assert any(w.startswith("why: waited ") and " for follower " in w for w in whys), out
        assert verdict == "verdict: committed: below the high watermark, visible to every consumer", out
        assert [ln.split("ms", 1)[0].strip() for ln in lines] == sorted(
            (ln.split("ms", 1)[0].strip() for ln in lines), key=float)
        assert sum("(follower of" in ln for ln in lines) == 2, out
        assert any("committed" in ln for ln in lines), out
        # each process's part, as JSON: the whole journey, and every append
        # where its broker's segment file has it
        leader = c.leader(topic, 0)
        followers = [b.id for b in c.brokers if b.id != leader]
        stages, parts = merged(addresses, topic, 0, 0)
        assert len(parts) == 3
        check_whole(stages, leader, followers)
        dirs = {b.id: b.data_dir for b in c.brokers}
        for st in stages:
            if st["stage"] in ("appended", "replicated"):
                check_file(dirs[st["broker"]], topic, st)
    finally:
        c.stop()


def prometheus_query(address, q):
    status, body = get(address, "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    assert status == 200, body
    return json.loads(body)["data"]["result"]


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed")
def test_prometheus_scrapes_the_brokers(tmp_path):
    c = Cluster(tmp_path / "cluster")
    c.start()
    prom = None
    try:
        topic = "prom"
        c.create_topic(topic, 1, rf=3)
        c.wait_healthy(topic, 1)
        kc.produce_confluent(c.bootstrap, topic, kc.make_messages(200, "prom"), acks="all")
        cfg = tmp_path / "prometheus.yml"
        targets = ", ".join(f"'{b.http}'" for b in c.brokers)
        cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                       f"scrape_configs:\n  - job_name: kafkaiq\n    static_configs:\n      - targets: [{targets}]\n")
        port = free_port()
        address = f"127.0.0.1:{port}"
        prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address={address}"], stdout=subprocess.DEVNULL,
                                stderr=open(tmp_path / "prometheus.log", "wb"))
        wait_until(lambda: len(prometheus_query(address, "up == 1")) == 3 if _up(address) else None, 60,
                   "prometheus to scrape all three brokers")
        q = wait_until(lambda: prometheus_query(
            address, 'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}'), 30,
            "Produce's p99 total time")
        assert all(float(r["value"][1]) > 0 for r in q), q
        assert prometheus_query(address, 'sum(kafka_server_brokertopicmetrics_messagesin_total{topic="prom"})')
        # a paused follower leaves the ISR: the leader reports the partition
        # under-replicated (one not hosting the controller, which must
        # accept the leader's AlterPartition)
        leader = c.leader(topic, 0)
        follower = next(b for b in c.brokers if b.id not in (leader, CONTROLLER_ID))
        follower.pause()
        try:
            wait_until(lambda: [r for r in prometheus_query(
                address, "sum(kafka_server_replicamanager_underreplicatedpartitions) >= 1")], 60,
                "prometheus to see an under-replicated partition")
        finally:
            follower.resume()
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        c.stop()


def metric(text, name, **labels):
    """The value of the sample of name with exactly those labels, or None."""
    want = name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else name
    for line in text.decode().splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return None


def test_metrics_count_every_response_error_by_request_and_code(broker):
    topic = kc.fresh_name("http-errors", broker)
    kc.create_topic(broker.bootstrap, topic, 2)
    before = get(broker.http, "/metrics")[1]
    ok = metric(before, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") or 0
    kc.produce_confluent(broker.bootstrap, topic, kc.make_messages(20, "e"), acks="all")
    missing = kc.fresh_name("http-missing", broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_topics([missing, missing + "-2"]).values():
        with pytest.raises(KafkaException) as e:
            f.result(30)
        assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    # a produce's partitions answer NONE, each counted; the two missing
    # topics come back in one DeleteTopics response, each counted (a request
    # is counted once its response is sent, so the client may see it first)
    before_missing = metric(before, "kafka_network_requestmetrics_errors_total", request="DeleteTopics",
                            error="UNKNOWN_TOPIC_OR_PARTITION") or 0
    after = wait_until(lambda: (lambda m: m if metric(
        m, "kafka_network_requestmetrics_errors_total", request="DeleteTopics",
        error="UNKNOWN_TOPIC_OR_PARTITION") == before_missing + 2 else None)(get(broker.http, "/metrics")[1]),
        10, "DeleteTopics' two errors counted")
    assert metric(after, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") > ok
    assert metric(after, "kafka_network_requestmetrics_errors_total", request="ApiVersions", error="NONE") >= 1


def _up(address):
    try:
        return get(address, "/-/ready", timeout=2)[0] == 200
    except OSError:
        return False


def raw(address, data, read=True, timeout=5):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return b""
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None


def test_bad_http_input_gets_errors_and_the_broker_serves_on(broker):
    a = broker.http
    assert get(a, "/nowhere")[0] == 404
    assert json.loads(get(a, "/nowhere")[1])["error"] == "no such path"
    for q in ("", "topic=t", "topic=t&partition=x&offset=0", "topic=t&partition=0&offset=-1",
              "topic=t&partition=99999999999&offset=0", "trace=", "trace=" + "x" * 200):
        assert get(a, "/api/journey?" + q)[0] == 400, q
    assert get(a, "/api/journey?topic=never&partition=0&offset=0")[0] == 404
    post = b"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc"
    assert status_of(raw(a, post)) == 405
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"a" * 60000 + b"\r\n\r\n"
    assert status_of(raw(a, big)) == 431
    # no request line at all: libmicrohttpd answers 400 or hangs up
    assert status_of(raw(a, b"NONSENSE\r\n\r\n")) in (400, None)
    # slow clients hold a connection each, up to the limit; others are still served
    slow = []
    for _ in range(20):
        host, port = a.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
        slow.append(s)
    try:
        assert get(a, "/metrics")[0] == 200
        assert get(a, "/api/state")[0] == 200
        assert b"kafka_server_replicamanager_leadercount" in get(a, "/metrics")[1]
    finally:
        for s in slow:
            s.close()
    # and Kafka's side never noticed
    topic = kc.fresh_name("http-after", broker)
    kc.create_topic(broker.bootstrap, topic, 1)
    reports = kc.produce_confluent(broker.bootstrap, topic, kc.make_messages(5, "after"))
    assert len(reports) == 5
    assert broker.alive()


def test_idle_http_connections_cannot_lock_out_a_scrape(broker):
    """More idle connections than the listener keeps (kafkaiq.http.max.connections,
    256): kept-alive ones that made a request, then silent ones, all from the
    scraper's own address. The longest idle are closed to make room, so a
    scrape is answered at once, not after the idle ones time out."""
    a = broker.http
    host, port = a.rsplit(":", 1)
    used, silent = [], []
    try:
        for _ in range(20):
            c = http.client.HTTPConnection(host, int(port), timeout=5)
            c.request("GET", "/api/peers")
            r = c.getresponse()
            r.read()
            assert r.status == 200 and not r.will_close
            used.append(c)
        for _ in range(300):
            silent.append(socket.create_connection((host, int(port)), timeout=5))
        # the bound: well within the listener's 10 s idle timeout
        status, body = get(a, "/metrics", timeout=5)
        assert status == 200
        closed = metric(body, "kafkaiq_connections_closed_total", limit="kafkaiq.http.max.connections")
        assert closed is not None and closed >= len(used) + len(silent) + 1 - 256, closed
    finally:
        for c in used:
            c.close()
        for s in silent:
            s.close()


def http_call(address, method, path, token=None, body=None, scheme="http", context=None, basic=None):
    """(status, headers, body) of one request, with a bearer token or a
    basic credential (user:password) when given."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if basic is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode()
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{scheme}://{address}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=context) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.mark.skipif(EXTERNAL is not None, reason="needs a broker this suite starts")
def test_control_api_basic_credential(tmp_path):
    """kafkaiq.http.basic: the control API asks for HTTP basic
    authentication (401 naming both schemes without a credential or with a
    wrong one) and takes it or kafkaiq.http.token; the credential is hidden
    from DescribeConfigs; one without a colon refuses the start."""
    from conftest import Broker
    b = Broker(tmp_path / "ok", ["kafkaiq.http.basic=ops:p@ss:word", "kafkaiq.http.token=s3cret-token"])
    b.start()
    try:
        for basic in (None, "ops:wrong", "other:p@ss:word", "ops:p@ss:wor"):
            status, headers, body = http_call(b.http, "GET", "/api/faults", basic=basic)
            assert status == 401, (basic, status, body)
            assert headers.get_all("WWW-Authenticate") == ['Bearer realm="kafkaiq"',
                                                           'Basic realm="kafkaiq", charset="UTF-8"']
        assert http_call(b.http, "GET", "/api/faults", token="p@ss:word")[0] == 401
        status, _, body = http_call(b.http, "GET", "/api/faults", basic="ops:p@ss:word")
        assert status == 200, body
        assert http_call(b.http, "GET", "/api/faults", token="s3cret-token")[0] == 200
        assert http_call(b.http, "GET", "/metrics")[0] == 200
        from confluent_kafka.admin import ConfigResource
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        res = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")])
        assert list(res.values())[0].result()["kafkaiq.http.basic"].value is None
    finally:
        b.stop()
    bad = Broker(tmp_path / "bad", ["kafkaiq.http.basic=no-colon"])
    with pytest.raises(AssertionError):
        bad.start()
    assert "kafkaiq.http.basic: USER:PASSWORD expected" in bad.stderr_tail()


@pytest.mark.skipif(EXTERNAL is not None, reason="needs a broker this suite starts")
def test_control_api_token_over_https(tmp_path, certs):
    """kafkaiq.http.token and HTTPS (kafkaiq.http.ssl.*): the control API
    answers 401 with WWW-Authenticate without the token or with a wrong
    one, and serves the request with it; what only reads (/metrics,
    /api/state) needs none; plain HTTP to the port gets no answer."""
    import ssl
    from conftest import Broker
    b = Broker(tmp_path, ["kafkaiq.http.token=s3cret-token",
                          f"kafkaiq.http.ssl.certificate.location={certs / 'server.pem'}",
                          f"kafkaiq.http.ssl.key.location={certs / 'server.key'}"])
    b.start()
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    try:
        def call(method, path, token=None, body=None):
            return http_call(b.http, method, path, token, body, "https", ctx)
        wait_until(lambda: call("GET", "/metrics")[0] == 200, 10, "the HTTPS listener")
        for token in (None, "wrong"):
            status, headers, body = call("GET", "/api/faults", token)
            assert status == 401, (status, body)
            assert headers["WWW-Authenticate"] == 'Bearer realm="kafkaiq"'
            assert "token" in json.loads(body)["error"]
        # a state-changing request is refused before its body is looked at
        assert call("POST", "/api/clock", None, {"advance_ms": 1})[0] == 401
        status, _, body = call("GET", "/api/faults", "s3cret-token")
        assert status == 200, body
        assert call("GET", "/api/state")[0] == 200
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            http_call(b.http, "GET", "/metrics")
        # the token is sensitive: DescribeConfigs does not show it
        from confluent_kafka.admin import ConfigResource
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        res = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")])
        assert list(res.values())[0].result()["kafkaiq.http.token"].value is None
    finally:
        b.stop()


def test_journey_of_a_fetch_over_tls_says_copy(tmp_path, certs):  # noqa: F811 (the fixture)
    """Over an SSL listener a fetch's records are read and encrypted in user
    space (no kernel TLS here): its records_fetched stage says "copy (TLS)"
    and tls_copy, not sendfile, where a plaintext fetch says sendfile."""
    from test_security import ssl_conf, started
    b = started(tmp_path, "SSL", ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs / 'server-store.pem'}"])
    try:
        conf = ssl_conf(b, certs)
        p = Producer(dict(conf, acks="all"))
        p.produce("tls-journey", value=b"encrypted on the way out", partition=0,
                  headers=[("kafkaiq-trace", b"tls-journey")])
        assert p.flush(30) == 0
        c = Consumer(dict(conf, **{"group.id": "tls-journey", "auto.offset.reset": "earliest",
                                   "client.id": "journey-consumer"}))
        c.subscribe(["tls-journey"])
        got, deadline = None, time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            got = m if m is not None and not m.error() else None
        c.close()
        assert got is not None and got.value() == b"encrypted on the way out"
        part = wait_until(lambda: (lambda j: j if j and any(s["stage"] == "records_fetched" for s in j["stages"])
                                   else None)(journey_part(b.http, trace="tls-journey")),
                          10, "the fetch in the journey")
        fetched = next(s for s in part["stages"] if s["stage"] == "records_fetched")
        assert fetched.get("tls_copy") is True and "sendfile" not in fetched, fetched
        assert "(fetch offset 0, copy (TLS))" in fetched["text"], fetched
    finally:
        b.stop()
