"""Broker identity in a cluster: a second process started with a broker.id
that is live (its own, empty log directory) is refused by the controller
(DUPLICATE_BROKER_REGISTRATION, as Kafka) and exits non-zero saying why,
while the registered broker keeps its registration, ports and partitions;
a restart of a broker on its own directory is never taken for one.
"""

from cluster import Cluster, ClusterBroker, free_ports, wait_until


def registrations(b):
    return (b.stderr_path.read_text(errors="replace") if b.stderr_path else "").count("registered with the controller")


def test_a_second_process_with_a_live_broker_id_exits_and_the_cluster_is_undisturbed(tmp_path):
    c = Cluster(tmp_path / "cluster")
    c.start()
    impostor = None
    try:
        c.create_topic("ident", 3)
        before = c.metadata()["brokers"]
        regs = registrations(c[1])
        ports = free_ports(3)
        impostor = ClusterBroker(c, 1, *ports)
        impostor.workdir = tmp_path / "impostor"
        impostor.data_dir = impostor.workdir / "data"
        impostor.data_dir.mkdir(parents=True)
        impostor.start()
        # its registration is refused for a session, then it gives up
        code = impostor.proc.wait(timeout=30)
        assert code != 0, "the second broker 1 exited 0"
        err = impostor.stderr_path.read_text(errors="replace")
        assert "broker.id 1 is taken" in err, err[-3000:]
        assert "second registration of broker 1 refused" in c[0].stderr_path.read_text(errors="replace")
        # the cluster never saw it: same brokers at the same addresses, broker 1
        # registered once, every partition still led by a real broker
        assert c.metadata()["brokers"] == before
        assert registrations(c[1]) == regs
        c.wait_healthy("ident", 3)
        # a restart on its own directory, inside its old session, is a restart
        c[2].kill()
        c[2].start()
        wait_until(lambda: registrations(c[2]) >= 1, 20, "broker 2 registered again")
        c.wait_registered()
    finally:
        if impostor is not None and impostor.alive():
            impostor.kill()
        c.stop()


def test_restarts_on_own_directories_after_the_controller_restarted(tmp_path):
    """The controller's broker restarts (its slots rebuilt from the metadata
    log), then each other broker restarts on its own directories: each is
    registered at once, never refused as a duplicate (the registration's log
    directories are in its RegisterBrokerRecord, so the new controller knows
    them)."""
    c = Cluster(tmp_path / "cluster")
    c.start()
    try:
        c[0].kill()
        c[0].start()
        c.wait_registered()
        # a topic's partitions on every broker: each has heartbeated the new
        # controller (its channel to a broker opens on the first heartbeat)
        c.create_topic("after-restart", 3)
        for b in (c[1], c[2]):
            b.kill()
            b.start()  # a new stderr file for this start
            wait_until(lambda: registrations(b) >= 1, 1.0, f"broker {b.id} registered again")
        c.wait_registered()
        assert "second registration" not in c[0].stderr_path.read_text(errors="replace")
    finally:
        c.stop()
