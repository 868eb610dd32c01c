// Builds a form from a tool's JSON Schema (its inputSchema) and reads the
// arguments back: strings, numbers, integers, booleans and enums get their
// own inputs; anything else (objects, arrays, unions) a JSON text area.

import { el } from "./dom.js";

export function buildSchemaForm(container, schema) {
  container.replaceChildren();
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const names = Object.keys(props);
  if (names.length === 0) {
    container.append(el("p", { class: "muted small" }, "This tool takes no arguments."));
  }
  for (const name of names) {
    const p = props[name] || {};
    const id = "arg-" + name;
    let input;
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== "null") : p.type;
    if (Array.isArray(p.enum)) {
      input = el("select", { id });
      if (!required.has(name)) input.append(el("option", { value: "" }, ""));
      for (const v of p.enum) input.append(el("option", { value: JSON.stringify(v) }, String(v)));
      input.dataset.kind = "enum";
    } else if (type === "boolean") {
      input = el("input", { id, type: "checkbox" });
      if (p.default === true) input.checked = true;
      input.dataset.kind = "boolean";
    } else if (type === "number" || type === "integer") {
      input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any" });
      if (p.minimum !== undefined) input.min = p.minimum;
      if (p.maximum !== undefined) input.max = p.maximum;
      if (p.default !== undefined) input.value = p.default;
      input.dataset.kind = type;
    } else if (type === "string") {
      input = el("input", { id, type: "text" });
      if (p.default !== undefined) input.value = p.default;
      input.dataset.kind = "string";
    } else {
      input = el("textarea", { id, rows: "3", placeholder: "JSON" });
      if (p.default !== undefined) input.value = JSON.stringify(p.default);
      input.dataset.kind = "json";
    }
    input.dataset.name = name;
    input.dataset.required = required.has(name) ? "1" : "";
    const label = el("label", { for: id }, name + (required.has(name) ? " *" : ""), " ");
    const hint = el("div", { class: "hint" }, [type || "json", p.description].filter(Boolean).join(" · "));
    container.append(el("div", { class: "field" }, label, input, hint));
  }
}

// readSchemaForm returns the arguments object, or throws naming the field
// that is missing or malformed.
export function readSchemaForm(container) {
  const args = {};
  for (const input of container.querySelectorAll("[data-name]")) {
    const name = input.dataset.name;
    const req = input.dataset.required === "1";
    const kind = input.dataset.kind;
    if (kind === "boolean") { args[name] = input.checked; continue; }
    const raw = input.value.trim();
    if (raw === "") {
      if (req) throw new Error(`${name} is required`);
      continue;
    }
    if (kind === "enum") args[name] = JSON.parse(raw);
    else if (kind === "number" || kind === "integer") args[name] = Number(raw);
    else if (kind === "string") args[name] = input.value;
    else {
      try { args[name] = JSON.parse(raw); } catch (e) { throw new Error(`${name}: not JSON (${e.message})`); }
    }
  }
  return args;
}

// parseHistory reads the playground's history box: one "role: content"
// line per turn, or a JSON array.
export function parseHistory(text) {
  const t = text.trim();
  if (!t) return undefined;
  if (t.startsWith("[")) return JSON.parse(t);
  const turns = [];
  for (const line of t.split("\n")) {
    const m = /^\s*(user|assistant)\s*:\s?(.*)$/i.exec(line);
    if (m) turns.push({ role: m[1].toLowerCase(), content: m[2] });
    else if (turns.length && line.trim()) turns[turns.length - 1].content += "\n" + line;
    else if (line.trim()) throw new Error(`history: start each turn with "user:" or "assistant:" (${line.trim().slice(0, 40)})`);
  }
  return turns;
}
