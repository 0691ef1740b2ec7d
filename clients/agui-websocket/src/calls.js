// The client calls an agent hands the app, performed exactly once across reloads and
// drops: what WebSocketAgent (index.js) and GatewayHttpAgent (http.js) share around the
// ledger (ledger.js), whichever transport carries the run. Dependency-free.
//
// The agent tells it three moments of CopilotKit's tool path (README.md):
// - a run ends waiting on calls (``finished``, then ``answerOpenCalls``): the calls this
//   client may perform and never began stay in ``newMessages``, recorded *started* before
//   the app can run them; a result the ledger holds is sent again in a follow-on run; a
//   call begun with no result goes to ``settle``; one handed out on connect to ``perform``;
//   every other open call is taken out of ``newMessages``, so no app executes it here;
// - the app adds a tool message (``keep``: the transcript records it as it is added);
// - an input goes out (``noteAnswers``): its tool messages are results, sent.

import { ActionLedger, asStorage, claimInstance, keepingResults } from "./ledger.js";
import { newId } from "./ids.js";

// Answers the agent sends for the app when it has no hook to ask.
export const UNKNOWN_OUTCOME = {
  status: "unknown",
  message: "The page reloaded while this action ran; whether it completed is not known.",
};
export const NOT_PERFORMED = {
  status: "not_performed",
  message: "The page was loading when this action was asked for, so it was not performed.",
};

// Follow-on runs one runAgent()/connectAgent() may send with kept results, at most.
const RESEND_ROUNDS = 3;

// One ledger per storage, shared by every agent on it (a clone, a second agent), so no
// agent overwrites another's entries with a stale copy.
const ledgers = new WeakMap();

function ledgerFor(storage) {
  let ledger = ledgers.get(storage);
  if (!ledger) ledgers.set(storage, (ledger = new ActionLedger(storage)));
  return ledger;
}

function defaultStorage() {
  return globalThis.sessionStorage ?? new Map();
}

/** The text of a tool result as a tool message carries it. */
function contentOf(result) {
  return typeof result === "string" ? result : JSON.stringify(result);
}

export class ClientCalls {
  /**
   * @param {{storage?: object, clientId?: string, settle?: Function, perform?: Function}} options
   * @param {{storage: object, ledger: ActionLedger, identity: Promise<string>}|null} [shared]
   *   a clone's: the same storage, ledger and identity as the agent it copies
   */
  constructor({ storage, clientId, settle, perform }, shared = null) {
    this.hooks = { settle, perform };
    this.release = new AbortController();
    this.storage = shared?.storage ?? asStorage(storage ?? defaultStorage());
    this.ledger = shared?.ledger ?? ledgerFor(storage ?? this.storage);
    /** This client instance's id: the same across reloads of a tab, a new one in a new tab. */
    this.identity =
      shared?.identity ??
      (clientId
        ? Promise.resolve(clientId)
        : claimInstance(() => newId("client"), this.storage, { signal: this.release.signal }));
    // The view of the latest run of this agent's own streams that ended (see runs.js).
    this.finished = null;
  }

  /** Makes this the ClientCalls of ``agent`` (its class passed to ``keepTranscripts``):
   * from now on its transcript is kept. */
  attach(agent) {
    callsOf.set(agent, this);
    agent.messages = agent.messages; // eslint-disable-line no-self-assign
  }

  /** What a clone of the agent shares. */
  shared() {
    return { storage: this.storage, ledger: this.ledger, identity: this.identity };
  }

  /** Lets go of the identity (the agent is closed). */
  close() {
    this.release.abort();
  }

  /** ``messages`` as the agent's transcript: a tool message the app adds for a call this
   * client began is recorded as it is added (ledger.js ``keepingResults``). */
  keep(messages) {
    return keepingResults(messages, this.ledger);
  }

  /** What any run tells the ledger, streamed to a caller or not. */
  bookkeep(event, view) {
    if (event.type === "MESSAGES_SNAPSHOT") this.ledger.answered(view.answered);
    else if (event.type === "RUN_FINISHED") this.ledger.finished(event.runId, view.pending);
  }

  /** An input's tool messages: the results of calls this agent handed out, as the app
   * performed them, recorded before they are sent. */
  noteAnswers(input) {
    for (const message of input.messages) {
      if (message.role !== "tool" || !message.toolCallId) continue;
      const entry = this.ledger.get(message.toolCallId);
      if (entry?.state === "started") this.ledger.performed(message.toolCallId, message.content);
      if (this.ledger.get(message.toolCallId)?.state === "performed") {
        this.ledger.sent(message.toolCallId, input.runId);
      }
    }
  }

  /**
   * After a run or a reattach ends waiting on client calls (``path``: "run" or "connect"):
   * the outcome the app is given. ``agent.addMessages`` takes the results to send and
   * ``runAgain()`` runs the agent again with them (a follow-on run).
   */
  async answerOpenCalls(outcome, path, agent, runAgain) {
    let { result, newMessages } = outcome;
    for (let round = 0; round < RESEND_ROUNDS && this.finished; round += 1) {
      const view = this.finished;
      this.finished = null;
      const handed = new Set();
      const answers = [];
      for (const step of this.ledger.plan(view)) {
        if (step.kind === "resend") {
          answers.push(step);
          continue;
        }
        if (step.kind === "elsewhere") continue;
        let answer = step.kind === "settle" ? await this.#ask("settle", step.call, UNKNOWN_OUTCOME) : null;
        if (answer === null && path === "run") {
          this.ledger.started(step.call);
          handed.add(step.id);
          continue;
        }
        if (answer === null) {
          this.ledger.started(step.call);
          answer = await this.#ask("perform", step.call, NOT_PERFORMED);
        }
        this.ledger.performed(step.id, answer);
        answers.push({ id: step.id, result: answer });
      }
      newMessages = withoutCalls(newMessages, view.pending.filter((id) => !handed.has(id)));
      if (!answers.length) break;
      agent.addMessages(
        answers.map(({ id, result: kept }) => ({ id: newId("tool"), role: "tool", toolCallId: id, content: contentOf(kept) })),
      );
      const next = await runAgain();
      result = next.result;
      newMessages = [...newMessages, ...next.newMessages];
    }
    return { result, newMessages };
  }

  /** The app's hook ``name`` on a call, or ``fallback`` without one; null means "not done". */
  async #ask(name, call, fallback) {
    const hook = this.hooks[name];
    if (typeof hook !== "function") return fallback;
    try {
      const answer = await hook(call);
      return answer === undefined ? null : answer;
    } catch (error) {
      return { status: "error", message: `The app's ${name} hook failed: ${error?.message ?? error}` };
    }
  }
}

/** Copies what AbstractAgent's clone() copies from ``source`` onto ``copy`` (an agent made
 * with the same options and ``shared()``); returns ``copy``. */
export function copyAgent(source, copy) {
  copy.agentId = source.agentId;
  copy.description = source.description;
  copy.threadId = source.threadId;
  copy.messages = structuredClone(source.messages);
  copy.state = structuredClone(source.state);
  copy.debug = source.debug;
  copy.subscribers = [...source.subscribers];
  copy.middlewares = [...source.middlewares]; // AbstractAgent's own, as its clone() copies them
  copy.pendingInterrupts = structuredClone(source.pendingInterrupts);
  return copy;
}

/** ``messages`` with the tool calls ``ids`` taken out (copies; the agent keeps its own). */
function withoutCalls(messages, ids) {
  if (!ids.length) return messages;
  const hidden = new Set(ids);
  return messages.map((message) =>
    message.role === "assistant" && message.toolCalls?.some((call) => hidden.has(call.id))
      ? { ...message, toolCalls: message.toolCalls.filter((call) => !hidden.has(call.id)) }
      : message,
  );
}

// Each agent's transcript and ClientCalls, by agent: AbstractAgent's constructor sets
// ``messages`` before the agent's own fields exist, so the accessors below keep it outside.
const transcripts = new WeakMap();
const callsOf = new WeakMap();

/** Gives ``Agent`` (an AbstractAgent subclass) a ``messages`` property whose every value is
 * kept (``ClientCalls.keep``) once the agent is ``attach``ed to its ClientCalls. */
export function keepTranscripts(Agent) {
  Object.defineProperty(Agent.prototype, "messages", {
    configurable: true,
    get() {
      return transcripts.get(this);
    },
    set(messages) {
      const calls = callsOf.get(this);
      transcripts.set(this, calls ? calls.keep(messages) : messages);
    },
  });
}
