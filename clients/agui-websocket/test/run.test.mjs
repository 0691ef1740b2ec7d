// run(): one run over /ws, as @ag-ui/client 1.0 takes it in, also across a dropped connection.
import assert from "node:assert/strict";
import { test } from "node:test";
import { lastValueFrom, toArray } from "rxjs";
import {
  assertOfficiallyValid, assistantText, CuttableSocket, LONG_REPLY, nextEvent, pageAgent, threadOf, TOOLS, userMessage,
} from "./gateway.mjs";

function inputOf(agent, content) {
  return {
    threadId: agent.threadId, runId: `run-${Date.now()}`, messages: [userMessage(content)],
    tools: TOOLS, context: [], state: {}, forwardedProps: {},
  };
}

test("run() streams one run that the official client's verifier takes unchanged", async () => {
  const agent = pageAgent();
  try {
    const events = await lastValueFrom(agent.run(inputOf(agent, LONG_REPLY)).pipe(toArray()));
    assert.equal(events[0].type, "RUN_STARTED");
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    assert.ok(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length > 50);
    await assertOfficiallyValid(events);
  } finally {
    agent.close();
  }
});

test("runAgent() reuses one connection across runs and keeps the thread's messages", async () => {
  const agent = pageAgent();
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    await agent.runAgent({ tools: TOOLS });
    const socket = [...CuttableSocket.live].find(() => true);
    agent.addMessage(userMessage(LONG_REPLY));
    await agent.runAgent({ tools: TOOLS });
    assert.ok(CuttableSocket.live.has(socket), "the second run went over the first run's socket");
    assert.equal(agent.messages.filter((m) => m.role === "assistant").length, 2);
  } finally {
    agent.close();
  }
});

test("a run cut mid-reply goes on by cursor after the reconnect: valid, nothing twice, the whole reply", async () => {
  const agent = pageAgent();
  try {
    const input = inputOf(agent, LONG_REPLY);
    const events = [];
    const done = new Promise((resolve, reject) =>
      agent.run(input).subscribe({
        next: (event) => {
          events.push(event);
          if (events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").length === 10) CuttableSocket.cut();
        },
        error: reject,
        complete: resolve,
      }),
    );
    await done;
    await assertOfficiallyValid(events);
    assert.equal(events.filter((e) => e.type === "RUN_STARTED").length, 1);
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    assert.equal(events.at(-1).runId, input.runId);
    // The reattach carried the last number seen: the run's events after it, no snapshot.
    assert.ok(!events.some((e) => e.type === "MESSAGES_SNAPSHOT"), "resumed by cursor, not by snapshot");
    // RUN_STARTED goes out as soon as the input is admitted, before it has its number
    // (docs/first-event.md); every later event has one.
    const seqs = events.slice(1).map((e) => e.metadata?.["gateway.seq"]);
    assert.equal(events[0].metadata?.["gateway.seq"], undefined);
    assert.ok(seqs.every((seq, i) => Number.isInteger(seq) && (i === 0 || seq > seqs[i - 1])), `${seqs}`);
    const said = events
      .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
      .map((e) => e.delta)
      .join("");
    assert.equal(said, assistantText(await threadOf(agent.threadId)), "every chunk once, none lost");
  } finally {
    agent.close();
  }
});

test("runAgent() across a cut builds the same reply the gateway stored", async () => {
  const agent = pageAgent();
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    const cut = nextEvent(agent, (event) => event.type === "TEXT_MESSAGE_CONTENT").then(() => CuttableSocket.cut());
    await agent.runAgent({ tools: TOOLS });
    await cut;
    const stored = await threadOf(agent.threadId);
    assert.ok(assistantText(stored).length > 100);
    assert.equal(assistantText(agent.messages), assistantText(stored));
  } finally {
    agent.close();
  }
});
