// The AG-UI 1.0 client over the gateway's /ws: one WebSocket per thread, reconnect with
// backoff, reattach. Browser-safe and dependency-free: the reference web client imports it
// as it is, and the package's WebSocketAgent (index.js) sits on it.
//
// Who executes a client-tool call: the tab whose input started the run. The tab names
// itself on every connection (`clientId`, the same across its reloads), and a call is handed
// out for execution only when the run is this tab's: this connection sent its input and
// received the call live, or the gateway said so on reattach (CUSTOM `gateway.executor`,
// naming the calls made before this connection came; their arguments come from the
// snapshot). Calls of another tab's runs are never handed out (runs.js reads each run so).
// That a call handed out is performed once, across reloads, is the ledger's job (ledger.js).
//
// Reattach by cursor: every event of the thread carries its number in the thread's log
// (`metadata["gateway.seq"]`). A connection that drops mid-run reattaches with the last
// number seen (`{"type": "reattach", "after": N}`): the run's stream goes on where it left
// off, with this connection's view of the run carried over, and the reconnect says so
// (`resuming` on the "reconnecting" status). Between runs, and when the gateway cannot
// answer the cursor, the reattach is the snapshot as before, which tells the ledger what
// the thread holds.
//
// An input is never lost to a drop or a reload, and never runs twice (with ``storage``):
// kept until the gateway acknowledges it (its RUN_STARTED, a RUN_DEDUPED notice naming
// it, or a refusal naming it that sending it again elsewhere would not undo), it is sent
// again, with its runId, by every new connection of its thread after the reattach
// (inputs.js); the gateway runs a runId once per thread.

import { newId } from "./ids.js";
import { SentInputs } from "./inputs.js";
import { asStorage } from "./ledger.js";
import { refusedRunIds, RunWatch } from "./runs.js";

const BACKOFF_MS = [300, 1000, 2000, 4000, 8000];
const OPEN = 1; // WebSocket.OPEN, whichever WebSocket class is in use

export class ThreadConnection {
  /**
   * @param {object} options
   * @param {string} options.url        ws:// URL (with ?user= in the gateway's dev mode)
   * @param {string} options.clientId   this tab's identity, kept across its reloads
   * @param {string} options.threadId
   * @param {(event: object, run: RunView) => void} options.onEvent
   * @param {(state: "connecting"|"syncing"|"open"|"reconnecting", detail: object) => void} options.onStatus
   *   "open" comes once the thread's snapshot (the answer to reattach) has arrived; a run
   *   in progress when the connection drops goes on without it, and the reattach shows it.
   * @param {typeof WebSocket} [options.WebSocket]  the WebSocket class (the global one by default)
   * @param {(frame: ArrayBuffer) => void} [options.onBinary]  a binary frame: audio out of a
   *   live turn this connection opened (docs/voice.md); none arrives before `startLive`
   * @param {Storage|Map<string,string>|null} [options.storage]  where inputs the gateway has
   *   not acknowledged are kept, to be sent again after a drop or a reload (sessionStorage
   *   in a browser); none: an input written to a connection that drops is not sent again
   */
  constructor({ url, clientId, threadId, onEvent, onStatus, WebSocket = globalThis.WebSocket, onBinary = () => {}, storage = null }) {
    const withId = new URL(url, globalThis.location?.href);
    // A URL relative to the page comes out http(s):, which not every WebSocket takes.
    withId.protocol = withId.protocol.replace(/^http/, "ws");
    withId.searchParams.set("clientId", clientId);
    this.url = withId.href;
    this.Socket = WebSocket;
    this.threadId = threadId;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.onBinary = onBinary;
    this.connection = null;
    this.outbox = [];
    this.attempts = 0;
    this.retryTimer = null;
    this.stopped = false;
    // The highest log number seen on this thread, and the run a reconnect carries on.
    this.cursor = null;
    this.carried = null;
    this.inputs = storage ? new SentInputs(asStorage(storage)) : null;
  }

  start() {
    this.stopped = false;
    this.#connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.connection?.socket.close(1000);
    this.connection = null;
  }

  /** Moves to another thread on a fresh connection, so no event of the old one mixes in. */
  switchThread(threadId) {
    this.threadId = threadId;
    this.outbox = [];
    this.cursor = null;
    this.carried = null;
    this.stop();
    this.start();
  }

  /** Sends a RunAgentInput on the current thread; returns its runId. ``kept``: false for
   * one that starts no run (typed into a live turn), which nothing acknowledges. */
  startRun({ messages = [], tools = [], context = [], resume = undefined, forwardedProps = {}, kept = true }) {
    const input = {
      threadId: this.threadId,
      runId: newId("run"),
      // AG-UI 1.0's declaration: without it the gateway answers as to a 0.0.x client.
      protocolVersion: "1.0",
      messages,
      tools,
      context,
      state: {},
      forwardedProps,
    };
    if (resume) input.resume = resume;
    this.#send(input, { kept });
    return input.runId;
  }

  /**
   * Sends a person's action on an A2UI surface (a Button press) as the thread's next input,
   * as the AG-UI A2UI middleware carries it: no new message, the action in
   * `forwardedProps.a2uiAction.userAction`. The gateway checks it against the surface as
   * the thread holds it and decides what it means. Returns the input's runId.
   * @param {{name: string, surfaceId: string, sourceComponentId: string, timestamp?: string,
   *          context?: Record<string, unknown>}} userAction
   */
  startUserAction(userAction, { messages = [], tools = [], context = [] } = {}) {
    const action = { timestamp: new Date().toISOString(), context: {}, ...userAction };
    return this.startRun({ messages, tools, context, forwardedProps: { a2uiAction: { userAction: action } } });
  }

  /** Sends a whole RunAgentInput (its runId marks the run as this connection's own); one
   * sent while no connection is open waits for the next. Whether it was written now.
   * ``kept``: false for one not kept until acknowledged (``startRun``'s). */
  send(input, { kept = true } = {}) {
    return this.#send(input, { kept });
  }

  /** Stops the run this connection follows, by its id, so a Stop that arrives after that
   * run ended cannot stop the thread's next one; following none, whatever run it has. */
  cancel() {
    const runId = this.connection?.watch.run?.runId ?? this.carried?.run?.runId;
    this.#send({ type: "cancel", threadId: this.threadId, ...(runId ? { runId } : {}) });
  }

  /** Opens a live (voice) turn on the thread with these client tools; returns its runId.
   * Not queued while no connection is open: a turn is for now or never. */
  startLive({ tools = [] } = {}) {
    const runId = newId("run");
    return this.#send({ type: "liveStart", threadId: this.threadId, runId, tools }) ? runId : null;
  }

  /** Ends the thread's live turn: the gateway finishes its transcripts, then the run. */
  stopLive() {
    this.#send({ type: "liveStop", threadId: this.threadId });
  }

  /** Answers a client call of the live turn with its AG-UI tool message. */
  liveToolResult(message) {
    return this.#send({ type: "liveToolResult", threadId: this.threadId, message });
  }

  /** Answers the approvals a live turn asked (`gateway.live.approval`) with a RunAgentInput's
   * `resume` entries; acts at once. Whether it was written. */
  liveResume(resume) {
    return this.#send({ type: "liveResume", threadId: this.threadId, resume });
  }

  /** Writes a binary frame (audio in) if a connection is open; whether it was written. */
  sendBinary(frame) {
    const socket = this.connection?.socket;
    if (!socket || socket.readyState !== OPEN) return false;
    socket.send(frame);
    return true;
  }

  /** Asks for the thread's snapshots again (a run of another tab may have added messages). */
  reattach() {
    this.#send({ type: "reattach", threadId: this.threadId });
  }

  #connect() {
    const socket = new this.Socket(this.url);
    socket.binaryType = "arraybuffer";
    // Everything that makes a run "ours" belongs to one connection and dies with it, but
    // for a run a reattach by cursor carries on.
    const carried = this.carried;
    this.carried = null;
    const connection = { socket, watch: new RunWatch(carried ?? {}), synced: false };
    this.connection = connection;
    this.onStatus(this.attempts ? "reconnecting" : "connecting", {});
    socket.addEventListener("open", () => {
      if (this.connection !== connection) return;
      this.attempts = 0;
      this.onStatus("syncing", {});
      const reattach = { type: "reattach", threadId: this.threadId };
      if (carried) reattach.after = this.cursor;
      socket.send(JSON.stringify(reattach));
      const queued = this.outbox.splice(0);
      for (const frame of queued) this.#send(frame);
      // Written before, never acknowledged: it may have gone down with the last socket.
      for (const input of this.inputs?.toResend(this.threadId) ?? []) this.#send(input);
    });
    socket.addEventListener("message", (message) => {
      if (this.connection !== connection) return;
      if (typeof message.data !== "string") {
        this.onBinary(message.data);
        return;
      }
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        console.warn("ignoring a frame that is not JSON", message.data);
        return;
      }
      const seq = event?.metadata?.["gateway.seq"];
      if (Number.isSafeInteger(seq) && seq > (this.cursor ?? -1)) this.cursor = seq;
      this.#dispatch(connection, event);
    });
    const lost = (code, reason) => {
      if (this.connection !== connection) return;
      this.connection = null;
      if (this.stopped) return;
      // Cut off mid-run with a cursor: the next connection goes on from it.
      const resuming = connection.watch.run !== null && this.cursor !== null;
      this.carried = resuming ? connection.watch.carried() : null;
      const delay = BACKOFF_MS[Math.min(this.attempts, BACKOFF_MS.length - 1)];
      const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
      this.attempts += 1;
      this.onStatus("reconnecting", { inMs: jittered, code, reason, resuming });
      this.retryTimer = setTimeout(() => this.#connect(), jittered);
    };
    socket.addEventListener("close", (close) => lost(close.code, close.reason));
    // A browser follows a failed opening with a close; node 20's WebSocket reports it by
    // an error alone.
    socket.addEventListener("error", () => {
      if (socket.readyState !== OPEN) lost(1006, "");
    });
  }

  #send(frame, { kept = true } = {}) {
    const connection = this.connection;
    const input = !frame.type && this.inputs !== null && kept;
    if (input) this.inputs.sent(frame); // kept before it is written: sent again if need be
    if (!connection || connection.socket.readyState !== OPEN) {
      // Inputs wait for the next connection (kept ones are sent again by it); a control
      // frame would be stale by then (every connection opens with its own reattach).
      if (!frame.type && !input) this.outbox.push(frame);
      return false;
    }
    if (frame.runId) connection.watch.ownRuns.add(frame.runId);
    connection.socket.send(JSON.stringify(frame));
    return true;
  }

  #dispatch(connection, event) {
    if (event.type === "RUN_STARTED") this.inputs?.acknowledged(event.runId);
    else if (event.type === "CUSTOM" && event.name === "gateway.notice" && event.value?.code === "RUN_DEDUPED") {
      this.inputs?.acknowledged(event.value.runId); // the gateway had it: not run again
    } else if (event.type === "RUN_ERROR" && event.code !== "SERVICE_UNAVAILABLE") {
      // Refused: sent again, it would be refused again or run long after its refusal was
      // shown. A draining process's refusal is the exception: the next connection reaches
      // a process that is up, and sends it there.
      for (const runId of refusedRunIds(event)) this.inputs?.acknowledged(runId);
    }
    const view = connection.watch.see(event);
    this.onEvent(event, view);
    if ((event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") && !connection.synced) {
      // The first run on a connection answers its reattach: the thread is now on screen.
      connection.synced = true;
      this.onStatus("open", {});
    }
  }
}
