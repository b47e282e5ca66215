// A client built on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0, its unstable surface) that
// advertises clientCapabilities.subagents and drives an agent over stdio: session/new, then one prompt whose turn
// delegates to child sessions. Permission requests (a child's come under the child's session id) are answered
// allow_once. The agent's command line is argv[2..]; env TS_CLIENT_CWD, TS_CLIENT_PROMPT.
// Prints one JSON object at the end, {"initialize", "sessionNew", "prompt", "updates", "permissions", "frames"}:
// "updates" are the session/update params the SDK handed to the client (it parsed them), "frames" every JSON-RPC
// message as [direction, message]. Run by tests/fakes/ts_sdk.py beside the installed SDK.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [command, ...args] = process.argv.slice(2);
const cwd = process.env.TS_CLIENT_CWD ?? process.cwd();
const promptText = process.env.TS_CLIENT_PROMPT ?? "hello";
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const permissions = [];

const app = client({ name: "hermes-acp-ts-lane" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

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
  const initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {} },
    clientInfo: { name: "hermes-acp-ts-lane", version: "1.0.0" },
  });
  const sessionNew = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const prompt = await ctx.request(methods.agent.session.prompt, {
    sessionId: sessionNew.sessionId,
    prompt: [{ type: "text", text: promptText }],
  });
  return { initialize, sessionNew, prompt };
});
agent.stdin.end();
await new Promise((resolve) => agent.once("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, updates, permissions, frames }) + "\n");
