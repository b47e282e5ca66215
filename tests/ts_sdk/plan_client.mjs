// A client built on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0) that runs a plan of requests
// against an agent over stdio, as an editor that shows forms would. The agent's command line is argv[2..].
//
// TS_CLIENT_PLAN (JSON): {
//   "capabilities": {...},              clientCapabilities for initialize (e.g. {"elicitation": {"form": {}}})
//   "steps": [{"method": "session/new", "params": {...}}, ...],
//   "forms": [{"action": "accept", "content": {...}} | {"action": "cancel"} | {"action": "decline"}, ...]
// }
// Each step is sent in turn and waits for its answer; "$session" in a step's params (anywhere in a string) is the
// id of the latest session/new. Each elicitation/create the agent sends is answered with the next entry of
// "forms" (cancel when they run out). It prints one JSON object at the end: {"initialize", "results" (one per
// step: {"result"} or {"error": {code, message, data}}), "elicitations" (their params), "updates", "frames"}
// ("frames": every JSON-RPC message as [direction, message], direction "to_agent" or "to_client").
// Run by tests/fakes/ts_sdk.py, which places it beside the installed SDK so that the import resolves.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [command, ...args] = process.argv.slice(2);
const plan = JSON.parse(process.env.TS_CLIENT_PLAN ?? "{}");
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const elicitations = [];
const forms = [...(plan.forms ?? [])];

const app = client({ name: "hermes-acp-ts-lane" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((option) => option.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(methods.client.elicitation.create, ({ params }) => {
    elicitations.push(params);
    return forms.shift() ?? { action: "cancel" };
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

const substitute = (value, session) => {
  if (typeof value === "string") return value.replaceAll("$session", session ?? "");
  if (Array.isArray(value)) return value.map((item) => substitute(item, session));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, session)]));
  }
  return value;
};

const outcome = await app.connectWith(stream, async (ctx) => {
  const initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: plan.capabilities ?? {},
    clientInfo: { name: "hermes-acp-ts-lane", version: "1.0.0" },
  });
  const results = [];
  let session;
  for (const step of plan.steps ?? []) {
    try {
      const result = await ctx.request(step.method, substitute(step.params ?? {}, session));
      if (step.method === methods.agent.session.new) session = result.sessionId;
      results.push({ result });
    } catch (error) {
      results.push({ error: { code: error.code, message: error.message, data: error.data } });
    }
  }
  return { initialize, results };
});
agent.stdin.end();
await new Promise((resolve) => agent.once("exit", resolve));
process.stdout.write(JSON.stringify({ ...outcome, elicitations, updates, frames }) + "\n");
