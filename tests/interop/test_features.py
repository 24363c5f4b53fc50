"""Feature flags (KIP-584) as Apache Kafka's own `kafka-features` tool sees
them, against `serve --brokers 3` and a standalone broker:

- describe lists the supported ranges and the finalized levels
  (metadata.version 4.0-IV3, group.version 1 for KIP-848 groups;
  transaction.version 2 for transactions v2, share.version 2 for share
  groups);
- every broker's ApiVersions v3 answers the same finalized levels and epoch;
- `downgrade --feature group.version=0` and `upgrade` back to 1 are
  applied and reach every broker; `--dry-run` (validate_only) changes
  nothing;
- bad updates get Kafka's INVALID_UPDATE_VERSION messages: an unknown
  feature, a level KafkaIQ does not implement
  (eligible.leader.replicas.version 1), a
  metadata.version downgrade, safe or unsafe (an upgrade to a lower level
  the tool itself refuses; the unit tests check the controller's rule);
- the finalized levels survive a restart.
"""

import struct
import subprocess

import kiq_wire as kw
from cluster import HOST, OneProcessCluster, wait_until
from conftest import ROOT, Broker

KAFKA_LIB = ROOT / "build" / "kafka" / "lib"
API_VERSIONS = 18
PUSH_BOUND_S = 15.0


def features_tool(bootstrap, *args):
    """kafka-features --bootstrap-server bootstrap args: (exit code, stdout + stderr)."""
    jars = sorted(KAFKA_LIB.glob("*.jar"))
    assert jars, f"no Apache Kafka jars in {KAFKA_LIB} (make deps fetches them)"
    out = subprocess.run(["java", "-Xmx256m", "-cp", ":".join(map(str, jars)),
                          "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", bootstrap, *args],
                         capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def described(bootstrap):
    """describe's lines as {feature: {field: value}}."""
    rc, text = features_tool(bootstrap, "describe")
    assert rc == 0, text
    out = {}
    for line in text.splitlines():
        if not line.startswith("Feature:"):
            continue
        parts = line.split()
        fields = dict(zip(parts[0::2], parts[1::2]))
        out[fields.pop("Feature:")] = {k.rstrip(":"): v for k, v in fields.items()}
    return out


def _uvarint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def _string(buf, pos):
    n, pos = _uvarint(buf, pos)
    return buf[pos:pos + n - 1].decode(), pos + n - 1


def _skip_tags(buf, pos):
    n, pos = _uvarint(buf, pos)
    for _ in range(n):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def _features(buf, pos):
    n, pos = _uvarint(buf, pos)
    out = {}
    for _ in range(n - 1):
        name, pos = _string(buf, pos)
        a, b = struct.unpack_from(">hh", buf, pos)
        pos = _skip_tags(buf, pos + 4)
        out[name] = (a, b)
    return out


def api_versions_features(port):
    """ApiVersions v3 to one broker: (supported, finalized, epoch), the
    finalized levels as {name: max level}."""
    body = kw.compact_string("features-test") + kw.compact_string("1") + b"\x00"
    with kw.Conn(HOST, port, timeout=5.0) as conn:
        buf = conn.call(API_VERSIONS, 3, body, flexible=True)
    assert struct.unpack_from(">h", buf, 0)[0] == 0
    n, pos = _uvarint(buf, 2)
    for _ in range(n - 1):
        pos = _skip_tags(buf, pos + 6)
    pos += 4  # throttle_time_ms
    ntags, pos = _uvarint(buf, pos)
    supported, finalized, epoch = {}, {}, -1
    for _ in range(ntags):
        tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        if tag == 0:
            supported = _features(buf, pos)
        elif tag == 1:
            epoch = struct.unpack_from(">q", buf, pos)[0]
        elif tag == 2:
            finalized = {k: v[0] for k, v in _features(buf, pos).items()}  # max level first
        pos += size
    return supported, finalized, epoch


def all_agree(ports, want):
    """Every broker's finalized levels are want, with one epoch: that epoch."""
    seen = [api_versions_features(p) for p in ports]
    if all(s[1] == want for s in seen) and len({s[2] for s in seen}) == 1:
        return seen[0][2]
    return None


def check_bad_updates(bootstrap):
    rc, text = features_tool(bootstrap, "upgrade", "--feature", "eligible.leader.replicas.version=1")
    assert rc != 0 and "Invalid update version 1 for feature eligible.leader.replicas.version" in text, text
    rc, text = features_tool(bootstrap, "upgrade", "--feature", "no.such.version=1")
    assert rc != 0 and "Invalid update version 1 for feature no.such.version" in text, text
    rc, text = features_tool(bootstrap, "downgrade", "--metadata", "3.9-IV0")
    assert rc != 0 and "Invalid metadata.version 21" in text, text
    rc, text = features_tool(bootstrap, "downgrade", "--unsafe", "--metadata", "3.9-IV0")
    assert rc != 0 and "Invalid metadata.version 21" in text, text


def check_describe(bootstrap, group_level):
    d = described(bootstrap)
    assert d["metadata.version"]["FinalizedVersionLevel"] == "4.0-IV3", d
    assert d["metadata.version"]["SupportedMaxVersion"] == "4.0-IV3", d
    assert d["group.version"]["SupportedMaxVersion"] == "1", d
    assert d["group.version"]["FinalizedVersionLevel"] == str(group_level), d
    assert d["transaction.version"]["FinalizedVersionLevel"] == "2", d
    assert d["transaction.version"]["SupportedMaxVersion"] == "2", d
    assert d["kraft.version"]["FinalizedVersionLevel"] == "0", d
    assert d["share.version"]["FinalizedVersionLevel"] == "2", d
    assert d["share.version"]["SupportedMaxVersion"] == "2", d


def test_cluster_features(tmp_path):
    c = OneProcessCluster(tmp_path, 3)
    c.start()
    ports = [c.base + i for i in range(3)]
    try:
        boot = {"metadata.version": 25, "group.version": 1, "transaction.version": 2, "share.version": 2}
        boot_epoch = wait_until(lambda: all_agree(ports, boot), PUSH_BOUND_S, "every broker with the bootstrap levels")
        assert boot_epoch >= 0
        check_describe(c.bootstrap, 1)
        supported = api_versions_features(ports[0])[0]
        assert supported["metadata.version"] == (7, 25) and supported["group.version"] == (0, 1), supported

        rc, text = features_tool(c.bootstrap, "downgrade", "--feature", "group.version=0", "--dry-run")
        assert rc == 0 and "can be downgraded to 0" in text, text
        assert all_agree(ports, boot) == boot_epoch
        check_bad_updates(f"{HOST}:{ports[2]}")
        assert all_agree(ports, boot) == boot_epoch

        rc, text = features_tool(f"{HOST}:{ports[1]}", "downgrade", "--feature", "group.version=0")
        assert rc == 0 and "group.version was downgraded to 0" in text, text
        want = {"metadata.version": 25, "transaction.version": 2, "share.version": 2}
        epoch = wait_until(lambda: all_agree(ports, want), PUSH_BOUND_S, "every broker with group.version 0")
        assert epoch > boot_epoch
        check_describe(c.bootstrap, 0)

        c.stop()
        c.start()
        wait_until(lambda: all_agree(ports, want), PUSH_BOUND_S, "group.version 0 after a restart")
        rc, text = features_tool(c.bootstrap, "upgrade", "--feature", "group.version=1")
        assert rc == 0 and "group.version was upgraded to 1" in text, text
        wait_until(lambda: all_agree(ports, boot), PUSH_BOUND_S, "group.version back to 1")
    finally:
        c.stop()


def test_standalone_features(tmp_path):
    b = Broker(tmp_path)
    b.start()
    try:
        boot = {"metadata.version": 25, "group.version": 1, "transaction.version": 2, "share.version": 2}
        assert api_versions_features(b.port)[1:] == (boot, 0)
        check_describe(b.bootstrap, 1)
        check_bad_updates(b.bootstrap)
        rc, text = features_tool(b.bootstrap, "downgrade", "--feature", "group.version=0")
        assert rc == 0 and "group.version was downgraded to 0" in text, text
        assert api_versions_features(b.port)[1:] == ({"metadata.version": 25, "transaction.version": 2, "share.version": 2}, 1)
        b.restart()
        assert api_versions_features(b.port)[1:] == ({"metadata.version": 25, "transaction.version": 2, "share.version": 2}, 1)
        check_describe(b.bootstrap, 0)
    finally:
        b.stop()
