// The official TypeScript MCP client as a load generator: one session per
// token (client i on urls[i]), each making its share of calls one after
// another. Reads its job as JSON in argv[2]; prints "start" after the
// warm-up, then one JSON line with the calls, the elapsed milliseconds and
// the p50/p99 latency.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const job = JSON.parse(process.argv[2]);
const clients = await Promise.all(job.tokens.map(async (token, i) => {
  const client = new Client({ name: "agent-worker-bench-ts", version: "1" });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(job.urls[i]), { requestInit: { headers } }));
  return client;
}));

async function drive(per, lat) {
  await Promise.all(clients.map(async (client, i) => {
    for (let n = 0; n < per; n++) {
      const t0 = performance.now();
      const res = await client.callTool({ name: job.tool, arguments: job.args[i] });
      if (res.isError) throw new Error(`${job.tool}: ${JSON.stringify(res.content)}`);
      if (lat) lat.push(performance.now() - t0);
    }
  }));
}

await drive(200, null);
console.log("start");
const per = Math.floor(job.calls / clients.length);
const lat = [];
const t0 = performance.now();
await drive(per, lat);
const ms = performance.now() - t0;
lat.sort((a, b) => a - b);
console.log(JSON.stringify({
  calls: per * clients.length, ms,
  p50: lat[Math.floor(lat.length / 2)], p99: lat[Math.min(lat.length - 1, Math.floor(lat.length * 99 / 100))],
}));
await Promise.all(clients.map((c) => c.close()));
