#!/usr/bin/env node
// A stand-in for the `claude` CLI, given to the TypeScript system's claude
// agents in the bench's ping-pong rows (its own mock strips every @ from
// its reply, so it cannot ping-pong). Each run is a fresh process, as our
// mock's is: it reads the workflow's MCP server from the --mcp-config file
// the agent loop wrote, calls channel_send once with a mention of the next
// agent (AW_BENCH_NEXT: a JSON map of agent to next agent), prints nothing
// (so the loop posts no final answer) and exits.
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
if (args.includes("--version")) {
  console.log("2.0.0 (Claude Code)");
  process.exit(0);
}
const config = JSON.parse(readFileSync(args[args.indexOf("--mcp-config") + 1], "utf8"));
const url = Object.values(config.mcpServers)[0].url;
const agent = new URL(url).searchParams.get("agent");
const next = JSON.parse(process.env.AW_BENCH_NEXT)[agent];

let session;
async function rpc(body) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (session) headers["mcp-session-id"] = session;
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  session ??= res.headers.get("mcp-session-id");
  const text = await res.text();
  if (!res.ok) throw new Error(`${body.method}: HTTP ${res.status}: ${text}`);
  return text;
}

await rpc({
  jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "claude-stand-in", version: "1" } },
});
await rpc({ jsonrpc: "2.0", method: "notifications/initialized" });
const out = await rpc({
  jsonrpc: "2.0", id: 2, method: "tools/call",
  params: { name: "channel_send", arguments: { message: `@${next} ping` } },
});
if (out.includes('"isError":true')) throw new Error(`channel_send: ${out}`);
await fetch(url, { method: "DELETE", headers: { "mcp-session-id": session } });
