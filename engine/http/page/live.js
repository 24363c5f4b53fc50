// The live view: polls each broker's JSON (/api/state, /api/peers,
// /api/journey) and draws the machine as the lesson draws it. No
// dependencies; every broker of the cluster answers with CORS allowed.
"use strict";

const POLL_MS = 1000;
const TIMEOUT_MS = 1500;
const EVENTS_KEPT = 200;
const ADDRESS = /^[A-Za-z0-9.\-]+:[0-9]{1,5}$/;

const brokers = new Map(); // address -> {address, id, state, prev, up, since}
// /api/state's topics are keyed by name, their partitions by index
const topicsOf = (state) => Object.values(state.topics || {});
const history = { leaders: new Map() };
const events = [];
let journeyQuery = { mode: "latest" };
let notes = [];
let snap = { status: new Map(), parts: new Map(), controller: null };
let lastJourney = null;

function esc(v) {
  return String(v).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function addBroker(address) {
  if (!ADDRESS.test(address) || brokers.has(address)) return;
  brokers.set(address, { address, id: null, state: null, prev: null, up: null, since: Date.now() });
}

function url(address, path) {
  return address === location.host ? path : "http://" + address + path;
}

async function getJSON(address, path) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const res = await fetch(url(address, path), { cache: "no-store", signal: ctl.signal });
    const body = await res.json();
    return { status: res.status, body };
  } finally {
    clearTimeout(timer);
  }
}

// ---- what the query string asks for (checked: bad values are reported, not used)

function readQuery() {
  const q = new URLSearchParams(location.search);
  for (const a of (q.get("brokers") || "").split(",").filter(Boolean)) {
    if (ADDRESS.test(a)) addBroker(a);
    else notes.push(`ignored broker address "${a}" (HOST:PORT expected)`);
  }
  const form = document.getElementById("journey-form");
  if (q.has("trace")) {
    const t = q.get("trace");
    if (t.length > 0 && t.length < 64) {
      journeyQuery = { mode: "trace", trace: t };
      form.trace.value = t;
      form.mode.value = "trace";
    } else notes.push("ignored trace (1-63 characters expected)");
  } else if (q.has("topic") || q.has("partition") || q.has("offset")) {
    const j = checkOffsetQuery(q.get("topic"), q.get("partition"), q.get("offset"));
    if (j) {
      journeyQuery = j;
      form.topic.value = j.topic;
      form.partition.value = j.partition;
      form.offset.value = j.offset;
      form.mode.value = "offset";
    } else notes.push("ignored topic/partition/offset (a topic and two whole numbers expected)");
  }
}

function checkOffsetQuery(topic, partition, offset) {
  if (!topic || topic.length > 249 || !/^[0-9]+$/.test(partition || "") || !/^[0-9]+$/.test(offset || "")) return null;
  return { mode: "offset", topic, partition: Number(partition), offset: Number(offset) };
}

function onJourneyForm(ev) {
  ev.preventDefault();
  const f = ev.target;
  notes = notes.filter((n) => !n.startsWith("journey:"));
  if (f.mode.value === "latest") journeyQuery = { mode: "latest", topic: f.topic.value || null };
  else if (f.mode.value === "trace") {
    if (f.trace.value.length > 0 && f.trace.value.length < 64) journeyQuery = { mode: "trace", trace: f.trace.value };
    else notes.push("journey: a trace id is 1-63 characters");
  } else {
    const j = checkOffsetQuery(f.topic.value, f.partition.value, f.offset.value);
    if (j) journeyQuery = j;
    else notes.push("journey: a topic, a partition and an offset (whole numbers) are needed");
  }
  poll();
}

// ---- polling

function note(kind, text, at) {
  events.push({ at: at || new Date(), kind, text });
  events.sort((x, y) => y.at - x.at);
  if (events.length > EVENTS_KEPT) events.length = EVENTS_KEPT;
}

// An ISR change as the leader that made it keeps it (/api/events): a tab
// opened after it still shows it.
function noteBrokerEvent(b, e) {
  const key = `${e.topic}-${e.partition}`;
  if (e.kind === "isr_shrunk") {
    const why = e.lagged
      ? `broker ${e.peer} fell behind: ` + (e.follower_leo < 0 ? "it had fetched nothing"
        : `its LEO ${e.follower_leo}, ${e.leader_leo - e.follower_leo} records behind the leader's ${e.leader_leo}`)
      : `the controller took broker ${e.peer} out: fenced or shut down`;
    note("shrink", `${key}: ISR shrank to ${e.isr_size} replicas on leader ${b.id} (${why})`, new Date(e.wall_ms));
  } else if (e.kind === "isr_expanded") {
    note("expand", `${key}: ISR expanded to ${e.isr_size} replicas on leader ${b.id} (broker ${e.peer} caught up: its LEO ${
      e.follower_leo})`, new Date(e.wall_ms));
  }
}

async function pollEvents(b) {
  const r = await getJSON(b.address, "/api/events?after=" + (b.eventSeq || 0));
  if (r.status !== 200) return;
  // fewer than it had: the broker restarted between two polls
  if (r.body.newest < (b.eventSeq || 0)) b.eventSeq = 0;
  for (const e of r.body.events) {
    noteBrokerEvent(b, e);
    b.eventSeq = e.seq;
  }
}

async function pollBroker(b) {
  try {
    const [state, peers] = await Promise.all([getJSON(b.address, "/api/state"), getJSON(b.address, "/api/peers")]);
    if (state.status !== 200) throw new Error("HTTP " + state.status);
    if (b.up === false) {
      note("expand", `broker ${state.body.node_id} is back (${b.address})`);
      b.eventSeq = 0; // a restarted broker numbers its events from 1 again
    }
    b.prev = b.state && b.state.running ? b.state : null;
    b.prevAt = b.at;
    b.state = state.body;
    b.at = performance.now();
    b.id = state.body.node_id;
    b.up = true;
    for (const p of peers.body.brokers || []) addBroker(p.http);
    await pollEvents(b);
  } catch (e) {
    if (b.up !== false) {
      note("shrink", `broker ${b.id ?? "?"} does not answer (${b.address})`);
      b.since = Date.now();
    }
    b.up = false;
  }
}

let polling = false;
async function poll() {
  if (polling) return;
  polling = true;
  try {
    await Promise.all([...brokers.values()].map(pollBroker));
    snap = snapshot();
    noteChanges();
    render();
    await Promise.all([showJourney(), pollBrowse()]);
  } finally {
    polling = false;
  }
}

// Leader changes seen between two polls, from each leader's view (ISR
// changes come from the brokers: /api/events).
function noteChanges() {
  for (const b of upBrokers()) {
    for (const t of topicsOf(b.state))
      for (const p of Object.values(t.partitions)) {
        if (p.role !== "leader") continue;
        const key = `${t.name}-${p.partition}`;
        const lead = `${p.leader}@${p.leader_epoch}`;
        const was = history.leaders.get(key);
        if (was !== undefined && was !== lead)
          note("expand", `${key}: leader is now broker ${p.leader} (epoch ${p.leader_epoch}; was ${was.replace("@", ", epoch ")})`);
        history.leaders.set(key, lead);
      }
  }
}

function upBrokers() {
  return shown().filter((b) => b.up && b.state);
}

// One snapshot per poll, which every panel reads: each broker's status
// (answering, and fenced or not as the controller has it) and each
// partition's replication as its leader knows it (the highest epoch's, if
// a deposed leader has not heard yet). Follower lag is the leader's LEO
// less the follower's as the leader knows it, computed here only.
function snapshot() {
  const ctl = upBrokers().find((b) => b.state.controller_view);
  const fenced = new Map(ctl ? ctl.state.controller_view.brokers.map((x) => [x.id, x.fenced]) : []);
  const status = new Map();
  for (const b of shown())
    if (b.id != null) status.set(b.id, b.up ? (fenced.get(b.id) ? "fenced" : "up") : "down");
  const parts = new Map();
  for (const b of upBrokers())
    for (const t of topicsOf(b.state))
      for (const p of Object.values(t.partitions)) {
        if (!p.hosted || p.role !== "leader") continue;
        const key = `${t.name}-${p.partition}`, was = parts.get(key);
        if (was && was.epoch >= p.leader_epoch) continue;
        const followers = (p.replicas || []).filter((r) => r !== b.id).map((id) => {
          const f = (p.followers || {})[id];
          const leo = f && f.leo >= 0 ? f.leo : null;
          return { id, leo, lag: leo == null ? null : Math.max(0, p.log_end_offset - leo), inIsr: p.isr.includes(id) };
        });
        parts.set(key, { key, topic: t.name, partition: p.partition, leader: b.id, epoch: p.leader_epoch,
          leo: p.log_end_offset, hw: p.high_watermark, isr: p.isr, followers, size: p.size, segments: p.segment_count });
      }
  return { status, parts, controller: ctl ? ctl.id : null };
}

// What a broker's replication box says, from the snapshot: the largest lag
// of the followers it leads, and how far behind it is where it follows.
function replicationOf(id) {
  let led = 0, worst = null, behind = null;
  for (const p of snap.parts.values()) {
    if (p.leader === id) {
      led++;
      for (const f of p.followers) if (f.lag != null && (!worst || f.lag > worst.lag)) worst = { ...f, key: p.key };
    }
    const me = p.followers.find((f) => f.id === id);
    if (me && me.lag != null && (!behind || me.lag > behind.lag)) behind = { ...me, key: p.key };
  }
  return { led, worst, behind };
}

// ---- the machines

function rate(b, get) {
  if (!b.prev || !b.prevAt || b.at <= b.prevAt) return null;
  const a = get(b.prev), c = get(b.state);
  if (a == null || c == null) return null;
  return (c - a) / ((b.at - b.prevAt) / 1000);
}

function fmtRate(v, unit) {
  if (v == null) return "\u2013";
  if (unit === "B") {
    if (v >= 1e9) return (v / 1e9).toFixed(2) + " GB/s";
    if (v >= 1e6) return (v / 1e6).toFixed(2) + " MB/s";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + " kB/s";
    return v.toFixed(0) + " B/s";
  }
  return v.toFixed(v < 10 ? 1 : 0) + "/s";
}

function pct(v) {
  return v == null ? "\u2013" : Math.round(Math.max(0, Math.min(1, v)) * 100) + "%";
}

function busyOf(b, get) {
  if (!b.prev) return null;
  const a = get(b.prev), c = get(b.state);
  const dt = c.up - a.up;
  return dt > 0 ? (c.busy - a.busy) / dt : null;
}

function processorBox(b, p, i) {
  const prev = b.prev && b.prev.processors ? b.prev.processors[i] : null;
  const req = rate(b, (s) => (s.processors && s.processors[i] ? s.processors[i].requests : null));
  const bin = rate(b, (s) => (s.processors && s.processors[i] ? s.processors[i].bytes_in : null));
  const bout = rate(b, (s) => (s.processors && s.processors[i] ? s.processors[i].bytes_out : null));
  const idle = prev && p.up_ns > prev.up_ns ? (p.idle_ns - prev.idle_ns) / (p.up_ns - prev.up_ns) : null;
  return `<div class="proc" data-processor="${i}">processor ${i}: ${p.connections} connections, ${fmtRate(req)} requests,
    in ${fmtRate(bin, "B")}, out ${fmtRate(bout, "B")}, ${p.muted} muted, busy ${pct(idle == null ? null : 1 - idle)}</div>`;
}

// Time requests waited in the queue, by API.
function waits(w) {
  return Object.entries(w || {}).filter(([, v]) => v.count > 0).map(([api, v]) =>
    `<div>${api}: waited p50 ${v.p50_ms.toFixed(3)} ms, p99 ${v.p99_ms.toFixed(3)} ms (${v.count} requests)</div>`).join("");
}

function machine(b) {
  const s = b.state;
  if (!b.up) {
    const id = b.id ?? "?";
    return `<div class="machine down" data-broker="${esc(id)}" data-up="false"><h3>broker ${esc(id)} at ${esc(b.address)}: down
      since ${new Date(b.since).toLocaleTimeString()}</h3></div>`;
  }
  if (!s.running) return `<div class="machine down" data-broker="${s.node_id}" data-up="false"><h3>broker ${s.node_id}: not running</h3></div>`;
  const q = s.request_queue || { depth: 0, bound: 1, muted: 0 };
  const full = q.depth >= q.bound;
  const ioBusy = busyOf(b, (x) => ({ busy: x.io.busy_ns, up: x.io.up_ns * x.io.threads }));
  let led = 0, hosted = 0, bytes = 0;
  for (const t of topicsOf(s))
    for (const p of Object.values(t.partitions)) {
      if (!p.hosted) continue;
      hosted++;
      bytes += p.size;
      if (p.role === "leader") led++;
    }
  const control = s.control_plane
    ? `<div>control plane: port ${s.control_plane.port}, queue depth ${s.control_plane.depth}, ${s.control_plane.processor.connections} connections</div>`
    : `<div class="muted">no separate control plane listener</div>`;
  const r = replicationOf(s.node_id);
  const repl = s.isr_changes
    ? `ISR shrinks ${s.isr_changes.shrinks}, expands ${s.isr_changes.expands}<div data-lag="${r.worst ? r.worst.lag : 0}">` +
      (r.worst ? `largest lag of its followers: ${r.worst.lag} (follower ${r.worst.id} of ${esc(r.worst.key)})`
        : "largest lag of its followers: 0") + `</div><div>` +
      (r.behind ? `as a follower, at most ${r.behind.lag} records behind (${esc(r.behind.key)})` : "follows no partition") + "</div>"
    : "a single broker: nothing to replicate";
  const status = snap.status.get(s.node_id) || "up";
  const journeys = s.journeys ? `${s.journeys.kept} journeys kept (${s.journeys.recorded} recorded)` : "journeys off";
  return `<div class="machine ${status}" data-broker="${s.node_id}" data-up="true" data-status="${status}">
    <h3>broker ${s.node_id} at ${esc(b.address)} (Kafka port ${s.port})${s.controller === s.node_id ? ", the controller" : ""}${
      status === "fenced" ? ": <b>fenced</b> by the controller" : ""}</h3>
    <div class="lane">
      <div class="box"><h4>network layer</h4><div>acceptor: port ${s.acceptor.port}, ${s.acceptor.accepted} accepted</div>
        ${s.processors.map((p, i) => processorBox(b, p, i)).join("")}</div>
      <div class="box${full ? " hot" : ""}"><h4>request queue</h4>
        <div class="bar${full ? " full" : ""}"><i style="width:${Math.min(100, (100 * q.depth) / q.bound)}%"></i></div>
        <div data-queue-depth="${q.depth}">depth ${q.depth} of ${q.bound}${q.muted ? `, ${q.muted} refused for want of room (sockets muted)` : ""}</div>
        ${waits(q.waits)}
        ${control}</div>
      <div class="box"><h4>I/O threads</h4><div>${s.io.threads} threads, busy ${pct(ioBusy)}</div>
        <div>purgatory: ${s.purgatory.waiting} waiting (acks=all produces, long-poll fetches)</div></div>
      <div class="box"><h4>log manager</h4><div>${hosted} partition replicas, ${led} led here</div>
        <div>${bytes.toLocaleString()} bytes in segments</div><div class="muted">${journeys}</div></div>
      <div class="box"><h4>replication</h4><div>${repl}</div></div>
    </div></div>`;
}

// ---- partitions: one row per replica, the leader's first

function partitionRows() {
  const rows = [];
  const internal = document.getElementById("internal").checked;
  for (const b of upBrokers())
    for (const t of topicsOf(b.state))
      if (internal || !t.name.startsWith("__"))
        for (const p of Object.values(t.partitions)) if (p.hosted) rows.push({ b, t, p });
  rows.sort((x, y) => x.t.name.localeCompare(y.t.name) || x.p.partition - y.p.partition ||
    (y.p.role === "leader") - (x.p.role === "leader") || x.b.id - y.b.id);
  return rows.map(({ b, t, p }) => {
    const segs = p.segments.map((g, i, all) =>
      `<span class="seg${i === all.length - 1 ? " active" : ""}" title="${g.size} bytes">${g.base_offset}</span>`).join("");
    const more = p.segment_count > p.segments.length ? `${p.segment_count - p.segments.length} older ` : "";
    const pending = p.log_end_offset - p.high_watermark;
    const sp = p.role === "leader" ? snap.parts.get(`${t.name}-${p.partition}`) : null;
    const followers = sp && sp.leader === b.id
      ? sp.followers.map((f) => `${f.id}: ${f.leo ?? "?"} (${f.lag ?? "?"})`).join(", ")
      : "";
    return `<tr data-topic="${esc(t.name)}" data-partition="${p.partition}" data-broker="${b.id}" data-role="${p.role}"
      data-leo="${p.log_end_offset}" data-hw="${p.high_watermark}" data-isr="${p.isr.join(",")}">
      <td>${esc(t.name)}-${p.partition}</td><td>${b.id}</td><td>${p.role}${p.offline ? " (offline)" : ""}, epoch ${p.leader_epoch}</td>
      <td>${p.log_start_offset}</td><td>${p.log_end_offset}</td><td>${p.high_watermark}</td>
      <td class="${pending > 0 ? "pending" : ""}">${pending > 0 ? `${pending} (offsets ${p.high_watermark}\u2026${p.log_end_offset - 1} invisible)` : "0"}</td>
      <td>${more}${segs}</td><td>${p.size.toLocaleString()}</td><td>[${p.isr.join(", ")}]</td><td>${followers}</td></tr>`;
  }).join("");
}

function controllerView() {
  const c = upBrokers().find((b) => b.state.controller_view);
  if (!c) return `<span class="muted">no controller answers${upBrokers().length ? " (a single broker is its own)" : ""}</span>`;
  const v = c.state.controller_view;
  const brokerRows = v.brokers.map((x) =>
    `<tr data-controller-broker="${x.id}" data-fenced="${x.fenced}"><td>${x.id}</td><td>${x.fenced ? "fenced" : "live"}</td>
      <td>${x.epoch}</td><td>${esc(x.host)}:${x.port}</td></tr>`).join("");
  const leaders = v.partitions.filter((p) => !p.topic.startsWith("__")).map((p) =>
    `${esc(p.topic)}-${p.partition}: ${p.leader < 0 ? "<b>offline</b>" : "leader " + p.leader} epoch ${p.leader_epoch} ISR [${p.isr.join(", ")}]`);
  return `<p>on broker ${c.id}; metadata log at offset ${v.metadata_offset}; ${v.unclean_elections} unclean elections</p>
    <table><thead><tr><th>broker</th><th>state</th><th>broker epoch</th><th>listener</th></tr></thead><tbody>${brokerRows}</tbody></table>
    <p>${leaders.join("<br>") || "no topics"}</p>`;
}

// Each voter as it sees the quorum; the lag and last fetch as the leader of
// the highest epoch sees them (a paused or cut-off leader may still think
// it leads an older one).
function quorumView() {
  const voters = upBrokers().filter((b) => b.state.quorum);
  if (!voters.length) return `<span class="muted">no voter answers (a single broker decides alone)</span>`;
  const leading = voters.filter((b) => b.state.quorum.role === "leader")
    .sort((x, y) => y.state.quorum.epoch - x.state.quorum.epoch)[0];
  const seen = new Map((leading ? leading.state.quorum.voters : []).map((v) => [v.id, v]));
  const rows = voters.map((b) => {
    const q = b.state.quorum, l = seen.get(b.id) || {};
    return `<tr data-voter="${b.id}" data-role="${q.role}" data-epoch="${q.epoch}" data-leader="${q.leader}">
      <td>${b.id}</td><td>${q.role}</td><td>${q.epoch}</td><td>${q.leader < 0 ? "none" : q.leader}</td>
      <td>${q.voted_for < 0 ? "" : q.voted_for}</td><td>${q.log_end}</td><td>${q.high_watermark}</td>
      <td>${l.lag ?? ""}</td><td>${l.last_fetch_ms_ago ?? ""}</td><td>${q.elections}</td><td>${q.votes_granted}</td></tr>`;
  }).join("");
  const head = leading
    ? `leader <b>${leading.id}</b> in epoch ${leading.state.quorum.epoch}; metadata committed to offset ${leading.state.quorum.high_watermark}`
    : "<b>no leader</b>: an election is under way";
  return `<p id="quorum-leader" data-leader="${leading ? leading.id : -1}" data-epoch="${leading ? leading.state.quorum.epoch : -1}">${head}</p>
    <table><thead><tr><th>voter</th><th>role</th><th>epoch</th><th>leader</th><th>voted for</th><th>log end</th>
    <th>high watermark</th><th>lag</th><th>last fetch (ms ago)</th><th>elections</th><th>votes won</th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}

// ---- consumer groups of the new protocol (KIP-848), from their coordinators

// "topic-0, topic-1" of [{topic, partitions}], sorted
function tps(list) {
  return list.flatMap((t) => t.partitions.map((p) => `${t.topic}-${p}`)).sort().join(", ");
}

// Each member's epoch against the group's, and what it owns against the
// target the assignor gave it: a rebalance shows as it reconciles, the
// partitions to revoke going before the new ones come.
function groupsView() {
  const groups = upBrokers().flatMap((b) => (b.state.consumer_groups || []).map((g) => ({ b, g })));
  if (!groups.length) return `<span class="muted">no consumer group of the new protocol (group.protocol=consumer)</span>`;
  groups.sort((x, y) => x.g.group_id.localeCompare(y.g.group_id));
  return groups.map(({ b, g }) => {
    const rows = g.members.map((m) => {
      const owned = tps(m.assigned), target = tps(m.target), revoking = tps(m.revoking);
      const settled = owned === target && m.member_epoch === g.group_epoch;
      return `<tr data-member="${esc(m.member_id)}" data-epoch="${m.member_epoch}" data-state="${m.state}"
        data-assigned="${esc(owned)}" data-target="${esc(target)}" data-revoking="${esc(revoking)}" class="${settled ? "" : "pending"}">
        <td>${esc(m.member_id)}<br><span class="muted">${esc(m.client_id)}</span></td><td>${m.member_epoch}</td>
        <td>${m.state.replace(/_/g, " ")}</td><td>${esc(owned) || "none"}</td><td>${esc(revoking)}</td><td>${esc(target) || "none"}</td></tr>`;
    }).join("");
    return `<div class="cgroup" data-group="${esc(g.group_id)}" data-state="${g.state}" data-group-epoch="${g.group_epoch}"
      data-assignment-epoch="${g.assignment_epoch}">
      <p><b>${esc(g.group_id)}</b> on coordinator ${b.id}: ${g.state}, group epoch ${g.group_epoch},
        targets computed for epoch ${g.assignment_epoch}</p>
      <table><thead><tr><th>member</th><th>member epoch</th><th>state</th><th>owns now</th><th>to revoke</th>
        <th>target</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  }).join("");
}

// Each broker once, though it may be known by two addresses (the page's own
// host name and the address its peers give).
function shown() {
  const byId = new Map(), rest = [];
  for (const b of brokers.values()) {
    if (b.id == null) rest.push(b);
    else if (!byId.has(b.id) || (b.up && !byId.get(b.id).up)) byId.set(b.id, b);
  }
  return [...byId.values(), ...rest].sort((x, y) => (x.id ?? 1e9) - (y.id ?? 1e9));
}

function render() {
  const all = shown();
  document.getElementById("brokers").innerHTML = all.map((b) => {
    const status = snap.status.get(b.id) || "down";
    return `<span class="${status}" data-broker="${esc(b.id ?? "?")}" data-up="${!!b.up}" data-status="${status}">broker ${
      esc(b.id ?? "?")} ${status}</span>`;
  }).join("");
  document.getElementById("machines").innerHTML = all.map(machine).join("");
  document.querySelector("#partitions tbody").innerHTML = partitionRows();
  document.getElementById("controller").innerHTML = controllerView();
  document.getElementById("quorum").innerHTML = quorumView();
  document.getElementById("groups").innerHTML = groupsView();
  drawCluster();
  const names = [...new Set([...snap.parts.values()].map((p) => p.topic))].sort();
  const list = document.getElementById("topic-names");
  if (list.dataset.names !== names.join("\n")) {
    list.dataset.names = names.join("\n");
    list.innerHTML = names.map((n) => `<option value="${esc(n)}">`).join("");
  }
  drawPicture(lastJourney);
  document.getElementById("events").innerHTML = events.map((e) =>
    `<li class="${e.kind}">${e.at.toLocaleTimeString()} ${esc(e.text)}</li>`).join("");
  const up = all.filter((b) => b.up).length;
  document.getElementById("status").textContent =
    `${up} of ${all.length} brokers answer; updated ${new Date().toLocaleTimeString()}` + (notes.length ? "; " + notes.join("; ") : "");
}

// ---- the journey

async function journeyPart(b, query) {
  try {
    const r = await getJSON(b.address, "/api/journey?" + query);
    return r.status === 200 ? r.body : null;
  } catch (e) {
    return null;
  }
}

function receivedAt(part) {
  const r = part.stages.find((s) => s.stage === "received");
  return r ? r.t_ns : part.stages.length ? part.stages[0].t_ns : 0;
}

async function findJourney() {
  const up = upBrokers();
  let head = null;
  if (journeyQuery.mode === "offset") {
    head = { topic: journeyQuery.topic, partition: journeyQuery.partition, first_offset: journeyQuery.offset };
  } else {
    const q = journeyQuery.mode === "trace" ? "trace=" + encodeURIComponent(journeyQuery.trace)
      : "latest=1" + (journeyQuery.topic ? "&topic=" + encodeURIComponent(journeyQuery.topic) : "");
    const parts = (await Promise.all(up.map((b) => journeyPart(b, q)))).filter(Boolean);
    // the leader's part carries the receipt; the newest on one machine's clock
    for (const p of parts) if (p.stages.some((s) => s.stage === "received") && (!head || receivedAt(p) > receivedAt(head))) head = p;
    if (!head) return null;
  }
  const q = `topic=${encodeURIComponent(head.topic)}&partition=${head.partition}&offset=${head.first_offset}`;
  const parts = (await Promise.all(up.map((b) => journeyPart(b, q)))).filter(Boolean);
  if (!parts.length) return null;
  const lead = parts.find((p) => p.stages.some((s) => s.stage === "received")) || parts[0];
  const byWall = new Set(parts.map((p) => p.process)).size > 1;
  const stages = ordered(parts.flatMap((p) => p.stages), byWall).map((x) => x.s);
  // the leader's part says where the batch stands
  const verdict = (parts.find((p) => p.verdict) || {}).verdict || null;
  return { head: lead, parts, stages, verdict, byWall };
}

// A stage's line: the broker words every stage (s.text), once for the
// page, the command and the labs.
function describe(s) {
  return s.text || s.stage;
}

// The diagram's steps for a journey: [key, title, stages it needs, text].
function steps(j, followers) {
  const t0 = j.stages.length ? (j.stages.find((s) => s.stage === "received") || j.stages[0]).t_ns : 0;
  const at = (s) => (s ? `+${((s.t_ns - t0) / 1e6).toFixed(3)} ms` : "");
  const one = (name, peer) => j.stages.find((s) => s.stage === name && (peer === undefined || s.peer === peer || s.broker === peer && name === "replicated"));
  const enq = one("enqueued"), deq = one("dequeued"), app = one("appended");
  // the leader's fsync, when flush.messages or flush.ms asked for one
  const fsync = app && j.stages.find((s) => s.stage === "flushed" && s.broker === app.broker);
  const out = [
    ["received", "network thread", one("received")],
    ["enqueued", "request queue", enq],
    ["dequeued", "I/O thread", deq],
    ["validated", "validated, offsets", one("validated") && app ? app : null, one("validated")],
    ["appended", "active segment", app, null, [app, fsync].filter(Boolean)],
  ];
  for (const f of followers) {
    const leo = j.stages.find((s) => s.stage === "follower_leo" && s.peer === f);
    const rep = j.stages.find((s) => s.stage === "replicated" && s.broker === f);
    const fetched = j.stages.find((s) => s.stage === "follower_fetched" && s.peer === f);
    const isr = j.stages.filter((s) => (s.stage === "isr_shrunk" || s.stage === "isr_expanded") && s.peer === f);
    // done once the leader knows the follower has it (its LEO past it);
    // its leaving the ISR and coming back, with why, in time order
    out.push([`follower-${f}`, `follower ${f}`, leo, null,
      [fetched, rep, leo, ...isr].filter(Boolean).sort((a, b) => a.t_ns - b.t_ns)]);
  }
  out.push(["committed", "high watermark", one("committed")]);
  if (one("no_response")) out.push(["no_response", "no response (acks=0)", one("no_response")]);
  else out.push(["acknowledged", "acknowledged", one("acknowledged")]);
  out.push(["records_fetched", "consumer", one("records_fetched")]);
  return out.map(([key, title, stage, extra, all]) => {
    let text = all ? all.map((s) => describe(s)).join("; ") : stage ? describe(stage) : "";
    if (key === "validated" && extra) text = describe(extra) + "; " + describe(stage).split(";")[0];
    return { key, title, stage, at: at(stage), text };
  });
}

async function showJourney() {
  const title = document.getElementById("journey-title");
  const path = document.getElementById("journey-path");
  const verdict = document.getElementById("journey-verdict");
  const list = document.getElementById("journey-stages");
  const j = await findJourney();
  if (!j) {
    title.textContent = journeyQuery.mode === "latest" ? "no journey yet: produce a record" : "no broker keeps a journey for it";
    path.innerHTML = list.innerHTML = "";
    lastJourney = null;
    forgetJourney();
    drawPicture(null);
    drawWaterfall(null);
    verdict.textContent = "";
    verdict.className = "";
    return;
  }
  const h = j.head;
  const part = partitionOf(h.topic, h.partition);
  const leader = j.stages.find((s) => s.stage === "appended");
  const leaderId = leader ? leader.broker : part ? part.leader : null;
  const followers = part ? part.replicas.filter((r) => r !== leaderId) : [];
  title.innerHTML = `${esc(h.topic)}-${h.partition}, offsets ${h.first_offset}..${h.last_offset}` +
    (h.trace ? ` (trace ${esc(h.trace)})` : "") + `, from ${j.parts.length} broker${j.parts.length === 1 ? "" : "s"}`;
  title.className = "";
  title.dataset.topic = h.topic;
  title.dataset.partition = h.partition;
  title.dataset.offset = h.first_offset;
  const committed = j.stages.some((s) => s.stage === "committed");
  // in the order they happened; the steps still to come after, as the lesson has them
  const st = steps(j, followers).map((s, i) => ({ s, i })).sort((a, b) =>
    (a.s.stage ? a.s.stage.t_ns : Infinity) - (b.s.stage ? b.s.stage.t_ns : Infinity) || a.i - b.i).map((x) => x.s);
  path.innerHTML = st.map((s) => {
    const stuck = !s.stage && leader && !committed && (s.key === "committed" || s.key.startsWith("follower-"));
    return `<li data-stage="${s.key}" class="${s.stage ? "done" : stuck ? "stuck" : ""}" title="${esc(s.text)}">
      <b>${esc(s.title)}</b><span class="t">${s.at || (stuck ? "waiting" : "")}</span><div>${esc(s.text)}</div></li>`;
  }).join("");
  // the leader words the verdict (kafkaiq journey and b:journey print the same)
  verdict.className = j.verdict ? { committed: "whole", stuck: "stuck" }[j.verdict.state] || "" : "";
  verdict.textContent = j.verdict ? j.verdict.text : "";
  const t0 = st.length && st[0].stage ? st[0].stage.t_ns : j.stages[0].t_ns;
  lastJourney = j;
  followJourney(`${h.topic}-${h.partition}@${h.first_offset}`, j.stages, j.byWall);
  drawPicture(j);
  drawWaterfall(j);
  list.innerHTML = j.stages.map((s) =>
    `<li data-stage="${esc(s.stage)}">${((s.t_ns - t0) / 1e6).toFixed(3).padStart(9)} ms  ${esc(describe(s))}</li>`).join("");
}

// The leader's view of a partition (any replica's when no leader answers).
function partitionOf(topic, partition) {
  let any = null;
  for (const b of upBrokers())
    for (const t of topicsOf(b.state))
      if (t.name === topic)
        for (const p of Object.values(t.partitions))
          if (p.partition === partition && p.hosted) {
            if (p.role === "leader") return p;
            any = any || p;
          }
  return any;
}

readQuery();
addBroker(location.host);
document.getElementById("journey-form").addEventListener("submit", onJourneyForm);
document.getElementById("internal").addEventListener("change", render);
document.getElementById("picture-controls").addEventListener("click", onControl);
document.getElementById("browse-form").addEventListener("submit", onBrowseForm);
poll();
setInterval(poll, POLL_MS);
