// The tab's inputs the gateway has not acknowledged yet, so none is lost to a drop or a
// reload, and none runs twice.
//
// A RunAgentInput written to a socket that then drops may or may not have reached the
// gateway. Each input is kept here (in sessionStorage, which outlives a reload of this tab
// and nothing else; any Storage-like object, or a Map, elsewhere) from before it is
// written until the gateway acknowledges it: its run's RUN_STARTED, or the gateway's
// RUN_DEDUPED notice naming it (it had the input already), or a refusal of it. Until then
// every new connection of the thread sends it again, with the same runId, after its
// reattach: the gateway runs a runId once per thread (docs: README, "Reconnects and
// exactly once"), so a copy of an input it had is answered with the thread, not run.

const KEY = "agw.inputs";
// Inputs kept at most, the oldest dropped first; and how often one is sent before the tab
// gives up on it (a gateway that refuses it without naming it).
const LIMIT = 20;
const SENDS = 5;

export class SentInputs {
  /** @param {Storage|{getItem, setItem, removeItem}} storage  as ``asStorage`` makes it */
  constructor(storage) {
    this.storage = storage;
    this.entries = this.#load();
  }

  /** Keeps ``input`` (a RunAgentInput) before it is written: sent once more. */
  sent(input) {
    const kept = this.entries.find((entry) => entry.input.runId === input.runId);
    if (kept) kept.sends += 1;
    else this.entries.push({ input, sends: 1 });
    this.entries = this.entries.slice(-LIMIT);
    this.#save();
  }

  /** The gateway has the input of run ``runId`` (it began, was deduped or refused). */
  acknowledged(runId) {
    const left = this.entries.filter((entry) => entry.input.runId !== runId);
    if (left.length === this.entries.length) return;
    this.entries = left;
    this.#save();
  }

  /** Whether ``runId`` is an input waiting to be acknowledged. */
  has(runId) {
    return this.entries.some((entry) => entry.input.runId === runId);
  }

  /** The inputs of ``threadId`` waiting to be acknowledged, oldest first (sent again by
   * the connection that opened last: a reload's reattach follows their runs). */
  waiting(threadId) {
    return this.entries.filter((entry) => entry.input.threadId === threadId).map((entry) => entry.input);
  }

  /** The inputs of ``threadId`` to send again, oldest first; one sent too often is dropped. */
  toResend(threadId) {
    const tired = this.entries.filter((entry) => entry.sends >= SENDS);
    for (const entry of tired) {
      console.warn(`giving up on input ${entry.input.runId}: sent ${entry.sends} times, never acknowledged`);
      this.acknowledged(entry.input.runId);
    }
    return this.entries.filter((entry) => entry.input.threadId === threadId).map((entry) => entry.input);
  }

  #save() {
    try {
      if (this.entries.length) this.storage.setItem(KEY, JSON.stringify(this.entries));
      else this.storage.removeItem(KEY);
    } catch (error) {
      // A full storage loses the reload guarantee, not the input.
      console.warn("the inputs sent could not be saved", error);
    }
  }

  #load() {
    try {
      const value = JSON.parse(this.storage.getItem(KEY) ?? "[]");
      return Array.isArray(value) ? value.filter((entry) => entry?.input?.runId) : [];
    } catch {
      return [];
    }
  }
}
