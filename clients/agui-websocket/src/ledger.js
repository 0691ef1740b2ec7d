// The tab's ledger of browser actions, so each is performed once and its result reaches the
// gateway, whatever reloads and drops come in between.
//
// Kept in sessionStorage (in a browser; any Storage-like object, or a Map, elsewhere), which
// outlives a reload of this tab and nothing else, keyed by toolCallId. An entry goes started -> performed (with its result) -> acknowledged:
// - started is written before the action runs, performed as soon as it returns, so a
//   reload finds either the result or proof that the action may have begun;
// - a performed result is sent again after every reconnect until the gateway has it: the
//   thread shows the call answered (a tool message in a snapshot), or the run the result
//   went in finished without waiting for it;
// - acknowledged entries stay (the newest few) so the tab can tell its own actions from
//   another tab's when it draws the thread again.

const KEY = "agw.ledger";
// Entries kept at most; the oldest acknowledged ones go first.
const LIMIT = 100;
// How often one result is sent before the tab gives up on it (a gateway that refuses it).
const SENDS = 5;

// How long a tab waits to hear whether a live tab already holds its identity.
const CLAIM_MS = 150;
// This page, so that two claims in one page (two agents, a clone) never take each other
// for a duplicated tab.
const PAGE = Math.random().toString(36).slice(2);

/** ``storage`` as the Web Storage calls the ledger makes: a Map is wrapped. */
export function asStorage(storage) {
  if (!(storage instanceof Map)) return storage;
  return {
    getItem: (key) => (storage.has(key) ? storage.get(key) : null),
    setItem: (key, value) => void storage.set(key, String(value)),
    removeItem: (key) => void storage.delete(key),
  };
}

/**
 * A tab's own identity: the same across its reloads, a new one in a new tab.
 *
 * A browser that duplicates a tab copies its sessionStorage, identity and ledger included,
 * and two tabs with one identity would both execute its calls. So a tab asks the others
 * (a BroadcastChannel) whether one of them holds the identity it found; if one does, this
 * tab is the copy and starts afresh. A reloaded tab hears nothing: its old page is gone,
 * and claims made in the same page share the identity. ``signal`` ends the claim (a client
 * closed for good stops answering copies).
 */
export async function claimInstance(mint, storage = globalThis.sessionStorage, { signal } = {}) {
  storage = asStorage(storage);
  let id = storage.getItem("agw.client");
  if (typeof BroadcastChannel !== "function") {
    if (!id) storage.setItem("agw.client", (id = mint()));
    return id;
  }
  const channel = new BroadcastChannel("agw.client");
  channel.unref?.(); // node: an open channel must not keep the process alive
  if (id) {
    const found = id;
    const held = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), CLAIM_MS);
      channel.onmessage = (message) => {
        if (message.data?.held === found && message.data.page !== PAGE) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      channel.postMessage({ asking: found, page: PAGE });
    });
    if (held) {
      id = null;
      storage.removeItem(KEY); // the other tab's actions, not this one's
    }
  }
  if (!id) id = mint();
  storage.setItem("agw.client", id);
  const mine = id;
  // Kept open for the page's life, to answer a copy of this tab.
  channel.onmessage = (message) => {
    if (message.data?.asking === mine && message.data.page !== PAGE) {
      channel.postMessage({ held: mine, page: PAGE });
    }
  };
  if (signal?.aborted) channel.close();
  else signal?.addEventListener("abort", () => channel.close(), { once: true });
  return mine;
}

/**
 * ``messages``, an agent's transcript, made to record in ``ledger`` the result of a call
 * this client began the moment the app adds its tool message (the same array, with its
 * own ``push`` and ``splice``). CopilotKit splices a frontend tool's result into
 * ``agent.messages`` as soon as the handler returns, and sends it only in the next run:
 * recorded here, a reload in between finds the result kept (sent again) rather than a
 * call begun with no outcome (``settle``'s question). A frozen array is left as it is.
 */
export function keepingResults(messages, ledger) {
  if (!Array.isArray(messages) || !Object.isExtensible(messages) || Object.hasOwn(messages, "splice")) {
    return messages;
  }
  const note = (added) => {
    for (const message of added) {
      const id = message?.role === "tool" ? message.toolCallId : undefined;
      if (id && ledger.get(id)?.state === "started") ledger.performed(id, message.content);
    }
  };
  const own = (value) => ({ value, writable: true, configurable: true, enumerable: false });
  Object.defineProperties(messages, {
    push: own(function push(...added) {
      note(added);
      return Array.prototype.push.apply(this, added);
    }),
    splice: own(function splice(...args) {
      note(args.slice(2));
      return Array.prototype.splice.apply(this, args);
    }),
  });
  return messages;
}

export class ActionLedger {
  constructor(storage = globalThis.sessionStorage) {
    this.storage = asStorage(storage);
    this.entries = this.#load();
  }

  /**
   * What this client does about each client call the thread waits on, in the thread's
   * order, given the connection's view of the run that left them open (``pending``,
   * ``executable``: see connection.js):
   * - ``resend``: a result this client holds; sent again while the gateway lists the call;
   * - ``settle``: begun before a reload, its result lost: what the app sees tells;
   * - ``perform``: handed to this client and never begun;
   * - ``elsewhere``: another client's call, never performed here.
   * A kept result the gateway refused too often gets no step at all, nor does a call this
   * client began that is not handed to it now: it is under way here (a reattach that
   * missed nothing lists the calls the thread waits on, with no snapshot to hand them out).
   * @returns {Array<{kind: "resend"|"settle"|"perform"|"elsewhere", id: string,
   *                  result?: unknown, call?: {id: string, name: string, args: object|null}}>}
   */
  plan(view) {
    const executable = new Map(view.executable.map((call) => [call.id, call]));
    const steps = [];
    for (const id of view.pending) {
      const kept = this.get(id);
      if (kept?.result !== undefined) {
        if (this.resendable(id)) steps.push({ kind: "resend", id, result: kept.result });
        continue;
      }
      const call = executable.get(id);
      if (!call && kept?.state === "started") continue;
      if (!call) steps.push({ kind: "elsewhere", id });
      else steps.push({ kind: kept?.state === "started" ? "settle" : "perform", id, call });
    }
    return steps;
  }

  /** The thread holds an answer for these calls (a snapshot said so): the gateway has it. */
  answered(callIds) {
    for (const id of callIds) this.acknowledged(id);
  }

  /** Run ``runId`` ended waiting on ``pending``: a result it carried that it no longer
   * waits for has reached the gateway. */
  finished(runId, pending) {
    for (const kept of this.unacknowledged()) {
      if (kept.runId === runId && !pending.includes(kept.id)) this.acknowledged(kept.id);
    }
  }

  /** The entry of a call, if this tab has performed (or begun) it. */
  get(callId) {
    return this.entries[callId];
  }

  started(call) {
    this.#put(call.id, { name: call.name, args: call.args, state: "started", at: Date.now() });
  }

  performed(callId, result) {
    this.#put(callId, { ...this.entries[callId], state: "performed", result, sends: 0 });
  }

  /** Notes that the result went out in the input of run ``runId``. */
  sent(callId, runId) {
    const entry = this.entries[callId];
    if (entry?.result === undefined) return;
    this.#put(callId, { ...entry, runId, sends: (entry.sends ?? 0) + 1 });
  }

  acknowledged(callId) {
    const entry = this.entries[callId];
    if (entry?.state === "performed") this.#put(callId, { ...entry, state: "acknowledged" });
  }

  /** Whether a kept result may be sent again: the thread still waits for it (the gateway
   * lists it pending), unless the gateway refused it too often. */
  resendable(callId) {
    const entry = this.entries[callId];
    return entry?.result !== undefined && (entry.sends ?? 0) < SENDS;
  }

  /** Results the tab holds that the gateway has not acknowledged. */
  unacknowledged() {
    return Object.entries(this.entries)
      .filter(([, entry]) => entry.state === "performed")
      .map(([id, entry]) => ({ id, ...entry }));
  }

  #put(callId, entry) {
    this.entries[callId] = entry;
    const ids = Object.keys(this.entries);
    if (ids.length > LIMIT) {
      const oldest = ids
        .filter((id) => this.entries[id].state === "acknowledged")
        .sort((a, b) => (this.entries[a].at ?? 0) - (this.entries[b].at ?? 0));
      for (const id of oldest.slice(0, ids.length - LIMIT)) delete this.entries[id];
    }
    try {
      this.storage.setItem(KEY, JSON.stringify(this.entries));
    } catch (error) {
      // A full storage loses the reload guarantee, not the action itself.
      console.warn("the action ledger could not be saved", error);
    }
  }

  #load() {
    try {
      const value = JSON.parse(this.storage.getItem(KEY) ?? "{}");
      return value && typeof value === "object" && !Array.isArray(value) ? value : {};
    } catch {
      return {};
    }
  }
}
