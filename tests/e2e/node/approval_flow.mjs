#!/usr/bin/env node
// The approval flow through the official client: one HttpAgent asks "R-1042 승인해줘",
// receives the interrupt, answers it with the library's own resume helper
// (buildResumeArray over agent.pendingInterrupts) and runs again.
//
//   node approval_flow.mjs <url> <threadId> approve|reject|legacy
//
// "legacy" approves the way CopilotKit's useInterrupt answers the legacy CUSTOM
// "on_interrupt" event: forwardedProps.command = {resume, interruptEvent}, with no resume
// entries (so the agent is told of no pending interrupts, as a client that reads only
// that event). Prints one JSON line: {first, second, pendingInterrupts, announced, resume,
// messages, warnings, errors, failed}. Exit 0 whenever the JSON was printed.
import { format } from "node:util";
import { client } from "./client.mjs";

const { HttpAgent, buildResumeArray } = client;

const [url, threadId, decision] = process.argv.slice(2);
if (!url || !threadId || !["approve", "reject", "legacy"].includes(decision)) {
  process.stderr.write("usage: node approval_flow.mjs <url> <threadId> approve|reject|legacy\n");
  process.exit(1);
}
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
const warnings = [];
const errors = [];
console.warn = (...args) => warnings.push(format(...args));
console.error = (...args) => errors.push(format(...args));
console.log = console.info = console.debug = (...args) => process.stderr.write(format(...args) + "\n");

const agent = new HttpAgent({
  url,
  threadId,
  initialMessages: [{ id: `u-${Date.now()}`, role: "user", content: "R-1042 승인해줘" }],
});
const out = { first: [], second: [], warnings, errors, failed: null };
setTimeout(() => { out.failed = "timeout"; done(); }, Number(process.env.AGUI_TIMEOUT_MS) || 20000);

function done() {
  out.messages = agent.messages;
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));
}

try {
  out.announced = [];
  await agent.runAgent({}, {
    onEvent: ({ event }) => { out.first.push(event); },
    onCustomEvent: ({ event }) => {
      if (event.name === "on_interrupt") out.announced.push(event.value);
    },
  });
  out.pendingInterrupts = agent.pendingInterrupts;
  if (decision === "legacy") {
    agent.pendingInterrupts = [];
    const command = { resume: { approved: true }, interruptEvent: out.announced.at(-1) };
    await agent.runAgent(
      { forwardedProps: { command } },
      { onEvent: ({ event }) => { out.second.push(event); } },
    );
  } else {
    const answer = decision === "approve"
      ? { status: "resolved", payload: { approved: true } }
      : { status: "resolved", payload: { approved: false, reason: "금액 확인이 필요합니다" } };
    out.resume = buildResumeArray(
      agent.pendingInterrupts,
      Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, answer])),
    );
    await agent.runAgent({ resume: out.resume }, { onEvent: ({ event }) => { out.second.push(event); } });
  }
} catch (e) {
  out.failed = String(e?.message ?? e);
}
done();
