// A small MCP client over Streamable HTTP, in the sessionless style of
// protocol revision 2026-07-28: every request is one POST that carries the
// protocol version, the client's capabilities and info in params._meta and
// the Mcp-Method / Mcp-Name headers, with no initialize handshake. The
// answer is JSON, or server-sent events: notifications (progress, log
// messages) as they arrive, then the response with the request's id.

export const PROTOCOL_VERSION = "2026-07-28";
const CLIENT_INFO = { name: "pallasgw-console", version: "1" };

export class McpError extends Error {
  constructor(message, { status = 0, code = 0, data } = {}) {
    super(message);
    this.status = status; // HTTP status, 0 when the HTTP exchange succeeded
    this.code = code; // JSON-RPC error code, 0 when none
    this.data = data;
  }
}

let nextId = 1;

export class McpClient {
  // url: the agent's endpoint (relative to the page); token: a function
  // returning the bearer to send, or "".
  constructor(url, token = () => "") {
    this.url = url;
    this.token = token;
  }

  // request sends one JSON-RPC request and returns its result. With
  // onNotification, a progress token is sent and every notification of the
  // call is handed to it as it arrives. signal aborts the call (closing the
  // request, which cancels it on the gateway).
  async request(method, params = {}, { onNotification, signal } = {}) {
    const id = nextId++;
    const meta = {
      ...(params._meta || {}),
      "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    };
    if (onNotification) meta.progressToken = "c" + id;
    const body = { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } };
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": PROTOCOL_VERSION,
      "Mcp-Method": method,
    };
    const name = method === "resources/read" ? params.uri : params.name;
    if (typeof name === "string" && /^[\x20-\x7e]*$/.test(name)) headers["Mcp-Name"] = name;
    const tok = this.token();
    if (tok) headers.Authorization = "Bearer " + tok;

    const resp = await fetch(this.url, {
      method: "POST", headers, body: JSON.stringify(body), signal,
      credentials: "omit", cache: "no-store",
    });
    const ctype = resp.headers.get("Content-Type") || "";
    if (ctype.startsWith("text/event-stream")) {
      return this.readEvents(resp, id, onNotification);
    }
    const text = await resp.text();
    let msg;
    try { msg = JSON.parse(text); } catch { msg = null; }
    if (!resp.ok) {
      const what = (msg && (msg.error?.message || msg.error)) || text || resp.statusText;
      throw new McpError(`HTTP ${resp.status}: ${what}`, { status: resp.status });
    }
    if (!msg) throw new McpError("the answer is not JSON");
    return settle(msg);
  }

  async readEvents(resp, id, onNotification) {
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const data = event.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data) continue;
        let msg;
        try { msg = JSON.parse(data); } catch { continue; }
        if (msg.id === id && ("result" in msg || "error" in msg)) {
          reader.cancel().catch(() => {});
          return settle(msg);
        }
        if (msg.method && onNotification) onNotification(msg);
      }
    }
    throw new McpError("the stream ended without an answer");
  }

  // callTool is tools/call; listTools is tools/list (every page).
  callTool(name, args, opts) {
    return this.request("tools/call", { name, arguments: args }, opts);
  }

  async listTools(opts) {
    const tools = [];
    let cursor;
    do {
      const res = await this.request("tools/list", cursor ? { cursor } : {}, opts);
      tools.push(...(res.tools || []));
      cursor = res.nextCursor;
    } while (cursor);
    return tools;
  }
}

function settle(msg) {
  if (msg.error) {
    throw new McpError(msg.error.message || "error", { code: msg.error.code, data: msg.error.data });
  }
  const res = msg.result || {};
  if (res.resultType === "input_required") {
    throw new McpError("the server asks for input (elicitation, sampling or roots), which this console does not answer");
  }
  return res;
}
