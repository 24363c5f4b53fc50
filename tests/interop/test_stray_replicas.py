"""Stray replicas (Kafka's stray detection, KIP-858): a broker deletes the
replicas the controller's metadata no longer assigns to it, whether or not
it was up when they were removed.

In a 3-broker cluster (three processes): a broker is stopped; while it is
down one partition is reassigned away from it (AlterPartitionReassignments)
and another topic it holds is deleted; once it is back and has the
controller's metadata, its directories for both are gone, while its other
replicas stay.
"""

from cluster import CLUSTER_OVERRIDES, Cluster, wait_until
from test_partition_reassignment import alter_reassignments, list_reassignments, produce

OVERRIDES = tuple(o for o in CLUSTER_OVERRIDES if not o.startswith("min.insync")) + ("min.insync.replicas=1",)


def test_replicas_removed_while_down_are_deleted(tmp_path):
    c = Cluster(tmp_path / "cluster", overrides=OVERRIDES)
    c.start()
    try:
        moved = c.create_topic("moved-away", 1, rf=2)[0]["replicas"]
        victim = next(r for r in moved if r != 0)  # broker 0 hosts the controller: it stays up
        third = ({0, 1, 2} - set(moved)).pop()
        c.create_topic("deleted", 1, rf=3)
        c.create_topic("kept", 1, rf=3)
        for t in ("moved-away", "deleted", "kept"):
            produce(c, t, 200)
        b = c[victim]
        for t in ("moved-away", "deleted", "kept"):
            assert b.partition_dir(t, 0).is_dir()
        b.stop()

        target = [third if r == victim else r for r in moved]
        top, parts = alter_reassignments(c[0].port, "moved-away", 0, target)
        assert top[0] == 0 and parts[("moved-away", 0)][0] == 0, (top, parts)

        def complete():
            st = c.partitions("moved-away", via=0)[0]
            return not list_reassignments(c[0].port) and sorted(st["replicas"]) == sorted(target)
        wait_until(complete, 60, f"moved-away-0 reassigned to {target}")
        from confluent_kafka.admin import AdminClient
        a = AdminClient({"bootstrap.servers": c[0].bootstrap})
        a.delete_topics(["deleted"], operation_timeout=10, request_timeout=15)["deleted"].result(20)
        wait_until(lambda: "deleted" not in c[0].metadata(["deleted"])["topics"] or
                   c[0].metadata(["deleted"])["topics"]["deleted"]["error"] != 0, 20, "topic deleted")

        b.start()
        wait_until(lambda: not b.partition_dir("moved-away", 0).exists() and not b.partition_dir("deleted", 0).exists(),
                   60, f"broker {victim} deleting its stray replicas")
        assert b.alive()
        assert b.partition_dir("kept", 0).is_dir()
        c.wait_isr("kept", 0, {0, 1, 2}, 30)
        assert c[third].partition_dir("moved-away", 0).is_dir()
    finally:
        c.stop()
