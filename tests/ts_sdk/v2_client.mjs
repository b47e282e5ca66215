// A client built on the official TypeScript SDK's ACP v2 client (@agentclientprotocol/sdk 2.4.0,
// experimental/v2/unstable: the draft with its unstable methods) driving an agent through the whole v2 flow.
// Usage: v2_client.mjs stdio COMMAND ARGS... | v2_client.mjs ws|http URL (env TS_CLIENT_TOKEN: the bearer token).
// Env: TS_CLIENT_CWD (the session's folder).
// Flow, on one connection: initialize v2 (with _meta.hermes.clientInstanceId); session/new; a prompt that streams,
// runs a tool call (its permission answered allow_once) and ends; the same prompt sent twice with one operation id;
// a long command stopped with the SDK's cancelTerminal once its terminal advertises cancel; a prompt held until
// session/cancel; session/list; session/resume with replayFrom start (the history, then one
// state_update, then the answer); session/resume after a cursor (only what came after it); session/status;
// tool_call/cancel of an unknown call; session/resume of an unknown session; session/close; auth/logout.
// Prints one JSON object at the end for the Python side to check; "frames" holds every JSON-RPC message as
// [direction, message], direction "to_agent" or "to_client"; "updates" every session/update's params the SDK
// handed over (an update the SDK found invalid is dropped before it: compare with the frames).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [transport, ...rest] = process.argv.slice(2);
const cwd = process.env.TS_CLIENT_CWD ?? process.cwd();
const token = process.env.TS_CLIENT_TOKEN ?? "";
const frames = [];
const updates = [];
const permissions = [];

// Node's WebSocket takes headers in its init object; the SDK passes them as a third argument.
class HeaderWebSocket extends globalThis.WebSocket {
  constructor(target, protocols, options) {
    super(target, { protocols: protocols ?? [], headers: options?.headers ?? {} });
  }
}

let agent = null;
function wire() {
  if (transport === "stdio") {
    const [command, ...args] = rest;
    agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
    return ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  }
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return transport === "ws"
    ? createWebSocketStream(rest[0], { headers, WebSocket: HeaderWebSocket })
    : createHttpStream(rest[0], { headers });
}

const tap = (direction) =>
  new TransformStream({
    transform(message, controller) {
      frames.push([direction, message]);
      controller.enqueue(message);
    },
  });
const raw = wire();
const outgoing = tap("to_agent");
outgoing.readable.pipeTo(raw.writable).catch(() => {});
const stream = { writable: outgoing.writable, readable: raw.readable.pipeThrough(tap("to_client")) };

const app = client({ name: "hermes-acp-ts-v2-lane" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

async function untilStop(session) {
  const seen = [];
  for (;;) {
    const next = await session.nextUpdate();
    if (next.kind === "stop") {
      seen.push(`stop:${next.stopReason}`);
      return seen;
    }
    seen.push(next.update.sessionUpdate);
  }
}

// The updates up to the first of `kind` (the held prompt has streamed: a cancel now cuts a turn that showed text,
// whatever the machine's speed), or up to the stop should the turn end first.
async function untilUpdate(session, kind) {
  const seen = [];
  for (;;) {
    const next = await session.nextUpdate();
    if (next.kind === "stop") {
      seen.push(`stop:${next.stopReason}`);
      return { seen, stoppedFirst: true };
    }
    seen.push(next.update.sessionUpdate);
    if (next.update.sessionUpdate === kind) return { seen, stoppedFirst: false };
  }
}

async function failure(call) {
  try {
    await call();
    return null;
  } catch (caught) {
    return { code: caught?.code ?? null, message: String(caught?.message ?? caught), data: caught?.data ?? null };
  }
}

const lastCursor = () => {
  for (let i = updates.length - 1; i >= 0; i--) {
    const cursor = updates[i]._meta?.hermes?.cursor;
    if (cursor) return cursor;
  }
  return null;
};

const result = await app.connectWith(stream, async (ctx) => {
  const initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: 2,
    info: { name: "hermes-acp-ts-v2-lane", version: "1.0.0" },
    capabilities: { elicitation: { form: {} } },
    _meta: { hermes: { clientInstanceId: "ts-v2-lane" } },
  });
  const session = await ctx.buildSession(cwd).start();
  const sessionId = session.sessionId;
  const prompt = await session.prompt("say hello");
  const seen = await untilStop(session);
  const once = { sessionId, prompt: [{ type: "text", text: "say hello again" }], _meta: { hermes: { operationId: "op-1" } } };
  const first = await ctx.request(methods.agent.session.prompt, once);
  const repeated = await ctx.request(methods.agent.session.prompt, once);
  const seenOnce = await untilStop(session);
  await session.prompt("run the long one");
  const long = await untilUpdate(session, "terminal_output_chunk");
  const couldCancel = session.canCancelTerminal("call_long");
  const terminalCancel = await session.cancelTerminal("call_long");
  const cancelled = long.stoppedFirst ? long.seen : [...long.seen, ...(await untilStop(session))];
  const canCancelAfter = session.canCancelTerminal("call_long");
  const cursor = lastCursor();
  const held = await session.prompt("hold please");
  const streaming = await untilUpdate(session, "agent_message_chunk");
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  const stopped = streaming.stoppedFirst ? streaming.seen : [...streaming.seen, ...(await untilStop(session))];
  session.dispose();
  const list = await ctx.request(methods.agent.session.list, {});
  const resumeAt = frames.length;
  const resume = await ctx.request(methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } });
  const rejoinAt = frames.length;
  const rejoin = await ctx.request(methods.agent.session.resume, {
    sessionId,
    cwd,
    _meta: { hermes: { afterCursor: cursor } },
  });
  const status = await ctx.request(methods.agent.session.status, { sessionId });
  const toolCancel = await failure(() =>
    ctx.request(methods.agent.toolCall.cancel, { sessionId, toolCallId: "no-such-call" }),
  );
  const resumeMissing = await failure(() => ctx.request(methods.agent.session.resume, { sessionId: "missing", cwd }));
  const close = await ctx.request(methods.agent.session.close, { sessionId });
  const logout = await ctx.request(methods.agent.auth.logout, {});
  return {
    initialize, sessionId, prompt, seen, first, repeated, seenOnce, couldCancel, terminalCancel, cancelled,
    canCancelAfter, cursor, held, stopped, list, resumeAt, resume, rejoinAt, rejoin, status, toolCancel,
    resumeMissing, close, logout,
  };
});
if (agent !== null) {
  agent.stdin.end();
  await new Promise((resolve) => agent.once("exit", resolve));
}
// Exit once the report is written: to a pipe Node writes asynchronously, and exiting at once would cut what is past
// 64 KiB.
await new Promise((resolve) => process.stdout.write(JSON.stringify({ ...result, updates, permissions, frames }) + "\n", resolve));
process.exit(0);
