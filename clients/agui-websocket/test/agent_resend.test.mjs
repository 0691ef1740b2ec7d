// WebSocketAgent sends an input once and runs it once across drops and reloads, as the
// reference client does (src/inputs.js): kept until the gateway acknowledges it, it is sent
// again with its runId by the thread's next connection, and the gateway's RUN_DEDUPED
// notice (it had the input) is stitched into the run's stream, which shows that run and
// ends once; after a reload, the reloaded page's connect() shows the input's message and
// follows its run live (CopilotKit's connect is over by the next run). The first part plays
// the gateway with a recording socket; the last runs against the real gateway.
import assert from "node:assert/strict";
import { test } from "node:test";
import { WebSocketAgent } from "../index.js";
import {
  assertOfficiallyValid, assistantText, CuttableSocket, pageAgent, sleep, threadOf, TOOLS, userMessage,
} from "./gateway.mjs";
import { RecordingSocket } from "./recording_socket.mjs";

const THREAD = "thread-1";
const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
const inputsOf = (socket) => socket.sent.filter((frame) => !frame.type);

function recordedAgent(storage) {
  return new WebSocketAgent({
    url: "ws://gateway.test/ws?user=demo", clientId: "tab-1", threadId: THREAD, storage, WebSocket: RecordingSocket,
  });
}

function inputOf(text, runId = "run-1") {
  return {
    threadId: THREAD, runId, messages: [{ id: `msg-${runId}`, role: "user", content: text }],
    tools: [], context: [], state: {}, forwardedProps: {},
  };
}

/** Subscribes to ``agent.run(input)``: its events so far, and a promise of its end. */
function running(agent, input) {
  const events = [];
  const ended = new Promise((resolve, reject) =>
    agent.run(input).subscribe({ next: (event) => events.push(event), error: reject, complete: resolve }),
  );
  return { events, ended };
}

const notice = (runId) => ({
  type: "CUSTOM", name: "gateway.notice", value: { code: "RUN_DEDUPED", message: "received already", runId },
});
const finished = (runId) => ({ type: "RUN_FINISHED", threadId: THREAD, runId, outcome: { type: "success" } });
/** The gateway had run-1's input, and the run ended: it says so in a run of its own, then
 * shows the idle thread as a reattach does (in run ``snapshotRunId``); its messages. */
function foundEnded(socket, snapshotRunId) {
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "notice-1" });
  socket.receive(notice("run-1"));
  socket.receive(finished("notice-1"));
  const messages = [
    { id: "msg-run-1", role: "user", content: "hi" },
    { id: "m-1", role: "assistant", content: "안녕하세요" },
  ];
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: snapshotRunId });
  socket.receive({ type: "MESSAGES_SNAPSHOT", messages });
  socket.receive(finished(snapshotRunId));
  return messages;
}

const reply = (id, text) => [
  { type: "TEXT_MESSAGE_START", messageId: id, role: "assistant" },
  { type: "TEXT_MESSAGE_CONTENT", messageId: id, delta: text },
  { type: "TEXT_MESSAGE_END", messageId: id },
];

test("a WebSocketAgent's input not acknowledged is sent again, with its runId, after a reload", async () => {
  const storage = new Map();
  const page = recordedAgent(storage);
  running(page, inputOf("hi")).ended.catch(() => {});
  await turn();
  assert.deepEqual(inputsOf(RecordingSocket.last).map((input) => input.runId), ["run-1"]);
  page.close(); // the page goes away before anything came back

  const reloaded = recordedAgent(storage);
  reloaded.connect({ threadId: THREAD, runId: "connect-1", messages: [], tools: [], context: [], state: {} })
    .subscribe({ error: () => {} });
  await turn();
  const [reattach, ...rest] = RecordingSocket.last.sent;
  assert.equal(reattach.type, "reattach", "the reattach goes first");
  assert.deepEqual(rest.map((input) => [input.runId, input.messages[0].content]), [["run-1", "hi"]]);
  reloaded.close();
});

test("a run the gateway acknowledged early, then found it had, shows that run's reply and ends once", async () => {
  const agent = recordedAgent(new Map());
  const { events, ended } = running(agent, inputOf("hi"));
  await turn();
  const socket = RecordingSocket.last;
  // The copy's RUN_STARTED went out as it was admitted; the store then had its run.
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-1" });
  socket.receive(notice("run-1"));
  socket.receive(finished("run-1"));
  // The thread, as a reattach shows it: the run goes on, joined with its snapshot.
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-1" });
  socket.receive({ type: "MESSAGES_SNAPSHOT", messages: [{ id: "msg-run-1", role: "user", content: "hi" }] });
  for (const event of reply("m-1", "안녕하세요")) socket.receive(event);
  socket.receive(finished("run-1"));
  await ended;
  assert.deepEqual(events.filter((e) => e.type === "RUN_STARTED").length, 1);
  assert.equal(events.at(-1).type, "RUN_FINISHED");
  assert.deepEqual(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta), ["안녕하세요"]);
  await assertOfficiallyValid(events);
  agent.close();
});

test("a run whose input the gateway had, ended, shows the thread and ends as its run", async () => {
  const agent = recordedAgent(new Map());
  const { events, ended } = running(agent, inputOf("hi"));
  await turn();
  foundEnded(RecordingSocket.last, "snapshot-1");
  await ended;
  assert.deepEqual(events.map((e) => [e.type, e.runId]), [
    ["RUN_STARTED", "run-1"],
    ["CUSTOM", undefined],
    ["MESSAGES_SNAPSHOT", undefined],
    ["RUN_FINISHED", "run-1"],
  ]);
  await assertOfficiallyValid(events);
  agent.close();
});

/** The agent of a page that sent ``inputs`` and reloaded before anything came back. */
async function reloadedPage(inputs = [inputOf("hi")], storage = new Map()) {
  const page = recordedAgent(storage);
  for (const input of inputs) {
    running(page, input).ended.catch(() => {});
    await turn();
  }
  page.close();
  return recordedAgent(storage);
}

/** That reloaded page's connect() subscribed (its events, its end), and its socket. */
async function reloadedConnect(inputs, storage) {
  const reloaded = await reloadedPage(inputs, storage);
  const events = [];
  let done = false;
  const ended = new Promise((resolve, reject) =>
    reloaded.connect({ threadId: THREAD, runId: "connect-1", messages: [], tools: [], context: [], state: {} })
      .subscribe({ next: (event) => events.push(event), error: reject, complete: () => resolve((done = true)) }),
  );
  await turn();
  return { reloaded, events, ended, socket: RecordingSocket.last, isDone: () => done };
}

/** The reattach's answer: the thread as it stands, in a run of its own. */
function reattached(socket, messages = []) {
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "snapshot-1" });
  socket.receive({ type: "MESSAGES_SNAPSHOT", messages });
  socket.receive(finished("snapshot-1"));
}

test("after a reload, connect() follows the run of the input it sent again, live, and ends once", async () => {
  const { reloaded, events, ended, socket, isDone } = await reloadedConnect();
  reattached(socket);
  await turn();
  assert.equal(isDone(), false, "the connect waits for the input sent again");
  const shown = events.filter((e) => e.type === "MESSAGES_SNAPSHOT").at(-1);
  assert.deepEqual(shown.messages.map((m) => m.content), ["hi"], "its message is shown meanwhile");
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-1" });
  for (const event of reply("m-1", "안녕하세요")) socket.receive(event);
  socket.receive(finished("run-1"));
  await ended;
  assert.deepEqual(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta), ["안녕하세요"]);
  assert.deepEqual(events.filter((e) => e.type.startsWith("RUN_")).map((e) => [e.type, e.runId]), [
    ["RUN_STARTED", "snapshot-1"],
    ["RUN_FINISHED", "snapshot-1"],
  ]);
  await assertOfficiallyValid(events);
  reloaded.close();
});

test("after a reload, connect() follows each input it sent again that the thread does not show, in order", async () => {
  const sent = [inputOf("hi"), inputOf("again", "run-2"), inputOf("and again", "run-3")];
  const { reloaded, events, ended, socket, isDone } = await reloadedConnect(sent);
  // The first one arrived and ran: the thread shows it, so it is not waited for.
  reattached(socket, [
    { id: "msg-run-1", role: "user", content: "hi" },
    { id: "m-1", role: "assistant", content: "안녕하세요" },
  ]);
  await turn();
  const shown = events.filter((e) => e.type === "MESSAGES_SNAPSHOT").at(-1);
  assert.deepEqual(shown.messages.map((m) => m.content), ["hi", "안녕하세요", "again", "and again"]);
  for (const [runId, messageId, text] of [["run-2", "m-2", "또"], ["run-3", "m-3", "또 또"]]) {
    assert.equal(isDone(), false, `the connect waits for ${runId}`);
    socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId });
    for (const event of reply(messageId, text)) socket.receive(event);
    socket.receive(finished(runId));
    await turn();
  }
  await ended;
  assert.deepEqual(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta), ["또", "또 또"]);
  assert.deepEqual(events.filter((e) => e.type.startsWith("RUN_")).map((e) => [e.type, e.runId]), [
    ["RUN_STARTED", "snapshot-1"],
    ["RUN_FINISHED", "snapshot-1"],
  ]);
  await assertOfficiallyValid(events);
  reloaded.close();
});

/** The gateway's refusal of ``runId``'s input, naming it. */
const busy = (runId) => ({
  type: "RUN_ERROR", code: "SESSION_BUSY", message: "busy", metadata: { "gateway.runId": runId },
});

test("after a reload, connect() takes a refusal of an input it sent again as that input's end", async () => {
  const sent = [inputOf("hi"), inputOf("again", "run-2")];
  const storage = new Map();
  const { reloaded, events, ended, socket, isDone } = await reloadedConnect(sent, storage);
  const kept = () => JSON.parse(storage.get("agw.inputs") ?? "[]").map((entry) => entry.input.runId);
  reattached(socket);
  await turn();
  const shown = () => events.filter((e) => e.type === "MESSAGES_SNAPSHOT").at(-1).messages.map((m) => m.content);
  assert.deepEqual(shown(), ["hi", "again"]);
  socket.receive(busy("run-1")); // refused before any run: a lone RUN_ERROR
  await turn();
  assert.equal(isDone(), false, "the connect goes on to the next input sent again");
  assert.deepEqual(shown(), ["again"], "the refused input's message is no longer shown");
  assert.deepEqual(kept(), ["run-2"], "refused, it is not sent again by the next connection");
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-2" });
  for (const event of reply("m-2", "또")) socket.receive(event);
  socket.receive(finished("run-2"));
  await ended;
  assert.deepEqual(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta), ["또"]);
  assert.deepEqual(events.filter((e) => e.type.startsWith("RUN_")).map((e) => [e.type, e.runId]), [
    ["RUN_STARTED", "snapshot-1"],
    ["RUN_FINISHED", "snapshot-1"],
  ]);
  await assertOfficiallyValid(events);
  reloaded.close();
});

test("after a reload, one error refusing every input connect() sent again ends it, and keeps none", async () => {
  const sent = [inputOf("hi"), inputOf("again", "run-2")];
  const storage = new Map();
  const { reloaded, events, ended, socket } = await reloadedConnect(sent, storage);
  const kept = () => JSON.parse(storage.get("agw.inputs") ?? "[]").map((entry) => entry.input.runId);
  reattached(socket);
  await turn();
  // Both were refused at once (a full queue): one error names them, as one refusal does.
  socket.receive({
    type: "RUN_ERROR", code: "RATE_LIMIT_EXCEEDED", message: "2 frame(s) were refused.",
    metadata: { "gateway.runId": "run-1", "gateway.runIds": ["run-1", "run-2"] },
  });
  await ended;
  assert.deepEqual(events.at(-2).messages, [], "neither message is shown any more");
  assert.equal(events.at(-1).code, "RATE_LIMIT_EXCEEDED");
  assert.deepEqual(kept(), [], "refused, neither is sent again by the next connection");
  await assertOfficiallyValid(events);
  reloaded.close();
});

test("after a reload, a refusal of the last input connect() sent again ends it with that refusal", async () => {
  const { reloaded, events, ended, socket } = await reloadedConnect();
  reattached(socket);
  await turn();
  // Refused in a run of its own (the connection's stream had begun), as the gateway does.
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-1" });
  socket.receive(busy("run-1"));
  await ended;
  // The thread, then its message shown while it waits, then no longer.
  assert.deepEqual(events.map((e) => e.type), [
    "RUN_STARTED", "MESSAGES_SNAPSHOT", "MESSAGES_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_ERROR",
  ]);
  assert.deepEqual(events.at(-3).messages.map((m) => m.content), ["hi"]);
  assert.deepEqual(events.at(-2).messages, [], "its message is no longer shown");
  assert.equal(events.at(-1).code, "SESSION_BUSY");
  await assertOfficiallyValid(events);
  reloaded.close();
});

test("a run() waiting for its input's start does not take another input's refusal for its own", async () => {
  const agent = recordedAgent(new Map());
  const { events, ended } = running(agent, inputOf("again", "run-2"));
  let done = false;
  ended.then(() => (done = true));
  await turn();
  const socket = RecordingSocket.last;
  socket.receive(busy("run-1")); // of an input sent before, alone
  await turn();
  assert.equal(done, false);
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-2" });
  socket.receive(finished("run-2"));
  await ended;
  assert.deepEqual(events.map((e) => e.type), ["RUN_STARTED", "RUN_FINISHED"]);
  agent.close();
});

test("after a reload, connectAgent() puts the reply of the input sent again in the agent's messages", async () => {
  const reloaded = await reloadedPage();
  const connected = reloaded.connectAgent({});
  await turn();
  const socket = RecordingSocket.last;
  reattached(socket);
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "run-1" });
  for (const event of reply("m-1", "안녕하세요")) socket.receive(event);
  socket.receive(finished("run-1"));
  await connected;
  assert.deepEqual(reloaded.messages.map((m) => [m.role, m.content]), [["user", "hi"], ["assistant", "안녕하세요"]]);
  reloaded.close();
});

test("after a reload, connect() does not wait for an input the thread shows arrived", async () => {
  const { reloaded, events, ended, socket } = await reloadedConnect();
  reattached(socket, [
    { id: "msg-run-1", role: "user", content: "hi" },
    { id: "m-1", role: "assistant", content: "안녕하세요" },
  ]);
  await ended;
  assert.deepEqual(events.map((e) => e.type), ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
  reloaded.close();
});

test("after a reload, a connect() waiting for an input the gateway had shows the thread and ends once", async () => {
  const { reloaded, events, ended, socket } = await reloadedConnect();
  reattached(socket);
  const messages = foundEnded(socket, "snapshot-2"); // the copy was found run meanwhile
  await ended;
  assert.deepEqual(events.filter((e) => e.type === "MESSAGES_SNAPSHOT").at(-1).messages, messages);
  assert.equal(events.filter((e) => e.type === "RUN_STARTED").length, 1);
  assert.equal(events.at(-1).type, "RUN_FINISHED");
  await assertOfficiallyValid(events);
  reloaded.close();
});

/** A WebSocket whose frames never reach the gateway: the page goes away before they do. */
class UnsentSocket extends CuttableSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.blackHole = true;
  }
}

test("an input lost with its page is run once by the page that reloads", async () => {
  const storage = new Map();
  const first = pageAgent({ storage, WebSocket: UnsentSocket });
  const { threadId } = first;
  const message = userMessage("안녕");
  const input = { threadId, runId: "run-lost", messages: [message], tools: TOOLS, context: [], state: {}, forwardedProps: {} };
  first.run(input).subscribe({ error: () => {} });
  while (!storage.has("agw.inputs")) await sleep(10);
  await sleep(200); // written (to nowhere) after the reattach
  first.close();

  const reloaded = pageAgent({ storage, threadId });
  try {
    await reloaded.connectAgent({ tools: TOOLS });
    // The reloaded page's connect followed the run it sent again: the reply is on it.
    assert.ok(assistantText(reloaded.messages), "the reply reached the page that resent the input");
    let messages = [];
    for (let look = 0; look < 100 && !assistantText(messages); look += 1) {
      await sleep(100);
      messages = await threadOf(threadId);
    }
    assert.deepEqual(messages.filter((m) => m.role === "user").map((m) => m.id), [message.id]);
    assert.ok(assistantText(messages), "the input the first page lost ran");
    assert.equal(messages.filter((m) => m.role === "assistant" && m.content).length, 1);
  } finally {
    reloaded.close();
  }
});
