// The stitching of a reconnect's reattach into a run under way, without a gateway: what a
// stream closes before the thread's snapshot, and what of the reattach it does not repeat.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Stream } from "../stream.js";

function recorded() {
  const seen = [];
  const stream = new Stream("run", { next: (event) => seen.push(event), complete() {} }, { runId: "run-1" });
  return { stream, seen };
}

test("what the run holds open is closed, newest first, and only once", () => {
  const { stream } = recorded();
  stream.emit({ type: "RUN_STARTED", runId: "run-1" });
  stream.emit({ type: "TEXT_MESSAGE_START", messageId: "m1" });
  stream.emit({ type: "TEXT_MESSAGE_END", messageId: "m1" });
  stream.emit({ type: "REASONING_START", messageId: "rs-m2" });
  stream.emit({ type: "TOOL_CALL_START", toolCallId: "c1" });
  assert.deepEqual(stream.spans.close(), [
    { type: "TOOL_CALL_END", toolCallId: "c1" },
    { type: "REASONING_END", messageId: "rs-m2" },
  ]);
  assert.deepEqual(stream.spans.close(), []);
});

test("a sub-agent the reattach re-announces is not started twice", () => {
  const { stream, seen } = recorded();
  const started = { type: "SUBAGENT_STARTED", subagentRunId: "s1", name: "specialist" };
  stream.emit(started);
  stream.emit({ ...started });
  stream.emit({ type: "SUBAGENT_FINISHED", subagentRunId: "s1" });
  stream.emit({ type: "SUBAGENT_STARTED", subagentRunId: "s2", name: "specialist" });
  assert.deepEqual(seen.map((e) => `${e.type} ${e.subagentRunId}`), [
    "SUBAGENT_STARTED s1", "SUBAGENT_FINISHED s1", "SUBAGENT_STARTED s2",
  ]);
});

test("the end of a run that finished while away carries the run's own id", () => {
  const { stream, seen } = recorded();
  stream.end({ type: "RUN_FINISHED", threadId: "t", runId: "reattach-7", outcome: { type: "success" } });
  assert.equal(seen[0].runId, "run-1");
});
