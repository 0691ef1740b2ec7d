// The exactly-once client-tool ledger, on CopilotKit's path: a run hands the app a call in
// newMessages, the app performs it and runs again with the tool message.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  addResult, askToNavigate, assistantText, CuttableSocket, handedCalls, httpPageAgent, NAVIGATE, NAVIGATED, pageAgent,
  resultsFor, sleep, threadOf, TOOLS, userMessage,
} from "./gateway.mjs";

test("a call is recorded before the app runs it, and its result reaches the gateway once across a drop", async () => {
  const agent = pageAgent();
  try {
    const call = await askToNavigate(agent);
    assert.equal(agent.ledger.get(call.id).state, "started");
    let performed = 1; // the app's tool ran
    addResult(agent, call, NAVIGATED);
    CuttableSocket.cut(300); // the result goes into a socket that looks open and is dead
    const after = await agent.runAgent({ tools: TOOLS });
    assert.match(assistantText(after.newMessages), /이동했습니다/);
    assert.deepEqual(handedCalls(after), []);
    const stored = await threadOf(agent.threadId);
    assert.equal(resultsFor(stored, call.id).length, 1);
    assert.equal(agent.ledger.get(call.id).state, "acknowledged");
    assert.equal(performed, 1);
  } finally {
    agent.close();
  }
});

// The same for both agents: the transcript records the result as the app adds it.
for (const [agentName, makeAgent] of [["WebSocketAgent", pageAgent], ["GatewayHttpAgent", httpPageAgent]]) {
  test(`${agentName}: a reload after the handler returned, before its result went out: the result is sent, no settle`, async () => {
    const storage = new Map();
    const page = makeAgent({ storage });
    const call = await askToNavigate(page);
    addResult(page, call, NAVIGATED); // the handler returned: CopilotKit adds its tool message
    assert.equal(page.ledger.get(call.id).state, "performed", "recorded as it was added");
    page.close(); // the reload comes before CopilotKit's follow-up run
    const reloaded = makeAgent({
      storage,
      threadId: page.threadId,
      settle: () => assert.fail("the handler's result was kept: nothing to settle"),
      perform: () => assert.fail("the call was performed before the reload"),
    });
    try {
      assert.equal(await reloaded.clientId, await page.clientId, "a reload keeps the client instance");
      await reloaded.connectAgent({ tools: TOOLS });
      assert.match(assistantText(reloaded.messages), /이동했습니다/);
      const stored = resultsFor(await threadOf(page.threadId), call.id);
      assert.deepEqual(stored.map((message) => JSON.parse(message.content)), [NAVIGATED]);
    } finally {
      reloaded.close();
    }
  });
}

test("a reload while the handler runs, before it returned: settle answers it", async () => {
  const storage = new Map();
  const page = pageAgent({ storage });
  const call = await askToNavigate(page);
  page.close(); // CopilotKit's handler had begun; the page reloads before it returns
  const settled = [];
  const reloaded = pageAgent({
    storage,
    threadId: page.threadId,
    settle: (found) => {
      settled.push(found);
      return NAVIGATED;
    },
    perform: () => assert.fail("a call begun before the reload is never performed again"),
  });
  try {
    assert.equal(await reloaded.clientId, await page.clientId, "a reload keeps the client instance");
    await reloaded.connectAgent({ tools: TOOLS });
    assert.deepEqual(settled.map(({ id, name, args }) => [id, name, args.screenId]), [[call.id, "navigateToScreen", "MNU-3120"]]);
    assert.match(assistantText(reloaded.messages), /이동했습니다/);
    assert.equal(resultsFor(await threadOf(page.threadId), call.id).length, 1);
  } finally {
    reloaded.close();
  }
});

test("a reload after the result went into a dead socket: the kept result is sent again, once", async () => {
  const storage = new Map();
  const page = pageAgent({ storage });
  const call = await askToNavigate(page);
  addResult(page, call, NAVIGATED);
  CuttableSocket.cut(60_000);
  void page.runAgent({ tools: TOOLS });
  await sleep(200);
  page.close();
  assert.equal(page.ledger.get(call.id).state, "performed");
  const reloaded = pageAgent({
    storage,
    threadId: page.threadId,
    settle: () => assert.fail("the ledger holds the result"),
    perform: () => assert.fail("the call was performed before the reload"),
  });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    assert.match(assistantText(reloaded.messages), /이동했습니다/);
    const stored = await threadOf(page.threadId);
    assert.equal(resultsFor(stored, call.id).length, 1);
    assert.deepEqual(JSON.parse(resultsFor(stored, call.id)[0].content), NAVIGATED);
    assert.equal(reloaded.ledger.get(call.id).state, "acknowledged");
  } finally {
    reloaded.close();
  }
});

test("a reload before the call was made: the reattached page is its executor and performs it once", async () => {
  const storage = new Map();
  const page = pageAgent({ storage });
  page.addMessage(userMessage(NAVIGATE));
  // The page goes at find_screen's start, navigateToScreen still to come. Closed at the
  // socket: an agent told of events later than it was sent them could else have been
  // handed the call already, and then the reload rightly settles it instead.
  const searching = CuttableSocket.closeAfter((data) => data.includes('"TOOL_CALL_START"'));
  void page.runAgent({ tools: TOOLS });
  await searching;
  page.close();
  const performed = [];
  const reloaded = pageAgent({
    storage,
    threadId: page.threadId,
    perform: (call) => {
      performed.push(call);
      return NAVIGATED;
    },
    settle: () => assert.fail("this page never began the call"),
  });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    assert.deepEqual(performed.map((call) => call.name), ["navigateToScreen"]);
    assert.match(assistantText(reloaded.messages), /이동했습니다/);
    assert.equal(resultsFor(await threadOf(page.threadId), performed[0].id).length, 1);
  } finally {
    reloaded.close();
  }
});

test("another client instance on the thread is never handed the call and never answers it", async () => {
  const owner = pageAgent();
  const other = pageAgent({
    threadId: owner.threadId,
    settle: () => assert.fail("not this client's call"),
    perform: () => assert.fail("not this client's call"),
  });
  try {
    const call = await askToNavigate(owner);
    const seen = await other.connectAgent({ tools: TOOLS });
    assert.notEqual(await other.clientId, await owner.clientId);
    assert.deepEqual(handedCalls(seen), []);
    assert.ok(other.messages.some((m) => m.toolCalls?.some((c) => c.id === call.id)), "it still shows the call");
    assert.equal(other.ledger.get(call.id), undefined);
    assert.equal(resultsFor(await threadOf(owner.threadId), call.id).length, 0, "nobody answered for the owner");
    addResult(owner, call, NAVIGATED);
    const after = await owner.runAgent({ tools: TOOLS });
    assert.match(assistantText(after.newMessages), /이동했습니다/);
  } finally {
    owner.close();
    other.close();
  }
});
