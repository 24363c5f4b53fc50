// The lesson's picture, drawn as SVG: the producer, the leader's machine,
// its followers and the consumer, each box with its live figures, and the
// chosen record's marker moving through the boxes in the order its stages
// happened. Also the cluster: leader -> follower arrows per partition.
// Reads the snapshot live.js makes once per poll (snap), never the brokers.
"use strict";

const SVG_W = 1360;
const STEP_MS = 350; // one stage per step; slow motion is SLOW times longer
const SLOW = 4;

// Which box a stage happens in: the network thread reads the request and
// writes its response; the I/O thread (or the purgatory) handles and
// answers it; the log manager appends and fsyncs; a follower fetches and
// the leader learns its LEO; the high watermark moves; a consumer fetches.
function boxOf(s) {
  switch (s.stage) {
    case "received": case "response_queued": case "sent": return "network";
    case "enqueued": return "queue";
    case "appended": case "flushed": case "txn_committed": case "txn_aborted": return "log";
    case "follower_fetched": case "follower_leo": case "isr_shrunk": case "isr_expanded": return `follower-${s.peer}`;
    case "replicated": return `follower-${s.broker}`;
    case "committed": return "hw";
    case "records_fetched": case "share_acquired": case "share_acknowledged": case "share_lock_expired": return "fetcher";
    default: return "io";
  }
}

// A journey's stages in the order they happened: by wall-clock time when
// its parts come from several processes (byWall: brokers perhaps on
// different machines) and every stage has one, else by the monotonic clock
// the brokers of one process share (as the brokers merge them).
function ordered(stages, byWall) {
  const wall = byWall && stages.length > 0 && stages.every((s) => s.wall_us != null);
  // from the first, so that nanoseconds stay exact in a double
  const base = wall ? Math.min(...stages.map((s) => s.wall_us)) : 0;
  const at = wall ? (s) => (s.wall_us - base) * 1000 : (s) => s.t_ns;
  return stages.map((s) => ({ s, t: at(s) })).sort((a, b) => a.t - b.t);
}

// The marker's path: the client's own steps (untimed by the broker: before
// the first stage, and the deserializer after the consumer's fetch), then
// every stage at its box.
function plan(stages, byWall) {
  const seq = ordered(stages, byWall).map(({ s, t }) => ({ box: boxOf(s), stage: s.stage, t, s }));
  if (!seq.length) return seq;
  const t0 = seq[0].t;
  const client = (box, t, text) => ({ box, stage: box, t, s: null, text });
  const out = [client("serializer", t0, "the producer serialized the key and value (on the client, not timed here)"),
    client("partitioner", t0, "the partitioner chose the partition (on the client)"),
    client("batch", t0, "records gathered into a RecordBatch, sent in a Produce request (on the client)")];
  let deserialized = false;
  for (const step of seq) {
    out.push(step);
    if (step.box === "fetcher" && !deserialized) {
      out.push(client("deserializer", step.t, "the consumer deserializes the key and value (on the client)"));
      deserialized = true;
    }
  }
  return out;
}

const anim = { key: null, seq: [], i: 0, timer: null, slow: false, paused: false };

function schedule() {
  clearTimeout(anim.timer);
  anim.timer = null;
  if (anim.paused || anim.i >= anim.seq.length) return;
  anim.timer = setTimeout(() => {
    anim.i++;
    paintMarker();
    schedule();
  }, STEP_MS * (anim.slow ? SLOW : 1));
}

// A new journey replays from its start; the same one, grown, goes on.
function followJourney(key, stages, byWall) {
  const seq = plan(stages, byWall);
  if (key !== anim.key) {
    anim.key = key;
    anim.i = 0;
  }
  anim.seq = seq;
  anim.i = Math.min(anim.i, seq.length);
  if (!anim.timer) schedule();
  paintMarker();
}

function forgetJourney() {
  clearTimeout(anim.timer);
  Object.assign(anim, { key: null, seq: [], i: 0, timer: null });
  paintMarker();
}

function onControl(ev) {
  const what = ev.target.dataset.control;
  if (!what) return;
  if (what === "replay") {
    anim.i = 0;
    anim.paused = false;
  } else if (what === "slow") {
    anim.slow = !anim.slow;
  } else if (what === "pause") {
    anim.paused = !anim.paused;
  } else if (what === "step") {
    anim.paused = true;
    if (anim.i < anim.seq.length) anim.i++;
  }
  document.querySelector('[data-control="slow"]').setAttribute("aria-pressed", anim.slow);
  document.querySelector('[data-control="pause"]').textContent = anim.paused ? "play" : "pause";
  paintMarker();
  schedule();
}

// ---- the boxes and where they stand

let layout = new Map(); // box -> {x, y, w, h}

function box(id, x, y, w, h, title, lines, cls) {
  layout.set(id, { x, y, w, h });
  const text = lines.map((l, i) => `<text x="${x + 8}" y="${y + 36 + i * 15}" class="fig">${esc(l)}</text>`).join("");
  return `<g class="pbox ${cls || ""}" data-box="${esc(id)}"><rect x="${x}" y="${y}" width="${w}" height="${h}" rx="6"></rect>
    <text x="${x + 8}" y="${y + 18}" class="ttl">${esc(title)}</text>${text}</g>`;
}

function frame(x, y, w, h, title, cls) {
  return `<g class="frame ${cls || ""}"><rect x="${x}" y="${y}" width="${w}" height="${h}" rx="10"></rect>
    <text x="${x + 10}" y="${y + 16}">${esc(title)}</text></g>`;
}

function arrow(a, b) {
  const p = layout.get(a), q = layout.get(b);
  if (!p || !q) return "";
  if (Math.abs(p.y - q.y) < 5)
    return `<line class="flow" x1="${p.x + p.w}" y1="${p.y + p.h / 2}" x2="${q.x - 3}" y2="${q.y + q.h / 2}" marker-end="url(#head)"></line>`;
  // down a row: out of the bottom, along between the rows, into the top
  const mid = (p.y + p.h + q.y) / 2;
  return `<path class="flow" d="M ${p.x + p.w / 2} ${p.y + p.h} V ${mid} H ${q.x + q.w / 2} V ${q.y - 3}" marker-end="url(#head)"></path>`;
}

// From a's side to b's along a lane at y outside the boxes (above the
// first row or below the second), labelled: the ways back the lesson draws.
function around(a, b, y, label, along = 0.5) {
  const p = layout.get(a), q = layout.get(b);
  if (!p || !q) return "";
  const from = y < p.y ? p.y : p.y + p.h, to = y < q.y ? q.y - 3 : q.y + q.h + 3;
  const x1 = p.x + p.w * along, x2 = q.x + q.w / 2;
  return `<path class="flow back" d="M ${x1} ${from} V ${y} H ${x2} V ${to}" marker-end="url(#head)"></path>
    <text class="flowlabel" x="${(x1 + x2) / 2}" y="${y < p.y ? y - 3 : y + 12}" text-anchor="middle">${esc(label)}</text>`;
}

function stageOf(stages, name, pred) {
  return stages.find((s) => s.stage === name && (!pred || pred(s)));
}

// The picture of journey j (null: the machines without a record) on the
// leader's figures; the partition from the snapshot.
function drawPicture(j) {
  layout = new Map();
  const stages = j ? j.stages : [];
  const head = j ? j.head : null;
  const part = head ? snap.parts.get(`${head.topic}-${head.partition}`) : null;
  const app = stageOf(stages, "appended");
  const leaderId = app ? app.broker : part ? part.leader : (upBrokers()[0] || {}).id;
  const leader = upBrokers().find((b) => b.id === leaderId);
  const st = leader ? leader.state : null;
  const rec = stageOf(stages, "received"), val = stageOf(stages, "validated"), got = stageOf(stages, "records_fetched");
  const followerIds = part ? part.followers.map((f) => f.id) : [...new Set(stages.filter((s) => boxOf(s).startsWith("follower-"))
    .map((s) => Number(boxOf(s).slice(9))))];
  let g = "";
  g += frame(10, 30, 370, 120, "producer" + (rec && rec.client_id ? ` "${rec.client_id}"` : ""));
  g += box("serializer", 20, 52, 110, 88, "serializer", ["key, value", "\u2192 bytes"]);
  g += box("partitioner", 140, 52, 110, 88, "partitioner", [head ? `\u2192 partition ${head.partition}` : "\u2192 a partition"]);
  g += box("batch", 260, 52, 110, 88, "RecordBatch", val ? [`${val.records} records`, `${val.bytes} bytes`] : ["records, batched"]);
  const where = leader ? `broker ${leader.id}${head ? `, leader of ${head.topic}-${head.partition}` : ""}` : "broker";
  g += frame(400, 30, 950, 120, where, leader && snap.status.get(leader.id) !== "up" ? "down" : "");
  if (st && st.running) {
    const conns = st.processors.reduce((n, p) => n + p.connections, 0);
    const reqs = rate(leader, (s) => (s.processors || []).reduce((n, p) => n + p.requests, 0));
    const q = st.request_queue;
    const busy = busyOf(leader, (x) => ({ busy: x.io.busy_ns, up: x.io.up_ns * x.io.threads }));
    // a segment file is named after its base offset
    const seg = app && app.file ? Number(app.file.split("/").pop().split(".")[0]) : null;
    g += box("network", 410, 52, 225, 88, "acceptor and processors", [`${st.acceptor.accepted} accepted, ${st.processors.length} processors`,
      `${conns} connections, ${fmtRate(reqs)} requests`]);
    g += box("queue", 645, 52, 225, 88, "request queue", [`depth ${q.depth} of ${q.bound}`, `${q.muted} muted for want of room`],
      q.depth >= q.bound ? "hot" : "");
    g += box("io", 880, 52, 225, 88, "I/O threads", [`${st.io.threads} threads, busy ${pct(busy)}`, `purgatory: ${st.purgatory.waiting} waiting`]);
    g += box("log", 1115, 52, 225, 88, "log manager", part ? [`${part.topic}-${part.partition}: LEO ${part.leo}`,
      `${part.segments} segments, ${part.size.toLocaleString()} bytes`, seg != null ? `appended to the segment from ${seg}` : ""].filter(Boolean)
      : [`${topicsOf(st).length} topics`]);
  } else {
    for (const [id, x, t] of [["network", 410, "acceptor and processors"], ["queue", 645, "request queue"], ["io", 880, "I/O threads"],
      ["log", 1115, "log manager"]]) g += box(id, x, 52, 225, 88, t, ["no answer"]);
  }
  // the replication row: each follower as the leader knows it, then the HW
  const n = Math.max(1, followerIds.length), fw = Math.min(225, (700 - 10 * n) / n);
  g += frame(400, 190, 950, 120, followerIds.length ? "replication: leader \u2192 followers" : "replication: no followers");
  followerIds.forEach((id, i) => {
    const f = part ? part.followers.find((x) => x.id === id) : null;
    const status = snap.status.get(id) || "down";
    const lines = f ? [`LEO ${f.leo ?? "?"}, lag ${f.lag ?? "?"}`, f.inIsr ? "in the ISR" : "out of the ISR", `broker ${status}`]
      : [`broker ${status}`];
    g += box(`follower-${id}`, 410 + i * (fw + 10), 212, fw, 88, `follower ${id}`, lines,
      (f && !f.inIsr ? "out" : "") + (status !== "up" ? " down" : ""));
  });
  g += box("hw", 1115, 212, 225, 88, "high watermark", part ? [`HW ${part.hw} of LEO ${part.leo}`,
    `${part.leo - part.hw} records not yet committed`, `ISR [${part.isr.join(", ")}]`] : ["committed offsets"]);
  g += frame(10, 190, 370, 120, "consumer" + (got && got.client_id ? ` "${got.client_id}"` : ""));
  g += box("fetcher", 20, 212, 170, 88, "fetcher", got ? [`fetched from ${got.first_offset}`, `${got.bytes} bytes`] : ["fetches from the leader"]);
  g += box("deserializer", 200, 212, 170, 88, "deserializer", ["bytes \u2192", "key, value"]);
  let flows = arrow("serializer", "partitioner") + arrow("partitioner", "batch") + arrow("batch", "network") +
    arrow("network", "queue") + arrow("queue", "io") + arrow("io", "log") + arrow("fetcher", "deserializer");
  for (const id of followerIds) flows += arrow("log", `follower-${id}`);
  flows += around("network", "batch", 14, "the response: acks=1 after the append, acks=all after the commit", 0.9) +
    around("hw", "fetcher", 322, "consumers read below the high watermark");
  const svg = document.getElementById("picture");
  svg.querySelector("#boxes").innerHTML = flows + g;
  svg.dataset.leader = leader ? leader.id : "";
  paintMarker();
}

function paintMarker() {
  const svg = document.getElementById("picture");
  const now = document.getElementById("picture-now");
  const seq = anim.seq, i = anim.i;
  svg.dataset.sequence = seq.map((x) => x.box).join(",");
  svg.dataset.stages = seq.map((x) => x.stage).join(",");
  svg.dataset.visited = seq.slice(0, i).map((x) => x.box).join(",");
  svg.dataset.done = String(seq.length > 0 && i >= seq.length);
  const visited = new Set(seq.slice(0, i).map((x) => x.box));
  const cur = i > 0 ? seq[i - 1] : null;
  svg.querySelectorAll("[data-box]").forEach((g) => {
    g.classList.toggle("visited", visited.has(g.dataset.box));
    g.classList.toggle("current", !!cur && cur.box === g.dataset.box);
  });
  const marker = svg.querySelector("#marker");
  const at = cur && layout.get(cur.box);
  marker.style.display = at ? "" : "none";
  if (at) {
    marker.style.transition = `transform ${(STEP_MS * (anim.slow ? SLOW : 1) * 0.8) / 1000}s ease-in-out`;
    marker.style.transform = `translate(${at.x + at.w - 14}px, ${at.y + at.h - 14}px)`;
  }
  if (!seq.length) now.textContent = "no record to follow yet";
  else if (!cur) now.textContent = "press replay, or step";
  else {
    const t0 = seq[0].t;
    const text = cur.s ? describe(cur.s) : cur.text;
    now.textContent = `step ${i} of ${seq.length}: +${((cur.t - t0) / 1e6).toFixed(3)} ms, ${cur.box}: ${text}`;
  }
}

// ---- the cluster: a lane per broker, a row per partition with arrows
// from its leader to each follower (dashed when out of the ISR)

function drawCluster() {
  const svg = document.getElementById("cluster");
  const ids = [...snap.status.keys()].filter((id) => id != null).sort((a, b) => a - b);
  const internal = document.getElementById("internal").checked;
  const parts = [...snap.parts.values()].filter((p) => internal || !p.topic.startsWith("__"))
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition).slice(0, 24);
  const x0 = 180, dx = ids.length > 1 ? (SVG_W - x0 - 80) / (ids.length - 1) : 0;
  const xOf = (id) => x0 + ids.indexOf(id) * dx;
  const h = 70 + parts.length * 34;
  svg.setAttribute("viewBox", `0 0 ${SVG_W} ${h}`);
  let g = ids.map((id) => {
    const status = snap.status.get(id);
    return `<g class="lane ${status}" data-broker="${id}" data-status="${status}">
      <line x1="${xOf(id)}" y1="40" x2="${xOf(id)}" y2="${h - 6}"></line>
      <rect x="${xOf(id) - 55}" y="6" width="110" height="28" rx="14"></rect>
      <text x="${xOf(id)}" y="25" text-anchor="middle">broker ${id} ${status}${snap.controller === id ? " \u2605" : ""}</text></g>`;
  }).join("");
  parts.forEach((p, r) => {
    const y = 62 + r * 34;
    g += `<text x="10" y="${y + 4}" class="pname">${esc(p.topic)}-${p.partition}</text>
      <circle class="leaderdot" cx="${xOf(p.leader)}" cy="${y}" r="7"></circle>`;
    for (const f of p.followers) {
      if (!ids.includes(f.id)) continue;
      const a = xOf(p.leader), b = xOf(f.id), bend = 8 + Math.abs(b - a) / 40;
      g += `<g class="arrow${f.inIsr ? "" : " out"}" data-partition="${esc(p.key)}" data-from="${p.leader}" data-to="${f.id}"
        data-lag="${f.lag ?? ""}" data-in-isr="${f.inIsr}">
        <path d="M ${a} ${y} Q ${(a + b) / 2} ${y - bend} ${b + (b > a ? -8 : 8)} ${y}" marker-end="url(#head)"></path>
        <text x="${(a + b) / 2}" y="${y - bend / 2 - 3}" text-anchor="middle">lag ${f.lag ?? "?"}${f.inIsr ? "" : ", out of ISR"}</text></g>`;
    }
  });
  svg.querySelector("#lanes").innerHTML = parts.length ? g : g + `<text x="10" y="60" class="pname">no topics yet</text>`;
}
