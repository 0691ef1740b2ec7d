// GatewayHttpAgent: the stock HttpAgent on POST /invocations with a connect() (the resumable
// GET /invocations), a Stop that is the explicit cancel, and the exactly-once ledger.
// restoreThread: the thread shown after a reload by a page that keeps a stock HttpAgent.
// (A reload after the handler returned: exactly_once.test.mjs, for both agents.)
import { HttpAgent } from "@ag-ui/client";
import assert from "node:assert/strict";
import { test } from "node:test";
import { restoreThread } from "../index.js";
import {
  addResult, askToNavigate, assistantText, handedCalls, httpPageAgent, INVOCATIONS, LONG_REPLY, NAVIGATE, NAVIGATED,
  nextEvent, resultsFor, threadOf, TOOLS, USER_HEADERS, userMessage,
} from "./gateway.mjs";

const LAST_WORDS = "무엇을 도와드릴까요?";

test("a call is handed out once, recorded started, and its result reaches the gateway", async () => {
  const agent = httpPageAgent();
  try {
    const call = await askToNavigate(agent);
    assert.equal(agent.ledger.get(call.id).state, "started");
    addResult(agent, call, NAVIGATED);
    const after = await agent.runAgent({ tools: TOOLS });
    assert.match(assistantText(after.newMessages), /이동했습니다/);
    assert.deepEqual(handedCalls(after), []);
    assert.equal(resultsFor(await threadOf(agent.threadId), call.id).length, 1);
    assert.equal(agent.ledger.get(call.id).state, "acknowledged");
  } finally {
    agent.close();
  }
});

test("a reload while the handler ran: connect() asks settle, and another client is never asked", async () => {
  const storage = new Map();
  const page = httpPageAgent({ storage });
  const call = await askToNavigate(page);
  page.close();
  const other = httpPageAgent({
    threadId: page.threadId,
    settle: () => assert.fail("not this client's call"),
    perform: () => assert.fail("not this client's call"),
  });
  const seen = handedCalls(await other.connectAgent({ tools: TOOLS }));
  other.close();
  assert.deepEqual(seen, [], "another client is handed nothing");
  const settled = [];
  const reloaded = httpPageAgent({
    storage,
    threadId: page.threadId,
    settle: (found) => {
      settled.push(found);
      return NAVIGATED;
    },
  });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    assert.deepEqual(settled.map(({ id, args }) => [id, args.screenId]), [[call.id, "MNU-3120"]]);
    assert.match(assistantText(reloaded.messages), /이동했습니다/);
  } finally {
    reloaded.close();
  }
});

test("a reload mid-reply stops nothing: connect() follows the run to its last words", async () => {
  const storage = new Map();
  const page = httpPageAgent({ storage });
  page.addMessage(userMessage(LONG_REPLY));
  const replying = nextEvent(page, (event) => event.type === "TEXT_MESSAGE_CONTENT");
  const running = page.runAgent({ tools: TOOLS }).catch(() => null);
  await replying;
  page.close(); // the page goes away mid-reply: its request is aborted
  await running;
  const reloaded = httpPageAgent({ storage, threadId: page.threadId });
  const seen = [];
  reloaded.subscribe({ onEvent: ({ event }) => seen.push(event.type) });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    assert.equal(seen[0], "RUN_STARTED");
    assert.equal(seen.at(-1), "RUN_FINISHED");
    assert.ok(seen.filter((type) => type === "TEXT_MESSAGE_CONTENT").length > 10, "it followed the run live");
    assert.ok(assistantText(reloaded.messages).endsWith(LAST_WORDS));
    const stored = (await threadOf(page.threadId)).at(-1);
    assert.equal(stored.metadata?.ended, undefined, "the reply was not stopped");
    assert.equal(page.messages.at(-1).metadata?.ended, undefined, "a reload is no Stop");
  } finally {
    reloaded.close();
  }
});

test("Stop is the explicit cancel: the reply stays, marked stopped, and the thread goes on", async () => {
  const agent = httpPageAgent();
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    const replying = nextEvent(agent, (event) => event.type === "TEXT_MESSAGE_CONTENT");
    const running = agent.runAgent({ tools: TOOLS }).catch(() => null);
    await replying;
    agent.abortRun();
    await running;
    let stored;
    for (let tries = 0; tries < 100; tries += 1) {
      stored = (await threadOf(agent.threadId)).at(-1);
      if (stored?.metadata?.ended) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(stored.metadata?.ended, "stopped");
    assert.ok(!stored.content.endsWith(LAST_WORDS));
    const shown = agent.messages.findLast((m) => m.role === "assistant");
    assert.equal(shown.metadata?.ended, "stopped", "the page's copy is marked as the thread's is");
    assert.ok(stored.content.startsWith(shown.content));
    agent.addMessage(userMessage(NAVIGATE));
    const next = await agent.runAgent({ tools: TOOLS });
    assert.equal(handedCalls(next).length, 1, "the thread took the next message");
  } finally {
    agent.close();
  }
});

test("restoreThread: a stock HttpAgent shows the thread on CopilotKit's connect after a reload", async () => {
  const page = httpPageAgent();
  page.addMessage(userMessage(LONG_REPLY));
  await page.runAgent({ tools: TOOLS });
  page.close();
  const stock = restoreThread(new HttpAgent({ url: INVOCATIONS, headers: USER_HEADERS, threadId: page.threadId }));
  stock.setMessages([]); // CopilotKit empties the chat, then connects
  await stock.connectAgent({ tools: TOOLS });
  assert.deepEqual(stock.messages.map((message) => message.role), ["user", "assistant"]);
  assert.ok(assistantText(stock.messages).endsWith(LAST_WORDS));
});

test("a stream that breaks mid-reply resumes by Last-Event-ID: the run goes on, nothing missed or repeated", async () => {
  let broken = false;
  const resumed = [];
  // The network drops the run's response once some text came; the resume is let through.
  const breaking = async (url, init) => {
    if (init.method === "GET") resumed.push(new Headers(init.headers).get("Last-Event-ID"));
    const response = await fetch(url, init);
    if (init.method !== "POST" || broken || !String(init.body).includes(LONG_REPLY)) return response;
    broken = true;
    const reader = response.body.getReader();
    let seen = "";
    // The response as @ag-ui/client reads it; its read fails once some text came, as a
    // dropped connection's does (and letting go of it then is quiet).
    const cut = {
      async read() {
        if (seen.includes("TEXT_MESSAGE_CONTENT")) {
          await reader.cancel();
          throw new TypeError("network error");
        }
        const chunk = await reader.read();
        if (chunk.value) seen += new TextDecoder().decode(chunk.value);
        return chunk;
      },
      cancel: async () => {},
    };
    return { ok: response.ok, status: response.status, headers: response.headers, body: { getReader: () => cut } };

  };
  const agent = httpPageAgent({ fetch: breaking });
  try {
    agent.addMessage(userMessage(LONG_REPLY));
    const events = [];
    await agent.runAgent({ tools: TOOLS }, { onEvent: ({ event }) => void events.push(event) });
    assert.ok(broken);
    assert.equal(resumed.length, 1);
    assert.match(resumed[0], /^\d+$/);
    const seqs = events.map((event) => event.metadata?.["gateway.seq"]).filter(Number.isSafeInteger);
    assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), "each event once, in order");
    assert.equal(events.filter((event) => event.type === "RUN_STARTED").length, 1);
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    const stored = (await threadOf(agent.threadId)).at(-1);
    assert.equal(assistantText(agent.messages), stored.content);
    assert.ok(stored.content.endsWith(LAST_WORDS));
  } finally {
    agent.close();
  }
});
