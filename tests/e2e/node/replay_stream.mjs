#!/usr/bin/env node
// What a page built on the OFFICIAL @ag-ui/client shows after a stream it did not fetch
// itself (one received on /ws, or an SSE body read by another client): an AbstractAgent
// whose run() plays the recorded events, so runAgent() puts them through the client's own
// enforcement, verifier and default apply, exactly as HttpAgent does with what it reads.
//
//   node replay_stream.mjs <input.json> <events.json>
//
// input.json is the RunAgentInput the stream answered (its messages and state are the
// page's before the run); events.json the events, in order.
//
// Prints exactly ONE JSON line on stdout: {"messages": [...], "state": {...},
// "warnings": [...], "errors": [...], "failed": null | "<error text>"}.
import { readFileSync } from "node:fs";
import { format } from "node:util";
import { from } from "rxjs";
import { client } from "./client.mjs";

const [inputPath, eventsPath] = process.argv.slice(2);
if (!inputPath || !eventsPath) {
  process.stderr.write("usage: node replay_stream.mjs <input.json> <events.json>\n");
  process.exit(1);
}
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const recorded = JSON.parse(readFileSync(eventsPath, "utf8"));

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS; // keep enforcement warnings audible
const warnings = [];
const errors = [];
console.warn = (...args) => warnings.push(format(...args));
console.error = (...args) => errors.push(format(...args));
console.log = console.info = console.debug = (...args) => process.stderr.write(format(...args) + "\n");

class RecordedAgent extends client.AbstractAgent {
  run() {
    return from(recorded);
  }
}

const agent = new RecordedAgent({
  threadId: input.threadId,
  initialMessages: input.messages ?? [],
  initialState: input.state ?? {},
});
let failed = null;
try {
  await agent.runAgent({ runId: input.runId, tools: input.tools ?? [], resume: input.resume });
} catch (e) {
  failed = String(e?.message ?? e);
}
process.stdout.write(
  JSON.stringify({ messages: agent.messages, state: agent.state, warnings, errors, failed }) + "\n",
  () => process.exit(0),
);
