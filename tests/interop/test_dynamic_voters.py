"""Dynamic controller-quorum voters (KIP-853) with Apache Kafka's own
kafka-metadata-quorum:

- one controller-only node formatted standalone (kafkaiq.quorum.standalone)
  is the first voter; two more controller-only nodes start with only
  controller.quorum.bootstrap.servers and observe; a broker process
  (process.roles=broker) knows the controllers by the same bootstrap
  servers;
- `add-controller --command-config <the node's properties>` (node.id,
  process.roles, controller.listener.names, listeners, log.dirs and the
  log dir's meta.properties directory.id, as Kafka's tool reads them)
  adds both observers: describe shows three voters and no observer left;
- UpdateRaftVoter (what a Kafka voter sends at startup) to the leader
  writes the set again with the voter's listener; a wrong directory id gets
  VOTER_NOT_FOUND, a follower NOT_LEADER_OR_FOLLOWER naming the leader;
- produce through the broker works; the leader killed, another voter
  leads, and the broker finds it (a topic made, writes acknowledged);
- `remove-controller --controller-id N --controller-directory-id UUID`
  removes one; an unknown node (no such observer) and an unknown voter are
  refused with Kafka's errors, and the quorum stays up.
"""

import base64
import json
import os
import struct
import subprocess

import kiq_clients as kc
import kiq_wire as kw
from cluster import HOST, free_ports, metadata, wait_until
from conftest import BROKER_BIN, CONFIG, READY_TIMEOUT, wait_port
from test_controller_quorum import KAFKA_LIB, metadata_quorum, status_of


def quorum_tool(controller, *args):
    """kafka-metadata-quorum --bootstrap-controller controller args: (exit code, stdout + stderr)."""
    jars = sorted(KAFKA_LIB.glob("*.jar"))
    assert jars, f"no Apache Kafka jars in {KAFKA_LIB} (make deps fetches them)"
    out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, jars)),
                          "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", controller,
                          *args], capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


class Node:
    """One kafkaiq process: a controller-only node or a broker."""

    def __init__(self, tmp_path, node_id, port, overrides):
        self.id, self.port = node_id, port
        self.dir = tmp_path / f"node{node_id}"
        self.dir.mkdir()
        self.data = self.dir / "data"
        self.overrides = [f"broker.id={node_id}", f"log.dirs={self.data}", f"kafkaiq.http.listener={HOST}:0",
                          *overrides]
        self.proc = None

    def start(self):
        args = [str(BROKER_BIN), "serve", str(CONFIG)]
        for kv in self.overrides:
            args += ["--override", kv]
        with open(self.dir / "stderr", "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                         cwd=self.dir)
        assert wait_port(HOST, self.port, READY_TIMEOUT, self.proc), f"node {self.id} not up\n{self.stderr()}"

    def stderr(self):
        return (self.dir / "stderr").read_text(errors="replace")[-4000:]

    def directory_id(self):
        props = dict(line.split("=", 1) for line in (self.data / "meta.properties").read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        return props["directory.id"]

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


def controller_node(tmp_path, node_id, port, bootstrap, standalone=False):
    overrides = ["process.roles=controller", f"listeners=CONTROLLER://{HOST}:{port}",
                 "control.plane.listener.name=CONTROLLER", f"controller.quorum.bootstrap.servers={bootstrap}"]
    if standalone:
        overrides.append("kafkaiq.quorum.standalone=true")
    return Node(tmp_path, node_id, port, overrides)


def command_config(node, port):
    """The properties Kafka's add-controller reads of the node it adds."""
    path = node.dir / "controller.properties"
    path.write_text(f"node.id={node.id}\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n"
                    f"listeners=CONTROLLER://{HOST}:{port}\nlog.dirs={node.data}\n")
    return str(path)


def update_voter(controller, voter_id, directory_id, port):
    """UpdateRaftVoter v0 to controller: voter_id (its base64 directory id)
    listens at CONTROLLER://HOST:port and speaks kraft.version 0-1. The
    error code and the leader id the answer names."""
    dir_bytes = base64.urlsafe_b64decode(directory_id + "=" * (-len(directory_id) % 4))
    listener = kw.compact_string("CONTROLLER") + kw.compact_string(HOST) + struct.pack(">H", port) + kw.uvarint(0)
    body = (kw.compact_string(None) + struct.pack(">ii", -1, voter_id) + dir_bytes + kw.uvarint(2) + listener
            + struct.pack(">hh", 0, 1) + kw.uvarint(0) + kw.uvarint(0))
    host, p = controller.rsplit(":", 1)
    with kw.Conn(host, int(p)) as conn:
        resp = conn.call(82, 0, body, flexible=True)
    # the response header's tags, throttle_time_ms, error_code, then the
    # tagged current_leader (tag 0) when it is not the default
    error = struct.unpack(">h", resp[5:7])[0]
    leader = struct.unpack(">i", resp[10:14])[0] if len(resp) > 14 and resp[7] else -1
    return error, leader


def voters_and_observers(controller):
    st = status_of(metadata_quorum(controller, "--status"))
    voters = sorted(v["id"] for v in json.loads(st["CurrentVoters"]))
    observers = sorted(o["id"] for o in json.loads(st["CurrentObservers"]))
    return st, voters, observers


def test_controllers_added_and_removed_with_kafkas_tool(tmp_path):
    ports = free_ports(6)
    controllers = {1: ports[0], 2: ports[1], 3: ports[2]}
    addr = {i: f"{HOST}:{p}" for i, p in controllers.items()}
    first = controller_node(tmp_path, 1, controllers[1], addr[1], standalone=True)
    observers = [controller_node(tmp_path, i, controllers[i], addr[1]) for i in (2, 3)]
    # the broker knows the controllers by their addresses alone, as Kafka's do
    broker = Node(tmp_path, 0, ports[3], ["process.roles=broker",
                                          f"listeners=PLAINTEXT://{HOST}:{ports[3]},CONTROLLER://{HOST}:0",
                                          "control.plane.listener.name=CONTROLLER",
                                          "controller.quorum.bootstrap.servers=" + ",".join(addr.values()),
                                          "num.partitions=1", "default.replication.factor=1"])
    nodes = [first, *observers, broker]
    try:
        first.start()
        for n in observers:
            n.start()
        broker.start()

        # both observers fetch from the standalone voter
        def observed():
            _st, voters, obs = voters_and_observers(addr[1])
            return voters == [1] and obs == [2, 3]
        wait_until(observed, 60, "two observers of the standalone voter", interval=0.5)

        for n in observers:
            rc, out = quorum_tool(addr[1], "--command-config", command_config(n, controllers[n.id]),
                                  "add-controller")
            assert rc == 0, out[-3000:]
        # UpdateRaftVoter: node 1, formatted standalone, still leads
        assert update_voter(addr[1], 2, observers[0].directory_id(), controllers[2]) == (0, 1)
        assert update_voter(addr[1], 2, observers[1].directory_id(), controllers[2])[0] == 127
        assert update_voter(addr[2], 2, observers[0].directory_id(), controllers[2]) == (6, 1)
        st, voters, obs = voters_and_observers(addr[2])
        assert voters == [1, 2, 3] and obs == [], st
        listed = {v["id"]: v for v in json.loads(st["CurrentVoters"])}
        assert listed[2]["directoryId"] == observers[0].directory_id(), st
        assert any(str(controllers[2]) in e for e in listed[2]["endpoints"]), st
        assert any(str(controllers[3]) in e for e in listed[3]["endpoints"]), st

        port = ports[3]
        bootstrap = f"{HOST}:{port}"
        wait_until(lambda: 0 in metadata(HOST, port)["brokers"], 30, "the broker registered", interval=0.5)
        acked = kc.produce_confluent(bootstrap, "dyn", [(b"k%d" % i, b"v", []) for i in range(20)], acks="all")
        assert len(acked) == 20

        # the leader killed: another voter leads
        leader, epoch = int(st["LeaderId"]), int(st["LeaderEpoch"])
        by_id = {1: first, 2: observers[0], 3: observers[1]}
        by_id[leader].kill()
        survivor = next(addr[i] for i in addr if i != leader)

        def moved():
            s = status_of(metadata_quorum(survivor, "--status"))
            return s if int(s["LeaderId"]) not in (leader, -1) and int(s["LeaderEpoch"]) > epoch else None
        st = wait_until(moved, 90, "a new quorum leader", interval=0.5)
        new_leader = int(st["LeaderId"])
        assert new_leader in set(addr) - {leader}, st
        # the broker finds the new leader among its bootstrap servers: a topic
        # made through it, and writes go on
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("dyn-after", 1, 1)], operation_timeout=10,
                            request_timeout=15)["dyn-after"].result(30)
        acked = kc.produce_confluent(bootstrap, "dyn-after", [(b"k%d" % i, b"v", []) for i in range(20)], acks="all")
        assert len(acked) == 20

        # bad input: Kafka's errors, the quorum stays up
        stranger = Node(tmp_path, 9, ports[4], [])
        stranger.data.mkdir()
        dir_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        (stranger.data / "meta.properties").write_text(f"version=0\nbroker.id=9\ncluster.id=x\ndirectory.id={dir_id}\n")
        rc, out = quorum_tool(addr[new_leader], "--command-config", command_config(stranger, ports[4]),
                              "add-controller")
        assert rc != 0 and ("TimeoutException" in out or "timed out" in out.lower()), out[-3000:]
        rc, out = quorum_tool(addr[new_leader], "remove-controller", "--controller-id", "7",
                              "--controller-directory-id", observers[0].directory_id())
        assert rc != 0 and ("VoterNotFound" in out or "not a voter" in out), out[-3000:]
        assert int(status_of(metadata_quorum(addr[new_leader], "--status"))["LeaderId"]) == new_leader

        # the killed leader removed: two voters left
        gone = by_id[leader]
        rc, out = quorum_tool(addr[new_leader], "remove-controller", "--controller-id", str(leader),
                              "--controller-directory-id", gone.directory_id())
        assert rc == 0, out[-3000:]
        _st, voters, _obs = voters_and_observers(addr[new_leader])
        assert voters == sorted(set(addr) - {leader}), _st
    finally:
        for n in nodes:
            n.kill()
