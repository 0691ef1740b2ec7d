// The reconnect of agui-websocket's ThreadConnection (which the reference web client loads
// as it is) across a deploy: it starts a long reply on AGUI_GATEWAY_WS's thread AGUI_THREAD
// and prints, one JSON line each, the events it is given and the statuses it goes through,
// until it is open again after a close it did not ask for. tests/e2e/test_drain_reconnect.py
// restarts the gateway under it.
import { ThreadConnection } from "../../../clients/agui-websocket/src/connection.js";

const url = process.env.AGUI_GATEWAY_WS;
const threadId = process.env.AGUI_THREAD;
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");

let closedBy = null;
const connection = new ThreadConnection({
  url,
  clientId: "drain-test-tab",
  threadId,
  onEvent: (event) => say({ event: event.type, delta: event.delta, messages: event.messages }),
  onStatus: (state, detail) => {
    say({ status: state, code: detail.code, reason: detail.reason });
    if (state === "reconnecting" && detail.code !== undefined && closedBy === null) {
      closedBy = detail.code;
    }
    if (state === "open" && closedBy !== null) {
      connection.stop();
      process.exit(0);
    }
  },
});
connection.start();
connection.startRun({
  messages: [{ id: `msg-${Date.now()}`, role: "user", content: "자기소개를 길게 해 주세요" }],
});
setTimeout(() => {
  say({ gaveUp: true });
  process.exit(1);
}, Number(process.env.AGUI_GIVE_UP_MS ?? 120000)).unref();
