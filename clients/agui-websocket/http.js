// GatewayHttpAgent: @ag-ui/client 1.0's stock HttpAgent on agent-gateway's POST
// /invocations, with what a reload needs: a `connect()`, a Stop told apart from a reload,
// and the exactly-once ledger of WebSocketAgent (src/calls.js).
//
// Every request names this client instance (`?clientId=`, kept in sessionStorage across
// reloads of the tab). The gateway reads that as "this client can come back": an aborted
// POST (the page reloads) no longer stops the run, whatever GATEWAY_SSE_ABORT says, and
// `connect()` comes back through the resumable stream, GET /invocations?threadId=&clientId=:
// the thread's snapshots, then the run in progress live to its end, this client being its
// executor again (CUSTOM `gateway.executor`), so a call the run makes meanwhile reaches it.
// A run's stream that breaks mid-run is resumed there (`Last-Event-ID`, the SSE `id:` of
// the last event seen).
// `abortRun()` (CopilotKit's Stop) sends the explicit cancel
// (`forwardedProps.gateway.cancel`), and the run's stream ends as the gateway stops it. Each stream is read by the
// same RunWatch as a /ws connection (src/runs.js), so the ledger sees the same runs.
//
// `restoreThread(agent)` is the other way, for a page that keeps a stock HttpAgent: the
// thread's messages from GET /history, put into the agent as CopilotKit's connect begins.

import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { catchError, tap } from "rxjs";
import { ClientCalls, copyAgent, keepTranscripts } from "./src/calls.js";
import { newId } from "./src/ids.js";
import { RunWatch } from "./src/runs.js";

// How long a stopped run's stream may take to end once the gateway took the cancel.
const STOP_GRACE_MS = 5000;

export class GatewayHttpAgent extends HttpAgent {
  #options;
  #calls;

  /**
   * @param {object} config  HttpAgentConfig of @ag-ui/client (``url``: the gateway's
   *   POST /invocations, ``headers``: X-Gateway-User or Authorization), and ``clientId``,
   *   ``storage``, ``settle``, ``perform`` as for WebSocketAgent
   */
  constructor({ clientId, storage, settle, perform, ...config }, shared = null) {
    super(config);
    this.#options = { clientId, storage, settle, perform, ...config };
    this.#calls = new ClientCalls({ storage, clientId, settle, perform }, shared);
    this.#calls.attach(this);
    const fetch = this.fetch;
    const identity = this.#calls.identity;
    this.fetch = async (url, init) => fetch(withClient(url, await identity), init);
  }

  /** This client instance's id, as the gateway knows it. */
  get clientId() {
    return this.#calls.identity;
  }

  /** The ledger of client calls this agent hands out (shared by agents on one storage). */
  get ledger() {
    return this.#calls.ledger;
  }

  /** HttpAgent's run; a stream that breaks mid-run (the network, not a Stop) is resumed
   * once where it broke: GET /invocations with ``Last-Event-ID``, the number of the last
   * event seen, so the run's stream goes on with nothing missed or repeated. */
  run(input) {
    this.#calls.noteAnswers(input);
    const watch = new RunWatch({ ownRuns: new Set([input.runId]) });
    let cursor = null;
    const see = (event) => {
      const seq = event.metadata?.["gateway.seq"];
      if (Number.isSafeInteger(seq)) cursor = seq;
      this.#see(watch, event);
    };
    const request = this.abortController;
    return super.run(input).pipe(
      tap(see),
      catchError((error) => {
        if (cursor === null || request.signal.aborted || error?.name === "AbortError") throw error;
        return this.#stream(input.threadId, { "Last-Event-ID": String(cursor) }).pipe(tap(see));
      }),
    );
  }

  /** The thread as snapshots, then the run in progress live to its end (GET /invocations). */
  connect(input) {
    const watch = new RunWatch();
    return this.#stream(input.threadId).pipe(tap((event) => this.#see(watch, event)));
  }

  async runAgent(parameters, subscriber) {
    this.#calls.finished = null;
    const outcome = await super.runAgent(parameters, subscriber);
    return this.#calls.answerOpenCalls(outcome, "run", this, () =>
      super.runAgent({ ...parameters, runId: undefined, abortController: undefined }, subscriber),
    );
  }

  async connectAgent(parameters, subscriber) {
    this.#calls.finished = null;
    this.abortController = new AbortController();
    const outcome = await super.connectAgent(parameters, subscriber);
    return this.#calls.answerOpenCalls(outcome, "connect", this, () =>
      super.runAgent({ ...parameters, runId: undefined, abortController: undefined }, subscriber),
    );
  }

  /** Stop: the explicit cancel. The run's stream goes on to its end, a moment later: the
   * cut reply's TEXT_MESSAGE_END marks it stopped (``metadata.ended``, as the thread keeps
   * it), then RUN_FINISHED with outcome ``cancelled``. A cancel that cannot be sent, or a
   * stream that does not end within STOP_GRACE_MS of it, is let go as a stock Stop is. */
  abortRun() {
    const request = this.abortController;
    void this.#cancel().then((sent) => {
      if (!sent) request.abort();
      else setTimeout(() => request.abort(), STOP_GRACE_MS).unref?.(); // node: no wait on exit
    });
  }

  /** Lets go of the request in progress and of the client identity (a test, a page that
   * is done with the agent). The gateway's run goes on. */
  close() {
    this.#calls.close();
    this.abortController.abort();
  }

  clone() {
    const copy = new GatewayHttpAgent(this.#options, this.#calls.shared());
    copy.headers = structuredClone(this.headers);
    return copyAgent(this, copy);
  }

  /** GET /invocations?threadId=: the thread's resumable stream (``headers``: a cursor). */
  #stream(threadId, headers = {}) {
    const url = new URL(this.url, globalThis.location?.href);
    url.searchParams.set("threadId", threadId);
    const init = {
      method: "GET",
      headers: { ...this.headers, ...headers, Accept: "text/event-stream" },
      signal: this.abortController.signal,
    };
    return transformHttpEventStream(runHttpRequest(() => this.fetch(url.href, init)), this.debugLogger);
  }

  #see(watch, event) {
    const view = watch.see(event);
    this.#calls.bookkeep(event, view);
    if (event.type === "RUN_FINISHED") this.#calls.finished = view;
  }

  async #cancel() {
    const input = {
      threadId: this.threadId,
      runId: newId("cancel"),
      protocolVersion: "1.0",
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: { gateway: { cancel: true } },
    };
    try {
      const response = await this.fetch(this.url, {
        method: "POST",
        headers: { ...this.headers, "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(input),
        keepalive: true, // a Stop pressed as the page goes still reaches the gateway
      });
      await response.text();
      return response.ok;
    } catch (error) {
      console.warn("agent-gateway: the Stop could not reach the gateway", error);
      return false;
    }
  }
}

keepTranscripts(GatewayHttpAgent);

function withClient(url, clientId) {
  const named = new URL(url, globalThis.location?.href);
  named.searchParams.set("clientId", clientId);
  return named.href;
}

/**
 * For a page that keeps a stock HttpAgent (which has no `connect()`): shows the thread
 * after a reload. CopilotKit empties the chat on load and calls `agent.connectAgent()`; as
 * that connect begins (the subscriber hook every AbstractAgent runs first), the thread's
 * messages from GET /history are put into the agent. The history is asked for at once, so
 * it is usually in before CopilotKit connects. A run in progress is not followed: the page
 * shows the thread as it was when it loaded.
 *
 * @param {import("@ag-ui/client").HttpAgent} agent  with ``url`` (POST /invocations),
 *   ``headers`` (the user's) and ``threadId``
 * @param {{url?: string, headers?: Record<string, string>, threadId?: string}} [where]
 *   GET /history's URL (by default next to the agent's ``url``), its headers and thread
 * @returns the same agent
 */
export function restoreThread(agent, { url, headers = agent.headers, threadId = agent.threadId } = {}) {
  const history = new URL(url ?? "history", new URL(agent.url, globalThis.location?.href));
  history.searchParams.set("threadId", threadId);
  const stored = fetch(history.href, { headers: headers ?? {} })
    .then((response) => (response.ok ? response.json() : null))
    .then((page) => (Array.isArray(page?.messages) ? page.messages : []))
    .catch(() => []);
  let restored = false;
  agent.subscribe({
    async onRunInitialized({ messages }) {
      // Only the connect on load, and only into an empty chat: a run has the user's message.
      if (restored || messages.length > 0) return undefined;
      restored = true;
      const messagesNow = await stored;
      return messagesNow.length > 0 ? { messages: messagesNow } : undefined;
    },
  });
  return agent;
}
