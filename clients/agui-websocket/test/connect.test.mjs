// connect(): the reattach. The thread as snapshots, then the run in progress live to its end.
// abortRun(): the /ws cancel frame, which stops the run on the gateway.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assistantText, LONG_REPLY, nextEvent, pageAgent, threadOf, TOOLS, userMessage } from "./gateway.mjs";

test("connect() on a reload mid-run restores the thread and follows the run to its end", async () => {
  const storage = new Map();
  const first = pageAgent({ storage });
  first.addMessage(userMessage(LONG_REPLY));
  const replying = nextEvent(first, (event) => event.type === "TEXT_MESSAGE_CONTENT");
  const running = first.runAgent({ tools: TOOLS });
  await replying;
  first.close(); // the page goes away mid-reply; the run goes on at the gateway
  await running; // its stream ends as aborted, quietly, and does not hang

  const reloaded = pageAgent({ storage, threadId: first.threadId });
  const seen = [];
  reloaded.subscribe({ onEvent: ({ event }) => seen.push(event.type) });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    assert.equal(seen[0], "RUN_STARTED");
    assert.ok(seen.includes("MESSAGES_SNAPSHOT"));
    assert.ok(seen.filter((type) => type === "TEXT_MESSAGE_CONTENT").length > 10, "it followed the run live");
    assert.equal(seen.at(-1), "RUN_FINISHED");
    assert.equal(reloaded.messages[0].content, LONG_REPLY);
    const stored = await threadOf(first.threadId);
    assert.ok(assistantText(stored).length > 100);
    assert.equal(assistantText(reloaded.messages), assistantText(stored));
  } finally {
    reloaded.close();
  }
});

test("connect() on an idle thread restores it and ends at once", async () => {
  const agent = pageAgent();
  agent.addMessage(userMessage(LONG_REPLY));
  await agent.runAgent({ tools: TOOLS });
  agent.close();
  const again = pageAgent({ threadId: agent.threadId });
  try {
    const started = Date.now();
    await again.connectAgent({ tools: TOOLS });
    assert.ok(Date.now() - started < 2000);
    assert.deepEqual(
      again.messages.map((m) => m.role),
      agent.messages.map((m) => m.role),
    );
    assert.equal(assistantText(again.messages), assistantText(agent.messages));
  } finally {
    again.close();
  }
});

test("abortRun() stops the run on the gateway; the text so far stays, marked stopped", async () => {
  const agent = pageAgent();
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    let outcome = null;
    const replying = nextEvent(agent, (event) => event.type === "TEXT_MESSAGE_CONTENT");
    const running = agent.runAgent({ tools: TOOLS }, { onRunFinishedEvent: (params) => void (outcome = params.outcome) });
    await replying;
    agent.abortRun();
    await running;
    assert.equal(outcome, "cancelled");
    const stored = await threadOf(agent.threadId);
    const reply = stored.find((m) => m.role === "assistant");
    assert.deepEqual(reply.metadata, { ended: "stopped" });
    assert.ok(reply.content.length > 0);
    assert.equal(reply.content, assistantText(agent.messages), "what the page shows is what was kept");
    const shown = agent.messages.find((m) => m.role === "assistant");
    assert.equal(shown.metadata?.ended, "stopped", "the page's copy is marked as the thread's is");
    // The gateway's run is over: the thread takes the next message at once.
    agent.addMessage(userMessage(LONG_REPLY));
    const next = await agent.runAgent({ tools: TOOLS });
    assert.ok(assistantText(next.newMessages).length > 100);
  } finally {
    agent.close();
  }
});

test("a gateway that cannot be reached fails the run with a sentence saying what to check", async () => {
  const agent = pageAgent({ url: "ws://127.0.0.1:9/ws?user=demo" });
  const logged = console.error;
  console.error = () => {}; // @ag-ui/client logs the failure it rethrows
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    await assert.rejects(agent.runAgent({ tools: TOOLS }), /Could not open the gateway's WebSocket at ws:\/\/127\.0\.0\.1:9\/ws.*GATEWAY_ALLOWED_ORIGINS/s);
  } finally {
    console.error = logged;
    agent.close();
  }
});
