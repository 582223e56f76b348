// The TypeScript MCP SDK's client, driven by the Go benchmark suite.
//
//   BENCH_SDK_DIR=<node_modules/@modelcontextprotocol/sdk> node client.mjs COMMAND [ARGS...]
//   BENCH_SDK_DIR=… node client.mjs http://HOST:PORT/mcp
//   BENCH_SDK_DIR=… BENCH_TARGETS='[{"tool":"echo","target":["COMMAND","ARG"]},…]' node client.mjs
//
// It starts COMMAND with the SDK's StdioClientTransport (or connects to the
// URL with its StreamableHTTPClientTransport) — or, with BENCH_TARGETS, one
// client for each target, in order — connects (initialize) and lists the
// tools, prints "ready", then reads one command per line on stdin and
// answers each with one JSON line on stdout. Every call is echo
// {"message":"hello"}, of the target's tool (BENCH_TOOL for the one of the
// command line; default echo), answered "echo: hello". "c" picks the
// client (default 0):
//
//   {"op":"seq","n":N,"c":I}             N echo calls one after another
//   {"op":"par","callers":C,"n":N,"c":I} N calls on each of C concurrent callers
//   {"op":"quit"}                        close the clients and exit
//
// An answer is {"lat":[ns, …],"wall":ns,"cpu":ns} (each call's latency, the
// wall time of the batch, measured here with process.hrtime, and the CPU
// time node spent on it, process.cpuUsage) or {"error":"…"}. Commands run
// one at a time, so the clients of one process never measure each other.
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

const targets = process.env.BENCH_TARGETS
  ? JSON.parse(process.env.BENCH_TARGETS)
  : [{ tool: process.env.BENCH_TOOL || "echo", target: process.argv.slice(2) }];
const clients = [];
for (const { tool, target } of targets) {
  const [command, ...args] = target;
  const client = new Client({ name: "bench-ts-sdk", version: "0.0.0" });
  await client.connect(
    /^https?:\/\//.test(command)
      ? new StreamableHTTPClientTransport(new URL(command))
      : new StdioClientTransport({ command, args, stderr: "ignore" }),
  );
  await client.listTools();
  clients.push({ client, params: { name: tool, arguments: { message: "hello" } } });
}
const now = () => process.hrtime.bigint();
const cpuNs = (since) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) * 1000;
};

async function call({ client, params }) {
  const res = await client.callTool(params);
  if (res.isError || res.content?.length !== 1 || res.content[0].text !== "echo: hello") {
    throw new Error("unexpected result " + JSON.stringify(res));
  }
}

async function seq(c, n) {
  const lat = new Array(n);
  const cpu = process.cpuUsage();
  const start = now();
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await call(c);
    lat[i] = Number(now() - t0);
  }
  return { lat, wall: Number(now() - start), cpu: cpuNs(cpu) };
}

async function par(c, callers, n) {
  const lat = new Array(callers * n);
  const cpu = process.cpuUsage();
  const start = now();
  await Promise.all(
    Array.from({ length: callers }, async (_, w) => {
      for (let i = 0; i < n; i++) {
        const t0 = now();
        await call(c);
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
    const c = clients[cmd.c ?? 0];
    if (!c) throw new Error("no client " + cmd.c);
    answer = cmd.op === "seq" ? await seq(c, cmd.n) : await par(c, cmd.callers, cmd.n);
  } catch (e) {
    answer = { error: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
for (const { client } of clients) await client.close();
