"""Consumer groups with real clients, and the coordinator's answers to bad input.

Members are separate processes (group_member.py) printing their assignments,
records and commits as JSON lines; the tests poll those with deadlines. The
checks: one owner per partition once the group is stable, every record
consumed exactly once when nothing fails, at-least-once with duplicates only
past the last commit when a member is SIGKILLed, librdkafka and kafka-python
sharing the range protocol, committed offsets and metadata surviving a
restart, kcat's balanced consumer, and the error codes Kafka's coordinator
gives stale members, bad session timeouts and non-empty group deletion.
"""

import json
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

import kiq_clients as kc
import kiq_group_wire as gw
import kiq_wire as w
from conftest import EXTERNAL, Broker
from group_member import Member, wait_for

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000   # Kafka's default group.min.session.timeout.ms
STABLE_TIMEOUT = 60.0
CONSUME_TIMEOUT = 90.0


@pytest.fixture
def members(tmp_path):
    """Starts member processes; every one still running is stopped at teardown."""
    started = []

    def start(broker, group, topic, name, **kw):
        m = Member.python(broker, group, topic, name, stderr_dir=str(tmp_path), **kw)
        started.append(m)
        return m

    start.all = started
    yield start
    for m in started:
        m.stop(timeout=15)


def names(broker, base):
    """A fresh (topic, group) pair, created with PARTITIONS partitions."""
    topic = kc.fresh_name(f"grp-{base}", broker)
    parts = kc.create_topic(broker.bootstrap, topic, PARTITIONS, managed=broker.managed)
    return topic, kc.fresh_name(f"g-{base}", broker), parts


def stable(ms, parts):
    """Every member holds partitions, none twice, and together all of them."""
    held = [m.assignment for m in ms]
    if any(not h for h in held):
        return False
    flat = [p for h in held for p in h]
    return len(flat) == len(set(flat)) and set(flat) == set(parts)


def make_messages(n, tag):
    """kc.make_messages with the tag in each key, so batches never share keys."""
    return [(tag.encode() + b"-" + k, v, h) for k, v, h in kc.make_messages(n, tag)]


def consumed_keys(ms):
    out = {}
    for m in ms:
        for p, o, k in m.records:
            out.setdefault(k, []).append((m.name, p, o))
    return out


def check_exactly_once(ms, msgs, reports):
    seen = consumed_keys(ms)
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    assert not dup, f"{len(dup)} records consumed more than once, e.g. {list(dup.items())[:3]}"
    want = {k.decode() for k, _, _ in msgs}
    missing = want - set(seen)
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing)[:5]}"
    extra = set(seen) - want
    assert not extra, f"unexpected records {sorted(extra)[:5]}"
    for k, [(who, p, o)] in seen.items():
        assert (p, o) == reports[k.encode()], \
            f"{who} read {k} at {p}/{o}, delivery report said {reports[k.encode()]}"


def committed_offsets(broker, group, topic, parts):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        res = c.committed([TopicPartition(topic, p) for p in parts], timeout=15)
        return {tp.partition: tp.offset for tp in res}
    finally:
        c.close()


def end_offsets(broker, topic, parts):
    return {p: hi for p, (lo, hi) in kc.watermarks_confluent(broker.bootstrap, topic,
                                                             parts).items()}


def advertised(broker):
    with w.Conn(broker.host, broker.port) as c:
        err, apis = w.parse_api_versions_v0(c.call(w.API_API_VERSIONS, 0, b""))
    assert err == w.ERR_NONE
    return apis


def need_apis(broker, *keys):
    apis = advertised(broker)
    lacking = [k for k in keys if k not in apis]
    if lacking:
        pytest.skip(f"the peer does not serve api keys {lacking}")


# ---------------------------------------------------------------- real members

@pytest.mark.timeout(240)
def test_three_members_share_partitions_exactly_once(broker, members):
    topic, group, parts = names(broker, "three")
    ms = [members(broker, group, topic, f"m{i}") for i in range(3)]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT, "three members to split the partitions", ms)
    rebalances = [m.rebalances for m in ms]

    msgs = make_messages(6000, "three")
    reports = kc.produce_confluent(broker.bootstrap, topic, msgs)
    wait_for(lambda: sum(len(m.records) for m in ms) >= len(msgs), CONSUME_TIMEOUT,
             f"{len(msgs)} records across the members", ms)
    ends = end_offsets(broker, topic, parts)
    wait_for(lambda: all(m.committed.get(p) == ends[p] for m in ms for p in m.assignment),
             30, f"each member to commit its partitions' ends {ends}", ms)
    assert [m.rebalances for m in ms] == rebalances, "the group rebalanced with nothing changing"
    for m in ms:
        assert {p for p, _, _ in m.records} <= m.assignment, f"{m.name} read outside its assignment"
        assert not m.commit_errors, f"{m.name}: {m.commit_errors[:3]}"
    check_exactly_once(ms, msgs, reports)

    for m in ms:
        assert m.stop() == 0, m.describe()
    assert committed_offsets(broker, group, topic, parts) == ends


def _produce_in_thread(broker, topic, msgs, out):
    def run():
        try:
            out["reports"] = kc.produce_confluent(broker.bootstrap, topic, msgs)
        except BaseException as e:  # reported by the test thread
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.timeout(300)
def test_sigkilled_member_partitions_move_and_nothing_is_lost(broker, members):
    topic, group, parts = names(broker, "sigkill")
    # The victim waits before each commit, so the kill lands while what it
    # has read is still uncommitted: that part must be read again, and only that.
    ms = [members(broker, group, topic, f"k{i}", session_timeout=SESSION_TIMEOUT_MS,
                  commit_delay_ms=1500 if i == 0 else 0) for i in range(3)]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT, "three members to split the partitions", ms)
    victim, survivors = ms[0], ms[1:]
    lost_parts = set(victim.assignment)

    first = make_messages(2000, "sk1")
    reports = kc.produce_confluent(broker.bootstrap, topic, first)
    wait_for(lambda: sum(len(m.records) for m in ms) >= len(first), CONSUME_TIMEOUT,
             "the first batch to be consumed", ms)

    second = make_messages(2000, "sk2")
    out = {}
    producer = _produce_in_thread(broker, topic, second, out)
    before = len(victim.records)
    wait_for(lambda: len(victim.records) > before, CONSUME_TIMEOUT,
             "the victim to read from the second batch", ms)
    victim.kill()
    killed_at = time.monotonic()
    uncommitted = {(p, o) for p, o, _ in victim.records if o >= victim.committed.get(p, 0)}
    assert uncommitted, f"the kill missed the victim's uncommitted window: {victim.describe()}"
    producer.join(120)
    assert "error" not in out, f"producing the second batch failed: {out.get('error')!r}"
    reports.update(out["reports"])

    wait_for(lambda: stable(survivors, parts), SESSION_TIMEOUT_MS / 1000 + 45,
             f"the survivors to take over partitions {sorted(lost_parts)}", survivors)
    took = time.monotonic() - killed_at

    third = make_messages(2000, "sk3")
    reports.update(kc.produce_confluent(broker.bootstrap, topic, third))
    msgs = first + second + third
    want = {k.decode() for k, _, _ in msgs}
    wait_for(lambda: want <= set(consumed_keys(ms)), CONSUME_TIMEOUT,
             "every record to be consumed at least once", ms)

    seen = consumed_keys(ms)
    for k, reads in seen.items():
        assert k in want, f"unexpected record {k}"
        for who, p, o in reads:
            assert (p, o) == reports[k.encode()], f"{who} read {k} at {p}/{o}"
    dups = {(p, o) for reads in seen.values() if len(reads) > 1 for _, p, o in reads[:1]}

    # The survivors resume each lost partition at the victim's last commit
    # (or a later one whose answer the victim never got to print).
    resume = {p: min(o for m in survivors for pp, o, _ in m.records if pp == p)
              for p in lost_parts}
    for p in lost_parts:
        assert resume[p] >= victim.committed.get(p, 0), (
            f"partition {p} resumed at {resume[p]}, below the victim's commit "
            f"{victim.committed.get(p)}")
    if any(m.commit_errors for m in survivors):
        # A survivor's failed commit also allows re-reading what it had read.
        for k, reads in seen.items():
            past = {who for who, p, o in reads
                    if next(m for m in ms if m.name == who).committed.get(p, -1) > o}
            assert len(past) <= 1, f"{k} re-read after two members committed past it: {reads}"
    else:
        reread = {(p, o) for p, o, _ in victim.records if o >= resume[p]}
        assert dups == reread, (
            f"read twice: {sorted(dups - reread)[:5]} not explained by a missing commit, "
            f"{sorted(reread - dups)[:5]} uncommitted but not re-read")
        assert dups <= uncommitted
    print(f"takeover after {took:.1f} s; {len(dups)} records read twice of {len(uncommitted)} "
          f"uncommitted (victim committed {victim.committed}, survivors resumed at {resume})")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("leader", ["kafka-python", "confluent"])
def test_kafka_python_and_confluent_share_a_group(broker, members, leader):
    topic, group, parts = names(broker, f"mixed-{leader}")
    other = "confluent" if leader == "kafka-python" else "kafka-python"
    # The first member alone holds everything, so it leads the next rebalance
    # and its client's range assignor computes the split.
    first = members(broker, group, topic, f"{leader}-1", client=leader)
    wait_for(lambda: first.assignment == set(parts), STABLE_TIMEOUT,
             f"{leader} to hold every partition alone", [first])
    ms = [first, members(broker, group, topic, f"{other}-1", client=other),
          members(broker, group, topic, f"{leader}-2", client=leader)]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT,
             "kafka-python and confluent members to split the partitions", ms)

    msgs = make_messages(3000, f"mixed-{leader}")
    reports = kc.produce_confluent(broker.bootstrap, topic, msgs)
    wait_for(lambda: sum(len(m.records) for m in ms) >= len(msgs), CONSUME_TIMEOUT,
             f"{len(msgs)} records across the members", ms)
    check_exactly_once(ms, msgs, reports)
    for m in ms:
        assert m.stop() == 0, m.describe()


def test_committed_metadata_round_trips(broker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    topic, group, parts = names(broker, "meta")
    # Commit metadata is bytes with a length: a NUL inside is kept (it was
    # once cut there: "Hello\0world!" came back as "Hello").
    meta = {p: f"Hello\0world! {p}-ü" for p in parts}
    kc.produce_confluent(broker.bootstrap, topic, make_messages(60, "meta"))
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                      enable_auto_commit=False, request_timeout_ms=30000)
    try:
        tps = [KTopicPartition(topic, p) for p in parts]
        c.assign(tps)
        c.commit({tp: OffsetAndMetadata(3 + tp.partition, meta[tp.partition]) for tp in tps})
        got = {tp.partition: c.committed(tp, metadata=True) for tp in tps}
    finally:
        c.close()
    assert {p: (om.offset, om.metadata) for p, om in got.items()} == \
        {p: (3 + p, meta[p]) for p in parts}
    assert committed_offsets(broker, group, topic, parts) == {p: 3 + p for p in parts}
    host, port = gw.coordinator(broker, group)
    with w.Conn(host, port) as conn:
        err, res = gw.parse_offset_fetch_v5(conn.call(
            gw.API_OFFSET_FETCH, 5, gw.offset_fetch_v5_body(group, {topic: parts})))
    assert err == 0
    assert res == {(topic, p): (3 + p, meta[p], 0) for p in parts}


@pytest.mark.timeout(240)
@pytest.mark.skipif(EXTERNAL is not None, reason="restarts its own broker")
def test_committed_offsets_survive_restart(tmp_path, members):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    broker = Broker(tmp_path / "restart")
    broker.start()
    try:
        topic, group, parts = names(broker, "restart")
        reports = kc.produce_confluent(broker.bootstrap, topic,
                                       make_messages(600, "restart"))
        ends = end_offsets(broker, topic, parts)
        assert all(ends[p] >= 20 for p in parts), ends
        at = {p: ends[p] // 2 + p for p in parts}

        # A subscribed member commits at known offsets, then leaves.
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "session.timeout.ms": SESSION_TIMEOUT_MS})
        try:
            got = []
            c.subscribe([topic], on_assign=lambda _c, ps: got.append(ps))
            deadline = time.monotonic() + STABLE_TIMEOUT
            while not got or {tp.partition for tp in got[-1]} != set(parts):
                assert time.monotonic() < deadline, "no assignment of every partition"
                c.poll(0.2)
            res = c.commit(offsets=[TopicPartition(topic, p, o) for p, o in at.items()],
                           asynchronous=False)
            assert not [tp for tp in res if tp.error], res
        finally:
            c.close()
        meta_group = group + "-meta"
        k = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=meta_group,
                          enable_auto_commit=False, request_timeout_ms=30000)
        try:
            k.assign([KTopicPartition(topic, p) for p in parts])
            k.commit({KTopicPartition(topic, p): OffsetAndMetadata(o, f"before\0restart {p}")
                      for p, o in at.items()})
        finally:
            k.close()

        broker.restart()

        assert committed_offsets(broker, group, topic, parts) == at
        k = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=meta_group,
                          enable_auto_commit=False, request_timeout_ms=30000)
        try:
            back = {p: k.committed(KTopicPartition(topic, p), metadata=True) for p in parts}
        finally:
            k.close()
        assert {p: (om.offset, om.metadata) for p, om in back.items()} == \
            {p: (o, f"before\0restart {p}") for p, o in at.items()}

        # A new member of the group starts exactly at the committed offsets.
        m = members(broker, group, topic, "after-restart", session_timeout=SESSION_TIMEOUT_MS)
        want = sum(ends[p] - at[p] for p in parts)
        wait_for(lambda: len(m.records) >= want, CONSUME_TIMEOUT,
                 f"{want} records after the committed offsets", [m])
        firsts = {}
        for p, o, _ in m.records:
            firsts.setdefault(p, o)
        assert firsts == at, f"resumed at {firsts}, committed {at}"
        offs = sorted((p, o) for p, o, _ in m.records)
        assert offs == sorted((p, o) for p in parts for o in range(at[p], ends[p]))
        assert all(reports[k.encode()] == (p, o) for p, o, k in m.records)
        assert m.stop() == 0, m.describe()
    finally:
        for m in members.all:
            m.stop(timeout=15)
        broker.stop()


# ---------------------------------------------------------------- raw frames

def test_join_v5_without_member_id_gets_one(broker):
    topic, group, parts = names(broker, "member-id")
    m = gw.RawMember(broker, group, topic, parts)
    try:
        res = m.join_once(member_id="")
        assert res["error"] == gw.ERR_MEMBER_ID_REQUIRED, res
        assert res["member_id"], "MEMBER_ID_REQUIRED without a member id to use"
        m.member_id = res["member_id"]
        res = m.join_once()
        assert res["error"] == w.ERR_NONE, res
        assert res["member_id"] == m.member_id
        assert res["leader"] == m.member_id
        assert res["generation"] >= 1
        assert res["protocol"] == "range"
        assert [mid for mid, _, _ in res["members"]] == [m.member_id]
        assert m.leave() == w.ERR_NONE
    finally:
        m.close()


def test_join_v3_without_member_id_gets_one_at_once(broker):
    """Before v4 the coordinator assigns the id in the same round trip."""
    topic, group, parts = names(broker, "member-id-v3")
    m = gw.RawMember(broker, group, topic, parts)
    try:
        res = m.join_once(member_id="", version=3)
        assert res["error"] == w.ERR_NONE, res
        assert res["member_id"] and res["leader"] == res["member_id"], res
        assert [mid for mid, _, _ in res["members"]] == [res["member_id"]]
        m.member_id, m.generation = res["member_id"], res["generation"]
        err, assignment = m.sync(m.generation, {m.member_id: {topic: parts}})
        assert (err, assignment) == (w.ERR_NONE, {topic: parts})
        assert m.leave() == w.ERR_NONE
    finally:
        m.close()


@pytest.mark.parametrize("timeout_ms", [1, 2_000_000_000])
def test_join_session_timeout_out_of_range(broker, timeout_ms):
    topic, group, parts = names(broker, f"session-{timeout_ms}")
    m = gw.RawMember(broker, group, topic, parts)
    try:
        for mid in ("", "unknown-member"):
            res = m.join_once(member_id=mid, session_timeout_ms=timeout_ms)
            assert res["error"] == gw.ERR_INVALID_SESSION_TIMEOUT, (mid, res)
    finally:
        m.close()


def test_stale_member_and_generation_are_refused(broker):
    topic, group, parts = names(broker, "stale")
    tp0, tp1 = (topic, parts[0]), (topic, parts[1])
    m = gw.RawMember(broker, group, topic, parts)
    try:
        assert m.join() == {topic: parts}
        gen = m.generation
        assert m.heartbeat() == w.ERR_NONE
        good = {tp0: (5, "first"), tp1: (7, None)}
        assert m.commit(good) == {tp0: 0, tp1: 0}

        bad = {tp0: (100, "stale"), tp1: (100, "stale")}
        assert m.commit(bad, generation=1, member_id="nobody") == \
            {tp0: gw.ERR_UNKNOWN_MEMBER_ID, tp1: gw.ERR_UNKNOWN_MEMBER_ID}
        assert m.commit(bad, generation=gen + 1) == \
            {tp0: gw.ERR_ILLEGAL_GENERATION, tp1: gw.ERR_ILLEGAL_GENERATION}
        err, res = m.fetch_offsets()
        assert err == w.ERR_NONE
        assert res[tp0] == (5, "first", 0) and res[tp1][0] == 7 and res[tp1][2] == 0, res
        assert res[tp1][1] in (None, ""), res
        for p in parts[2:]:
            assert res[(topic, p)] == (-1, res[(topic, p)][1], 0), res

        assert m.heartbeat(generation=gen + 1) == gw.ERR_ILLEGAL_GENERATION
        assert m.heartbeat(member_id="nobody") == gw.ERR_UNKNOWN_MEMBER_ID
        err, _ = m.sync(gen + 1, {m.member_id: {topic: parts}})
        assert err == gw.ERR_ILLEGAL_GENERATION
        # None of that disturbed the real member.
        assert m.heartbeat() == w.ERR_NONE
        assert m.leave() == w.ERR_NONE
    finally:
        m.close()


@pytest.mark.timeout(180)
def test_list_and_describe_groups(broker, members):
    need_apis(broker, gw.API_LIST_GROUPS, gw.API_DESCRIBE_GROUPS)
    from kafka import KafkaAdminClient

    topic, group, parts = names(broker, "describe")
    ms = [members(broker, group, topic, f"d{i}") for i in range(2)]
    wait_for(lambda: stable(ms, parts), STABLE_TIMEOUT, "two members to split the partitions", ms)
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        listed = dict(a.list_consumer_groups())
        assert listed.get(group) == "consumer", listed
        [desc] = a.describe_consumer_groups([group])
    finally:
        a.close()
    assert desc.group == group
    assert desc.state == "Stable", desc
    assert desc.protocol_type == "consumer"
    assert desc.protocol == "range"
    assert sorted(mm.client_id for mm in desc.members) == ["d0", "d1"], desc.members
    held = {}
    for mm in desc.members:
        held[mm.client_id] = sorted(p for t, ps in mm.member_assignment.assignment
                                    for p in ps if t == topic)
    for m in ms:
        assert held[m.name] == sorted(m.assignment), (held, m.describe())

    for m in ms:
        assert m.stop() == 0, m.describe()
    host, port = gw.coordinator(broker, group)
    with w.Conn(host, port) as c:
        res = gw.parse_describe_groups_v0(c.call(gw.API_DESCRIBE_GROUPS, 0,
                                                 gw.describe_groups_v0_body([group])))
    assert res[group]["error"] == 0 and res[group]["state"] == "Empty", res
    assert res[group]["members"] == []


def test_delete_groups(broker):
    need_apis(broker, gw.API_DELETE_GROUPS)
    topic, group, parts = names(broker, "delete")
    m = gw.RawMember(broker, group, topic, parts)
    host, port = gw.coordinator(broker, group)
    try:
        m.join()
        assert m.commit({(topic, p): (4, "x") for p in parts}) == {(topic, p): 0 for p in parts}
        with w.Conn(host, port) as c:
            res = gw.parse_delete_groups_v1(c.call(gw.API_DELETE_GROUPS, 1,
                                                   gw.delete_groups_v1_body([group])))
        assert res == {group: gw.ERR_NON_EMPTY_GROUP}
        assert m.heartbeat() == w.ERR_NONE, "a refused delete disturbed the member"
        err, offs = m.fetch_offsets()
        assert {k: v[0] for k, v in offs.items()} == {(topic, p): 4 for p in parts}
        assert m.leave() == w.ERR_NONE
    finally:
        m.close()
    with w.Conn(host, port) as c:
        res = gw.parse_delete_groups_v1(c.call(gw.API_DELETE_GROUPS, 1,
                                               gw.delete_groups_v1_body([group, group + "-none"])))
        assert res == {group: 0, group + "-none": gw.ERR_GROUP_ID_NOT_FOUND}, res
        err, offs = gw.parse_offset_fetch_v5(c.call(
            gw.API_OFFSET_FETCH, 5, gw.offset_fetch_v5_body(group, {topic: parts})))
    assert err == 0
    assert {k: (v[0], v[2]) for k, v in offs.items()} == {(topic, p): (-1, 0) for p in parts}
    assert committed_offsets(broker, group, topic, parts) == {p: -1001 for p in parts}


# ---------------------------------------------------------------- kcat

@pytest.mark.timeout(180)
def test_kcat_balanced_consumer(broker):
    topic, group, parts = names(broker, "kcat")
    msgs = make_messages(1500, "kcat-g")
    reports = kc.produce_confluent(broker.bootstrap, topic, msgs)
    cmd = ["kcat", "-b", broker.bootstrap, "-G", group, topic, "-c", str(len(msgs)),
           "-J", "-q", "-X", "auto.offset.reset=earliest", "-X", "fetch.wait.max.ms=100",
           "-X", "auto.commit.interval.ms=200"]
    res = subprocess.run(cmd, capture_output=True, timeout=120)
    assert res.returncode == 0, f"kcat -G exited {res.returncode}: {res.stderr.decode()[-2000:]}"
    records = []
    for line in res.stdout.decode().splitlines():
        if line.strip():
            j = json.loads(line)
            records.append((j["partition"], j["offset"], j["key"].encode(),
                            j["payload"].encode(), kc._kcat_headers(j.get("headers"))))
    kc.check_records(records, msgs, reports)
    # kcat leaves with a final commit of what it consumed.
    assert committed_offsets(broker, group, topic, parts) == end_offsets(broker, topic, parts)
