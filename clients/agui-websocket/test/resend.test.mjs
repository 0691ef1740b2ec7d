// An input written to a connection that drops, or to a page that reloads, before the gateway
// acknowledged it (its RUN_STARTED, or a RUN_DEDUPED notice) is sent again, with its runId,
// by the next connection after its reattach; once acknowledged, never again. The first part
// plays the gateway with a recording socket; the second runs against the real gateway,
// which runs a runId once per thread: one run, one reply, never none, never two.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ThreadConnection } from "../src/connection.js";
import { RecordingSocket } from "./recording_socket.mjs";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function page(storage, Socket = RecordingSocket) {
  const events = [];
  const client = new ThreadConnection({
    url: "ws://gateway.test/ws?user=demo",
    clientId: "tab-1",
    threadId: "thread-1",
    onEvent: (event) => events.push(event),
    onStatus: () => {},
    WebSocket: Socket,
    storage,
  });
  client.start();
  await tick(); // the socket opens; the reattach goes out
  return { client, events, socket: Socket.last };
}

const inputsOf = (socket) => socket.sent.filter((frame) => !frame.type);
const message = (text) => [{ id: `msg-${text}`, role: "user", content: text }];

test("an input not acknowledged is sent again, with its runId, after a reload", async () => {
  const storage = new Map();
  const first = await page(storage);
  const runId = first.client.startRun({ messages: message("hi") });
  assert.deepEqual(inputsOf(first.socket).map((input) => input.runId), [runId]);
  first.client.stop(); // the page goes away before anything came back

  const reloaded = await page(storage);
  const [reattach, ...rest] = reloaded.socket.sent;
  assert.equal(reattach.type, "reattach", "the reattach goes first");
  assert.deepEqual(rest.map((input) => [input.runId, input.messages[0].content]), [[runId, "hi"]]);
  reloaded.socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });
  reloaded.client.stop();

  const again = await page(storage);
  assert.deepEqual(inputsOf(again.socket), [], "acknowledged: never sent again");
  again.client.stop();
});

test("an input the gateway had already is acknowledged by its RUN_DEDUPED notice", async () => {
  const storage = new Map();
  const first = await page(storage);
  const runId = first.client.startRun({ messages: message("hi") });
  first.client.stop();
  const reloaded = await page(storage);
  assert.equal(inputsOf(reloaded.socket).length, 1);
  const notice = { code: "RUN_DEDUPED", message: "received already", runId };
  reloaded.socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId: "notice-1" });
  reloaded.socket.receive({ type: "CUSTOM", name: "gateway.notice", value: notice });
  reloaded.socket.receive({ type: "RUN_FINISHED", threadId: "thread-1", runId: "notice-1" });
  reloaded.client.stop();
  const again = await page(storage);
  assert.deepEqual(inputsOf(again.socket), []);
  again.client.stop();
});

test("an input whose run began is not sent again after a drop mid-run", async () => {
  const storage = new Map();
  const { client, socket } = await page(storage);
  const runId = client.startRun({ messages: message("hi") });
  socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });
  client.stop();
  const reloaded = await page(storage);
  assert.deepEqual(inputsOf(reloaded.socket), []);
  reloaded.client.stop();
});

test("without storage, and for a message typed into a live turn, nothing is kept", async () => {
  const none = await page(null);
  none.client.startRun({ messages: message("hi") });
  none.client.stop();
  const storage = new Map();
  const live = await page(storage);
  live.client.startRun({ messages: message("typed while talking"), kept: false });
  live.client.stop();
  assert.equal(storage.size, 0);
});

test("an input that is never acknowledged is given up after a few sends", async () => {
  const storage = new Map();
  const warn = console.warn;
  console.warn = () => {};
  try {
    (await page(storage)).client.startRun({ messages: message("hi") });
    const sends = [];
    for (let reload = 0; reload < 8; reload += 1) {
      const { client, socket } = await page(storage);
      sends.push(inputsOf(socket).length);
      client.stop();
    }
    assert.deepEqual(sends, [1, 1, 1, 1, 0, 0, 0, 0]);
  } finally {
    console.warn = warn;
  }
});
