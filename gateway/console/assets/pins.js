// The tool pins review panel: the tool definitions awaiting a reviewer
// (GET -/pins, admin only: the operations panel's token), each as a
// side-by-side diff of the approved and the live definition with Approve
// and Reject (POST -/pins/approve|reject, which rewrite the pins file; the
// gateway applies it at its next reload). Where the gateway cannot write
// the pins file (a ConfigMap mount), the panel shows instead the YAML
// entry and the CLI command to apply in the operator's checkout, and why.

import { el, $ } from "./dom.js";
import { ADMIN_KEY } from "./ops.js";

const POLL_SECONDS = 5;
const KINDS = { new: "new tool", changed: "changed definition", checks: "fails a check" };

const decided = new Map(); // server/tool/hash → "approved" | "rejected", what this tab wrote
let shown = null; // what is rendered (keys and writability), so that a poll with no news keeps the DOM
let timer = null;

export function startPins() {
  document.addEventListener("pallasgw:admin", poll);
  poll();
}

function adminHeaders(extra = {}) {
  const headers = { Accept: "application/json", ...extra };
  const tok = sessionStorage.getItem(ADMIN_KEY);
  if (tok) headers.Authorization = "Bearer " + tok;
  return headers;
}

const keyOf = (p) => `${p.server}/${p.tool}/${p.hash}`;

async function poll() {
  clearTimeout(timer);
  timer = setTimeout(poll, POLL_SECONDS * 1000);
  let resp, body;
  try {
    resp = await fetch("-/pins", { headers: adminHeaders(), credentials: "omit", cache: "no-store" });
    body = await resp.json();
  } catch (e) {
    return locked(`Cannot read the pending tool changes: ${e.message}`);
  }
  if (!resp.ok) {
    return locked(`${resp.status}: ${body.error || resp.statusText}. Admin only: unlock the operations panel with admin.token.`);
  }
  render(body);
}

function locked(why) {
  shown = null;
  $("#pins-why").hidden = false;
  $("#pins-why").textContent = why;
  $("#pins-body").hidden = true;
}

function render(v) {
  $("#pins-why").hidden = true;
  $("#pins-body").hidden = false;
  const pending = v.pending || [];
  const now = JSON.stringify([v.writable, v.not_writable, pending.map(keyOf)]);
  if (now === shown) return;
  shown = now;
  $("#pins-count").textContent = pending.length ? `(${pending.length})` : "";
  $("#pins-empty").hidden = pending.length > 0;
  const note = $("#pins-note");
  note.hidden = v.writable || pending.length === 0;
  note.replaceChildren(
    el("b", {}, "Approve and Reject are off here: "), `${v.not_writable}.`,
    " Record each decision in your checkout instead: add the YAML entry to the pins file ",
    el("code", {}, v.pins_file || "(none configured)"), " or run the command (it reads the live definition and refuses another one),",
    " then deploy the file; every replica applies it at its next reload.");
  $("#pins-list").replaceChildren(...pending.map((p) => card(p, v.writable)));
}

function card(p, writable) {
  const status = el("p", { class: "pin-status small" });
  const c = el("article", { class: "pin", "data-server": p.server, "data-tool": p.tool, "data-hash": p.hash, "data-kind": p.kind },
    el("h3", {}, el("span", { class: "mono" }, `${p.server} / ${p.tool}`), el("span", { class: "kind" }, KINDS[p.kind] || p.kind),
      el("span", { class: "muted small" }, p.hidden ? `hidden from every list (${p.mode})` : `served, reported (${p.mode})`)),
    el("p", { class: "muted small mono" }, p.pinned_hash ? `approved ${short(p.pinned_hash)} → live ${short(p.hash)}` : `live ${short(p.hash)}`,
      " · seen ", fmtTime(p.seen_at)),
    findings(p.findings),
    diffTable(p));
  c.append(writable ? buttons(p, c, status) : manual(p), status);
  const done = decided.get(keyOf(p));
  if (done) markDecided(c, status, done, "");
  return c;
}

function short(h) {
  return (h || "").slice(0, 19) + "…"; // sha256: and 12 hex digits
}

function fmtTime(t) {
  const d = new Date(t);
  return t && !isNaN(d) ? d.toLocaleString() : "—";
}

function findings(list) {
  if (!list || list.length === 0) return null;
  return el("ul", { class: "findings" }, ...list.map((f) => el("li", {}, el("b", {}, f.check), ": ", f.detail)));
}

// sideBySide pairs a line diff's removed and added runs into rows of the
// old and the new side (undefined: no line there).
export function sideBySide(diff) {
  const rows = [];
  let dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) rows.push({ old: dels[i], new: adds[i], changed: true });
    dels = [];
    adds = [];
  };
  for (const l of diff || []) {
    if (l.op === "-") {
      if (adds.length) flush();
      dels.push(l.text);
    } else if (l.op === "+") {
      adds.push(l.text);
    } else {
      flush();
      rows.push({ old: l.text, new: l.text, changed: false });
    }
  }
  flush();
  return rows;
}

function diffTable(p) {
  const cell = (text, cls) => el("td", { class: text === undefined ? "empty" : cls }, text === undefined ? "" : text);
  const rows = sideBySide(p.diff).map((r) => el("tr", {}, cell(r.old, r.changed ? "del" : ""), cell(r.new, r.changed ? "add" : "")));
  const left = p.pinned_hash ? "Approved (pinned)" : "Approved: nothing (a new tool)";
  return el("table", { class: "diff" }, el("thead", {}, el("tr", {}, el("th", {}, left), el("th", {}, "Live (awaiting review)"))),
    el("tbody", {}, ...rows));
}

function buttons(p, c, status) {
  const approve = el("button", { type: "button", class: "approve" }, "Approve");
  const reject = el("button", { type: "button", class: "reject" }, "Reject");
  approve.addEventListener("click", () => decide(p, true, c, status));
  reject.addEventListener("click", () => decide(p, false, c, status));
  return el("div", { class: "pin-actions" }, approve, reject);
}

function manual(p) {
  const step = (what, m) => el("details", { class: "manual" }, el("summary", {}, what),
    el("p", { class: "small muted" }, "Pins file entry (replaces the tool's entry):"), el("pre", { class: "yaml" }, m.yaml || ""),
    el("p", { class: "small muted" }, "Or in your checkout:"), el("pre", { class: "command" }, m.command));
  const a = step("To approve", p.approve);
  a.open = true;
  return el("div", { class: "pin-manual" }, a, step("To reject", p.reject));
}

async function decide(p, approve, c, status) {
  c.querySelectorAll(".pin-actions button").forEach((b) => { b.disabled = true; });
  status.className = "pin-status small";
  status.textContent = "Writing the pins file…";
  let resp, body;
  try {
    resp = await fetch("-/pins/" + (approve ? "approve" : "reject"), {
      method: "POST", headers: adminHeaders({ "Content-Type": "application/json" }), credentials: "omit", cache: "no-store",
      body: JSON.stringify({ server: p.server, tool: p.tool, hash: p.hash }),
    });
    body = await resp.json();
  } catch (e) {
    body = { error: e.message };
  }
  if (!resp || !resp.ok) {
    status.className = "pin-status small error-text";
    status.textContent = `${resp ? resp.status + ": " : ""}${body.error || "error"}`;
    c.querySelectorAll(".pin-actions button").forEach((b) => { b.disabled = false; });
    return;
  }
  decided.set(keyOf(p), body.action);
  markDecided(c, status, body.action, body.pins_file);
}

function markDecided(c, status, action, file) {
  c.dataset.state = action;
  c.querySelectorAll(".pin-actions button").forEach((b) => { b.disabled = true; });
  status.className = "pin-status small";
  status.textContent = `${action === "approved" ? "Approved" : "Rejected"}${file ? ": written to " + file : ""}. ` +
    "The gateway applies it at its next reload (the pins file is watched); this entry then leaves the list.";
}
