// WebSocketAgent: an @ag-ui/client 1.0 agent that talks to agent-gateway over /ws.
//
// One connection per thread (src/connection.js: reconnect with backoff, reattach,
// `clientId`), reused across runs. `run()` streams one run, and carries it across a dropped
// connection: the reattach that follows a reconnect is stitched into the same run (by
// cursor, the run's events after the last one seen; else the run's own events with the
// snapshot in between), so the stream stays valid and the run ends once. `connect()` is the
// reattach: the thread as snapshots, then the run in progress live to its end, or, after a
// reload that cut an input off before the gateway acknowledged it, that input's run when it
// starts (sent again by the reloaded page), so its reply reaches the page that resent it.
// `abortRun()` is the /ws cancel frame.
//
// An input is sent once and runs once, across drops and reloads (src/inputs.js, in
// ``storage``, as the reference client keeps them): kept until the gateway acknowledges it,
// it is sent again with its runId by the thread's next connection; a RUN_DEDUPED notice
// naming it (the gateway had it) is stitched into the run's stream as a reconnect's
// reattach is, so the stream shows that run, live or ended, and ends once.
//
// Exactly once (src/calls.js on src/ledger.js, one ledger per storage, shared with
// GatewayHttpAgent in http.js): a client call is recorded when this
// agent hands it to the app (its run ends waiting on it, and `newMessages` carries it),
// before the app's tool can run, and its result as the app adds the tool message to the
// agent's transcript (CopilotKit does so the moment the handler returns). After a reconnect or a reload a kept result is sent again while the gateway
// lists the call open; a call begun with no result goes to `settle`; a call the gateway
// hands this client on `connect()` (made while the page was loading) goes to `perform`.
// Calls of another client are never handed out. See README.md for CopilotKit's path.

import { AbstractAgent } from "@ag-ui/client";
import { Observable } from "rxjs";
import { ClientCalls, copyAgent, keepTranscripts, NOT_PERFORMED, UNKNOWN_OUTCOME } from "./src/calls.js";
import { ThreadConnection } from "./src/connection.js";
import { newId } from "./src/ids.js";
import { ActionLedger, claimInstance } from "./src/ledger.js";
import { refusedRunIds } from "./src/runs.js";
import { Stream } from "./stream.js";

export { ActionLedger, claimInstance, newId, NOT_PERFORMED, ThreadConnection, UNKNOWN_OUTCOME };
export { GatewayHttpAgent, restoreThread } from "./http.js";

// Attempts in a row that fail to open a socket before a waiting run or connect fails (the
// connection goes on trying for the next one).
const FAILED_OPENS = 3;

export class WebSocketAgent extends AbstractAgent {
  #options;
  #calls;
  #connection = null;
  #connections = 0; // connections opened so far: which one a frame went out on
  #failedOpens = 0; // attempts in a row whose socket never opened
  #opened = false;
  #stream = null;

  /**
   * @param {object} config  AgentConfig of @ag-ui/client, and:
   * @param {string} config.url  the gateway's /ws URL (ws:// or wss://; relative in a page)
   * @param {string} [config.clientId]  this client instance; by default one kept in
   *   ``storage`` (the same across reloads of a tab, a new one in a new tab)
   * @param {Storage|Map<string,string>} [config.storage]  where the identity and the
   *   ledger live: sessionStorage in a browser, a Map elsewhere
   * @param {typeof WebSocket} [config.WebSocket]  the WebSocket class (the global one)
   * @param {(call: ClientCall) => unknown} [config.settle]  a call this client began before
   *   a reload, its result lost: the result the app can see it had, or null if it did not
   *   happen (then it is handed out again)
   * @param {(call: ClientCall) => unknown} [config.perform]  performs a call the gateway
   *   hands this client on connect() (the run made it while the page was loading)
   */
  constructor({ url, clientId, storage, WebSocket, settle, perform, ...config }, shared = null) {
    super(config);
    this.url = url;
    this.#options = { url, clientId, storage, WebSocket, settle, perform, ...config };
    this.#calls = new ClientCalls({ storage, clientId, settle, perform }, shared);
    this.#calls.attach(this);
  }

  /** This client instance's id, as the gateway knows it. */
  get clientId() {
    return this.#calls.identity;
  }

  /** The ledger of client calls this agent hands out (shared by agents on one storage). */
  get ledger() {
    return this.#calls.ledger;
  }

  run(input) {
    return new Observable((observer) => {
      const stream = new Stream("run", observer, input);
      this.#begin(stream, input.threadId, () => {
        this.#calls.noteAnswers(input);
        this.#send(stream);
      });
      return () => this.#let(stream);
    });
  }

  connect(input) {
    return new Observable((observer) => {
      const stream = new Stream("connect", observer, input);
      this.#begin(stream, input.threadId, (connection, fresh) => {
        // A fresh connection opens with a reattach of its own.
        if (!fresh) connection.reattach();
      });
      return () => this.#let(stream);
    });
  }

  /** Stops the run in progress on the gateway (the /ws cancel frame); its stream ends with
   * outcome ``cancelled`` and the text so far stays in the thread. */
  abortRun() {
    this.#connection?.cancel();
    super.abortRun();
  }

  async runAgent(parameters, subscriber) {
    this.#calls.finished = null;
    const outcome = await super.runAgent(parameters, subscriber);
    return this.#calls.answerOpenCalls(outcome, "run", this, () =>
      super.runAgent({ ...parameters, runId: undefined }, subscriber),
    );
  }

  async connectAgent(parameters, subscriber) {
    this.#calls.finished = null;
    const outcome = await super.connectAgent(parameters, subscriber);
    return this.#calls.answerOpenCalls(outcome, "connect", this, () =>
      super.runAgent({ ...parameters, runId: undefined }, subscriber),
    );
  }

  /** Closes the connection and lets go of the identity (a page unloading, a test). A run
   * or connect still streaming ends as aborted; the gateway's run goes on. */
  close() {
    this.#calls.close();
    this.#connection?.stop();
    this.#connection = null;
    const stream = this.#stream;
    this.#stream = null;
    stream?.observer.error(Object.assign(new Error("The agent was closed."), { name: "AbortError" }));
  }

  clone() {
    return copyAgent(this, new WebSocketAgent(this.#options, this.#calls.shared()));
  }

  // --- streams ----------------------------------------------------------------------------

  #begin(stream, threadId, start) {
    this.#stream = stream;
    this.#calls.identity.then(
      (clientId) => {
        if (this.#stream !== stream) return;
        const fresh = !this.#connection || this.#connection.threadId !== threadId;
        if (fresh) this.#open(clientId, threadId);
        start(this.#connection, fresh);
      },
      (error) => stream.observer.error(error),
    );
  }

  #let(stream) {
    if (this.#stream === stream) this.#stream = null;
  }

  #open(clientId, threadId) {
    this.#connection?.stop();
    const connection = new ThreadConnection({
      url: this.url,
      clientId,
      threadId,
      WebSocket: this.#options.WebSocket,
      // Inputs not acknowledged yet are kept there, and sent again by the next connection
      // of the thread, after a drop or a reload (src/inputs.js).
      storage: this.#calls.storage,
      onEvent: (event, view) => this.#route(event, view),
      onStatus: (state, detail) => this.#status(state, detail),
    });
    this.#connection = connection;
    connection.start();
  }

  #status(state, detail) {
    if (state === "syncing") {
      this.#connections += 1;
      this.#opened = true;
      this.#failedOpens = 0;
    }
    if ((state === "reconnecting" || state === "connecting") && this.#stream?.state === "live") {
      this.#stream.state = "away";
    }
    if (state === "reconnecting" && detail?.inMs !== undefined) {
      // The socket closed: after a drop, or without ever opening (refused, unreachable).
      if (!this.#opened) this.#failedOpens += 1;
      this.#opened = false;
      if (this.#failedOpens >= FAILED_OPENS && this.#stream?.state === "waiting") {
        const stream = this.#stream;
        this.#stream = null;
        stream.observer.error(
          new Error(
            `Could not open the gateway's WebSocket at ${this.url} (${this.#failedOpens} tries, ` +
              `close code ${detail.code}): check that the gateway runs there, that the URL names ` +
              "its /ws door and a user or ticket, and that the gateway allows this page's origin " +
              "(GATEWAY_ALLOWED_ORIGINS).",
          ),
        );
      }
    }
  }

  #route(event, view) {
    this.#calls.bookkeep(event, view);
    const stream = this.#stream;
    if (!stream) return;
    const ends = event.type === "RUN_FINISHED" || event.type === "RUN_ERROR";
    if (dedupes(event, stream)) {
      this.#deduped(stream, event);
      return;
    }
    const refused = refusedRunIds(event);
    const resent = stream.kind === "connect" ? refused.filter((runId) => stream.resent?.has(runId)) : [];
    if (resent.length) {
      // Inputs sent again were refused (alone, or in a run of its own): that is their end.
      this.#refusedResent(stream, event, view, resent);
      return;
    }
    if (event.type === "RUN_STARTED") {
      this.#started(stream, event);
      return;
    }
    if (stream.state === "away" && view.runId !== null && view.runId === stream.runId) {
      // A reattach by cursor: the run's stream goes on where the dropped connection left it.
      stream.state = "live";
    }
    if (stream.state === "live") {
      if (ends && !this.#awaitResent(stream, event)) this.#close(stream, event, view);
      else if (!ends) stream.emit(event);
    } else if (stream.state === "resent") {
      if (event.type === "MESSAGES_SNAPSHOT" || event.type === "STATE_SNAPSHOT") stream.emit(event);
    } else if (stream.state === "ending") {
      if (ends && !this.#awaitResent(stream, event)) this.#close(stream, event, view);
      else if (event.type === "MESSAGES_SNAPSHOT" || event.type === "STATE_SNAPSHOT") stream.emit(event);
    } else if (stream.state === "waiting" && event.type === "RUN_ERROR" && !view.runId) {
      // A refusal outside any run: of this stream's input or reattach, the next in line,
      // unless it names another input (one sent again, before this stream's).
      if (!refused.length || refused.includes(stream.runId)) this.#close(stream, event, view);
    } else if (stream.state === "waiting" && event.type === "MESSAGES_SNAPSHOT") {
      this.#lostInput(stream, event, view);
    }
  }

  #started(stream, event) {
    const ours = stream.kind === "connect" || event.runId === stream.runId;
    if (stream.state === "waiting" && ours) {
      stream.runId = event.runId;
      stream.state = "live";
      stream.emit(event);
    } else if (stream.state === "resent" && stream.resent.has(event.runId)) {
      // The input sent again began: its run goes on in this stream, already started.
      stream.runId = event.runId;
      stream.state = "live";
    } else if (stream.state === "live" && event.runId !== stream.runId && stream.resent?.has(event.runId)) {
      // The next input sent again began before the run followed ended: followed after it.
      stream.begun.add(event.runId);
    } else if (stream.state === "away" || stream.state === "deduped") {
      // The reattach after a reconnect or a RUN_DEDUPED notice: the same run goes on, or
      // it ended meanwhile.
      for (const end of stream.spans.close()) stream.emit(end);
      stream.state = event.runId === stream.runId ? "live" : "ending";
    }
  }

  /** A connect's reattach ended (``end``) while inputs this tab sent before a reload wait
   * to be acknowledged, sent again by this connection after its reattach: the stream holds
   * the end back, shows their messages, and follows their runs, one after the other in the
   * order they were sent, as each starts (or the thread, if the gateway finds it had one);
   * it ends with the last one's end. An input the thread shows arrived is not waited for:
   * the gateway answers its copy with a RUN_DEDUPED notice, and no run. */
  #awaitResent(stream, end) {
    if (stream.kind !== "connect" || end.type !== "RUN_FINISHED") return false;
    if (stream.resent !== null) return this.#nextResent(stream);
    const shown = new Set((stream.messages ?? []).map((message) => message.id));
    const waiting = (this.#connection.inputs?.waiting(stream.input.threadId) ?? []).filter(
      (input) => !shown.has(input.messages?.at(-1)?.id),
    );
    stream.resent = new Set(waiting.map((input) => input.runId));
    if (!waiting.length) return false;
    stream.unstarted = new Map(
      waiting.flatMap((input) => {
        const last = input.messages?.at(-1);
        return last?.role === "user" ? [[input.runId, last]] : [];
      }),
    );
    stream.state = "resent";
    if (stream.unstarted.size) {
      stream.emit({ type: "MESSAGES_SNAPSHOT", messages: stream.messages ?? [] });
    }
    return true;
  }

  /** The run of an input sent again ended (or its copy was found run, or it was refused):
   * the stream follows the next one still to come, if any, as it followed this one. */
  #nextResent(stream, runId = stream.runId) {
    stream.resent.delete(runId);
    const [next] = stream.resent;
    if (next === undefined) return false;
    for (const end of stream.spans.close()) stream.emit(end);
    stream.runId = next;
    stream.state = stream.begun.has(next) ? "live" : "resent";
    return true;
  }

  /** Inputs sent again were refused (``end``: SESSION_BUSY, say; one error may refuse
   * several): the thread will not hold their messages, shown meanwhile, so they go; the
   * refusal ends the stream if no other input sent again is still to come, as the last
   * one's end would. */
  #refusedResent(stream, end, view, runIds) {
    if (runIds.filter((runId) => stream.unstarted.delete(runId)).length) {
      stream.emit({ type: "MESSAGES_SNAPSHOT", messages: stream.messages ?? [] });
    }
    for (const runId of runIds.slice(0, -1)) stream.resent.delete(runId);
    if (!this.#nextResent(stream, runIds.at(-1))) this.#close(stream, end, view);
  }

  /** An input written to a connection that then dropped may never have reached the
   * gateway: the thread's snapshot says whether it did (its message is there). */
  #lostInput(stream, event, view) {
    if (stream.kind !== "run" || stream.sentOn === null || stream.sentOn >= this.#connections) return;
    const last = stream.input.messages.at(-1);
    const arrived =
      last?.role === "tool"
        ? view.answered.has(last.toolCallId)
        : (event.messages ?? []).some((message) => message.id === last?.id);
    if (arrived) {
      // It ran, and ended, while the connection was down: its outcome is the thread's.
      stream.emit({ type: "RUN_STARTED", threadId: stream.input.threadId, runId: stream.runId });
      stream.emit(event);
      stream.state = "ending";
    } else if (!this.#connection.inputs?.has(stream.runId)) {
      // Kept in storage, it went out again after the reattach already (src/inputs.js).
      this.#send(stream);
    }
  }

  /** The gateway had the stream's input already (sent again after a drop or a reload) and
   * did not run it again: the thread follows, as a reattach shows it, with that run live
   * if it goes on. The stream carries on as after a reconnect; the notice's own end is
   * not the run's, so nothing but the reattach's RUN_STARTED is read until it comes. */
  #deduped(stream, event) {
    if (stream.state === "waiting") {
      stream.emit({ type: "RUN_STARTED", threadId: stream.input.threadId, runId: stream.runId });
    }
    stream.emit(event);
    stream.runId = event.value.runId; // a connect's: the run of the input it resent
    stream.state = "deduped";
  }

  #send(stream) {
    // Written now, or queued for the connection about to open. A browser's results are
    // the ledger's to send again, while the gateway lists their call open (src/calls.js):
    // kept here too, they would go out twice after a reload, the reply to the first going
    // to no stream.
    const kept = stream.input.messages?.at(-1)?.role !== "tool";
    const written = this.#connection.send(stream.input, { kept });
    stream.sentOn = written ? this.#connections : this.#connections + 1;
  }

  #close(stream, event, view) {
    for (const end of stream.spans.close()) stream.emit(end);
    this.#stream = null;
    if (event.type === "RUN_FINISHED") this.#calls.finished = view;
    stream.end(event);
  }
}

/** Whether ``event`` is the gateway's RUN_DEDUPED notice for the input of ``stream``: a
 * run's own, or one a connect waits for (sent again after a reload). */
function dedupes(event, stream) {
  if (event.type !== "CUSTOM" || event.name !== "gateway.notice" || event.value?.code !== "RUN_DEDUPED") {
    return false;
  }
  const runId = event.value.runId;
  if (stream.kind === "run") {
    return (stream.state === "waiting" || stream.state === "live") && runId === stream.runId;
  }
  return (stream.state === "resent" || stream.state === "live") && stream.resent?.has(runId) === true;
}

keepTranscripts(WebSocketAgent);
