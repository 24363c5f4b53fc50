"""Hand-encoded consumer-group requests for the group tests.

Real clients never send a stale generation or a bad session timeout, so the
group tests build those frames themselves. Only non-flexible versions are
used (JoinGroup 3 and 5, SyncGroup 3, Heartbeat 3, LeaveGroup 1, OffsetCommit 5,
OffsetFetch 5, FindCoordinator 1, DescribeGroups 0, ListGroups 0,
DeleteGroups 1): every one of them is in the range the PROTOCOL notes ask
the broker to serve, and most are in librdkafka's mock cluster's too. The
new protocol's ConsumerGroupHeartbeat (KIP-848) is flexible from v0: its
v0 is here too, for tests that hold a rebalance half way.
"""

import struct

import kiq_wire as w

API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_FIND_COORDINATOR = 10
API_JOIN_GROUP = 11
API_HEARTBEAT = 12
API_LEAVE_GROUP = 13
API_SYNC_GROUP = 14
API_DESCRIBE_GROUPS = 15
API_LIST_GROUPS = 16
API_DELETE_GROUPS = 42

ERR_ILLEGAL_GENERATION = 22
ERR_UNKNOWN_MEMBER_ID = 25
ERR_INVALID_SESSION_TIMEOUT = 26
ERR_REBALANCE_IN_PROGRESS = 27
ERR_GROUP_ID_NOT_FOUND = 69
ERR_NON_EMPTY_GROUP = 68
ERR_MEMBER_ID_REQUIRED = 79


def _int32s(values):
    return w.array(struct.pack(">i", v) for v in values)


def consumer_metadata(topics):
    """ConsumerProtocolMemberMetadata v0: version, topics, user data."""
    return struct.pack(">h", 0) + w.array(w.string(t) for t in topics) + w.nbytes(b"")


def consumer_assignment(assignment):
    """ConsumerProtocolAssignment v0 from {topic: [partition, ...]}."""
    tps = [w.string(t) + _int32s(parts) for t, parts in sorted(assignment.items())]
    return struct.pack(">h", 0) + w.array(tps) + w.nbytes(b"")


def parse_consumer_assignment(data):
    if not data:
        return {}
    r = w.Reader(data)
    r.int16()
    return {t: ps for t, ps in r.array(lambda r: (r.string(), r.array(lambda r: r.int32())))}


# ---------------------------------------------------------------- requests

def find_coordinator_v1_body(group):
    return w.string(group) + struct.pack(">b", 0)


def join_group_body(group, member_id, topics, session_timeout_ms=30000,
                    rebalance_timeout_ms=30000, protocol="range", version=5):
    """JoinGroup v2..v5; v5 adds the (null) group instance id."""
    protos = [w.string(protocol) + w.nbytes(consumer_metadata(topics))]
    instance = w.string(None) if version >= 5 else b""
    return (w.string(group) + struct.pack(">ii", session_timeout_ms, rebalance_timeout_ms) +
            w.string(member_id) + instance + w.string("consumer") + w.array(protos))


def sync_group_v3_body(group, generation, member_id, assignments):
    """assignments: {member_id: {topic: [partitions]}} (empty for followers)."""
    items = [w.string(m) + w.nbytes(consumer_assignment(a)) for m, a in assignments.items()]
    return (w.string(group) + struct.pack(">i", generation) + w.string(member_id) +
            w.string(None) + w.array(items))


def heartbeat_v3_body(group, generation, member_id):
    return w.string(group) + struct.pack(">i", generation) + w.string(member_id) + w.string(None)


def leave_group_v1_body(group, member_id):
    return w.string(group) + w.string(member_id)


def offset_commit_v5_body(group, generation, member_id, offsets):
    """offsets: {(topic, partition): (offset, metadata)}."""
    by_topic = {}
    for (t, p), (off, meta) in sorted(offsets.items()):
        by_topic.setdefault(t, []).append(struct.pack(">iq", p, off) + w.string(meta))
    topics = [w.string(t) + w.array(parts) for t, parts in by_topic.items()]
    return (w.string(group) + struct.pack(">i", generation) + w.string(member_id) +
            w.array(topics))


def offset_fetch_v5_body(group, partitions):
    """partitions: {topic: [partition, ...]}."""
    topics = [w.string(t) + _int32s(ps) for t, ps in sorted(partitions.items())]
    return w.string(group) + w.array(topics)


def describe_groups_v0_body(groups):
    return w.array(w.string(g) for g in groups)


def delete_groups_v1_body(groups):
    return w.array(w.string(g) for g in groups)


# ---------------------------------------------------------------- responses

def parse_find_coordinator_v1(payload):
    r = w.Reader(payload)
    r.int32()
    err = r.int16()
    r.string()
    return err, r.int32(), r.string(), r.int32()


def parse_join_group(payload, version=5):
    """JoinGroup v2..v5 response; members are (member_id, instance_id, metadata)."""
    r = w.Reader(payload)
    r.int32()
    out = {"error": r.int16(), "generation": r.int32(), "protocol": r.string(),
           "leader": r.string(), "member_id": r.string()}

    def member(r):
        mid = r.string()
        instance = r.string() if version >= 5 else None
        return mid, instance, r.take(max(r.int32(), 0))

    out["members"] = r.array(member)
    return out


def parse_sync_group_v3(payload):
    r = w.Reader(payload)
    r.int32()
    err = r.int16()
    n = r.int32()
    return err, parse_consumer_assignment(r.take(n) if n > 0 else b"")


def parse_error_after_throttle(payload):
    """Heartbeat v1+ and LeaveGroup v1: throttle_time_ms, error_code."""
    r = w.Reader(payload)
    r.int32()
    return r.int16()


def parse_offset_commit_v5(payload):
    r = w.Reader(payload)
    r.int32()
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.int32(), r.int16()))))
    return {(t, p): err for t, parts in topics for p, err in parts}


def parse_offset_fetch_v5(payload):
    """Returns (top-level error, {(topic, partition): (offset, metadata, error)})."""
    r = w.Reader(payload)
    r.int32()

    def part(r):
        p, off = r.int32(), r.int64()
        r.int32()  # committed leader epoch
        return p, off, r.string(), r.int16()

    topics = r.array(lambda r: (r.string(), r.array(part)))
    err = r.int16()
    return err, {(t, p): (off, meta, e) for t, parts in topics for p, off, meta, e in parts}


def parse_describe_groups_v0(payload):
    r = w.Reader(payload)

    def member(r):
        mid, client_id, host = r.string(), r.string(), r.string()
        meta = r.take(max(r.int32(), 0))
        assignment = r.take(max(r.int32(), 0))
        return {"member_id": mid, "client_id": client_id, "host": host,
                "metadata": meta, "assignment": assignment}

    def group(r):
        return {"error": r.int16(), "group": r.string(), "state": r.string(),
                "protocol_type": r.string(), "protocol": r.string(),
                "members": r.array(member)}

    return {g["group"]: g for g in r.array(group)}


def parse_list_groups_v0(payload):
    r = w.Reader(payload)
    err = r.int16()
    return err, dict(r.array(lambda r: (r.string(), r.string())))


def parse_delete_groups_v1(payload):
    r = w.Reader(payload)
    r.int32()
    return dict(r.array(lambda r: (r.string(), r.int16())))


# ---------------------------------------------------------------- a raw member

def coordinator(broker, group):
    """(host, port) of group's coordinator, asked of the bootstrap broker."""
    with w.Conn(broker.host, broker.port) as c:
        err, node, host, port = parse_find_coordinator_v1(
            c.call(API_FIND_COORDINATOR, 1, find_coordinator_v1_body(group)))
    assert err == w.ERR_NONE, f"FindCoordinator({group}) error {err}"
    return host, port


class RawMember:
    """A group member speaking raw frames on one connection to the coordinator.

    join() runs the whole JoinGroup (twice when the broker asks for a member
    id) and SyncGroup, as leader assigning every partition to itself.
    """

    def __init__(self, broker, group, topic, partitions, session_timeout_ms=30000):
        self.group = group
        self.topic = topic
        self.partitions = list(partitions)
        self.session_timeout_ms = session_timeout_ms
        host, port = coordinator(broker, group)
        self.conn = w.Conn(host, port, timeout=30.0)
        self.member_id = ""
        self.generation = -1
        self.assignment = None

    def close(self):
        self.conn.close()

    def join_once(self, member_id=None, session_timeout_ms=None, version=5):
        body = join_group_body(self.group, self.member_id if member_id is None else member_id,
                               [self.topic], session_timeout_ms or self.session_timeout_ms,
                               version=version)
        return parse_join_group(self.conn.call(API_JOIN_GROUP, version, body), version)

    def join(self):
        res = self.join_once()
        if res["error"] == ERR_MEMBER_ID_REQUIRED:
            self.member_id = res["member_id"]
            res = self.join_once()
        assert res["error"] == w.ERR_NONE, f"JoinGroup error {res['error']}"
        self.member_id = res["member_id"]
        self.generation = res["generation"]
        assert res["leader"] == self.member_id, \
            f"alone in the group but not its leader: {res}"
        err, self.assignment = self.sync(self.generation,
                                         {self.member_id: {self.topic: self.partitions}})
        assert err == w.ERR_NONE, f"SyncGroup error {err}"
        return self.assignment

    def sync(self, generation, assignments):
        return parse_sync_group_v3(self.conn.call(
            API_SYNC_GROUP, 3, sync_group_v3_body(self.group, generation, self.member_id,
                                                  assignments)))

    def heartbeat(self, generation=None, member_id=None):
        gen = self.generation if generation is None else generation
        mid = self.member_id if member_id is None else member_id
        return parse_error_after_throttle(self.conn.call(
            API_HEARTBEAT, 3, heartbeat_v3_body(self.group, gen, mid)))

    def commit(self, offsets, generation=None, member_id=None):
        gen = self.generation if generation is None else generation
        mid = self.member_id if member_id is None else member_id
        return parse_offset_commit_v5(self.conn.call(
            API_OFFSET_COMMIT, 5, offset_commit_v5_body(self.group, gen, mid, offsets)))

    def fetch_offsets(self, partitions=None):
        return parse_offset_fetch_v5(self.conn.call(
            API_OFFSET_FETCH, 5,
            offset_fetch_v5_body(self.group, {self.topic: partitions or self.partitions})))

    def leave(self):
        return parse_error_after_throttle(self.conn.call(
            API_LEAVE_GROUP, 1, leave_group_v1_body(self.group, self.member_id)))


API_CONSUMER_GROUP_HEARTBEAT = 68


def _compact_array(items):
    return w.uvarint(len(items) + 1) + b"".join(items)


def consumer_group_heartbeat_v0_body(group, member_id, epoch, topics=None, owned=None, rebalance_timeout_ms=-1):
    """ConsumerGroupHeartbeat v0 (flexible): topics, the subscription (None:
    unchanged); owned, [(topic_id bytes, [partitions])] (None: not said)."""
    b = w.compact_string(group) + w.compact_string(member_id) + struct.pack(">i", epoch)
    b += w.compact_string(None) + w.compact_string(None)  # instance id, rack id
    b += struct.pack(">i", rebalance_timeout_ms)
    b += w.uvarint(0) if topics is None else _compact_array([w.compact_string(t) for t in topics])
    b += w.compact_string(None)  # server assignor
    if owned is None:
        b += w.uvarint(0)
    else:
        b += _compact_array([tid + _compact_array([struct.pack(">i", p) for p in ps]) + w.uvarint(0)
                             for tid, ps in owned])
    return b + w.uvarint(0)


def _uvarint_read(r):
    n = shift = 0
    while True:
        c = r.int8() & 0xFF
        n |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return n


def _compact_string_read(r):
    n = _uvarint_read(r) - 1
    return None if n < 0 else r.take(n).decode()


def _skip_tags(r):
    for _ in range(_uvarint_read(r)):
        _uvarint_read(r)
        r.take(_uvarint_read(r))


def parse_consumer_group_heartbeat_v0(payload):
    """(error, member_id, member_epoch, assignment): the assignment as
    [(topic_id bytes, [partitions])], None when the answer has none. The
    payload starts with the response header's tagged fields."""
    r = w.Reader(payload)
    _skip_tags(r)
    r.int32()  # throttle
    err = r.int16()
    _compact_string_read(r)  # message
    member_id = _compact_string_read(r)
    epoch = r.int32()
    r.int32()  # heartbeat interval
    assignment = None
    if r.int8() >= 0:
        assignment = []
        for _ in range(_uvarint_read(r) - 1):
            tid = r.take(16)
            ps = [r.int32() for _ in range(_uvarint_read(r) - 1)]
            _skip_tags(r)
            assignment.append((tid, ps))
        _skip_tags(r)
    _skip_tags(r)
    return err, member_id, epoch, assignment
