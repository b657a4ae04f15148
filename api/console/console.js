// The fraud-detector console: plain DOM, no framework, no inline script or style (the page is
// served under a strict Content-Security-Policy). Every text from the service goes through
// textContent or an attribute, never through an HTML parser. The token lives in sessionStorage only; a
// clear card number is sent in a POST body and never kept.
"use strict";

const TOKEN_KEY = "fraud-console-token";
const REFRESH_MS = 2000;
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

let timer = null;
let currentRef = null;  // the card shown, by card_ref (never its number)

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    if (c instanceof Node) { const td = el("td"); td.appendChild(c); tr.appendChild(td); }
    else if (typeof c === "number") tr.appendChild(el("td", c, "num"));
    else tr.appendChild(el("td", c === null || c === undefined ? "–" : c));
  }
  return tr;
}
function iso(ms) { return ms === null || ms === undefined ? "–" : new Date(ms).toISOString(); }
function dur(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return ms + " ms";
  if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
  return (ms / 60000).toFixed(1) + " min";
}
function pct(x) { return (100 * x).toFixed(3) + " %"; }
function refLink(ref) {
  const a = el("a", ref.slice(0, 16) + "…", "mono");
  a.href = "#card/" + ref;
  a.title = ref;
  return a;
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class Unauthorized extends Error {}

async function api(path, options) {
  const t = token();
  if (!t) throw new Unauthorized();
  const init = Object.assign({ headers: {} }, options || {});
  init.headers = Object.assign({ Authorization: "Bearer " + t }, init.headers);
  init.cache = "no-store";
  const response = await fetch(path, init);
  if (response.status === 401) throw new Unauthorized();
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  return { status: response.status, body };
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  stopRefresh();
  $("nav").hidden = true;
  for (const v of ["view-card", "view-partitions", "view-alerts"]) $(v).hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

function stopRefresh() { if (timer) { clearInterval(timer); timer = null; } }
function every(fn) { stopRefresh(); fn(); timer = setInterval(fn, REFRESH_MS); }

async function guarded(fn) {
  try { await fn(); }
  catch (e) {
    if (e instanceof Unauthorized) showLogin("The token was refused.");
    else throw e;
  }
}

// ---- Card ----

async function lookupByNumber(number) {
  // The service answers a card owned elsewhere with 421 and the owner's location instead of a
  // 307 (browsers drop Authorization on a cross-origin redirect); the console follows it itself
  // when the owner shares this page's origin, and names the owner otherwise.
  const init = { method: "POST", headers: { "Content-Type": "application/json",
    "X-Fraud-Redirect": "manual" }, body: JSON.stringify({ card: number }) };
  let r = await api("/v1/cards/lookup", init);
  if (r.status === 421 && r.body && r.body.location) {
    const target = new URL(r.body.location, window.location.href);
    if (target.origin === window.location.origin) {
      r = await api(target.pathname, init);
    } else {
      return { status: 421, body: r.body, elsewhere: target.origin + "/ui/" };
    }
  }
  return r;
}

async function showCardAnswer(r) {
  const status = $("card-status");
  if (r.status === 200) {
    currentRef = r.body.card_ref;
    status.textContent = "";
    await drawCard(r.body);
    return;
  }
  $("card-detail").hidden = true;
  const b = r.body || {};
  if (r.elsewhere) {
    status.textContent = "";
    status.appendChild(el("span", "Partition " + b.partition + " is owned by " + b.owner +
      ". Open its console: "));
    const a = el("a", r.elsewhere);
    a.href = r.elsewhere;
    status.appendChild(a);
    return;
  }
  status.textContent = (b.error || ("HTTP " + r.status)) + (b.message ? ": " + b.message : "");
}

async function refreshCard() {
  if (!currentRef) return;
  await guarded(async () => {
    const r = await api("/v1/cards/" + currentRef);
    await showCardAnswer(r);
  });
}

function countriesOf(card) {
  const set = new Set(card.events.map((e) => e.country));
  if (card.incident) for (const c of card.incident.countries) set.add(c);
  return Array.from(set).sort();
}

async function drawCard(card) {
  $("card-detail").hidden = false;
  const facts = $("card-facts");
  clear(facts);
  const fact = (k, v) => { facts.appendChild(el("dt", k)); facts.appendChild(el("dd", v)); };
  fact("card_ref", card.card_ref);
  fact("partition", card.partition);
  fact("stream time", iso(card.stream_time));
  fact("events live", card.events.length);
  fact("incident", card.incident ? "revision " + card.incident.revision + ": " +
    card.incident.countries.join(", ") + " (" + iso(card.incident.start) + " → " +
    iso(card.incident.end) + ")" : "none");

  let alerts = [];
  let grace = null;
  try {
    const [recent, lateness] = await Promise.all([api("/v1/alerts/recent"), api("/v1/lateness")]);
    if (recent.status === 200) alerts = recent.body.alerts.filter((a) => a.card_ref === card.card_ref);
    if (lateness.status === 200) grace = lateness.body.grace_ms;
  } catch (e) { if (e instanceof Unauthorized) throw e; }
  drawTimeline(card, alerts, grace);

  const at = $("card-alerts").tBodies[0];
  clear(at);
  for (const a of alerts) {
    at.appendChild(row([iso(a.detected_at), a.revision, a.countries.join(", "),
      iso(a.window_start) + " → " + iso(a.window_end), el("span", a.idempotency_key, "mono")]));
  }
  const et = $("card-events").tBodies[0];
  clear(et);
  for (const e of card.events) et.appendChild(row([iso(e.event_time), e.country,
    el("span", e.tx_id, "mono")]));
}

function drawTimeline(card, alerts, grace) {
  const box = $("timeline");
  clear(box);
  const width = 1100, left = 70, right = 20, top = 24, lane = 28;
  const countries = countriesOf(card);
  const height = top + Math.max(countries.length, 1) * lane + 60;
  box.setAttribute("viewBox", "0 0 " + width + " " + height);
  box.setAttribute("data-countries", countries.join(","));
  const times = card.events.map((e) => e.event_time);
  if (card.incident) times.push(card.incident.start, card.incident.end);
  if (card.stream_time !== null) times.push(card.stream_time);
  for (const a of alerts) times.push(a.trigger_event_time);  // every key inside the drawing
  if (times.length === 0) return;
  let t0 = Math.min(...times), t1 = Math.max(...times);
  if (grace !== null && card.stream_time !== null) t0 = Math.min(t0, card.stream_time - grace);
  if (t1 === t0) { t0 -= 1000; t1 += 1000; }
  const pad = (t1 - t0) * 0.03;
  t0 -= pad; t1 += pad;
  const x = (t) => left + (t - t0) / (t1 - t0) * (width - left - right);
  const bottom = top + countries.length * lane;

  if (grace !== null && card.stream_time !== null) {
    // Records older than stream time minus the grace are late-dropped.
    const g0 = Math.max(x(card.stream_time - grace), left);
    box.appendChild(svg("rect", { class: "grace", x: g0, y: top - 10, width: x(card.stream_time) - g0,
      height: bottom - top + 10 }, undefined));
    box.appendChild(svg("text", { class: "label", x: g0 + 2, y: top - 12 }, "grace"));
  }
  if (card.incident) {
    const i = card.incident;
    box.appendChild(svg("rect", { class: "incident", x: x(i.start), y: top - 4,
      width: Math.max(x(i.end) - x(i.start), 1), height: bottom - top + 4 }));
    box.appendChild(svg("text", { class: "label", x: x(i.start) + 2, y: bottom + 14 },
      "incident r" + i.revision + " " + i.countries.join(" ")));
  }
  countries.forEach((c, k) => {
    const y = top + k * lane + lane / 2;
    box.appendChild(svg("line", { class: "axis", x1: left, x2: width - right, y1: y, y2: y }));
    box.appendChild(svg("text", { class: "label country", x: 8, y: y + 4 }, c));
  });
  for (const e of card.events) {
    const k = countries.indexOf(e.country);
    const inIncident = card.incident && e.event_time >= card.incident.start &&
      e.event_time <= card.incident.end;
    const mark = svg("circle", { class: inIncident ? "event in-incident" : "event",
      cx: x(e.event_time), cy: top + k * lane + lane / 2, r: 6, "data-country": e.country });
    mark.appendChild(svg("title", {}, e.country + " " + iso(e.event_time) + " " + e.tx_id));
    box.appendChild(mark);
  }
  if (card.stream_time !== null) {
    box.appendChild(svg("line", { class: "stream-time", x1: x(card.stream_time),
      x2: x(card.stream_time), y1: top - 14, y2: bottom + 4 }));
    box.appendChild(svg("text", { class: "label", x: x(card.stream_time) - 64, y: top - 14 },
      "stream time"));
  }
  drawAlertKeys(box, alerts.map((a) => ({ key: a.idempotency_key, ax: x(a.trigger_event_time) })),
    bottom, width, height);
}

// Each alert's tick under the lanes and its idempotency key under the ticks, from the tick's x
// (moved left when it would run past the drawing). Keys of alerts close in time would cover each
// other on one line, so each key goes in the first row where it clears every key already there,
// however many rows that takes, and the drawing grows to hold them (its CSS height follows the
// viewBox, so the text keeps its size). Keys are measured as laid out; while the drawing is not
// rendered (nothing to measure) a width per character wider than any glyph's stands in.
function drawAlertKeys(box, marks, bottom, width, height) {
  const gap = 8;  // between two keys in a row
  let ascent = 11, rowHeight = 15;
  for (const m of marks) {
    box.appendChild(svg("line", { class: "alert-mark", x1: m.ax, x2: m.ax, y1: bottom + 20,
      y2: bottom + 28 }));
    m.text = svg("text", { class: "label idempotency-key", x: 0, y: 0 }, m.key);
    box.appendChild(m.text);
  }
  for (const m of marks) {
    let b = null;
    try { b = m.text.getBBox(); } catch (e) { b = null; }  // at y = 0, b.y is minus the ascent
    m.width = b && b.width > 0 ? b.width : 8 * m.key.length;
    if (b && b.height > 0) {
      ascent = Math.max(ascent, -b.y);
      rowHeight = Math.max(rowHeight, b.height + 2);
    }
    m.x0 = Math.max(2, Math.min(m.ax, width - 4 - m.width));
  }
  marks.sort((p, q) => p.x0 - q.x0 || (p.key < q.key ? -1 : p.key > q.key ? 1 : 0));
  const top = bottom + 32;  // of the first row
  const ends = [];  // per row, the right end of its last key
  for (const m of marks) {
    let r = ends.findIndex((end) => end + gap <= m.x0);
    if (r < 0) r = ends.length;
    ends[r] = m.x0 + m.width;
    m.text.setAttribute("x", String(m.x0));
    m.text.setAttribute("y", String(top + r * rowHeight + ascent));
    m.text.setAttribute("data-row", String(r));
  }
  const needed = Math.ceil(top + ends.length * rowHeight + 6);
  if (needed > height) box.setAttribute("viewBox", "0 0 " + width + " " + needed);
}

function cardView(ref) {
  if (ref && /^[0-9a-f]{64}$/.test(ref)) {
    currentRef = ref;
    $("card-ref").value = ref;
  }
  if (currentRef) every(refreshCard);
}

// ---- Partitions ----

async function refreshPartitions() {
  await guarded(async () => {
    const [r, l] = await Promise.all([api("/v1/partitions"), api("/v1/lateness")]);
    if (r.status !== 200) { $("partitions-status").textContent = "HTTP " + r.status; return; }
    $("instance").textContent = "instance " + r.body.instance_id;
    $("partitions-status").textContent = r.body.partitions.length + " partitions held by " +
      r.body.instance_id + (r.body.outputs_blocked ? " — alerts cannot be written, input held" : "");
    const body = $("partitions").tBodies[0];
    clear(body);
    for (const p of r.body.partitions) {
      const late = p.lateness;
      const q = late && late.vs_stream_time;
      const phase = p.phase === "restoring"
        ? "restoring " + (100 * p.restore_progress).toFixed(0) + " %" : p.phase;
      const lateCell = el("span", late ? pct(late.late_dropped_share) : "–");
      if (late && late.advice.grace_p999_ms !== null && late.advice.grace_p999_ms > late.grace_ms) {
        lateCell.className = "warn";
      }
      // Records whose key the producers' partitioner maps to another partition (docs/rule.md §9).
      const misrouted = el("span", p.misrouted_records, p.misrouted_records > 0 ? "warn" : "");
      if (p.misrouted_records > 0) {
        misrouted.title = "records here whose key maps to another partition: processed, but " +
          "their cards' records are split between partitions; check the producers' partitioner";
      }
      body.appendChild(row([p.partition, r.body.instance_id, phase, p.offset_lag,
        p.event_time_lag_seconds === null ? null : p.event_time_lag_seconds.toFixed(1) + " s",
        p.stream_time === null ? null : iso(p.stream_time).slice(11, 23), p.cards,
        q ? [q.p50_ms, q.p99_ms, q.p999_ms, q.max_ms].map(dur).join(" / ") : null, lateCell,
        late && late.advice.grace_p99_ms !== null
          ? dur(late.advice.grace_p99_ms) + " / " + dur(late.advice.grace_p999_ms) : null,
        misrouted]));
    }
    // Warm copies of partitions owned elsewhere (--standby-replicas).
    for (const s of r.body.standbys || []) {
      const state = s.seconds_since_caught_up === null ? "standby, first catch-up"
        : "standby, " + s.lag_records + " behind " + s.seconds_since_caught_up.toFixed(1) +
          " s ago";
      body.appendChild(row([s.partition, "elsewhere", state, null, null, null, null, null, null,
        null, null]));
    }
    if (l.status === 200) drawLateness(l.body);
  });
}

function drawLateness(m) {
  const q = m.vs_stream_time;
  $("lateness-summary").textContent = m.records + " records in the last " +
    (m.interval_ms / 60000) + " min; grace " + dur(m.grace_ms) + " dropped " + m.late_dropped +
    " (" + pct(m.late_dropped_share) + ")" +
    (q ? "; lateness p50 " + dur(q.p50_ms) + ", p99 " + dur(q.p99_ms) + ", p99.9 " +
      dur(q.p999_ms) + ", max " + dur(q.max_ms) : "") +
    (m.advice.grace_p99_ms !== null ? "; a grace of " + dur(m.advice.grace_p99_ms) +
      " keeps 99 %, " + dur(m.advice.grace_p999_ms) + " keeps 99.9 %" : "");
  const body = $("candidates").tBodies[0];
  clear(body);
  for (const c of m.candidates) {
    body.appendChild(row([dur(c.grace_ms) + (c.current ? " (current)" : ""), c.dropped,
      pct(c.dropped_share)]));
  }
}

// ---- Recent alerts ----

async function refreshAlerts() {
  await guarded(async () => {
    const r = await api("/v1/alerts/recent");
    if (r.status !== 200) { $("alerts-status").textContent = "HTTP " + r.status; return; }
    $("alerts-status").textContent = r.body.alerts.length + " alerts detected by " +
      r.body.instance_id + " (newest first; detected, before their transaction commits)";
    const body = $("alerts").tBodies[0];
    clear(body);
    for (const a of r.body.alerts) {
      body.appendChild(row([iso(a.detected_at), refLink(a.card_ref), a.countries.join(", "),
        a.revision, a.partition, el("span", a.idempotency_key, "mono")]));
    }
  });
}

// ---- Navigation ----

function route() {
  if (!token()) { showLogin(); return; }
  $("login").hidden = true;
  $("nav").hidden = false;
  const hash = window.location.hash.replace(/^#/, "") || "card";
  const [view, arg] = hash.split("/");
  for (const v of ["card", "partitions", "alerts"]) {
    $("view-" + v).hidden = v !== view;
    $("tab-" + v).classList.toggle("active", v === view);
  }
  stopRefresh();
  if (view === "card") cardView(arg);
  else if (view === "partitions") every(refreshPartitions);
  else if (view === "alerts") every(refreshAlerts);
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    $("token").value = "";
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    try {
      const r = await api("/v1/partitions");
      if (r.status !== 200) throw new Unauthorized();
      route();
    } catch (e) { showLogin("The token was refused."); }
  });
  $("sign-out").addEventListener("click", () => showLogin());
  $("card-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const number = $("card-number").value;
    const ref = $("card-ref").value.trim().toLowerCase();
    $("card-number").value = "";
    guarded(async () => {
      stopRefresh();
      if (number) {
        currentRef = null;
        const r = await lookupByNumber(number);
        await showCardAnswer(r);
        if (currentRef) {
          $("card-ref").value = currentRef;
          window.location.hash = "#card/" + currentRef;
        }
      } else if (/^[0-9a-f]{64}$/.test(ref)) {
        window.location.hash = "#card/" + ref;
        currentRef = ref;
        every(refreshCard);
      } else {
        $("card-status").textContent = "Give a card number or a 64-hex card_ref.";
      }
    });
  });
  window.addEventListener("hashchange", route);
  route();
});
