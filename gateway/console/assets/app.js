// The console: the agents the viewer may use with their live health, the
// playground, and the operations panel (ops.js). Tokens live in this tab
// only (sessionStorage), never in a cookie or in storage that outlives it.

import { McpClient, McpError } from "./mcp.js";
import { el, $ } from "./dom.js";
import { buildSchemaForm, readSchemaForm, parseHistory } from "./form.js";
import { startOps } from "./ops.js";
import { startPins } from "./pins.js";

const REFRESH_SECONDS = 15;
const TOKEN_KEY = "pallasgw.console.token";

const state = { agents: [], authMode: "", tools: new Map(), running: null };

const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
const client = (name) => new McpClient("agents/" + encodeURIComponent(name) + "/mcp", token);

// ---- agents -----------------------------------------------------------

async function loadAgents() {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  let resp, body;
  try {
    resp = await fetch("console/agents", { method: "POST", headers, credentials: "omit", cache: "no-store" });
    body = await resp.json();
  } catch (e) {
    note(`Cannot reach the gateway: ${e.message}`, true);
    return false;
  }
  state.authMode = body.auth_mode || state.authMode;
  $("#token-form").hidden = state.authMode === "passthrough" || !state.authMode;
  if (resp.status === 401) {
    state.agents = [];
    renderAgents();
    note(token() ? "The gateway refused this token. Enter another one." : "This gateway needs a token (auth.mode " + state.authMode + "): enter it above.", true);
    $("#caller").textContent = "";
    $("#token").focus();
    return false;
  }
  if (!resp.ok) {
    note(`${resp.status}: ${body.error || "error"}`, true);
    return false;
  }
  $("#gw-name").textContent = body.gateway || "";
  $("#caller").textContent = body.caller ? "as " + body.caller : "";
  const before = state.agents.map((a) => a.name).join(",");
  state.agents = body.agents;
  if (state.agents.length === 0) note("No agent is open to this caller.", false);
  else note("", false);
  if (before !== state.agents.map((a) => a.name).join(",")) {
    renderAgents();
    renderAgentPicker();
  }
  return true;
}

function note(text, isError) {
  const n = $("#agents-note");
  n.textContent = text;
  n.hidden = !text;
  n.classList.toggle("error", !!isError);
}

function renderAgents() {
  const rows = state.agents.map((a) => {
    const legacy = a.port ? el("code", {}, ":" + a.port) : el("span", { class: "muted" }, "—");
    return el("tr", { "data-agent": a.name },
      el("td", {}, el("b", {}, a.title || a.name), " ", el("code", { class: "muted" }, a.name),
        a.description ? el("div", { class: "muted small" }, a.description) : null),
      el("td", {}, el("span", { class: "kind" }, a.kind)),
      el("td", {}, a.model ? el("code", {}, a.model) : el("span", { class: "muted" }, "—")),
      el("td", {}, a.servers.length ? a.servers.join(", ") : el("span", { class: "muted" }, "—"),
        a.agents && a.agents.length ? el("div", { class: "muted small" }, "agents: " + a.agents.join(", ")) : null),
      el("td", {}, legacy),
      el("td", {}, el("span", { class: "health", "data-status": "unknown" }, el("span", { class: "dot" }),
        el("span", { class: "status" }, "…"), el("span", { class: "message muted small" }, ""))));
  });
  $("#agents tbody").replaceChildren(...rows);
}

async function refreshHealth() {
  await Promise.all(state.agents.map(async (a) => {
    const cell = document.querySelector(`#agents tr[data-agent="${CSS.escape(a.name)}"] .health`);
    if (!cell) return;
    let status, message = "";
    try {
      const res = await client(a.name).callTool("get_health", {}, { signal: AbortSignal.timeout(10000) });
      const h = res.structuredContent || JSON.parse((res.content || []).find((c) => c.type === "text")?.text || "{}");
      status = h.status || (res.isError ? "error" : "unknown");
      message = h.message || "";
    } catch (e) {
      status = "unreachable";
      message = e.message;
    }
    cell.dataset.status = status;
    cell.querySelector(".status").textContent = status;
    cell.querySelector(".message").textContent = message;
  }));
  $("#refreshed-at").textContent = new Date().toLocaleTimeString();
}

async function refresh() {
  if (await loadAgents()) await refreshHealth();
}

// ---- playground -------------------------------------------------------

function renderAgentPicker() {
  const sel = $("#play-agent");
  const keep = sel.value;
  sel.replaceChildren(...state.agents.map((a) => el("option", { value: a.name }, a.title ? `${a.title} (${a.name})` : a.name)));
  if (state.agents.some((a) => a.name === keep)) sel.value = keep;
  if (sel.value !== keep) loadTools();
}

async function loadTools() {
  const name = $("#play-agent").value;
  const sel = $("#play-tool");
  sel.replaceChildren();
  if (!name) return;
  setStatus("listing tools…");
  try {
    const tools = await client(name).listTools();
    state.tools = new Map(tools.map((t) => [t.name, t]));
    const agent = state.agents.find((a) => a.name === name);
    sel.replaceChildren(...tools.map((t) => el("option", { value: t.name }, t.name)));
    const preferred = agent && agent.tool_name && state.tools.has(agent.tool_name) ? agent.tool_name
      : tools.find((t) => t.name !== "get_health")?.name;
    if (preferred) sel.value = preferred;
    setStatus("");
  } catch (e) {
    setStatus(e.message, true);
  }
  showToolFields();
}

// isMessageTool: the agent's send_message (or tool_name) gets the message
// and history boxes; any other tool a form from its input schema.
function isMessageTool() {
  const agent = state.agents.find((a) => a.name === $("#play-agent").value);
  return !!agent && !!agent.tool_name && $("#play-tool").value === agent.tool_name;
}

function showToolFields() {
  const msg = isMessageTool();
  $("#msg-fields").hidden = !msg;
  $("#schema-fields").hidden = msg;
  if (!msg) buildSchemaForm($("#schema-fields"), state.tools.get($("#play-tool").value)?.inputSchema);
}

function setStatus(text, isError) {
  const s = $("#play-status");
  s.textContent = text;
  s.classList.toggle("error-text", !!isError);
}

async function send(ev) {
  ev.preventDefault();
  if (state.running) return;
  const agent = $("#play-agent").value, tool = $("#play-tool").value;
  let args;
  try {
    if (isMessageTool()) {
      args = { message: $("#play-message").value };
      const history = parseHistory($("#play-history").value);
      if (history) args.history = history;
    } else {
      args = readSchemaForm($("#schema-fields"));
    }
  } catch (e) {
    setStatus(e.message, true);
    return;
  }
  const steps = $("#play-steps"), answer = $("#play-answer"), bar = $("#play-progress");
  steps.replaceChildren();
  answer.replaceChildren();
  answer.className = "";
  answer.dataset.state = "running";
  bar.hidden = false;
  bar.removeAttribute("value");
  const ctl = new AbortController();
  state.running = ctl;
  $("#play-send").disabled = true;
  $("#play-cancel").disabled = false;
  setStatus("running…");
  const started = performance.now();
  try {
    const res = await client(agent).callTool(tool, args, {
      signal: ctl.signal,
      onNotification: (n) => {
        const p = n.params || {};
        if (n.method === "notifications/progress") {
          steps.append(el("li", { class: "step" }, p.message || `progress ${p.progress}`));
          if (p.total) { bar.max = p.total; bar.value = p.progress; }
        } else if (n.method === "notifications/message") {
          steps.append(el("li", { class: "log" }, `[${p.level}] ${typeof p.data === "string" ? p.data : JSON.stringify(p.data)}`));
        }
        steps.scrollTop = steps.scrollHeight;
      },
    });
    renderResult(answer, res);
    setStatus(`done in ${Math.round(performance.now() - started)} ms`);
  } catch (e) {
    answer.className = "is-error";
    answer.dataset.state = "error";
    answer.append(el("pre", { class: "error" }, e.name === "AbortError" ? "canceled" : e.message));
    setStatus(e instanceof McpError && e.status === 401 ? "refused: check the token" : "failed", true);
  } finally {
    bar.hidden = true;
    state.running = null;
    $("#play-send").disabled = false;
    $("#play-cancel").disabled = true;
  }
}

function renderResult(box, res) {
  box.className = res.isError ? "is-error" : "";
  box.dataset.state = res.isError ? "error" : "ok";
  for (const c of res.content || []) {
    if (c.type === "text") box.append(el("pre", { class: "answer-text" }, c.text));
    else if (c.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(c.mimeType)) {
      box.append(el("img", { src: `data:${c.mimeType};base64,${c.data}`, alt: "image result" }));
    } else box.append(el("pre", {}, JSON.stringify(c, null, 2)));
  }
  if (!(res.content || []).length && res.structuredContent) {
    box.append(el("pre", {}, JSON.stringify(res.structuredContent, null, 2)));
  }
}

// ---- start ------------------------------------------------------------

function init() {
  $("#refresh-secs").textContent = REFRESH_SECONDS;
  $("#token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = $("#token").value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v);
    $("#token").value = "";
    state.agents = [];
    refresh();
  });
  $("#token-forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    state.agents = [];
    renderAgents();
    renderAgentPicker();
    refresh();
  });
  $("#play-agent").addEventListener("change", loadTools);
  $("#play-tool").addEventListener("change", showToolFields);
  $("#play-form").addEventListener("submit", send);
  $("#play-cancel").addEventListener("click", () => state.running && state.running.abort());
  refresh();
  setInterval(refresh, REFRESH_SECONDS * 1000);
  startOps();
  startPins();
}

init();
