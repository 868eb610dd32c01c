// progress-client.mjs calls an agent's message tool with a progress token
// through the official TypeScript MCP SDK (StreamableHTTPClientTransport)
// and prints, as JSON lines on stdout, every progress notification and then
// the result, each with the time it was received (ms since the epoch).
//
//   node progress-client.mjs URL MESSAGE [TOOL]
//
// Output lines:
//   {"event":"connected","at":..,"protocolVersion":..,"serverName":..}
//   {"event":"progress","at":..,"progress":..,"total":..,"message":..}
//   {"event":"result","at":..,"isError":..,"text":..}
// On failure it prints {"event":"error",...} and exits 1.
//
// The SDK is loaded from $PALLASGW_E2E_TOOLS/node_modules (where
// .ci/install-e2e-tools puts it), not from a node_modules next to this file.
import { createRequire } from "node:module";
import path from "node:path";

const tools = process.env.PALLASGW_E2E_TOOLS;
if (!tools) {
  console.error("PALLASGW_E2E_TOOLS is not set");
  process.exit(2);
}
const require = createRequire(path.join(tools, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [url, message, toolName = "send_message"] = process.argv.slice(2);
if (!url || message === undefined) {
  console.error("usage: progress-client.mjs URL MESSAGE [TOOL]");
  process.exit(2);
}

const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const now = () => Date.now();

const client = new Client({ name: "pallasgw-e2e-progress", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));

try {
  await client.connect(transport);
  print({
    event: "connected",
    at: now(),
    protocolVersion: transport.protocolVersion ?? null,
    serverName: client.getServerVersion()?.name ?? null,
  });
  // onprogress makes the SDK put a progressToken in _meta and route the
  // notifications/progress carrying it here.
  const result = await client.callTool(
    { name: toolName, arguments: { message } },
    undefined,
    {
      onprogress: (p) =>
        print({ event: "progress", at: now(), progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
      timeout: 120_000,
      resetTimeoutOnProgress: true,
    },
  );
  const at = now();
  const text = (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  print({ event: "result", at, isError: result.isError === true, text });
  await client.close();
} catch (err) {
  print({ event: "error", at: now(), error: String(err?.stack ?? err) });
  try {
    await client.close();
  } catch {
    // already broken
  }
  process.exit(1);
}
