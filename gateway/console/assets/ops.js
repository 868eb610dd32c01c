// The operations panel: /-/status (admin only, the same rule as the
// endpoint: admin.token, or a loopback caller when it is empty) and a few
// rates from /metrics drawn as small inline SVG charts.

import { el, $ } from "./dom.js";

export const ADMIN_KEY = "pallasgw.console.admin"; // the admin token, this tab only (also pins.js)
const POLL_SECONDS = 2;
const LOCKED_POLL_SECONDS = 30; // while /-/status refuses: ask again now and then
const POINTS = 60;

const series = { calls: [], errors: [], tokens: [] };
let last = null; // the previous sample of the counters
let timer = null;

export function startOps() {
  $("#admin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = $("#admin-token").value.trim();
    if (v) sessionStorage.setItem(ADMIN_KEY, v); else sessionStorage.removeItem(ADMIN_KEY);
    $("#admin-token").value = "";
    poll();
    document.dispatchEvent(new Event("pallasgw:admin")); // the other admin panels ask again
  });
  poll();
}

async function poll() {
  clearTimeout(timer);
  timer = setTimeout(poll, POLL_SECONDS * 1000);
  const headers = { Accept: "application/json" };
  const tok = sessionStorage.getItem(ADMIN_KEY);
  if (tok) headers.Authorization = "Bearer " + tok;
  let resp;
  try {
    resp = await fetch("-/status", { headers, credentials: "omit", cache: "no-store" });
  } catch (e) {
    return lock(`Cannot reach the gateway: ${e.message}`);
  }
  if (!resp.ok) {
    let why = "";
    try { why = (await resp.json()).error || ""; } catch { /* not JSON */ }
    return lock(`${resp.status}: ${why || resp.statusText}. Admin only: enter admin.token (or open the console from the gateway's own machine when it is empty).`);
  }
  const st = await resp.json();
  $("#ops-locked").hidden = true;
  $("#ops-body").hidden = false;
  renderStatus(st);
  await sampleMetrics();
}

function lock(why) {
  clearTimeout(timer);
  timer = setTimeout(poll, LOCKED_POLL_SECONDS * 1000);
  $("#ops-locked").hidden = false;
  $("#ops-body").hidden = true;
  $("#ops-why").textContent = why;
}

function renderStatus(st) {
  const lr = st.last_reload || {};
  const result = lr.ok ? el("span", {}, "ok") : el("span", { class: "error-text" }, "failed: " + (lr.error || ""));
  $("#ops-config").replaceChildren(
    el("dt", {}, "config file"), el("dd", { class: "mono" }, st.config_file),
    el("dt", {}, "config hash"), el("dd", { class: "mono", id: "ops-hash" }, st.config_hash),
    el("dt", {}, "loaded at"), el("dd", {}, fmtTime(st.loaded_at)),
    el("dt", {}, "last reload"), el("dd", { id: "ops-last-reload" }, fmtTime(lr.at), " · ", result),
    el("dt", {}, "agents"), el("dd", {}, String((st.agents || []).length)),
    ...(st.upstream_connections ? [el("dt", {}, "upstream connections"), el("dd", { id: "ops-upstream" }, fmtConnections(st.upstream_connections))] : []));
  const rows = (st.reloads || []).slice().reverse().map((r) => el("tr", { class: r.ok ? "" : "failed" },
    el("td", {}, fmtTime(r.at)), el("td", {}, r.trigger || ""), el("td", {}, r.ok ? "ok" : "failed"),
    el("td", { class: "mono" }, (r.config_hash || "").slice(0, 8)), el("td", { class: "mono" }, r.error || "")));
  $("#ops-reloads tbody").replaceChildren(...rows);
  $("#ops-listeners").replaceChildren(...(st.listeners || []).map((l) => el("li", { class: "mono" }, l)));
}

// fmtConnections is "server: 3 connected, 1 failed; ..." (callers' own
// upstream accounts this replica knows of; /connect/ lists one's own).
function fmtConnections(byServer) {
  const parts = Object.keys(byServer).sort().map((srv) =>
    srv + ": " + Object.keys(byServer[srv]).sort().map((st) => `${byServer[srv][st]} ${st}`).join(", "));
  return parts.length ? parts.join("; ") : "none";
}

function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// parseMetrics sums the counters the charts need from the Prometheus text.
export function parseMetrics(text) {
  const out = { calls: 0, errors: 0, tokens: 0 };
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (!isFinite(v)) continue;
    if (m[1] === "pallasgw_tool_calls_total") {
      out.calls += v;
      if (/outcome="(error|timeout)"/.test(m[2] || "")) out.errors += v;
    } else if (m[1] === "pallasgw_llm_tokens_total") {
      out.tokens += v;
    }
  }
  return out;
}

async function sampleMetrics() {
  let text;
  try {
    text = await (await fetch("metrics", { credentials: "omit", cache: "no-store" })).text();
  } catch { return; }
  const now = { t: performance.now(), ...parseMetrics(text) };
  if (last) {
    const dt = (now.t - last.t) / 1000;
    for (const k of ["calls", "errors", "tokens"]) {
      const rate = Math.max(0, (now[k] - last[k]) / dt);
      series[k].push(rate);
      if (series[k].length > POINTS) series[k].shift();
      drawChart($("#chart-" + k), series[k]);
      $("#v-" + k).textContent = rate < 10 ? rate.toFixed(2) : Math.round(rate);
    }
  }
  last = now;
}

function drawChart(svg, values) {
  const w = 240, h = 60;
  const max = Math.max(1e-9, ...values);
  // Fewer samples than the window: stretch them over the width.
  const step = w / Math.max(1, Math.min(POINTS, values.length) - 1);
  const x0 = values.length === 1 ? w : w - (values.length - 1) * step;
  const pts = values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 6)).toFixed(1)}`);
  if (pts.length === 0) return;
  const line = "M" + pts.join(" L");
  const area = `${line} L${w},${h} L${x0.toFixed(1)},${h} Z`;
  svg.replaceChildren(el("path", { class: "area", d: area }), el("path", { class: "line", d: line }));
}
