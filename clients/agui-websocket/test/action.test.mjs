// A press on an A2UI surface as the connection sends it, without a gateway: the input the
// contract (docs/a2ui.md, "Up: a user action") shows, and the run marked as this tab's own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ThreadConnection } from "../src/connection.js";
import { RecordingSocket } from "./recording_socket.mjs";

function connection(events = []) {
  const statuses = [];
  const client = new ThreadConnection({
    url: "ws://gateway.test/ws?user=demo",
    clientId: "tab-1",
    threadId: "thread-1",
    onEvent: (event, run) => events.push([event, run]),
    onStatus: (state) => statuses.push(state),
    WebSocket: RecordingSocket,
  });
  client.start();
  return client;
}

test("startUserAction() sends the action in forwardedProps.a2uiAction.userAction, with no message", async () => {
  const client = connection();
  await new Promise((resolve) => setTimeout(resolve, 0));
  const socket = RecordingSocket.last;
  const capabilities = { description: "a2uiClientCapabilities", value: '{"supportedCatalogIds": []}' };

  const runId = client.startUserAction(
    { name: "approve", surfaceId: "work-request-R-1042", sourceComponentId: "approve", context: { requestId: "R-1042" } },
    { tools: [{ name: "navigateToScreen" }], context: [capabilities] },
  );

  const input = socket.sent.at(-1);
  assert.equal(input.runId, runId);
  assert.equal(input.threadId, "thread-1");
  assert.deepEqual(input.messages, []);
  assert.deepEqual(input.context, [capabilities]);
  assert.deepEqual(input.tools, [{ name: "navigateToScreen" }]);
  const { userAction } = input.forwardedProps.a2uiAction;
  assert.deepEqual(
    { ...userAction, timestamp: undefined },
    { name: "approve", surfaceId: "work-request-R-1042", sourceComponentId: "approve", context: { requestId: "R-1042" }, timestamp: undefined },
  );
  assert.ok(!Number.isNaN(Date.parse(userAction.timestamp)), `an ISO time: ${userAction.timestamp}`);
  client.stop();
});

test("the run an action starts is this tab's own, as a typed message's is", async () => {
  const events = [];
  const client = connection(events);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const socket = RecordingSocket.last;

  const runId = client.startUserAction({ name: "reject", surfaceId: "card", sourceComponentId: "reject" });
  socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });

  const [[event, run]] = events;
  assert.equal(event.runId, runId);
  assert.equal(run.own, true);
  assert.deepEqual(socket.sent.at(-1).forwardedProps.a2uiAction.userAction.context, {});
  client.stop();
});

test("an action pressed while the socket is down waits for the next connection", async () => {
  const client = connection();
  client.startUserAction({ name: "approve", surfaceId: "card", sourceComponentId: "approve" });
  await new Promise((resolve) => setTimeout(resolve, 0));

  const [reattach, input] = RecordingSocket.last.sent;
  assert.equal(reattach.type, "reattach");
  assert.equal(input.forwardedProps.a2uiAction.userAction.name, "approve");
  client.stop();
});
