// The TypeScript MCP SDK's client, driven by the Go benchmark suite.
//
//   BENCH_SDK_DIR=<node_modules/@modelcontextprotocol/sdk> node client.mjs COMMAND [ARGS...]
//   BENCH_SDK_DIR=… node client.mjs http://HOST:PORT/mcp
//
// It starts COMMAND with the SDK's StdioClientTransport (or connects to the
// URL with its StreamableHTTPClientTransport), connects (initialize) and
// lists the tools, prints "ready", then reads one command per line on stdin
// and answers each with one JSON line on stdout. Every call is echo
// {"message":"hello"}, of the tool named by BENCH_TOOL (default echo),
// answered "echo: hello":
//
//   {"op":"seq","n":N}             N echo calls one after another
//   {"op":"par","callers":C,"n":N} N calls on each of C concurrent callers
//   {"op":"quit"}                  close the client and exit
//
// An answer is {"lat":[ns, …],"wall":ns,"cpu":ns} (each call's latency, the
// wall time of the batch, measured here with process.hrtime, and the CPU
// time node spent on it, process.cpuUsage) or {"error":"…"}.
// The SDK is imported from the pinned install of tests/npm (internal/testkit/npmtest).
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const sdk = process.env.BENCH_SDK_DIR;
if (!sdk) {
  console.error("BENCH_SDK_DIR is not set");
  process.exit(2);
}
const load = (rel) => import(pathToFileURL(path.join(sdk, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "bench-ts-sdk", version: "0.0.0" });
await client.connect(
  /^https?:\/\//.test(command)
    ? new StreamableHTTPClientTransport(new URL(command))
    : new StdioClientTransport({ command, args, stderr: "ignore" }),
);
await client.listTools();

const params = { name: process.env.BENCH_TOOL || "echo", arguments: { message: "hello" } };
const now = () => process.hrtime.bigint();
const cpuNs = (since) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) * 1000;
};

async function call() {
  const res = await client.callTool(params);
  if (res.isError || res.content?.length !== 1 || res.content[0].text !== "echo: hello") {
    throw new Error("unexpected result " + JSON.stringify(res));
  }
}

async function seq(n) {
  const lat = new Array(n);
  const cpu = process.cpuUsage();
  const start = now();
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await call();
    lat[i] = Number(now() - t0);
  }
  return { lat, wall: Number(now() - start), cpu: cpuNs(cpu) };
}

async function par(callers, n) {
  const lat = new Array(callers * n);
  const cpu = process.cpuUsage();
  const start = now();
  await Promise.all(
    Array.from({ length: callers }, async (_, w) => {
      for (let i = 0; i < n; i++) {
        const t0 = now();
        await call();
        lat[w * n + i] = Number(now() - t0);
      }
    }),
  );
  return { lat, wall: Number(now() - start), cpu: cpuNs(cpu) };
}

process.stdout.write("ready\n");
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.op === "quit") break;
  let answer;
  try {
    answer = cmd.op === "seq" ? await seq(cmd.n) : await par(cmd.callers, cmd.n);
  } catch (e) {
    answer = { error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
await client.close();
