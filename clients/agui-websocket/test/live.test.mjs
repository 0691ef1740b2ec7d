// A live (voice) turn as the connection carries it, without a gateway (the gateway's
// docs/voice.md): liveStart marks the turn as this tab's run, audio goes up as binary frames
// and comes down to onBinary alone, never to onEvent as an AG-UI event.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ThreadConnection } from "../src/connection.js";
import { RecordingSocket } from "./recording_socket.mjs";

async function opened() {
  const events = [];
  const frames = [];
  const client = new ThreadConnection({
    url: "ws://gateway.test/ws?user=demo",
    clientId: "tab-1",
    threadId: "thread-1",
    onEvent: (event, run) => events.push([event, run]),
    onStatus: () => {},
    onBinary: (frame) => frames.push(frame),
    WebSocket: RecordingSocket,
  });
  assert.equal(client.startLive(), null, "no turn without an open connection");
  client.start();
  await new Promise((resolve) => setTimeout(resolve, 0));
  return { client, socket: RecordingSocket.last, events, frames };
}

test("startLive() opens the turn as this tab's run; audio goes up as it is", async () => {
  const { client, socket, events } = await opened();
  const tools = [{ name: "navigateToScreen" }];
  const runId = client.startLive({ tools });
  assert.deepEqual(socket.sent.at(-1), { type: "liveStart", threadId: "thread-1", runId, tools });

  socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });
  assert.equal(events.at(-1)[1].own, true);
  const frame = new Uint8Array([1, 1, 0, 0, 7, 0]);
  assert.equal(client.sendBinary(frame), true);
  assert.equal(socket.sent.at(-1), frame);

  const message = { id: "tool-1", role: "tool", toolCallId: "call-1", content: "{}" };
  client.liveToolResult(message);
  assert.deepEqual(socket.sent.at(-1), { type: "liveToolResult", threadId: "thread-1", message });
  const resume = [{ interruptId: "adk-1", status: "resolved", payload: { approved: true } }];
  assert.equal(client.liveResume(resume), true);
  assert.deepEqual(socket.sent.at(-1), { type: "liveResume", threadId: "thread-1", resume });
  client.stopLive();
  assert.deepEqual(socket.sent.at(-1), { type: "liveStop", threadId: "thread-1" });
});

test("audio out reaches onBinary alone, and the event stream goes on around it", async () => {
  const { client, socket, events, frames } = await opened();
  assert.equal(socket.binaryType, "arraybuffer");
  const runId = client.startLive();
  socket.receive({ type: "RUN_STARTED", threadId: "thread-1", runId });
  socket.receiveBinary(new Uint8Array([2, 1, 0, 3, 1, 0, 2, 0]));
  socket.receive({ type: "RUN_FINISHED", threadId: "thread-1", runId });

  assert.deepEqual(
    events.map(([event]) => event.type),
    ["RUN_STARTED", "RUN_FINISHED"],
  );
  assert.equal(frames.length, 1);
  assert.equal(new DataView(frames[0]).getUint16(2), 3);
});
