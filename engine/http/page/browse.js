// What a topic browser (kafka-ui, AKHQ) shows, where it helps to learn: a
// partition's messages read from its leader's log (/api/messages), every
// consumer group with its lag per partition (/api/groups from each
// coordinator; lag against the high watermark of the poll's snapshot) and
// a topic's configs with their sources (/api/configs, as DescribeConfigs
// gives them).
"use strict";

const browse = { topic: null, partition: 0, offset: null, limit: 20, note: "" };

function onBrowseForm(ev) {
  ev.preventDefault();
  const f = ev.target;
  const topic = f.topic.value.trim();
  const ok = topic.length > 0 && topic.length < 250 && /^[0-9]+$/.test(f.partition.value) &&
    (f.offset.value === "" || /^[0-9]+$/.test(f.offset.value)) && /^[0-9]+$/.test(f.limit.value) &&
    Number(f.limit.value) >= 1 && Number(f.limit.value) <= 100;
  if (!ok) {
    browse.note = "a topic, a partition, an offset (empty: the newest) and a limit of 1-100 are needed";
    document.getElementById("browse-note").textContent = browse.note;
    return;
  }
  Object.assign(browse, { topic, partition: Number(f.partition.value),
    offset: f.offset.value === "" ? null : Number(f.offset.value), limit: Number(f.limit.value), note: "" });
  document.getElementById("browse-note").textContent = "";
  pollBrowse();
}

function leaderAddress(topic, partition) {
  const p = snap.parts.get(`${topic}-${partition}`);
  const b = p && upBrokers().find((x) => x.id === p.leader);
  return b ? b.address : null;
}

function text(m, name) {
  if (m[name] != null) return esc(m[name]);
  if (m[name + "_base64"] != null) return `<span class="muted">base64</span> ${esc(m[name + "_base64"])}`;
  return `<span class="muted">null</span>`;
}

async function showMessages() {
  const el = document.getElementById("messages");
  if (!browse.topic) return;
  const at = leaderAddress(browse.topic, browse.partition) || (upBrokers()[0] || {}).address;
  if (!at) return;
  const q = `topic=${encodeURIComponent(browse.topic)}&partition=${browse.partition}&limit=${browse.limit}` +
    (browse.offset == null ? "" : `&offset=${browse.offset}`);
  const r = await getJSON(at, "/api/messages?" + q).catch(() => null);
  if (!r) return;
  if (r.status !== 200) {
    el.innerHTML = `<p class="muted" data-error="${r.status}">${esc(r.body.error || "HTTP " + r.status)}</p>`;
    return;
  }
  const m = r.body;
  el.innerHTML = `<p class="muted">${esc(m.topic)}-${m.partition}: log start ${m.log_start_offset}, high watermark
    ${m.high_watermark}; ${m.messages.length} records shown, read from the log of its leader</p>
    <table><thead><tr><th>offset</th><th>timestamp</th><th>key</th><th>value</th><th>headers</th></tr></thead><tbody>` +
    m.messages.map((x) => `<tr data-offset="${x.offset}" data-key="${esc(x.key ?? "")}" data-value="${esc(x.value ?? "")}">
      <td>${x.offset}</td><td title="${x.timestamp_type}">${new Date(x.timestamp).toISOString()}</td><td>${text(x, "key")}</td>
      <td>${text(x, "value")}${x.truncated ? ` <span class="muted">(cut: ${x.value_bytes} bytes in all)</span>` : ""}</td>
      <td>${x.headers.map((h) => `${esc(h.key ?? "?")}=${text(h, "value")}`).join(", ")}</td></tr>`).join("") +
    `</tbody></table>`;
}

async function showConfigs() {
  const el = document.getElementById("configs");
  if (!browse.topic) return;
  const at = (upBrokers()[0] || {}).address;
  if (!at) return;
  const r = await getJSON(at, "/api/configs?topic=" + encodeURIComponent(browse.topic)).catch(() => null);
  if (!r) return;
  if (r.status !== 200) {
    el.innerHTML = `<p class="muted" data-error="${r.status}">${esc(r.body.error || "HTTP " + r.status)}</p>`;
    return;
  }
  // the values set somewhere first: those are what a learner looks for
  const rank = (c) => (c.source === "DEFAULT_CONFIG" ? 1 : 0);
  const cs = [...r.body.configs].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  el.innerHTML = `<p class="muted">configs of ${esc(r.body.topic)}, with where each value comes from</p>
    <table><thead><tr><th>config</th><th>value</th><th>source</th></tr></thead><tbody>` +
    cs.map((c) => `<tr data-config="${esc(c.name)}" data-source="${c.source}" data-value="${esc(c.value ?? "")}"
      class="${c.source === "DEFAULT_CONFIG" ? "muted" : ""}"><td>${esc(c.name)}</td><td>${esc(c.value ?? "")}</td>
      <td>${c.source}</td></tr>`).join("") + `</tbody></table>`;
}

// Each group once (its coordinator answers for it), a row per partition it
// committed: lag = the partition's high watermark - the committed offset.
async function showGroupLag() {
  const el = document.getElementById("group-lag");
  const answers = await Promise.all(upBrokers().map((b) => getJSON(b.address, "/api/groups").catch(() => null)));
  const groups = new Map();
  for (const r of answers) if (r && r.status === 200) for (const g of r.body.groups) groups.set(g.group_id, { ...g, coordinator: r.body.broker });
  if (!groups.size) {
    el.innerHTML = `<span class="muted">no consumer group yet</span>`;
    return;
  }
  el.className = "";
  el.innerHTML = [...groups.values()].sort((a, b) => a.group_id.localeCompare(b.group_id)).map((g) => {
    const rows = [...g.offsets].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition).map((o) => {
      const p = snap.parts.get(`${o.topic}-${o.partition}`);
      const lag = p ? Math.max(0, p.hw - o.offset) : null;
      return `<tr data-group="${esc(g.group_id)}" data-topic="${esc(o.topic)}" data-partition="${o.partition}"
        data-offset="${o.offset}" data-hw="${p ? p.hw : ""}" data-lag="${lag ?? ""}"><td>${esc(o.topic)}-${o.partition}</td>
        <td>${o.offset}</td><td>${p ? p.hw : "?"}</td><td class="${lag ? "pending" : ""}">${lag ?? "?"}</td>
        <td>${new Date(o.commit_ts_ms).toLocaleTimeString()}</td></tr>`;
    }).join("");
    // a group of the new protocol is one its coordinator's state lists (KIP-848)
    const g848 = upBrokers().map((b) => (b.state.consumer_groups || []).find((x) => x.group_id === g.group_id)).find(Boolean);
    const kind = g848 ? "consumer group of the new protocol (KIP-848)"
      : g.protocol_type === "consumer" ? "classic consumer group" : `${g.protocol_type || "classic"} group`;
    const members = g848 ? g848.members.map((m) => m.client_id || m.member_id) : g.members.map((m) => m.client_id || m.member_id);
    const epoch = g848 ? `group epoch ${g848.group_epoch}` : `generation ${g.generation}`;
    return `<div class="lag-group" data-group="${esc(g.group_id)}" data-state="${esc(g.state || "")}" data-kind="${g848 ? "848" : "classic"}">
      <p><b>${esc(g.group_id)}</b> on coordinator ${g.coordinator}: ${esc(g.state || "")}, ${esc(kind)}${
        g.protocol && !g848 ? ` (${esc(g.protocol)})` : ""}, ${epoch}, ${members.length} members${
        members.length ? ": " + members.map(esc).join(", ") : ""}</p>
      <table><thead><tr><th>partition</th><th>committed</th><th>high watermark</th><th>lag</th><th>committed at</th></tr></thead>
      <tbody>${rows || `<tr><td colspan="5" class="muted">no offsets committed</td></tr>`}</tbody></table></div>`;
  }).join("");
}

async function pollBrowse() {
  await Promise.all([showMessages(), showConfigs(), showGroupLag()]);
}
