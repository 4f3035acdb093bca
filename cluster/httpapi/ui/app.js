// Foreman dashboard: polls the HTTP API every 2 s and keeps the last five
// minutes of samples in the page for the charts. No framework, no build.
"use strict";

const POLL_MS = 2000;
const KEEP = 150; // samples: 5 minutes at 2 s
const samples = [];
let lastHist = null; // previous scrape's histogram buckets, for deltas
let lookupId = "";

// A token given once as /ui/#token=... is kept in localStorage and sent on
// every API call (the page's own files need none).
(function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    localStorage.setItem("foreman-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname);
  }
})();

async function api(path, opts) {
  const headers = { Accept: "application/json" };
  const token = localStorage.getItem("foreman-token");
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(path, Object.assign({ headers }, opts || {}));
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = text; }
  if (!res.ok) {
    const err = new Error((body && body.error) || res.status + " " + res.statusText);
    err.status = res.status;
    throw err;
  }
  return body;
}

function $(id) { return document.getElementById(id); }

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = c instanceof Node ? document.createElement("td") : el("td", c);
    if (c instanceof Node) td.appendChild(c);
    tr.appendChild(td);
  }
  return tr;
}

function fill(tbody, rows, empty) {
  tbody.replaceChildren(...rows);
  if (rows.length === 0) {
    const tr = row([empty]);
    tr.firstChild.colSpan = 6;
    tr.firstChild.className = "muted";
    tbody.appendChild(tr);
  }
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return s.toFixed(0) + " s ago";
  if (s < 3600) return (s / 60).toFixed(0) + " min ago";
  return new Date(iso).toLocaleString();
}

// Prometheus text: the buckets of one histogram (summed over labels
// matching filter), and single values.
function parseMetrics(text) {
  const out = { ack: {}, result: {}, epoch: null };
  for (const line of text.split("\n")) {
    let m = /^foreman_submit_ack_seconds_bucket\{outcome="ok",le="([^"]+)"\} (\S+)/.exec(line);
    if (m) { out.ack[m[1]] = Number(m[2]); continue; }
    m = /^foreman_submit_result_seconds_bucket\{le="([^"]+)"\} (\S+)/.exec(line);
    if (m) { out.result[m[1]] = Number(m[2]); continue; }
    m = /^foreman_master_epoch (\S+)/.exec(line);
    if (m) out.epoch = Number(m[1]);
  }
  return out;
}

// p95 in ms of the observations between two scrapes of cumulative buckets;
// null when there were none.
function p95(prev, cur) {
  const les = Object.keys(cur).filter(k => k !== "+Inf").map(Number).sort((a, b) => a - b);
  const d = le => (cur[String(le)] || 0) - ((prev && prev[String(le)]) || 0);
  const total = (cur["+Inf"] || 0) - ((prev && prev["+Inf"]) || 0);
  if (total <= 0) return null;
  for (const le of les) {
    if (d(le) >= 0.95 * total) return le * 1000;
  }
  return les.length ? les[les.length - 1] * 1000 : null;
}

function drawChart(canvas, series, colors) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 28;
  ctx.clearRect(0, 0, w, h);
  let max = 1;
  for (const s of series) for (const v of s) if (v !== null && v > max) max = v;
  ctx.strokeStyle = "#dfe3ea";
  ctx.fillStyle = "#6b7385";
  ctx.font = "10px sans-serif";
  for (let i = 0; i <= 2; i++) {
    const y = pad / 2 + (h - pad) * i / 2;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w, y); ctx.stroke();
    ctx.fillText(fmt(max * (2 - i) / 2), 0, y + 3);
  }
  series.forEach((s, k) => {
    ctx.strokeStyle = colors[k];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let started = false;
    s.forEach((v, i) => {
      if (v === null) { started = false; return; }
      const x = pad + (w - pad) * i / (KEEP - 1);
      const y = pad / 2 + (h - pad) * (1 - v / max);
      if (started) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      started = true;
    });
    ctx.stroke();
  });
}

function fmt(v) {
  if (v >= 1000) return (v / 1000).toFixed(1) + "k";
  return v >= 10 ? v.toFixed(0) : v.toFixed(1);
}

function renderStatus(st) {
  const q = st.queue || {}, wk = st.workers || {};
  $("c-pending").textContent = q.pending ?? "–";
  $("c-running").textContent = q.in_progress ?? "–";
  $("c-done").textContent = q.done ?? "–";
  $("c-dead").textContent = q.dead ?? "–";
  $("c-cancelled").textContent = q.cancelled ?? "–";
  $("c-accepted").textContent = q.accepted_total ?? "–";
  $("c-workers").textContent = (wk.idle ?? "–") + " / " + (wk.busy ?? "–");
  const m = st.master || {};
  $("master").textContent = m.reachable
    ? "Master at " + m.address + (m.member ? " (member " + m.member + ")" : "") + (m.epoch ? ", epoch " + m.epoch : "")
    : "Master not reachable" + (m.error ? ": " + m.error : "");
  fill($("members"), (st.members || []).map(mb => {
    const roles = el("span");
    for (const r of mb.roles || []) roles.appendChild(el("span", r, "tag"));
    if (mb.master) roles.appendChild(el("span", "master", "tag"));
    return row([mb.id + (mb.self ? " (this node)" : ""), mb.address, roles, mb.http || ""]);
  }), "no members");
}

function renderRunning(list) {
  const byWorker = new Map();
  for (const w of list.works) {
    if (!byWorker.has(w.worker)) byWorker.set(w.worker, []);
    byWorker.get(w.worker).push(w);
  }
  const rows = [];
  for (const [worker, works] of [...byWorker.entries()].sort()) {
    const jobs = el("span");
    for (const w of works) {
      const a = el("a", w.id + " (" + w.type + ")");
      a.href = "#";
      a.addEventListener("click", e => { e.preventDefault(); lookup(w.id); });
      jobs.appendChild(a);
      jobs.appendChild(document.createTextNode(" "));
    }
    const oldest = works.map(w => w.started_at).sort()[0];
    rows.push(row([worker, jobs, ago(oldest)]));
  }
  fill($("running"), rows, "no job running");
  $("running-more").textContent = list.total > list.works.length ? "showing " + list.works.length + " of " + list.total + " running jobs" : "";
}

// renderEnded lists the jobs that ended without a result: dead ones and
// those cancelled when their caller left. Both can be re-submitted.
function renderEnded(dead, cancelled) {
  const works = dead.works.concat(cancelled.works);
  works.sort((a, b) => String(b.finished_at || "").localeCompare(String(a.finished_at || "")));
  fill($("dead"), works.map(w => {
    const b = el("button", "Re-submit");
    b.dataset.id = w.id;
    b.addEventListener("click", () => resubmit(w.id, b));
    const r = row([w.id, w.type, w.status, w.attempts, w.last_error || "", ago(w.finished_at), b]);
    r.children[4].className = "err";
    return r;
  }), "no dead or cancelled jobs");
  const total = dead.total + cancelled.total;
  $("dead-more").textContent = total > works.length ? "showing " + works.length + " of " + total : "";
}

// renderQueues shows each job type's queue (GET /queues) with a button
// that pauses or resumes it.
function renderQueues(qs) {
  fill($("queues"), qs.queues.map(q => {
    const verb = q.paused ? "resume" : "pause";
    const b = el("button", q.paused ? "Resume" : "Pause");
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        renderQueues(await api("/queues/" + encodeURIComponent(q.type) + "/" + verb, { method: "POST" }));
        $("error").textContent = "";
      } catch (e) {
        $("error").textContent = "Could not " + verb + " " + q.type + ": " + e.message;
        b.disabled = false;
      }
    });
    const r = row([q.type, q.paused ? "paused" : "active", q.pending, q.delayed, q.running, b]);
    if (q.paused) r.children[1].className = "err";
    return r;
  }), "no jobs of any type");
}

async function resubmit(id, button) {
  button.disabled = true;
  try {
    await api("/work/" + encodeURIComponent(id) + "/resubmit", { method: "POST" });
    $("error").textContent = "";
    lookup(id);
  } catch (e) {
    $("error").textContent = "Re-submitting " + id + ": " + e.message;
    button.disabled = false;
  }
}

function lookup(id) {
  lookupId = id;
  $("lookup-id").value = id;
  refreshJob();
}

async function refreshJob() {
  if (!lookupId) return;
  const box = $("job");
  let job;
  try {
    job = await api("/work/" + encodeURIComponent(lookupId) + "?history=true");
  } catch (e) {
    box.replaceChildren(el("p", e.status === 404 ? "No job " + lookupId + " (never accepted, or forgotten after the retention)." : e.message, "muted"));
    return;
  }
  const head = el("p");
  head.appendChild(el("strong", job.id + " "));
  head.appendChild(el("span", job.status, "status " + job.status));
  head.appendChild(el("span", " · " + job.type + " · attempts " + job.attempts, "muted"));
  const parts = [head];
  if (job.progress) {
    // A long job's latest worker.Progress (issue 38): shown while it runs.
    const p = el("p", "Progress: " + Math.round(job.progress.fraction * 100) + "% ", "progress");
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = job.progress.fraction;
    p.appendChild(bar);
    if (job.progress.message) p.appendChild(el("span", " " + job.progress.message, "muted"));
    parts.push(p);
  }
  if (job.heartbeat) parts.push(el("p", "Last heartbeat: " + new Date(job.heartbeat).toLocaleTimeString(), "muted"));
  if (job.last_error) parts.push(el("p", "Last error: " + job.last_error, "error"));
  if (job.result !== null && job.result !== undefined) parts.push(el("p", "Result: " + JSON.stringify(job.result)));
  const t = el("table");
  const thead = el("thead");
  thead.appendChild(row(["When", "Event", "Attempt", "Worker", "Error"]));
  t.appendChild(thead);
  const tb = el("tbody");
  fill(tb, (job.history || []).map(h => row([new Date(h.at).toLocaleTimeString(), h.event, h.attempt || "", h.worker || "", h.error || ""])), "no history");
  t.appendChild(tb);
  parts.push(t);
  box.replaceChildren(...parts);
  box.dataset.status = job.status;
}

// renderRates fills the rate-limits panel from GET /rates.
function renderRates(list) {
  const rows = (list.rates || []).map(r => r.error
    ? row([r.type, "–", "–", r.error, "", "", ""])
    : row([r.type, r.rate, r.mode, r.node || "", String(r.queued), String(r.granted), String(r.refused)]));
  fill($("rates"), rows, "no rate limits (start the backends with --rate)");
}

async function poll() {
  const sample = { t: Date.now(), in: null, out: null, ack: null, result: null, pending: null, running: null };
  try {
    const st = await api("/status");
    renderStatus(st);
    const q = st.queue || {};
    const ended = q.accepted_total - q.pending - q.in_progress; // done, dead or forgotten
    const prev = samples[samples.length - 1];
    if (prev && prev.acc !== undefined && st.master.reachable) {
      const dt = (sample.t - prev.t) / 1000;
      sample.in = Math.max(0, (q.accepted_total - prev.acc) / dt);
      sample.out = Math.max(0, (ended - prev.ended) / dt);
    }
    if (st.master.reachable) { sample.acc = q.accepted_total; sample.ended = ended; }
    sample.pending = q.pending ?? null;
    sample.running = q.in_progress ?? null;
    $("conn").textContent = "live";
    $("conn").className = "pill ok";
    $("error").textContent = "";
  } catch (e) {
    $("conn").textContent = "unreachable";
    $("conn").className = "pill bad";
    $("error").textContent = e.status === 401 ? "The API wants a token: open /ui/#token=YOUR_TOKEN" : "Status: " + e.message;
  }
  try { renderRunning(await api("/work?status=running&limit=200")); } catch (e) { /* shown by /status */ }
  try { renderQueues(await api("/queues")); } catch (e) { /* shown by /status; 501 without queue controls */ }
  try { renderRates(await api("/rates")); } catch (e) { /* shown by /status */ }
  try {
    renderEnded(await api("/work?status=dead&limit=50"), await api("/work?status=cancelled&limit=50"));
  } catch (e) { /* shown by /status */ }
  try {
    const res = await fetch("/metrics", { headers: localStorage.getItem("foreman-token") ? { Authorization: "Bearer " + localStorage.getItem("foreman-token") } : {} });
    if (res.ok) {
      const h = parseMetrics(await res.text());
      sample.ack = p95(lastHist && lastHist.ack, h.ack);
      sample.result = p95(lastHist && lastHist.result, h.result);
      $("lat-result-label").hidden = Object.keys(h.result).length === 0;
      lastHist = h;
    }
  } catch (e) { /* metrics are optional */ }
  await refreshSchedules();
  await refreshJob();
  samples.push(sample);
  while (samples.length > KEEP) samples.shift();
  const pad = s => Array(KEEP - s.length).fill(null).concat(s);
  drawChart($("ch-rate"), [pad(samples.map(s => s.in)), pad(samples.map(s => s.out))], ["#2f6fdf", "#1b9e62"]);
  drawChart($("ch-lat"), [pad(samples.map(s => s.ack)), pad(samples.map(s => s.result))], ["#2f6fdf", "#c27c0e"]);
  drawChart($("ch-queue"), [pad(samples.map(s => s.pending)), pad(samples.map(s => s.running))], ["#c27c0e", "#1b9e62"]);
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
}

// refreshSchedules shows the periodic schedules (GET /schedules), with a
// pause or resume button each; the panel stays hidden on a node that serves
// none ("served": false).
async function refreshSchedules() {
  let list;
  try { list = await api("/schedules"); } catch (e) { return; /* shown by /status */ }
  $("schedules-panel").hidden = !list.served;
  if (!list.served) return;
  fill($("schedules"), (list.schedules || []).map(s => {
    const b = el("button", s.paused ? "Resume" : "Pause");
    b.addEventListener("click", async () => {
      b.disabled = true;
      try { await api("/schedules/" + encodeURIComponent(s.name) + (s.paused ? "/resume" : "/pause"), { method: "POST" }); }
      catch (e) { $("error").textContent = "Schedule " + s.name + ": " + e.message; }
      await refreshSchedules();
    });
    const next = s.paused ? "paused" : (s.next_tick ? new Date(s.next_tick).toLocaleTimeString() : "");
    const last = s.last_tick ? ago(s.last_tick) : "never";
    return row([s.name, s.spec + (s.time_zone ? " (" + s.time_zone + ")" : ""), s.type, next, last, s.fired + " / " + s.skipped, b]);
  }), "no schedules");
}

document.addEventListener("DOMContentLoaded", () => {
  $("lookup").addEventListener("submit", e => { e.preventDefault(); lookup($("lookup-id").value.trim()); });
  const loop = async () => { await poll(); setTimeout(loop, POLL_MS); };
  loop();
});
