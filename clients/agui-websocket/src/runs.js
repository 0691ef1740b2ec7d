// What a stream of a thread's events says about the run it carries, for whoever follows
// it: the /ws connection (connection.js) and the SSE agent (http.js) alike. Browser-safe
// and dependency-free.
//
// Who executes a client-tool call: the client instance whose input started the run. A run
// is "own" when this stream sent its input (its runId is in ``ownRuns``) and so received
// its calls live, or when the gateway said so on a reattach (CUSTOM `gateway.executor`,
// naming the calls made before this stream came; their arguments come from the snapshot).
// On RUN_FINISHED the view lists the calls the thread waits on (``pending``) and those of
// them this client must execute (``executable``); a snapshot, the calls it holds an answer
// for (``answered``).

// The metadata key of a refusal's RUN_ERROR that names the input it refuses.
const REFUSED_RUN_ID = "gateway.runId";

// Where one error for several frames refused at once (a flood, a full queue) names every
// input among them; its REFUSED_RUN_ID is the first of them.
const REFUSED_RUN_IDS = "gateway.runIds";

/** The runId of the input a RUN_ERROR refuses, where the gateway names it (a refusal before
 * any run belongs to no run: this says which input it answers); undefined otherwise. For
 * one error refusing several inputs, the first of them (``refusedRunIds``). */
export function refusedRunId(event) {
  const runId = event.type === "RUN_ERROR" ? event.metadata?.[REFUSED_RUN_ID] : undefined;
  return typeof runId === "string" ? runId : undefined;
}

/** Every input a RUN_ERROR refuses, by runId, in order: the one of a refusal of one input,
 * each of one error for several frames; [] where it names none. */
export function refusedRunIds(event) {
  const many = event.type === "RUN_ERROR" ? event.metadata?.[REFUSED_RUN_IDS] : undefined;
  if (Array.isArray(many)) return many.filter((runId) => typeof runId === "string");
  const one = refusedRunId(event);
  return one === undefined ? [] : [one];
}

export class RunWatch {
  /**
   * @param {{run?: object|null, ownRuns?: Set<string>}} [carried]  what a stream that
   *   resumes another one by cursor carries over (``carried()`` of the one before)
   */
  constructor({ run = null, ownRuns = new Set() } = {}) {
    this.run = run;
    this.ownRuns = ownRuns;
  }

  /** What a stream that goes on where this one was cut carries over. */
  carried() {
    return { run: this.run, ownRuns: this.ownRuns };
  }

  /** Takes the stream's next event; returns the view of the run it belongs to. */
  see(event) {
    switch (event.type) {
      case "RUN_STARTED":
        this.run = {
          runId: event.runId,
          threadId: event.threadId,
          own: this.ownRuns.has(event.runId),
          calls: new Map(),
          // Calls made before this stream came, named by the gateway as this client's.
          told: new Set(),
          stored: new Map(),
          answered: new Set(),
          sawSnapshot: false,
          sawLive: false,
        };
        break;
      case "MESSAGES_SNAPSHOT":
        if (this.run) {
          this.run.sawSnapshot = true;
          readSnapshot(this.run, event.messages ?? []);
        }
        break;
      case "CUSTOM":
        if (event.name === "gateway.executor" && this.run) {
          this.run.own = true;
          for (const id of event.value?.toolCallIds ?? []) this.run.told.add(id);
        }
        break;
      case "TOOL_CALL_START":
        if (this.run?.own) {
          this.run.calls.set(event.toolCallId, {
            id: event.toolCallId,
            name: event.toolCallName,
            args: "",
            ended: false,
          });
        }
        break;
      case "TOOL_CALL_ARGS": {
        const call = this.run?.own && this.run.calls.get(event.toolCallId);
        if (call) call.args += event.delta;
        break;
      }
      case "TOOL_CALL_END": {
        const call = this.run?.own && this.run.calls.get(event.toolCallId);
        if (call) call.ended = true;
        break;
      }
      default:
        break;
    }
    if (this.run && /^(TEXT_MESSAGE|TOOL_CALL)_/.test(event.type)) {
      this.run.sawLive = true;
    }
    const run = this.run;
    if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") this.run = null;
    return viewOf(run, event);
  }
}

/** The calls and answers a snapshot holds, for calls named by ``gateway.executor``. */
function readSnapshot(run, messages) {
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const call of message.toolCalls ?? []) {
        run.stored.set(call.id, { name: call.function?.name ?? "", args: call.function?.arguments ?? "" });
      }
    } else if (message.role === "tool" && message.toolCallId) {
      run.answered.add(message.toolCallId);
    }
  }
}

/**
 * What the UI may know about the run an event belongs to. On RUN_FINISHED, ``pending``
 * lists the client calls the thread waits on and ``executable`` those of them this tab
 * must execute, with parsed arguments; ``answered`` (from a snapshot) the calls the thread
 * holds an answer for.
 * @typedef {{runId: string|null, own: boolean, sawSnapshot: boolean, sawLive: boolean,
 *            pending: string[], answered: Set<string>,
 *            executable: Array<{id: string, name: string, args: object|null}>}} RunView
 */
function viewOf(run, event = null) {
  const pending = event?.type === "RUN_FINISHED" && event.outcome?.type === "success"
    ? event.outcome.pendingToolCallIds ?? []
    : [];
  const view = {
    runId: run?.runId ?? null,
    own: run?.own ?? false,
    sawSnapshot: run?.sawSnapshot ?? false,
    sawLive: run?.sawLive ?? false,
    pending,
    answered: run?.answered ?? new Set(),
    executable: [],
  };
  if (run?.own) {
    for (const id of pending) {
      const live = run.calls.get(id);
      const stored = run.told.has(id) ? run.stored.get(id) : undefined;
      if (live?.ended) view.executable.push({ id, name: live.name, args: parseArgs(live.args) });
      else if (stored) view.executable.push({ id, name: stored.name, args: parseArgs(stored.args) });
    }
  }
  return view;
}

function parseArgs(raw) {
  try {
    const value = JSON.parse(raw || "{}");
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}
