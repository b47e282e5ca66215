// A client built on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) that steers running turns with the
// `_session/steering` extension, in the shapes claude-agent-acp and codex-acp answer (a client built for them,
// unchanged). The agent's command line is argv[2..]; env TS_CLIENT_CWD. One session, five prompts:
//   stream:     steer while a long answer streams (at its first chunk);
//   tool:       steer while a command runs (at the call's in_progress update);
//   permission: steer from inside the permission request, then allow it;
//   end:        steer at the first chunk of a short last answer (the turn may already be ending);
//   idle:       in a second session, where no turn runs: steer with idleBehavior "promptRequired" (handed back),
//               with an idleBehavior nobody supports (an error), and without (a new turn starts).
// Prints one JSON object: {initialize, sessionId, steers: {name: outcome | {error}}, prompts: {name: response},
// updates, permissions, frames} for the Python side to check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const STEER = "_session/steering";
const [command, ...args] = process.argv.slice(2);
const cwd = process.env.TS_CLIENT_CWD ?? process.cwd();
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const permissions = [];
const steers = {};
const prompts = {};
let connection = null;
let sessionId = null;
let idleSessionId = null;
let onUpdate = null;
const waiters = [];

// Resolves once an update for which `predicate` holds has arrived (the harness bounds the whole run).
function arrived(predicate) {
  if (updates.some((u) => predicate(u.update))) return Promise.resolve();
  return new Promise((resolve) => waiters.push({ predicate, resolve }));
}

async function steer(name, text, meta) {
  const params = { sessionId, prompt: [{ type: "text", text }] };
  if (meta !== undefined) params._meta = meta;
  try {
    steers[name] = await connection.request(STEER, params);
  } catch (error) {
    steers[name] = { error: { code: error.code, message: error.message } };
  }
}

const app = client({ name: "hermes-acp-steering-lane" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
    onUpdate?.(params.update);
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(params.update)) waiter.resolve();
      else waiters.push(waiter);
    }
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    permissions.push(params);
    if (params.toolCall.toolCallId === "w_perm") await steer("permission", "STEER-PERMISSION keep it short");
    const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

// Run a prompt; `trigger(update)` says when to steer (once), `then` steers.
async function promptWith(name, text, trigger, then) {
  let fired = null;
  onUpdate = (update) => {
    if (fired === null && trigger(update)) fired = then();
  };
  prompts[name] = await connection.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text }],
  });
  onUpdate = null;
  if (fired !== null) await fired;
}

const firstChunk = (update) => update.sessionUpdate === "agent_message_chunk";
const said = (text) => (update) => update.sessionUpdate === "agent_message_chunk" && update.content.text.includes(text);
const frames = [];
const wire = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const tap = (direction) =>
  new TransformStream({
    transform(message, controller) {
      frames.push([direction, message]);
      controller.enqueue(message);
    },
  });
const outgoing = tap("to_agent");
outgoing.readable.pipeTo(wire.writable).catch(() => {});
const stream = { writable: outgoing.writable, readable: wire.readable.pipeThrough(tap("to_client")) };
const result = await app.connectWith(stream, async (ctx) => {
  connection = ctx;
  const initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "hermes-acp-steering-lane", version: "1.0.0" },
  });
  sessionId = (await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
  await promptWith("stream", "please write a long answer", firstChunk, () => steer("stream", "STEER-STREAM in French"));
  await promptWith(
    "tool",
    "please run the slow command",
    (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "t_slow" && u.status === "in_progress",
    () => steer("tool", "STEER-TOOL then summarise"),
  );
  await promptWith("permission", "please write the file", () => false, () => null);
  await promptWith("end", "please answer briefly", firstChunk, () => steer("end", "STEER-END one more thing"));
  await arrived(said("steered-end")); // in the same turn (injected) or in the one it started

  // A turn the "end" steer started may still run: the idle cases use a session of their own.
  const steered = sessionId;
  sessionId = (await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
  idleSessionId = sessionId;
  await steer("idle_prompt_required", "STEER-IDLE-HANDED-BACK", { steering: { idleBehavior: "promptRequired" } });
  await steer("idle_unsupported", "STEER-IDLE-REFUSED", { steering: { idleBehavior: "queue" } });
  await steer("idle_default", "STEER-IDLE-NEW-TURN");
  await arrived(said("steered-idle"));
  return { initialize, sessionId: steered, idleSessionId };
});
agent.stdin.end();
await new Promise((resolve) => agent.once("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, steers, prompts, updates, permissions, frames }) + "\n");
