// A journey as a trace view draws its spans: a row per stage, on one time
// axis across the brokers, each bar running from the stage before to this
// one (the time it took to get here), labelled with its broker and thread,
// and the broker's words for why it waited when it has them.
"use strict";

// Which of the broker's threads a stage ran on, when the stage names one.
function threadName(s) {
  if (s.thread == null) return null;
  if (s.stage === "received" || s.stage === "response_queued" || s.stage === "sent") return `network thread ${s.thread}`;
  if (s.stage === "dequeued") return `I/O thread ${s.thread}`;
  return `thread ${s.thread}`;
}

function fmtMs(ns) {
  const ms = ns / 1e6;
  return ms >= 100 ? ms.toFixed(0) + " ms" : ms >= 1 ? ms.toFixed(2) + " ms" : ms.toFixed(3) + " ms";
}

function drawWaterfall(j) {
  const el = document.getElementById("waterfall");
  if (!j) {
    el.innerHTML = "";
    el.dataset.count = 0;
    return;
  }
  const rows = ordered(j.stages, j.byWall);
  const t0 = rows[0].t, span = Math.max(1, rows[rows.length - 1].t - t0);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) =>
    `<span style="left:${f * 100}%;transform:translateX(-${f * 100}%)">${fmtMs(f * span)}</span>`).join("");
  el.dataset.count = rows.length;
  el.innerHTML = `<div class="wf-axis"><span class="wf-label"></span><span class="wf-track">${ticks}</span></div>` +
    rows.map(({ s, t }, i) => {
      const from = i ? rows[i - 1].t : t;
      const left = ((from - t0) / span) * 100, width = Math.max(0.15, ((t - from) / span) * 100);
      const thread = threadName(s);
      const label = `broker ${s.broker}${thread ? " \u00b7 " + thread : ""} \u00b7 ${s.stage}`;
      const why = s.why ? `<div class="wf-why">why: ${esc(s.why)}</div>` : "";
      return `<div class="wf-row" data-stage="${esc(s.stage)}" data-broker="${s.broker}" data-thread="${s.thread ?? ""}"
        data-start-ns="${from - t0}" data-end-ns="${t - t0}" title="${esc(describe(s))}">
        <span class="wf-label">${esc(label)}</span>
        <span class="wf-track"><i class="b${s.broker % 6}" style="left:${left}%;width:${width}%"></i></span>
        <span class="wf-dur">+${fmtMs(t - t0)}, took ${fmtMs(t - from)}</span>${why}</div>`;
    }).join("");
}
