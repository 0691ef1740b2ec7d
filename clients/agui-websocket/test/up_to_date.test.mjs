// A reattach by cursor that missed nothing, without a gateway: its UP_TO_DATE run ends
// listing the calls the thread still waits on (pendingToolCallIds), and the tab acts on
// them as on a snapshot's: a result it kept is sent again; a call it is performing is left
// to the pass that performs it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ThreadConnection } from "../src/connection.js";
import { ActionLedger } from "../src/ledger.js";
import { RecordingSocket } from "./recording_socket.mjs";

const CALL = { id: "call-1", name: "navigateToScreen", args: { screenId: "MNU-3120" } };
const RESULT = { status: "navigated" };

function connection(views) {
  const client = new ThreadConnection({
    url: "ws://gateway.test/ws?user=demo",
    clientId: "tab-1",
    threadId: "thread-1",
    onEvent: (event, run) => views.push([event, run]),
    onStatus: () => {},
    WebSocket: RecordingSocket,
  });
  client.start();
  return client;
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

/** The gateway's answer to a reattach that missed nothing, numbered with its cursor. */
function upToDate(socket, after, pending) {
  const runId = "notice-abc";
  const numbered = (event) => ({ ...event, metadata: { "gateway.seq": after } });
  socket.receive(numbered({ type: "RUN_STARTED", threadId: "thread-1", runId }));
  socket.receive(numbered({ type: "CUSTOM", name: "gateway.notice", value: { code: "UP_TO_DATE", message: "" } }));
  const outcome = { type: "success", ...(pending.length ? { pendingToolCallIds: pending } : {}) };
  socket.receive(numbered({ type: "RUN_FINISHED", threadId: "thread-1", runId, outcome }));
}

test("an answer whose run a crash cut before it was stored is sent again when the up-to-date reattach lists its call", async () => {
  const views = [];
  const ledger = new ActionLedger(new Map());
  const client = connection(views);
  await turn();
  const first = RecordingSocket.last;
  // The run that asked ended waiting on the call, numbered 7; the tab performed it.
  first.receive({ type: "RUN_FINISHED", threadId: "thread-1", runId: "run-1", metadata: { "gateway.seq": 7 } });
  ledger.started(CALL);
  ledger.performed(CALL.id, RESULT);
  const runId = client.startRun({ messages: [{ id: "m", role: "tool", toolCallId: CALL.id, content: "{}" }] });
  ledger.sent(CALL.id, runId);
  // Its early RUN_STARTED (no number) comes, then the gateway dies.
  first.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });
  first.dispatchEvent(Object.assign(new Event("close"), { code: 1006, reason: "" }));
  await new Promise((resolve) => setTimeout(resolve, 500)); // the first backoff, 300 ms +-20%

  const second = RecordingSocket.last;
  assert.notEqual(second, first);
  assert.deepEqual(second.sent[0], { type: "reattach", threadId: "thread-1", after: 7 });
  views.length = 0;
  upToDate(second, 7, [CALL.id]);
  const [, view] = views.at(-1);
  ledger.finished("notice-abc", view.pending);
  assert.deepEqual(view.pending, [CALL.id]);
  assert.deepEqual(ledger.plan(view), [{ kind: "resend", id: CALL.id, result: RESULT }]);
  client.stop();
});

test("a call the tab is performing is left to that pass, not called another client's", async () => {
  const views = [];
  const ledger = new ActionLedger(new Map());
  const client = connection(views);
  await turn();
  ledger.started(CALL); // its handler runs while the connection drops and comes back
  upToDate(RecordingSocket.last, 7, [CALL.id]);
  const [, view] = views.at(-1);
  assert.deepEqual(ledger.plan(view), []);
  // Another client's call, which this tab never began, is still named so.
  assert.deepEqual(ledger.plan({ ...view, pending: ["call-2"] }), [{ kind: "elsewhere", id: "call-2" }]);
  client.stop();
});
