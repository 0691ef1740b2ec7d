// One run()'s or connect()'s stream on a shared connection, and what it holds open: how
// a reconnect's reattach is stitched into a run already under way.

const CLOSERS = {
  TEXT_MESSAGE_START: ["TEXT_MESSAGE_END", "messageId", "text"],
  TOOL_CALL_START: ["TOOL_CALL_END", "toolCallId", "call"],
  REASONING_START: ["REASONING_END", "messageId", "reasoning"],
  REASONING_MESSAGE_START: ["REASONING_MESSAGE_END", "messageId", "reasoningMessage"],
};
const ENDS = Object.fromEntries(Object.entries(CLOSERS).map(([, [end, key, kind]]) => [end, [key, kind]]));

/** What a run's stream holds open, so a stitch can close it before the snapshot. */
export class OpenSpans {
  constructor() {
    this.open = new Map(); // kind:id -> the END event that closes it
    this.subagents = new Set();
  }

  note(event) {
    const opener = CLOSERS[event.type];
    if (opener) {
      const [end, key, kind] = opener;
      this.open.set(`${kind}:${event[key]}`, { type: end, [key]: event[key] });
    } else if (ENDS[event.type]) {
      const [key, kind] = ENDS[event.type];
      this.open.delete(`${kind}:${event[key]}`);
    } else if (event.type === "SUBAGENT_STARTED") {
      this.subagents.add(event.subagentRunId);
    } else if (event.type === "SUBAGENT_FINISHED" || event.type === "SUBAGENT_ERROR") {
      this.subagents.delete(event.subagentRunId);
    }
  }

  /** The END events of everything open, newest first; nothing is open afterwards. */
  close() {
    const ends = [...this.open.values()].reverse();
    this.open.clear();
    return ends;
  }
}

/**
 * One run()'s or connect()'s stream: which run on the connection is its own, and how a
 * reconnect's reattach is stitched in.
 * - ``waiting``: its run has not started (run: the input is sent or queued; connect: the
 *   reattach is asked);
 * - ``live``: its run's events are forwarded;
 * - ``away``: the connection dropped during its run; the next reattach tells whether the
 *   run goes on (same runId: joined mid-run) or ended meanwhile (the thread's snapshot);
 * - ``deduped``: the gateway had its input already (a RUN_DEDUPED notice: sent again
 *   after a drop or a reload); the reattach that follows tells, as for ``away``, whether
 *   the run goes on or ended;
 * - ``ending``: the run ended while away: the snapshot is forwarded, then the end;
 * - ``resent`` (connect only): the thread is shown, and an input this tab sent before a
 *   reload, sent again by the reloaded page's connection, has not started: its message is
 *   shown, and its run, when it starts, is followed live as this stream's own (the
 *   reattach's end is held back, so the stream stays one run and ends once); with several,
 *   each in turn, the end of each but the last held back too. A refusal of one (named by
 *   its runId) is its end: its message goes from what the stream shows.
 */
export class Stream {
  constructor(kind, observer, input) {
    this.kind = kind;
    this.observer = observer;
    this.input = input;
    this.runId = kind === "run" ? input.runId : null; // the gateway's run it follows
    this.shownRunId = null; // the runId of the RUN_STARTED it emitted: its end says the same
    this.state = "waiting";
    this.spans = new OpenSpans();
    this.sentOn = null; // the connection (by number) the input went out on
    this.messages = null; // the latest MESSAGES_SNAPSHOT it emitted
    this.resent = null; // connect: the runIds of the inputs sent again it waits for, in order
    this.begun = new Set(); // connect: those whose run began while it followed an earlier one
    this.unstarted = new Map(); // connect: their messages by runId, shown while they wait
  }

  emit(event) {
    // A reattach re-announces the sub-agents speaking; this stream has them open already.
    if (event.type === "SUBAGENT_STARTED" && this.spans.subagents.has(event.subagentRunId)) return;
    if (event.type === "RUN_STARTED") this.shownRunId ??= event.runId;
    if (event.type === "MESSAGES_SNAPSHOT") event = this.withUnstarted(event);
    this.spans.note(event);
    this.observer.next(event);
  }

  /** ``snapshot`` with the messages of inputs sent again that have not started yet: the
   * thread does not hold them, and the page should not lose sight of them meanwhile. */
  withUnstarted(snapshot) {
    const messages = snapshot.messages ?? [];
    this.messages = messages;
    const shown = new Set(messages.map((message) => message.id));
    const missing = [...this.unstarted.values()].filter((message) => !shown.has(message.id));
    return missing.length ? { ...snapshot, messages: [...messages, ...missing] } : snapshot;
  }

  end(event) {
    const runId = this.shownRunId ?? this.runId;
    this.observer.next(event.runId && runId ? { ...event, runId } : event);
    this.observer.complete();
  }
}
