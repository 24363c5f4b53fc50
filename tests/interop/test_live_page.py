"""The live page at / in a real browser: Debian's headless Chromium, driven
by Debian's python3-selenium, loads one broker's page of a three-process
cluster, and what it draws is checked against the brokers' own JSON: each
replica's LEO, HW and ISR, the journey of a record produced and consumed by
confluent-kafka (every stage, in order), a record stuck before the high
watermark while a follower is paused, the paused follower out of the ISR
and back (both stages of that record's journey, with the reason), a killed
broker shown down and then up again, an acks=0 record with its fsync
(flush.messages=1) and no response, bad query parameters reported on the
page, and a KIP-848 consumer group held half way through a rebalance (its
group epoch, each member's epoch, what it owns against its target, the
partitions to revoke first). The lesson's picture: the record's marker
through every box in the order its stages happened (replay, step, slow
motion), the waterfall's bars as /api/journey has them (and ordered by wall
time, with why, when stages carry them), every panel agreeing under a
paused follower and a fenced broker, the ISR changes a tab opened later
still shows; a topic's messages, a group's lag and a topic's configs with
their sources. Screenshots go to build/test-artifacts/.
"""

import json
import pathlib
import shutil
import time

import pytest
from confluent_kafka import Consumer, Producer

import kiq_group_wire as gw
import kiq_wire as kw
from cluster import CLUSTER_OVERRIDES, Cluster, wait_until
from conftest import EXTERNAL
from test_http import events_settled, get, journey_part, merged

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError:
    webdriver = None

pytestmark = [
    pytest.mark.skipif(EXTERNAL is not None, reason="needs kafkaiq's own HTTP listeners"),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER and webdriver),
                       reason="needs chromium, chromium-driver and python3-selenium (scripts/deps.sh)"),
]

ARTIFACTS = pathlib.Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
# a paused follower stays in the ISR for 8 s, long enough to see a record
# wait before the high watermark; fencing waits longer still
OVERRIDES = [o for o in CLUSTER_OVERRIDES if not o.startswith(("replica.lag.time.max.ms", "broker.session.timeout.ms"))] + [
    "replica.lag.time.max.ms=8000", "broker.session.timeout.ms=20000"]


@pytest.fixture
def browser(tmp_path):
    o = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,2000",
              f"--user-data-dir={tmp_path / 'chromium'}"):
        o.add_argument(a)
    o.binary_location = CHROMIUM
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
    d.set_page_load_timeout(20)
    try:
        yield d
    finally:
        d.quit()


def shot(d, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def page_rows(d):
    """The partition table as the page shows it."""
    return d.execute_script(
        "return [...document.querySelectorAll('#partitions tbody tr')].map(r => Object.assign({}, r.dataset))")


def page_path(d):
    """The journey diagram: {step: class}."""
    return d.execute_script(
        "const o = {}; document.querySelectorAll('#journey-path li').forEach(l => o[l.dataset.stage] = l.className);"
        "return o")


def page_stages(d):
    return d.execute_script("return [...document.querySelectorAll('#journey-stages li')].map(l => l.dataset.stage)")


def page_stage_texts(d):
    return d.execute_script("return [...document.querySelectorAll('#journey-stages li')].map(l => l.textContent)")


def pills(d):
    return d.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#brokers span')].map(s => [s.dataset.broker, s.dataset.up]))")


def picture(d):
    """The diagram: its boxes, the marker's planned path, what it passed."""
    return d.execute_script("""
        const s = document.getElementById('picture');
        return {boxes: [...s.querySelectorAll('[data-box]')].map(g => g.dataset.box),
                sequence: s.dataset.sequence ? s.dataset.sequence.split(',') : [],
                stages: s.dataset.stages ? s.dataset.stages.split(',') : [],
                visited: s.dataset.visited ? s.dataset.visited.split(',') : [], done: s.dataset.done,
                text: Object.fromEntries([...s.querySelectorAll('[data-box]')].map(g => [g.dataset.box, g.textContent]))}""")


def control(d, name):
    d.find_element("css selector", f'#picture-controls [data-control="{name}"]').click()


def waterfall(d):
    return d.execute_script("return [...document.querySelectorAll('#waterfall .wf-row')].map(r => "
                            "Object.assign({label: r.querySelector('.wf-label').textContent}, r.dataset))")


# where the lesson's picture places a stage (the test's own statement of it)
BOX = {"received": "network", "enqueued": "queue", "dequeued": "io", "validated": "io", "appended": "log",
       "committed": "hw", "records_fetched": "fetcher"}


def check_marker(d, stages):
    """The marker went through every box of the diagram, in the order the
    stages happened: the client's three steps, each stage at its box, the
    deserializer after the consumer's fetch."""
    p = picture(d)
    assert p["done"] == "true" and p["visited"] == p["sequence"], p
    assert p["stages"][:3] == ["serializer", "partitioner", "batch"], p["stages"]
    broker_side = [x for x in p["stages"][3:] if x != "deserializer"]
    assert broker_side == [s["stage"] for s in stages], (broker_side, stages)
    assert set(p["boxes"]) <= set(p["visited"]), (p["boxes"], p["visited"])
    path = [b for b in p["visited"] if b != "deserializer"][3:]
    for s, box in zip(stages, path):
        want = BOX.get(s["stage"])
        if s["stage"] in ("follower_fetched", "follower_leo"):
            want = f"follower-{s['peer']}"
        elif s["stage"] == "replicated":
            want = f"follower-{s['broker']}"
        assert want in (None, box), (s, box)
    v = p["visited"]
    assert v.index("deserializer") == v.index("fetcher") + 1, v
    return p


def page_journey(addresses, topic, partition, offset):
    """The journey's stages in the page's order and whether by wall time:
    as the brokers merge parts, by wall time when they come from several
    processes (each broker of a Cluster is one), else by the monotonic
    clock."""
    stages, parts = merged(addresses, topic, partition, offset)
    if len({p["process"] for p in parts}) > 1:
        return sorted((s for p in parts for s in p["stages"]), key=lambda s: s["wall_us"]), True
    return stages, False


def check_waterfall(d, stages, by_wall):
    """A bar per stage, in the journey's order, on one axis from its first
    stage, each labelled with its broker (and thread when it has one)."""
    rows = waterfall(d)
    assert [r["stage"] for r in rows] == [s["stage"] for s in stages], (rows, stages)
    at = (lambda s: s["wall_us"] * 1000) if by_wall else (lambda s: s["t_ns"])
    t0 = at(stages[0])
    for r, s in zip(rows, stages):
        assert int(r["broker"]) == s["broker"] and r["label"].startswith(f"broker {s['broker']}"), (r, s)
        assert int(r["endNs"]) == at(s) - t0 and int(r["startNs"]) <= int(r["endNs"]), (r, s)
        if "thread" in s:
            assert f"thread {s['thread']}" in r["label"], (r, s)
        if s.get("why"):
            assert s["why"] in d.find_element("css selector", "#waterfall").text
    return rows


def panels_agree(d, leader_http, topic, follower):
    """The follower's lag and ISR membership, and the largest lag the
    leader's followers have, the same in the diagram, the cluster's
    arrows, the leader's machine and the partition table as in the
    leader's /api/state; the follower's status the same in the pills and
    the cluster's lanes."""
    status, body = get(leader_http, "/api/state")
    assert status == 200, body
    state = json.loads(body)
    p = state["topics"][topic]["partitions"]["0"]
    lag = p["log_end_offset"] - p["followers"][str(follower)]["leo"]
    in_isr = follower in p["isr"]
    worst = max((q["log_end_offset"] - f["leo"] for t in state["topics"].values() for q in t["partitions"].values()
                 if q.get("role") == "leader" for f in q.get("followers", {}).values() if f["leo"] >= 0), default=0)
    shown = d.execute_script("""
        const [key, follower, leader] = arguments;
        const a = document.querySelector(`#cluster .arrow[data-partition="${key}"][data-to="${follower}"]`);
        const box = document.querySelector(`#picture [data-box="follower-${follower}"]`);
        const m = document.querySelector(`.machine[data-broker="${leader}"] [data-lag]`);
        const row = document.querySelector(`#partitions tr[data-role="leader"][data-topic="${key.replace(/-0$/, '')}"]`);
        const pill = document.querySelector(`#brokers span[data-broker="${follower}"]`);
        const lane = document.querySelector(`#cluster .lane[data-broker="${follower}"]`);
        return a && box && m && row && pill && lane && {arrow: Object.assign({}, a.dataset), box: box.textContent,
          machine: m.dataset.lag, row: row.lastElementChild.textContent, isr: row.dataset.isr,
          pill: pill.dataset.status, lane: lane.dataset.status}""", f"{topic}-0", follower, state["node_id"])
    if not shown:
        return None
    agree = (shown["arrow"]["lag"] == str(lag) and shown["arrow"]["inIsr"] == str(in_isr).lower() and
             f"lag {lag}" in shown["box"] and ("in the ISR" if in_isr else "out of the ISR") in shown["box"] and
             shown["machine"] == str(worst) and f"{follower}: {p['followers'][str(follower)]['leo']} ({lag})" in shown["row"]
             and shown["isr"] == ",".join(map(str, p["isr"])) and shown["pill"] == shown["lane"])
    return shown if agree else None


def kw_post(address, path):
    """A control API call with an empty JSON body: (status, body)."""
    import urllib.request
    req = urllib.request.Request(f"http://{address}{path}", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def state_of(address, topic):
    """Each hosted replica of topic's partition 0 on that broker, by its JSON."""
    status, body = get(address, "/api/state")
    assert status == 200, body
    t = json.loads(body)["topics"].get(topic)
    return t["partitions"]["0"] if t else None


def rows_match(d, c, topic):
    """The page's row of every replica equals its broker's state."""
    rows = {int(r["broker"]): r for r in page_rows(d) if r["topic"] == topic}
    for b in c.brokers:
        p = state_of(b.http, topic)
        r = rows.get(b.id)
        if p is None or r is None:
            return False
        if (int(r["leo"]), int(r["hw"]), r["isr"]) != (p["log_end_offset"], p["high_watermark"],
                                                       ",".join(map(str, p["isr"]))):
            return False
    return True


def produce(bootstrap, topic, values, acks, trace=None):
    # one batch per call (the page shows the newest journey): a linger no
    # pause between produce() calls outlasts; flush() sends at once
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 500})
    # the partition's leader known first: records produced while it is not
    # may leave in two batches (the page would follow the second)
    p.list_topics(topic, timeout=10)
    errors = []
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=0, headers=[("kafkaiq-trace", trace.encode())] if trace and i == 0 else None,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(30) == 0 and not errors, errors


def consume(bootstrap, topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "live-page", "auto.offset.reset": "earliest",
                  "client.id": "live-page-consumer"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        got += m is not None and not m.error()
    c.close()
    assert got == n, f"consumed {got} of {n}"


def test_the_page_draws_the_cluster_and_a_record_on_its_way(tmp_path, browser):
    c = Cluster(tmp_path / "cluster", overrides=OVERRIDES)
    c.start()
    try:
        topic = "live"
        c.create_topic(topic, 1, rf=3)
        c.wait_healthy(topic, 1)
        leader = c.leader(topic, 0)
        follower = next(b for b in c.brokers if b.id not in (leader, 0))
        page = c.brokers[0] if leader != 0 or follower.id != 0 else c.brokers[1]
        others = ",".join(b.http for b in c.brokers if b is not page)
        browser.get(f"http://{page.http}/?brokers={others}")

        # a record's whole journey, as the brokers' JSON has it
        produce(c.bootstrap, topic, [b"first", b"second", b"third"], "all", trace="live-page")
        consume(c.bootstrap, topic, 3)
        addresses = [b.http for b in c.brokers]
        wait_until(lambda: (lambda m: m if any(s["stage"] == "records_fetched" for s in m[0]) else None)(
            merged(addresses, topic, 0, 0)), 10, "the journey with its consumer")
        # the journey may still grow (a later fetch, a follower's event): the
        # page against what the brokers have at that moment
        wait_until(lambda: page_stages(browser) == [s["stage"] for s in page_journey(addresses, topic, 0, 0)[0]], 40,
                   "the page lists the journey's stages in order")
        path = page_path(browser)
        followers = [b.id for b in c.brokers if b.id != leader]
        for step in ["received", "enqueued", "dequeued", "validated", "appended", "committed", "acknowledged",
                     "records_fetched"] + [f"follower-{f}" for f in followers]:
            assert path.get(step) == "done", (step, path)
        title = browser.find_element("id", "journey-title")
        assert (title.get_attribute("data-topic"), title.get_attribute("data-offset")) == (topic, "0")
        assert "trace live-page" in title.text and "from 3 brokers" in title.text, title.text
        assert "committed" in browser.find_element("id", "journey-verdict").text
        wait_until(lambda: rows_match(browser, c, topic), 10, "the page's LEO, HW and ISR equal the brokers'")

        def same_journey(check):
            stages, by_wall = page_journey(addresses, topic, 0, 0)
            try:
                return check(browser, stages, by_wall)
            except AssertionError:
                return None
        wait_until(lambda: same_journey(lambda d, stages, _: check_marker(d, stages)), 40,
                   "the marker through every box in time order")
        wait_until(lambda: same_journey(check_waterfall), 10, "the waterfall's bars as /api/journey has them")
        shot(browser, "live-page-journey")

        # replay starts again from the producer; step pauses and moves one box
        control(browser, "replay")
        control(browser, "step")
        sequence = picture(browser)["sequence"]
        n = len(picture(browser)["visited"])
        assert 1 <= n < len(sequence), (n, sequence)
        control(browser, "step")
        assert picture(browser)["visited"] == sequence[:n + 1], (n, picture(browser)["visited"])
        control(browser, "slow")
        assert browser.find_element("css selector", '[data-control="slow"]').get_attribute("aria-pressed") == "true"
        control(browser, "slow")
        control(browser, "pause")
        wait_until(lambda: picture(browser)["done"] == "true", 30, "the replay played to its end")

        # a paused follower: the next record waits before the HW, then the
        # follower leaves the ISR and the record is committed without it
        follower.pause()
        produce(c.bootstrap, topic, [b"stuck"], "1", trace="live-stuck")
        wait_until(lambda: page_path(browser).get("committed") == "stuck", 6, "the record shown stuck before the HW")
        verdict = browser.find_element("id", "journey-verdict").text
        assert "stuck before the high watermark" in verdict and f"follower {follower.id}" in verdict, verdict
        assert pills(browser).get(str(follower.id)) == "false", pills(browser)
        shot(browser, "live-page-stuck")
        wait_until(lambda: any(r["role"] == "leader" and str(follower.id) not in r["isr"].split(",")
                               for r in page_rows(browser) if r["topic"] == topic), 20,
                   "the paused follower out of the ISR on the page")
        wait_until(lambda: panels_agree(browser, c[leader].http, topic, follower.id), 10,
                   "every panel shows the paused follower's lag and ISR as /api/state has them")
        wait_until(lambda: page_path(browser).get("committed") == "done", 10, "the record committed once it left")
        shot(browser, "live-page-isr-shrunk")
        follower.resume()
        wait_until(lambda: rows_match(browser, c, topic) and all(
            len(r["isr"].split(",")) == 3 for r in page_rows(browser) if r["topic"] == topic), 20,
                   "the follower back in the ISR on the page")
        events = browser.find_element("id", "events").text
        assert "ISR shrank" in events and "ISR expanded" in events, events
        # a tab opened after them shows them too: the leader keeps its newest ISR changes
        browser.get(f"http://{page.http}/?brokers={others}")
        wait_until(lambda: (lambda t: "ISR shrank" in t and "ISR expanded" in t and f"broker {follower.id} fell behind" in t)(
            browser.find_element("id", "events").text), 10, "the ISR's changes in a tab opened after them")
        # the stuck record's journey: the follower left the ISR, then came back,
        # each with why, as the leader's JSON has it
        wait_until(lambda: {"isr_shrunk", "isr_expanded"} <= set(page_stages(browser)), 15,
                   "the ISR's shrink and expand in the record's journey")
        lines = page_stage_texts(browser)
        assert any(f"follower {follower.id} left the ISR" in t and "records behind" in t for t in lines), lines
        assert any(f"follower {follower.id} is back in the ISR" in t for t in lines), lines
        step = browser.find_element("css selector", f'#journey-path li[data-stage="follower-{follower.id}"]').text
        assert "left the ISR" in step and "back in the ISR" in step, step
        # the steps in the order they happened (the follower back after the commit without it)
        times = [float(t[1:-3]) for t in browser.execute_script(
            "return [...document.querySelectorAll('#journey-path li .t')].map(t => t.textContent)") if t.startswith("+")]
        assert len(times) >= 8 and times == sorted(times), times
        shot(browser, "live-page-isr-journey")

        # a broker killed shows down, and up once restarted
        follower.kill()
        wait_until(lambda: pills(browser).get(str(follower.id)) == "false", 10, "the killed broker shown down")
        assert browser.find_element("css selector", f'.machine[data-broker="{follower.id}"]').get_attribute(
            "data-up") == "false"
        shot(browser, "live-page-broker-down")
        follower.start()
        wait_until(lambda: pills(browser).get(str(follower.id)) == "true", 20, "the restarted broker shown up")
        wait_until(lambda: rows_match(browser, c, topic), 20, "its replica on the page again")
        assert "is back" in browser.find_element("id", "events").text
    finally:
        c.stop()


def quorum_shown(d):
    """(leader, epoch) the page names and {voter: (role, epoch)} of its table."""
    return d.execute_script("""
        const p = document.getElementById('quorum-leader');
        if (!p) return null;
        const rows = Object.fromEntries([...document.querySelectorAll('#quorum tr[data-voter]')]
          .map(r => [r.dataset.voter, [r.dataset.role, Number(r.dataset.epoch)]]));
        return [Number(p.dataset.leader), Number(p.dataset.epoch), rows];""")


def test_the_page_shows_the_controller_quorum_and_its_next_leader(tmp_path, browser):
    c = Cluster(tmp_path / "cluster", overrides=OVERRIDES, voters=(0, 1, 2))
    c.start()
    try:
        leader = c.metadata()["controller"]
        page = next(b for b in c.brokers if b.id != leader)
        others = ",".join(b.http for b in c.brokers if b is not page)
        browser.get(f"http://{page.http}/?brokers={others}")

        def settled(not_leader=None):
            got = quorum_shown(browser)
            if not got or got[0] < 0 or got[0] == not_leader:
                return None
            roles = sorted(role for role, epoch in got[2].values() if epoch == got[1])
            return got if roles == ["follower"] * (len(got[2]) - 1) + ["leader"] else None
        shown_leader, epoch, rows = wait_until(settled, 20, "the quorum's leader and followers on the page")
        assert shown_leader == leader and sorted(rows) == ["0", "1", "2"], (shown_leader, rows)
        shot(browser, "live-page-quorum")

        c[leader].kill()
        new, new_epoch, rows = wait_until(lambda: settled(leader), 20, "a new quorum leader on the page")
        assert new != leader and new_epoch > epoch and str(leader) not in rows, (new, new_epoch, rows)
        shot(browser, "live-page-quorum-new-leader")
    finally:
        c.stop()


def test_bad_query_parameters_are_reported_not_used(broker, browser):
    browser.get(f"http://{broker.http}/?brokers=nowhere,,10.0.0.1:99999x&topic=t&partition=abc&offset=1&x=%ff")
    wait_until(lambda: pills(browser).get("0") == "true", 10, "the page's own broker shown up")
    status = browser.find_element("id", "status").text
    assert 'ignored broker address "nowhere"' in status and "ignored topic/partition/offset" in status, status
    assert list(pills(browser)) == ["0"]
    browser.get(f"http://{broker.http}/?trace=" + "x" * 80)
    wait_until(lambda: "ignored trace" in browser.find_element("id", "status").text, 10, "a long trace id refused")
    # the JSON the page reads refuses what it cannot answer
    for q in ("latest=1&partition=0", "latest=1&trace=a", "latest=1&topic="):
        status, body = get(broker.http, "/api/journey?" + q)
        assert status == 400 and b"latest takes at most a topic" in body, (q, status, body)
    status, body = get(broker.http, "/api/journey?latest=1")
    assert status == 404, body
    for q in ("after=x", "after=-1", "after=99999999999999999999"):
        status, body = get(broker.http, "/api/events?" + q)
        assert status == 400 and b"after must be a whole number" in body, (q, status, body)
    status, body = get(broker.http, "/api/events?after=0")
    assert status == 200 and json.loads(body) == {"broker": 0, "newest": 0, "events": []}, body
    assert get(broker.http, "/api/state")[0] == 200


def test_an_acks0_record_and_its_fsync(broker, browser):
    """No response goes out for acks=0, and the page says so; the fsync of
    flush.messages=1 is timed under flushed, after the append. (After the
    test above: it wants the module's broker without journeys.)"""
    from confluent_kafka.admin import AdminClient, NewTopic
    topic = "live-acks0"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"flush.messages": "1"})])[topic].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": 0, "linger.ms": 0})
    p.produce(topic, value=b"fire and forget", partition=0, headers=[("kafkaiq-trace", b"live-acks0")])
    assert p.flush(30) == 0
    del p
    browser.get(f"http://{broker.http}/?trace=live-acks0")
    # the page against the broker's JSON once the produce has ended
    part = wait_until(lambda: (lambda j: j if j and any(s["stage"] == "no_response" for s in j["stages"]) and
                               events_settled(broker.http) else None)(journey_part(broker.http, trace="live-acks0")),
                      10, "the acks=0 produce handled to its end")
    wait_until(lambda: page_stages(browser) == [s["stage"] for s in part["stages"]], 15,
               "the page lists the journey's stages")
    stages = page_stages(browser)
    assert not {"acknowledged", "response_queued", "sent"} & set(stages), stages
    assert stages.index("appended") < stages.index("flushed"), stages
    lines = dict(zip(stages, page_stage_texts(browser)))
    assert "no response goes out (acks=0)" in lines["no_response"], lines
    assert "after the append (flush.messages): the fsync took" in lines["flushed"], lines
    path = page_path(browser)
    assert path.get("no_response") == "done" and "acknowledged" not in path, path
    step = browser.find_element("css selector", '#journey-path li[data-stage="appended"]').text
    assert "the fsync took" in step, step
    assert "committed" in browser.find_element("id", "journey-verdict").text
    shot(browser, "live-page-acks0")


def heartbeat(broker, group, member, epoch, topics=None, owned=None):
    """One ConsumerGroupHeartbeat v0: (error, epoch, assignment)."""
    body = gw.consumer_group_heartbeat_v0_body(group, member, epoch, topics, owned, 30000 if epoch == 0 else -1)
    with kw.Conn(broker.host, broker.port, timeout=30) as conn:
        err, _, got_epoch, assignment = gw.parse_consumer_group_heartbeat_v0(
            conn.call(gw.API_CONSUMER_GROUP_HEARTBEAT, 0, body, flexible=True))
    return err, got_epoch, assignment


def page_group(d, group):
    """The page's consumer group: its data and {member: row data}."""
    return d.execute_script("""
        const g = document.querySelector(`.cgroup[data-group="${arguments[0]}"]`);
        if (!g) return null;
        return [Object.assign({}, g.dataset), Object.fromEntries([...g.querySelectorAll('tr[data-member]')]
          .map(r => [r.dataset.member, Object.assign({}, r.dataset)]))];""", group)


def group_state(broker, group):
    status, body = get(broker.http, "/api/state")
    assert status == 200, body
    return next((g for g in json.loads(body).get("consumer_groups", []) if g["group_id"] == group), None)


def names(assignment, topic):
    """ "topic-0, topic-1" as the page writes a member's partitions."""
    return ", ".join(sorted(f"{topic}-{p}" for _, ps in assignment or [] for p in ps))


def test_the_page_shows_a_consumer_group_reconciling(broker, browser):
    """Two members of the new protocol, the second joining: held between
    heartbeats, the page shows the first still owning all four partitions
    at its old epoch while its target is two, the second at the new group
    epoch waiting for the other two; then the first told to revoke two
    (shown as to revoke), and at the end both at the group epoch owning
    their targets."""
    from confluent_kafka.admin import AdminClient, NewTopic
    topic, group = "live-848", "live-848-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(20)
    with kw.Conn(broker.host, broker.port, timeout=30) as conn:
        wait_until(lambda: gw.parse_find_coordinator_v1(conn.call(
            gw.API_FIND_COORDINATOR, 1, gw.find_coordinator_v1_body(group)))[0] == 0, 20, "a coordinator")
    err, a_epoch, a_parts = wait_until(
        lambda: (lambda r: r if r[0] == 0 else None)(heartbeat(broker, group, "member-a", 0, [topic], [])), 20,
        "member-a joined")
    assert names(a_parts, topic) == ", ".join(f"{topic}-{p}" for p in range(4)), a_parts
    assert heartbeat(broker, group, "member-a", a_epoch, owned=a_parts)[0] == 0
    browser.get(f"http://{broker.http}/")
    wait_until(lambda: (lambda g: g and g[0]["state"] == "Stable" and g[1].get("member-a", {}).get("epoch") == str(a_epoch))(
        page_group(browser, group)), 20, "the group stable with its one member on the page")

    # member-b joins: the group epoch moves on, member-a has not heard yet
    err, b_epoch, b_parts = heartbeat(broker, group, "member-b", 0, [topic], [])
    assert err == 0 and b_epoch > a_epoch and not names(b_parts, topic), (err, b_epoch, b_parts)

    def halfway():
        g = page_group(browser, group)
        if not g or g[0]["groupEpoch"] != str(b_epoch) or set(g[1]) != {"member-a", "member-b"}:
            return None
        return g
    shown, members = wait_until(halfway, 20, "the second member and the new group epoch on the page")
    a, b = members["member-a"], members["member-b"]
    assert a["epoch"] == str(a_epoch) and a["assigned"] == names(a_parts, topic), a
    a_target, b_target = a["target"].split(", "), b["target"].split(", ")
    assert len(a_target) == 2 and len(b_target) == 2 and sorted(a_target + b_target) == a["assigned"].split(", "), (a, b)
    assert b["epoch"] == str(b_epoch) and b["assigned"] == "" and b["state"] == "unreleased_partitions", b
    assert shown["state"] == "Reconciling" and shown["assignmentEpoch"] == str(b_epoch), shown
    # the page shows what the coordinator holds
    json_group = group_state(broker, group)
    assert json_group["group_epoch"] == b_epoch and {m["member_id"]: m["member_epoch"] for m in json_group["members"]} == {
        "member-a": a_epoch, "member-b": b_epoch}, json_group
    shot(browser, "live-page-848-joined")

    # member-a's heartbeat: told to keep two, it must revoke the others first
    err, epoch, kept = heartbeat(broker, group, "member-a", a_epoch, owned=a_parts)
    assert err == 0 and epoch == a_epoch and names(kept, topic) == a["target"], (err, epoch, kept, a)
    revoking = sorted(set(a["assigned"].split(", ")) - set(a_target))
    wait_until(lambda: (lambda g: g and g[1]["member-a"]["state"] == "unrevoked_partitions" and
                        g[1]["member-a"]["revoking"] == ", ".join(revoking))(page_group(browser, group)), 20,
               "member-a's partitions to revoke on the page")
    shot(browser, "live-page-848-revoking")

    # revoked: member-a moves to the group epoch, member-b gets its two
    err, epoch, _ = heartbeat(broker, group, "member-a", a_epoch, owned=kept)
    assert err == 0 and epoch == b_epoch, (err, epoch)
    err, epoch, got = heartbeat(broker, group, "member-b", b_epoch, owned=[])
    assert err == 0 and epoch == b_epoch and names(got, topic) == b["target"], (err, epoch, got, b)
    assert heartbeat(broker, group, "member-b", b_epoch, owned=got)[0] == 0

    def settled():
        g = page_group(browser, group)
        if not g or g[0]["state"] != "Stable":
            return None
        return g if all(m["epoch"] == str(b_epoch) and m["assigned"] == m["target"] and m["assigned"]
                        for m in g[1].values()) else None
    wait_until(settled, 20, "both members at the group epoch owning their targets on the page")
    shot(browser, "live-page-848-stable")
    # beside the classic groups, with its lag (none committed yet)
    wait_until(lambda: browser.execute_script(
        "const g = document.querySelector(`.lag-group[data-group='${arguments[0]}']`); return g && g.dataset.kind",
        group) == "848", 10, "the group among those with their lag, as KIP-848")


def browse_to(d, topic, partition="0", offset="", limit="20"):
    d.execute_script("""
        const f = document.getElementById('browse-form');
        [f.topic.value, f.partition.value, f.offset.value, f.limit.value] = arguments;
        f.requestSubmit();""", topic, partition, offset, limit)


def test_the_page_browses_messages_group_lag_and_configs(broker, browser):
    """As kafka-ui or AKHQ would show them: a partition's records (key,
    value, headers, a binary value in base64), a classic group's lag per
    partition against the high watermark, the topic's configs with their
    sources; bad parameters answered with a clear error, the broker up."""
    from confluent_kafka.admin import AdminClient, NewTopic
    topic, group = "live-browse", "live-browse-group"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])[topic].result(20)
    p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "lz4"})
    values = [b"v0", b"v1", b"v2", b"v3", b"\x00\xff"]
    for i, v in enumerate(values):
        p.produce(topic, key=f"k{i}".encode(), value=v, partition=0, headers=[("h", f"x{i}".encode())])
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m)
    assert len(got) == 3
    c.commit(got[-1], asynchronous=False)

    browser.get(f"http://{broker.http}/")
    browse_to(browser, topic)
    rows = wait_until(lambda: (lambda r: r if len(r) == 5 else None)(browser.execute_script(
        "return [...document.querySelectorAll('#messages tr[data-offset]')].map(r => [Number(r.dataset.offset), "
        "r.dataset.key, r.dataset.value, r.textContent])")), 10, "the topic's five records on the page")
    assert [r[:3] for r in rows[:4]] == [[i, f"k{i}", f"v{i}"] for i in range(4)], rows
    assert rows[4][:2] == [4, "k4"] and "base64 AP8=" in rows[4][3] and "h=x4" in rows[4][3], rows[4]
    # from an offset, at most one
    browse_to(browser, topic, offset="2", limit="1")
    wait_until(lambda: browser.execute_script(
        "return [...document.querySelectorAll('#messages tr[data-offset]')].map(r => r.dataset.offset)") == ["2"], 10,
               "one record from offset 2")

    def lag_row():
        return browser.execute_script(
            "const r = document.querySelector(`#group-lag tr[data-group='${arguments[0]}'][data-topic='${arguments[1]}']`);"
            "return r && Object.assign({}, r.dataset)", group, topic)
    row = wait_until(lag_row, 10, "the group's lag on the page")
    assert (row["offset"], row["hw"], row["lag"]) == ("3", "5", "2"), row
    status, body = get(broker.http, "/api/groups")
    g = next(g for g in json.loads(body)["groups"] if g["group_id"] == group)
    assert g["offsets"] == [{"topic": topic, "partition": 0, "offset": 3, "commit_ts_ms": g["offsets"][0]["commit_ts_ms"]}]

    def config(name):
        return browser.execute_script(
            "const r = document.querySelector(`#configs tr[data-config='${arguments[0]}']`);"
            "return r && [r.dataset.value, r.dataset.source]", name)
    assert wait_until(lambda: config("retention.ms"), 10, "the topic's configs") == ["3600000", "DYNAMIC_TOPIC_CONFIG"]
    assert config("cleanup.policy") == ["delete", "DEFAULT_CONFIG"]
    browser.execute_script("document.getElementById('browse-section').scrollIntoView()")
    shot(browser, "live-page-browse")
    c.close()

    # bad input: the form says what it needs, the JSON answers 400 or 404
    browse_to(browser, topic, partition="x")
    assert "a topic, a partition" in browser.find_element("id", "browse-note").text
    for q, code in (("topic=&partition=0", 400), (f"topic={topic}&partition=abc", 400), (f"topic={topic}", 400),
                    (f"topic={topic}&partition=0&limit=101", 400), (f"topic={topic}&partition=0&offset=-1", 400),
                    (f"topic={topic}&partition=7", 404), ("topic=nowhere&partition=0", 404)):
        status, body = get(broker.http, "/api/messages?" + q)
        assert status == code and b"error" in body, (q, status, body)
    assert get(broker.http, "/api/configs?topic=")[0] == 400
    assert get(broker.http, "/api/configs?topic=nowhere")[0] == 404
    assert get(broker.http, "/api/state")[0] == 200


def test_a_fenced_broker_that_still_answers_is_shown_fenced_everywhere(tmp_path, browser):
    """`serve --brokers 3` with broker 2 paused: its HTTP still answers, the
    controller fences it. Every panel says fenced (the pills, the cluster's
    lanes, its machine, the controller's table), none says up; the lag of
    a record it missed, and the ISR without it, the same in every panel as
    in the leader's /api/state; the ISR change in "As it happens"."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from cluster import OneProcessCluster
    c = OneProcessCluster(tmp_path / "one", overrides=["broker.session.timeout.ms=3000",
                                                       "broker.heartbeat.interval.ms=500"])
    c.start()
    try:
        topic = "live-fenced"
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(20)

        def leader():
            for i, h in enumerate(c.http):
                p = state_of(h, topic)
                if p and p["role"] == "leader" and len(p["isr"]) == 3:
                    return i
            return None
        wait_until(lambda: leader() is not None, 20, "a leader with all three in the ISR")
        lead = leader()
        paused = max(i for i in range(3) if i != lead)
        browser.get(f"http://{c.http[lead]}/")
        wait_until(lambda: set(pills(browser).values()) == {"true"} and len(pills(browser)) == 3, 10, "three brokers up")
        status, _ = kw_post(c.http[lead], f"/api/brokers/{paused}/pause")
        assert status == 200
        produce(c.bootstrap, topic, [b"missed by the paused one"], "1")

        def fenced_everywhere():
            shown = browser.execute_script("""
                const q = (s) => document.querySelector(s), id = arguments[0];
                const pill = q(`#brokers span[data-broker="${id}"]`), lane = q(`#cluster .lane[data-broker="${id}"]`);
                const m = q(`.machine[data-broker="${id}"]`), row = q(`#controller tr[data-controller-broker="${id}"]`);
                return pill && lane && m && row && [pill.dataset.status, pill.textContent, lane.dataset.status,
                  m.dataset.status, row.dataset.fenced]""", paused)
            return shown if shown and shown[0] == shown[2] == shown[3] == "fenced" and shown[4] == "true" else None
        shown = wait_until(fenced_everywhere, 20, "the paused broker fenced in every panel")
        assert "up" not in shown[1], shown
        wait_until(lambda: panels_agree(browser, c.http[lead], topic, paused), 10,
                   "the fenced follower's lag and the ISR the same in every panel as in /api/state")
        assert paused not in state_of(c.http[lead], topic)["isr"]
        wait_until(lambda: f"the controller took broker {paused} out" in browser.find_element("id", "events").text, 10,
                   "the ISR change the controller made, in As it happens")
        shot(browser, "live-page-fenced")
    finally:
        c.stop()


def test_stages_with_wall_time_and_why_are_ordered_and_explained(broker, browser):
    """A journey whose stages carry wall-clock time (wall_us) and a reason
    (why), from brokers in several processes (perhaps machines): the page
    orders it by wall time, not by each machine's monotonic clock, and the
    waterfall says why each wait happened. From one process, by the
    monotonic clock its brokers share."""
    browser.get(f"http://{broker.http}/")
    got = browser.execute_script("""
        const stages = [
          {stage: "received", broker: 1, thread: 0, t_ns: 900, wall_us: 1000},
          {stage: "replicated", broker: 2, t_ns: 5, wall_us: 1003, why: "its next fetch arrived 3 us later"},
          {stage: "enqueued", broker: 1, t_ns: 901, wall_us: 1001, why: "queued behind 37 requests"},
          {stage: "committed", broker: 1, t_ns: 909, wall_us: 1004}];
        const order = ordered(stages, true).map((x) => x.s.stage);
        const mixed = ordered([{stage: "a", t_ns: 2, wall_us: 1}, {stage: "b", t_ns: 1}], true).map((x) => x.s.stage);
        const oneProcess = ordered(stages, false).map((x) => x.s.stage);
        drawWaterfall({stages, byWall: true});
        const rows = [...document.querySelectorAll('#waterfall .wf-row')].map((r) => [r.dataset.stage, r.dataset.endNs,
          r.textContent.replace(/\\s+/g, " ")]);
        const path = plan(stages, true).map((x) => x.box);
        return {order, mixed, oneProcess, rows, path};""")
    assert got["order"] == ["received", "enqueued", "replicated", "committed"], got
    # without wall time on every stage, the monotonic clock decides
    assert got["mixed"] == ["b", "a"], got
    assert got["oneProcess"] == ["replicated", "received", "enqueued", "committed"], got
    assert [r[0] for r in got["rows"]] == got["order"] and [r[1] for r in got["rows"]] == ["0", "1000", "3000", "4000"]
    assert "why: queued behind 37 requests" in got["rows"][1][2] and "broker 1 · network thread 0" in got["rows"][0][2]
    assert "why: its next fetch arrived 3 us later" in got["rows"][2][2], got["rows"]
    assert got["path"] == ["serializer", "partitioner", "batch", "network", "queue", "follower-2", "hw"], got["path"]
