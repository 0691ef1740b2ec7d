#!/usr/bin/env node
// The approval flow through the official client: one HttpAgent asks "R-1042 승인해줘",
// receives the interrupt, answers it with the library's own resume helper
// (buildResumeArray over agent.pendingInterrupts) and runs again.
//
//   node approval_flow.mjs <url> <threadId> approve|reject
//
// Prints one JSON line: {first, second, pendingInterrupts, resume, messages,
// warnings, errors, failed}. Exit 0 whenever the JSON was printed.
import { format } from "node:util";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, threadId, decision] = process.argv.slice(2);
if (!url || !threadId || !["approve", "reject"].includes(decision)) {
  process.stderr.write("usage: node approval_flow.mjs <url> <threadId> approve|reject\n");
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
  await agent.runAgent({}, { onEvent: ({ event }) => { out.first.push(event); } });
  out.pendingInterrupts = agent.pendingInterrupts;
  const answer = decision === "approve"
    ? { status: "resolved", payload: { approved: true } }
    : { status: "resolved", payload: { approved: false, reason: "금액 확인이 필요합니다" } };
  out.resume = buildResumeArray(
    agent.pendingInterrupts,
    Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, answer])),
  );
  await agent.runAgent({ resume: out.resume }, { onEvent: ({ event }) => { out.second.push(event); } });
} catch (e) {
  out.failed = String(e?.message ?? e);
}
done();
