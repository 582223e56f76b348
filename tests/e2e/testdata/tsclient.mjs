// The TypeScript MCP SDK's client, driven by the gateway's end-to-end tests.
//
//   SDK_DIR=<node_modules/@modelcontextprotocol/sdk> node tsclient.mjs
//
// It reads one command per line on stdin and answers each with one JSON
// line on stdout:
//
//   {"op":"connect","command":C,"args":[…],"env":{…},"cwd":D}   stdio
//   {"op":"connect","url":U,"headers":{…}}                       Streamable HTTP
//       → {"serverInfo":{…},"capabilities":{…}}
//       "elicit":{"action":…,"content":{…}} declares elicitation and
//       answers every elicitation/create so (they are recorded)
//       "oauth":true gives the transport an OAuth client that has no
//       token: a 401 makes the SDK look for OAuth (discovery, then dynamic
//       client registration) as Claude Code and Codex do; the error is
//       what it found
//   {"op":"list"}                          → {"tools":[…]}
//   {"op":"call","name":N,"arguments":{…}} → {"result":{…}}
//       "timeoutMs":T gives up after T ms (the SDK tells the server:
//       notifications/cancelled); "progress":true asks for progress
//       (a progressToken) and answers {"result":…,"progress":[…]}
//   {"op":"resources"}                     → {"resources":[…]} (every page)
//   {"op":"templates"}                     → {"resourceTemplates":[…]}
//   {"op":"read","uri":U}                  → {"contents":[…]}
//   {"op":"prompts"}                       → {"prompts":[…]}
//   {"op":"prompt","name":N,"arguments":{…}} → {"description":…,"messages":[…]}
//   {"op":"elicited"}                      → {"elicited":[params…]}
//   {"op":"changes","atLeast":N}           → {"changes":M} once M ≥ N
//       notifications/tools/list_changed have arrived since connect
//   {"op":"close"}                         → {"closed":true}
//
// A failure answers {"error":"…","code":…}. The SDK is imported from the
// pinned install of tests/npm (internal/testkit/npmtest).
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const sdk = process.env.SDK_DIR;
if (!sdk) {
  console.error("SDK_DIR is not set");
  process.exit(2);
}
const load = (rel) => import(pathToFileURL(path.join(sdk, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ToolListChangedNotificationSchema, ElicitRequestSchema } = await load("types.js");

let client;
let changes = 0;
let elicited = [];
let waiters = [];

function changed() {
  changes++;
  const still = [];
  for (const w of waiters) {
    if (changes >= w.atLeast) w.resolve({ changes });
    else still.push(w);
  }
  waiters = still;
}

// noTokenYet is an OAuth client provider with no token and no registered
// client: on a 401 the SDK discovers the server's OAuth metadata and
// registers a client, and would then send a browser to log in.
function noTokenYet() {
  const redirect = "http://127.0.0.1:9/callback";
  return {
    get redirectUrl() { return redirect; },
    get clientMetadata() {
      return { client_name: "gateway-e2e-ts", redirect_uris: [redirect], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    clientInformation: () => undefined,
    saveClientInformation: () => {},
    tokens: () => undefined,
    saveTokens: () => {},
    redirectToAuthorization: () => { throw new Error("the test opens no browser"); },
    saveCodeVerifier: () => {},
    codeVerifier: () => "",
  };
}

async function handle(cmd) {
  switch (cmd.op) {
    case "connect": {
      client = new Client({ name: "gateway-e2e-ts", version: "0.0.0" },
        cmd.elicit ? { capabilities: { elicitation: {} } } : undefined);
      client.setNotificationHandler(ToolListChangedNotificationSchema, changed);
      if (cmd.elicit) {
        client.setRequestHandler(ElicitRequestSchema, async (req) => {
          elicited.push(req.params);
          return cmd.elicit;
        });
      }
      const transport = cmd.url
        ? new StreamableHTTPClientTransport(new URL(cmd.url), {
            requestInit: { headers: cmd.headers ?? {} },
            authProvider: cmd.oauth ? noTokenYet() : undefined,
          })
        : new StdioClientTransport({
            command: cmd.command,
            args: cmd.args ?? [],
            env: { ...process.env, ...(cmd.env ?? {}) },
            cwd: cmd.cwd,
            stderr: "inherit",
          });
      await client.connect(transport);
      return { serverInfo: client.getServerVersion(), capabilities: client.getServerCapabilities() };
    }
    case "list":
      return { tools: (await client.listTools()).tools };
    case "call": {
      const progress = [];
      const options = {};
      if (cmd.timeoutMs) options.timeout = cmd.timeoutMs;
      if (cmd.progress) options.onprogress = (p) => progress.push(p);
      const result = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, options);
      return cmd.progress ? { result, progress } : { result };
    }
    case "resources": {
      const resources = [];
      let cursor;
      do {
        const page = await client.listResources(cursor ? { cursor } : undefined);
        resources.push(...page.resources);
        cursor = page.nextCursor;
      } while (cursor);
      return { resources };
    }
    case "templates":
      return { resourceTemplates: (await client.listResourceTemplates()).resourceTemplates };
    case "read":
      return { contents: (await client.readResource({ uri: cmd.uri })).contents };
    case "prompts":
      return { prompts: (await client.listPrompts()).prompts };
    case "prompt": {
      const r = await client.getPrompt({ name: cmd.name, arguments: cmd.arguments ?? {} });
      return { description: r.description, messages: r.messages };
    }
    case "elicited":
      return { elicited };
    case "changes":
      if (changes >= cmd.atLeast) return { changes };
      return await new Promise((resolve) => waiters.push({ atLeast: cmd.atLeast, resolve }));
    case "close":
      await client?.close();
      return { closed: true };
    default:
      throw new Error("unknown op " + cmd.op);
  }
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  let answer;
  try {
    answer = await handle(cmd);
  } catch (e) {
    answer = { error: String(e?.message ?? e), code: e?.code };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
  if (cmd.op === "close") break;
}
process.exit(0);
