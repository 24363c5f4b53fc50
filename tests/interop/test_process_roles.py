"""process.roles as Kafka names them: a controller quorum apart from the
brokers.

- `serve --brokers 3 --controllers 3`: three brokers and three
  controller-only nodes in one process. The ready line lists them apart;
  Metadata lists the brokers alone and names one of them as the
  controller (it forwards); Apache Kafka's kafka-metadata-quorum
  describes voters 3, 4 and 5. The quorum leader killed over the control
  API: a new one leads in a higher epoch, CreateTopics succeeds, writes go
  on, and every acknowledged record reads back once it is restarted.
- One process per node: a controller-only `serve` (listeners with
  CONTROLLER alone) and two brokers with process.roles=broker. The
  controller keeps the metadata log and no partition.
- A broker started before its controller listens but takes no client
  until the controller's metadata is there, as Kafka's: a Metadata request
  sent then is answered afterwards, from that metadata, not from an empty
  cache (which told a client its topic was missing, or refused it).
- Wrong roles are refused with the reason: an unknown role, a controller
  that is not a voter, a voter that is no controller.
"""

import json
import subprocess
import urllib.request

import kiq_clients as kc
import kiq_wire as kw
from cluster import API_METADATA, HOST, Cluster, metadata, metadata_v7_body, parse_metadata_v7, wait_until
from conftest import BROKER_BIN, CONFIG, READY_TIMEOUT
from test_controller_quorum import metadata_quorum, status_of


def serve(tmp_path, *args):
    """`kafkaiq serve` with every port free and a ready file: (process, the ready line)."""
    ready = tmp_path / "ready.json"
    err = open(tmp_path / "serve.stderr", "wb")
    proc = subprocess.Popen([str(BROKER_BIN), "serve", *args, str(CONFIG),
                             "--override", f"listeners=PLAINTEXT://{HOST}:0",
                             "--override", f"log.dirs={tmp_path / 'data'}",
                             "--override", f"kafkaiq.http.listener={HOST}:0",
                             "--ready-file", str(ready)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path)
    err.close()

    def up():
        assert proc.poll() is None, (tmp_path / "serve.stderr").read_text()[-3000:]
        return ready.exists() and json.loads(ready.read_text())
    return proc, wait_until(up, READY_TIMEOUT, "the ready file")


def control(http, path):
    req = urllib.request.Request(f"http://{http}{path}", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 202, r.status


def stop(proc):
    proc.terminate()
    assert proc.wait(60) == 0


def records(prefix, n):
    return [(f"{prefix}{i}".encode(), f"value-{prefix}{i}".encode(), []) for i in range(n)]


def test_serve_controllers_runs_a_quorum_apart_from_the_brokers(tmp_path):
    proc, ready = serve(tmp_path, "--brokers", "3", "--controllers", "3")
    try:
        assert [b["id"] for b in ready["brokers"]] == [0, 1, 2], ready
        assert [c["id"] for c in ready["controllers"]] == [3, 4, 5], ready
        assert all("port" not in c and c["control_port"] > 0 for c in ready["controllers"]), ready
        bootstrap = ready["bootstrap"]
        assert bootstrap.count(",") == 2, bootstrap
        quorum = {c["id"]: f"{HOST}:{c['control_port']}" for c in ready["controllers"]}

        b0 = ready["brokers"][0]
        md = metadata(HOST, b0["port"])
        assert sorted(md["brokers"]) == [0, 1, 2], md
        assert md["controller"] in (0, 1, 2), md  # a broker clients can reach

        st = status_of(metadata_quorum(quorum[3], "--status"))
        leader, epoch = int(st["LeaderId"]), int(st["LeaderEpoch"])
        assert leader in quorum, st
        assert [v["id"] for v in json.loads(st["CurrentVoters"])] == [3, 4, 5], st

        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": bootstrap})
        a.create_topics([NewTopic("roles", 3, 3)], operation_timeout=10, request_timeout=15)["roles"].result(20)
        first = kc.produce_confluent(bootstrap, "roles", records("a", 60), acks="all")

        control(b0["http"], f"/api/brokers/{leader}/kill")
        survivor = quorum[next(i for i in quorum if i != leader)]

        def moved():
            s = status_of(metadata_quorum(survivor, "--status"))
            return s if int(s["LeaderId"]) not in (leader, -1) and int(s["LeaderEpoch"]) > epoch else None
        st = wait_until(moved, 60, "a new quorum leader", interval=0.5)
        assert int(st["LeaderId"]) in set(quorum) - {leader}, st

        a.create_topics([NewTopic("made-after", 2, 3)], operation_timeout=10,
                        request_timeout=15)["made-after"].result(20)
        second = kc.produce_confluent(bootstrap, "roles", records("b", 60), acks="all")

        control(b0["http"], f"/api/brokers/{leader}/restart")

        def caught_up():
            rows = [line.split() for line in metadata_quorum(survivor, "--replication").splitlines()[1:]]
            return sorted(int(r[0]) for r in rows) == [3, 4, 5] and all(r[3] == "0" for r in rows)
        wait_until(caught_up, 60, "the restarted controller caught up", interval=0.5)

        got = {k: (p, off) for p, off, k, _v, _h in kc.consume_confluent_all(bootstrap, "roles", range(3))}
        for acked in (first, second):
            lost = {k: at for k, at in acked.items() if got.get(k) != at}
            assert not lost, f"{len(lost)} acknowledged records not read back where acknowledged: {list(lost)[:5]}"
    finally:
        stop(proc)


def test_a_controller_process_and_broker_processes(tmp_path):
    c = Cluster(tmp_path, n=2, controllers=1)
    c.start()
    try:
        controller = c.controllers[0]
        assert c.voters == (2,)
        md = c.metadata()
        assert sorted(md["brokers"]) == [0, 1], md
        c.create_topic("split", 2, rf=2)
        acked = kc.produce_confluent(c.bootstrap, "split", records("s", 40), acks="all")
        got = {k: (p, off) for p, off, k, _v, _h in kc.consume_confluent_all(c.bootstrap, "split", range(2))}
        assert all(got.get(k) == at for k, at in acked.items()), (acked, got)

        st = status_of(metadata_quorum(f"{HOST}:{controller.control_port}", "--status"))
        assert st["LeaderId"] == "2", st
        held = sorted(p.name for p in controller.data_dir.iterdir() if p.is_dir())
        assert held == ["__cluster_metadata-0"], held  # the metadata log and no partition
        assert (c.brokers[0].data_dir / "split-0").is_dir()
    finally:
        c.stop()


def test_a_broker_takes_clients_once_the_controller_metadata_is_there(tmp_path):
    c = Cluster(tmp_path, n=1, controllers=1)
    broker, controller = c.brokers[0], c.controllers[0]
    try:
        c.start()
        c.create_topic("kept", 1, rf=1)
        c.stop()
        broker.start()  # before its controller: the port listens, the connection waits in the backlog
        with kw.Conn(HOST, broker.port, timeout=READY_TIMEOUT) as conn:
            corr = conn.request(API_METADATA, 7, metadata_v7_body(["kept"]))
            controller.start()
            md = parse_metadata_v7(conn.response(corr))
        kept = md["topics"]["kept"]
        assert kept["error"] == 0 and list(kept["partitions"]) == [0], md
    finally:
        c.stop()


def refused(tmp_path, *overrides):
    """serve with these overrides: its exit code and what it said."""
    args = [str(BROKER_BIN), "serve", str(CONFIG), "--override", f"log.dirs={tmp_path / 'data'}",
            "--override", f"listeners=PLAINTEXT://{HOST}:0,CONTROLLER://{HOST}:0",
            "--override", "control.plane.listener.name=CONTROLLER"]
    for kv in overrides:
        args += ["--override", kv]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    return r.returncode, r.stderr


def test_wrong_roles_are_refused_with_the_reason(tmp_path):
    cases = [
        (("process.roles=broker,brokr",), "unknown role 'brokr'"),
        (("process.roles=broker,broker",), "named twice"),
        (("process.roles=controller",), "must be among controller.quorum.voters"),
        (("process.roles=broker", "broker.id=0", "controller.quorum.voters=0@127.0.0.1:1"),
         "its process.roles must have controller"),
        (("process.roles=controller", "broker.id=1", "controller.quorum.voters=0@127.0.0.1:1"),
         "must be among controller.quorum.voters"),
    ]
    for overrides, said in cases:
        code, err = refused(tmp_path, *overrides)
        assert code != 0 and said in err, (overrides, code, err[-2000:])
    r = subprocess.run([str(BROKER_BIN), "serve", "--controllers", "0"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--controllers takes 1 to" in r.stderr, r.stderr
