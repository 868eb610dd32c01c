// el builds an element: attributes, then children (strings become text:
// nothing is ever parsed as HTML).
export function el(tag, attrs = {}, ...children) {
  const svg = ["svg", "path", "polyline", "line", "rect", "g", "text"].includes(tag);
  const e = svg ? document.createElementNS("http://www.w3.org/2000/svg", tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export const $ = (sel) => document.querySelector(sel);
