// WebSocketAgent sends an input once and runs it once across drops and reloads, as the
// reference client does (src/inputs.js): kept until the gateway acknowledges it, it is sent
// again with its runId by the thread's next connection, and the gateway's RUN_DEDUPED
// notice (it had the input) is stitched into the run's stream, which shows that run and
// ends once. The first part plays the gateway with a recording socket; the last runs
// against the real gateway.
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
  const socket = RecordingSocket.last;
  // Told in a run of its own, then the idle thread as a reattach shows it.
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "notice-1" });
  socket.receive(notice("run-1"));
  socket.receive(finished("notice-1"));
  const messages = [
    { id: "msg-run-1", role: "user", content: "hi" },
    { id: "m-1", role: "assistant", content: "안녕하세요" },
  ];
  socket.receive({ type: "RUN_STARTED", threadId: THREAD, runId: "snapshot-1" });
  socket.receive({ type: "MESSAGES_SNAPSHOT", messages });
  socket.receive(finished("snapshot-1"));
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
