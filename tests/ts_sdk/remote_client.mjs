// A client built on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) driving a hermes-acp session host
// through its remote door, with the SDK's experimental WebSocket or Streamable HTTP client.
// Usage: remote_client.mjs ws|http URL. Env: TS_CLIENT_TOKEN (the bearer token), TS_CLIENT_CWD, TS_CLIENT_MODE:
//   "session" (default): connection 1 runs initialize, session/new, a streamed prompt, a prompt whose command asks
//     for permission (answered allow_once), and a prompt cancelled with session/cancel while it streams; then
//     connection 2 runs initialize and session/load of that session (the catch-up).
//   "refused": initialize with the token given (wrong or empty) must fail; reports the error.
// Prints one JSON object at the end for the Python side to check; "frames" holds every JSON-RPC message as
// [direction, message], direction "to_agent" or "to_client".
import { client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [transport, url] = process.argv.slice(2);
const token = process.env.TS_CLIENT_TOKEN ?? "";
const cwd = process.env.TS_CLIENT_CWD ?? process.cwd();
const mode = process.env.TS_CLIENT_MODE ?? "session";
const frames = [];

// Node's WebSocket takes headers in its init object; the SDK passes them as a third argument.
class HeaderWebSocket extends globalThis.WebSocket {
  constructor(target, protocols, options) {
    super(target, { protocols: protocols ?? [], headers: options?.headers ?? {} });
  }
}

function open() {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const wire =
    transport === "ws"
      ? createWebSocketStream(url, { headers, WebSocket: HeaderWebSocket })
      : createHttpStream(url, { headers });
  const tap = (direction) =>
    new TransformStream({
      transform(message, controller) {
        frames.push([direction, message]);
        controller.enqueue(message);
      },
    });
  const outgoing = tap("to_agent");
  outgoing.readable.pipeTo(wire.writable).catch(() => {});
  return { writable: outgoing.writable, readable: wire.readable.pipeThrough(tap("to_client")) };
}

function app(record) {
  return client({ name: "hermes-acp-remote-lane" })
    .onNotification(methods.client.session.update, ({ params }) => {
      record.updates.push(params);
      record.onUpdate?.(params);
    })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      record.permissions.push(params);
      const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });
}

const initializeParams = {
  protocolVersion: 1,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "hermes-acp-remote-lane", version: "1.0.0" },
};
const prompt = (sessionId, text) => ({ sessionId, prompt: [{ type: "text", text }] });

if (mode === "refused") {
  const record = { updates: [], permissions: [] };
  let error = null;
  try {
    await app(record).connectWith(open(), (ctx) => ctx.request(methods.agent.initialize, initializeParams));
  } catch (caught) {
    error = String(caught?.message ?? caught);
  }
  // Exit once written: to a pipe Node writes asynchronously, and exiting at once would cut what is past 64 KiB.
  await new Promise((resolve) => process.stdout.write(JSON.stringify({ error, frames }) + "\n", resolve));
  process.exit(0);
}

const first = { updates: [], permissions: [] };
const one = await app(first).connectWith(open(), async (ctx) => {
  const initialize = await ctx.request(methods.agent.initialize, initializeParams);
  const sessionNew = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const sessionId = sessionNew.sessionId;
  const streamed = await ctx.request(methods.agent.session.prompt, prompt(sessionId, "stream please"));
  const permitted = await ctx.request(methods.agent.session.prompt, prompt(sessionId, "permission please"));
  const holding = new Promise((resolve) => {
    first.onUpdate = (params) => {
      if (params.update.sessionUpdate === "agent_message_chunk") resolve();
    };
  });
  const held = ctx.request(methods.agent.session.prompt, prompt(sessionId, "hold please"));
  await holding;
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  const cancelled = await held;
  return { initialize, sessionNew, streamed, permitted, cancelled };
});

const second = { updates: [], permissions: [] };
const two = await app(second).connectWith(open(), async (ctx) => {
  const initialize = await ctx.request(methods.agent.initialize, initializeParams);
  const load = await ctx.request(methods.agent.session.load, {
    sessionId: one.sessionNew.sessionId,
    cwd,
    mcpServers: [],
  });
  return { initialize, load };
});

await new Promise((resolve) =>
  process.stdout.write(
    JSON.stringify({ one, two, first: first.updates, permissions: first.permissions, second: second.updates, frames }) +
      "\n",
    resolve,
  ),
);
process.exit(0);
