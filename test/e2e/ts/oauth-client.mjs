// oauth-client.mjs connects to an agent of a gateway in auth.mode jwt with
// the official TypeScript MCP SDK's client auth, starting from no token:
// the SDK gets the 401, reads the protected resource metadata (RFC 9728)
// named by its resource_metadata, discovers the authorization server's
// metadata (RFC 8414, then OpenID Connect discovery), gets a token with the
// client-credentials grant from the token endpoint it found, and retries.
// Then the script lists the tools and calls one.
//
//   TS_OAUTH_CLIENT_SECRET=... node oauth-client.mjs URL CLIENT_ID ISSUER SCOPE MODE TOOL [ARGS_JSON]
//
// ISSUER is only the SDK's `expectedIssuer` (which authorization server the
// client's credentials may be sent to); no endpoint is configured here.
//
// MODE:
//   plain     the SDK's ClientCredentialsProvider as it is. The SDK asks
//             for the token with RFC 8707 `resource=<the metadata's
//             resource>`; an authorization server that ignores `resource`
//             (Ory Hydra v2.3.0 does) issues a token without that audience.
//             A failure is an outcome here: printed, exit 0.
//   audience  the same provider, its token request also carrying the
//             resource indicator as `audience` (Hydra's parameter for the
//             token's aud), through the SDK's addClientAuthentication hook,
//             which sees the request's parameters after the SDK set
//             `resource`. A failure exits 1.
//
// Output (JSON lines on stdout):
//   {"event":"http","method":..,"url":..,"status":..,"form":{..}}  every request the SDK makes
//                                                 (form: token request parameters, secrets left out)
//   {"event":"connected","serverName":..}
//   {"event":"token","issuer":..,"claims":{..}}    the access token's claims (not the token)
//   {"event":"tools","names":[..]}
//   {"event":"result","isError":..,"text":..}
//   {"event":"error","error":..}
//
// The SDK is loaded from $PALLASGW_E2E_TOOLS/node_modules.
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
const { ClientCredentialsProvider } = require("@modelcontextprotocol/sdk/client/auth-extensions.js");

const [url, clientId, issuer, scope, mode, toolName, argsJSON = "{}"] = process.argv.slice(2);
const clientSecret = process.env.TS_OAUTH_CLIENT_SECRET;
if (!url || !clientId || !issuer || !mode || !toolName || !clientSecret || !["plain", "audience"].includes(mode)) {
  console.error("usage: TS_OAUTH_CLIENT_SECRET=... oauth-client.mjs URL CLIENT_ID ISSUER SCOPE plain|audience TOOL [ARGS_JSON]");
  process.exit(2);
}

const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

// Every request the SDK makes, auth discovery and token request included
// (the transport passes its fetch on to auth()).
const tracingFetch = async (input, init) => {
  const method = init?.method ?? "GET";
  const target = String(input instanceof Request ? input.url : input);
  let form;
  if (init?.body instanceof URLSearchParams) {
    form = {};
    for (const [k, v] of init.body) {
      form[k] = k === "client_secret" || k === "client_assertion" ? "(secret)" : v;
    }
  }
  const res = await fetch(input, init);
  print({ event: "http", method, url: target, status: res.status, form });
  return res;
};

const provider = new ClientCredentialsProvider({
  clientId,
  clientSecret,
  expectedIssuer: issuer,
  scope: scope || undefined,
  clientName: "pallasgw-e2e-oauth",
});
if (mode === "audience") {
  // With addClientAuthentication set, the SDK leaves client authentication
  // to it: client_secret_basic, as the provider would have done.
  provider.addClientAuthentication = async (headers, params) => {
    const resource = params.get("resource");
    if (resource) {
      params.set("audience", resource);
    }
    headers.set("Authorization", "Basic " + btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`));
  };
}

const claimsOf = (jwt) => {
  try {
    return JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString("utf8"));
  } catch {
    return null;
  }
};

const client = new Client({ name: "pallasgw-e2e-oauth", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: tracingFetch });

try {
  await client.connect(transport);
  print({ event: "connected", serverName: client.getServerVersion()?.name ?? null });
  const tokens = provider.tokens();
  print({ event: "token", issuer: tokens?.issuer ?? null, claims: tokens ? claimsOf(tokens.access_token) : null });
  const listed = await client.listTools();
  print({ event: "tools", names: listed.tools.map((t) => t.name) });
  const result = await client.callTool({ name: toolName, arguments: JSON.parse(argsJSON) });
  const text = (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  print({ event: "result", isError: result.isError === true, text });
  await client.close();
} catch (err) {
  const tokens = provider.tokens();
  if (tokens) {
    print({ event: "token", issuer: tokens.issuer ?? null, claims: claimsOf(tokens.access_token) });
  }
  print({ event: "error", error: String(err?.stack ?? err) });
  try {
    await client.close();
  } catch {
    // already broken
  }
  process.exit(mode === "plain" ? 0 : 1);
}
