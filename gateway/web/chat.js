// The chatbot's controller: one thread on one connection, and the life of its runs. It
// sends what the user types or presses, stops a run, performs the browser tools a run waits
// on and answers its approvals, picks the thread up again after a reconnect or a reload,
// and tells the parts in chat/ what to show: panel.js (the frame: composer, buttons, status,
// the three surfaces), transcript.js (messages as they stream and from snapshots),
// tool-activity.js (a tool call's row), actions.js (retry, approval cards), branches.js
// (regenerate, edit and a fork's versions) and labels.js (the words); voice.js is the
// microphone (a live turn's audio); a page's thread list (chat/thread-list.js) hears of the
// user's thread changes from it and picks its thread. The /ws protocol and the ledger of browser actions are the
// @agent-gateway/agui-websocket package's (clients/agui-websocket/src/, linked here as
// agui-websocket/).

import { ThreadConnection } from "./agui-websocket/connection.js";
import { ActionLedger } from "./agui-websocket/ledger.js";
import { approvalCards, withdrawApprovals } from "./chat/actions.js";
import { Branches } from "./chat/branches.js";
import { LIVE_TURN_ENDED, QUIET_NOTICES, runErrorLabel } from "./chat/labels.js";
import { Panel } from "./chat/panel.js";
import { Transcript } from "./chat/transcript.js";
import { applyPatch } from "./a2ui/pointer.js";
import { newId } from "./dom.js";
import { capabilitiesEntry, SURFACE_ACTIVITY } from "./surfaces.js";
import { LIVE_APPROVAL, Voice } from "./voice.js";

const THREAD_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The thread this tab talks on: `#thread=<id>` wins, then this tab's sessionStorage. */
export function initialThread(userId) {
  const key = threadKey(userId);
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("thread");
  const threadId = fromHash && THREAD_ID.test(fromHash) ? fromHash : sessionStorage.getItem(key) || newId("thread");
  sessionStorage.setItem(key, threadId);
  return threadId;
}

function threadKey(userId) {
  return `agw.thread.${userId}`;
}

export class ChatPanel {
  /**
   * @param {object} options
   * @param {HTMLElement} options.app       the element carrying data-chat-mode / data-chat-open
   * @param {string} options.userId
   * @param {string} options.wsUrl
   * @param {string} options.clientId    this tab's identity (agui-websocket/ledger.js: claimInstance)
   * @param {object[]} options.tools        RunAgentInput.tools this browser declares
   * @param {Record<string, Function>} options.implemented  client tools by name
   * @param {(state: object) => void} [options.onState]  the thread's state, as it changes
   * @param {import("./chat/thread-list.js").ThreadSidebar} [options.sidebar]  the list of the
   *   user's threads, if the page shows one: it hears of thread changes and picks threads
   */
  constructor({ app, userId, wsUrl, clientId, tools, implemented, onState = () => {}, sidebar = null }) {
    this.userId = userId;
    this.sidebar = sidebar;
    this.foreignRun = null; // a run of another thread on this socket (a thread change's)
    this.tools = tools;
    this.implemented = implemented;
    this.panel = new Panel(app);
    this.threadId = initialThread(userId);
    this.ledger = new ActionLedger();
    this.run = null; // the live run on this thread: {runId, own}
    this.pendingInputs = 0; // inputs sent whose run has not started (or been refused) yet
    this.executing = false;
    this.connected = false;
    this.state = {}; // the thread's state: STATE_SNAPSHOT, then each STATE_DELTA on it
    this.onState = onState;
    this.transcript = new Transcript(app, {
      onPress: (userAction) => this.#press(userAction),
      onExample: (text) => this.panel.fill(text),
      onRetry: (asked) => this.#askAgain(asked),
    });
    this.branches = new Branches(this.transcript, {
      onFork: (fork) => this.#fork(fork),
      onSwitch: (runId) => this.#sendInput({ branch: { switchTo: runId } }),
    });
    this.actionRuns = new Set(); // runIds of inputs that carried a press on a surface
    this.liveCards = []; // approval cards the live turn asked, withdrawn when it ends
    this.lastInputWasAction = false; // for a refusal that comes before its run starts
    const url = new URL(wsUrl, location.href);
    // A page with a thread list asks for the user's thread changes (gateway.thread).
    if (sidebar) url.searchParams.set("threads", "live");
    this.client = new ThreadConnection({
      url: url.href,
      clientId,
      threadId: this.threadId,
      // An input the gateway has not acknowledged is sent again after a drop or a reload.
      storage: sessionStorage,
      onEvent: (event, run) => this.#onEvent(event, run),
      onStatus: (state, detail) => this.#onStatus(state, detail),
      onBinary: (frame) => this.voice.heard(frame),
    });
    this.voice = new Voice(app, {
      client: this.client,
      userId,
      tools: () => this.tools,
      onRefused: (text) => this.transcript.line("notice", text, "status"),
    });
  }

  start() {
    this.panel.start({
      onSend: () => this.#submit(),
      onStop: () => this.client.cancel(),
      onNewThread: () => this.newThread(),
    });
    this.transcript.start();
    this.voice.start();
    window.addEventListener("hashchange", () => {
      const threadId = new URLSearchParams(location.hash.slice(1)).get("thread");
      if (threadId && THREAD_ID.test(threadId) && threadId !== this.threadId) this.#join(threadId);
    });
    this.panel.setMode(this.panel.mode);
    this.panel.showThread(this.threadId);
    this.transcript.welcome();
    this.#updateControls();
    this.sidebar?.start({
      activeId: this.threadId,
      onOpen: (threadId) => this.open(threadId),
      onDeleted: () => this.newThread(),
    });
    this.client.start();
  }

  newThread() {
    this.open(newId("thread"));
  }

  /** Shows ``threadId`` (the sidebar's choice): its snapshot replaces the transcript. */
  open(threadId) {
    // A reload must not bring back the thread named in the address.
    history.replaceState(null, "", location.pathname + location.search);
    if (threadId !== this.threadId) this.#join(threadId);
  }

  #join(threadId) {
    this.threadId = threadId;
    sessionStorage.setItem(threadKey(this.userId), threadId);
    this.run = null;
    this.pendingInputs = 0;
    this.branches.forget();
    this.transcript.clear();
    this.transcript.welcome();
    this.panel.showThread(this.threadId);
    this.#updateControls();
    this.client.switchThread(this.threadId);
    this.sidebar?.setActive(threadId);
  }

  get busy() {
    return Boolean(this.run) || this.pendingInputs > 0 || this.executing || this.voice.active;
  }

  // --- sending --------------------------------------------------------------------------

  #submit() {
    const text = this.panel.el.input.value.trim();
    const intoLiveTurn = this.voice.listening;
    if (!text || (this.busy && !intoLiveTurn) || !this.connected) return;
    const id = newId("msg");
    this.lastInputWasAction = false;
    this.transcript.userBubble(id, text, { live: true });
    this.panel.el.input.value = "";
    const messages = [{ id, role: "user", content: text }];
    // Typed while talking: a RunAgentInput the gateway puts into the live turn at once; it
    // starts no run, so nothing waits for one (the gateway sends this tab no copy of it).
    if (intoLiveTurn) this.client.startRun({ messages, tools: this.tools, kept: false });
    else this.#sendInput({ messages });
    this.transcript.scroll({ force: true }); // who sends a message wants to see what comes back
  }

  /**
   * A new version of a turn (docs/branches.md): the turns from user message ``before`` on go
   * to a sibling branch, and the thread goes on from ``text`` (the same message again, for
   * a regenerate: ``keep``). The gateway sends this tab no snapshot, so it cuts them itself.
   */
  #fork({ before, text, keep }) {
    if (this.busy || !this.connected) return;
    const id = keep ? before : newId("msg");
    this.lastInputWasAction = false;
    this.transcript.dropFrom(before, { keep });
    if (!keep) this.transcript.userBubble(id, text, { live: true });
    this.#sendInput({ messages: [{ id, role: "user", content: text }], branch: { before } });
    this.transcript.scroll({ force: true });
  }

  /** Sends the thread's next input; ``kept``: sent again, same runId, after a drop or a
   * reload until the gateway acknowledges it (not for results: the ledger resends those). */
  #sendInput({ messages = [], resume = undefined, userAction = undefined, branch = undefined, kept = true }) {
    this.pendingInputs += 1;
    // Whatever is sent next moves the thread on: an earlier offer to ask again is moot.
    this.transcript.withdrawRetries();
    // Every input says where the chat is shown and which A2UI catalogs this page draws.
    const context = [{ description: "surface", value: this.panel.mode }, capabilitiesEntry()];
    const runId = userAction
      ? this.client.startUserAction(userAction, { tools: this.tools, context })
      : this.client.startRun({ messages, resume, tools: this.tools, context, forwardedProps: branch ? { branch } : {}, kept });
    this.#updateControls();
    this.transcript.scroll();
    return runId;
  }

  /** A press on a surface's Button: the thread's next input, with no message of its own. */
  #press(userAction) {
    if (this.busy || !this.connected) return;
    this.actionRuns.add(this.#sendInput({ userAction }));
    this.lastInputWasAction = true;
  }

  /** The retry offered after a reply that did not finish: the same question, sent again. */
  #askAgain(asked) {
    if (this.busy || !this.connected) return;
    this.panel.el.input.value = asked;
    this.#submit();
  }

  /**
   * Answers the client calls the thread waits on that are this tab's: a result the ledger
   * holds is sent again, a call begun before a reload is settled by looking at the page,
   * and only a call never begun is performed. All go in one input.
   */
  async #answerPending(run) {
    const answers = [];
    this.executing = true;
    this.#updateControls();
    for (const { kind, id, call, result: kept } of this.ledger.plan(run)) {
      if (kind === "resend") {
        // What this tab did before the cut: its row says so now, not after another reload
        // (the gateway echoes a result only to the thread's other tabs).
        this.transcript.entries.get(id)?.result(kept);
        answers.push([id, kept]);
        continue;
      }
      if (kind === "elsewhere") {
        this.transcript.entries.get(id)?.state("elsewhere");
        continue;
      }
      let result = kind === "settle" ? this.#settleByPage(call) : null;
      if (!result) {
        this.ledger.started(call);
        result = await this.#runTool(call);
      }
      this.ledger.performed(id, result);
      this.transcript.entry(call.id, call.name).result(result);
      answers.push([id, result]);
    }
    this.executing = false;
    if (!answers.length) {
      this.#updateControls();
      return;
    }
    const messages = answers.map(([toolCallId, result]) => ({
      id: newId("tool"),
      role: "tool",
      toolCallId,
      content: JSON.stringify(result),
    }));
    // The ledger sends a result again while the thread lists its call open, each time in a
    // new input: that input is not kept besides.
    const runId = this.#sendInput({ messages, kept: false });
    for (const [id] of answers) this.ledger.sent(id, runId);
  }

  /** A call begun before a reload, whose result was lost: what the page shows it did. */
  #settleByPage(call) {
    const settle = this.implemented[call.name]?.settle;
    return typeof settle === "function" && call.args ? settle(call.args) : null;
  }

  async #runTool(call) {
    const tool = this.implemented[call.name];
    if (!tool) return { status: "error", message: `이 브라우저는 ${call.name} 도구를 실행할 수 없습니다.` };
    if (!call.args) return { status: "error", message: "도구 호출 인자를 읽을 수 없어 실행하지 않았습니다." };
    try {
      return await tool(call.args, this.panel.mode);
    } catch (error) {
      console.error(`client tool ${call.name} failed`, error);
      return { status: "error", message: `실행 중 오류가 났습니다: ${error?.message ?? error}` };
    }
  }

  /** Cards for ``interrupts``; their answers go to ``send`` as a `resume`: by default the
   * thread's next input (a run that ended on them), or a live turn's `liveResume`. */
  #askApproval(interrupts, send = (resume) => this.#sendInput({ messages: [], resume })) {
    const cards = approvalCards(interrupts, {
      activityOf: (toolCallId) => this.transcript.entries.get(toolCallId),
      onAnswered: (batch) => send(batch.map(({ answer }) => answer)),
    });
    for (const card of cards) this.transcript.append(card);
    return cards;
  }

  // --- events ---------------------------------------------------------------------------

  #onEvent(event, run) {
    // A change to one of the user's threads comes on a run of its own, on the thread it is
    // about: the sidebar's news, and no part of this thread's transcript when it is another's.
    if (event.type === "CUSTOM" && event.name === "gateway.thread") this.sidebar?.applyChange(event.value);
    if (event.type === "RUN_STARTED" && event.threadId && event.threadId !== this.threadId) {
      this.foreignRun = event.runId;
    }
    if (this.foreignRun) {
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") this.foreignRun = null;
      return;
    }
    switch (event.type) {
      case "RUN_STARTED":
        // The gateway's own runs ("notice-…": a snapshot, a notice, a thread change) carry
        // no reply: the thread is not busy with one, and its controls stay as they are.
        this.run = !run.own && event.runId?.startsWith("notice-") ? null : { runId: event.runId, own: run.own };
        if (run.own) this.pendingInputs = Math.max(0, this.pendingInputs - 1);
        this.transcript.startRun();
        break;
      case "MESSAGES_SNAPSHOT":
        // What the thread holds an answer for, the gateway has: the ledger can let it go.
        this.ledger.answered(run.answered);
        // When each message was stored (AG-UI messages carry no time): a page that never
        // saw one live, a reload in another browser, still shows when it was said.
        this.transcript.times.learn(event.metadata?.["gateway.times"]);
        this.transcript.renderSnapshot(event.messages ?? [], (id) => this.#elsewhere(id));
        this.branches.draw();
        break;
      case "TEXT_MESSAGE_START":
        this.transcript.startMessage(event.messageId, event.role, event.name);
        break;
      case "TEXT_MESSAGE_CONTENT":
        this.transcript.appendText(event.messageId, event.delta);
        break;
      case "TEXT_MESSAGE_END":
        this.transcript.endMessage(event.messageId, event.metadata?.ended);
        break;
      case "TOOL_CALL_START":
        this.transcript.entry(event.toolCallId, event.toolCallName, { reset: true }).state("running");
        break;
      case "TOOL_CALL_ARGS":
        this.transcript.entry(event.toolCallId).appendArgs(event.delta);
        break;
      case "TOOL_CALL_END": {
        const entry = this.transcript.entry(event.toolCallId);
        entry.endArgs();
        if (entry.name in this.implemented) entry.state(run.own ? "waiting" : "pending");
        // A live turn does not end at a browser call: its result goes back at once.
        if (this.voice.active && run.own && entry.name in this.implemented) this.#answerLive(entry, run.runId);
        break;
      }
      case "ACTIVITY_SNAPSHOT":
        this.transcript.activity(event.messageId, event.activityType, event.content, {
          replace: event.replace ?? true,
        });
        break;
      case "ACTIVITY_DELTA":
        if (event.activityType === SURFACE_ACTIVITY) this.transcript.surfaces.patch(event.messageId, event.patch ?? []);
        break;
      case "TOOL_CALL_RESULT":
        // Sent to the tabs that did not execute the call: say whose action it was.
        this.transcript
          .entry(event.toolCallId)
          .resultContent(event.content, undefined, this.#elsewhere(event.toolCallId));
        break;
      case "CUSTOM":
        if (event.name === "gateway.notice" && !QUIET_NOTICES.has(event.value?.code)) {
          this.transcript.notice(event.value ?? {});
        } else if (event.name === "gateway.branches") {
          this.branches.show(event.value);
        } else if (event.name === LIVE_APPROVAL && this.voice.active && run.own && event.value?.id) {
          // The live turn goes on while the call waits: the answer goes back into it at once.
          this.liveCards.push(...this.#askApproval([event.value], (resume) => this.client.liveResume(resume)));
        }
        break;
      case "RUN_ERROR": {
        // Inside a run it ends the run; outside one it refuses the input we sent.
        if (run.runId) {
          this.run = null;
          // A server call still running gets no result now (a crash, a lost lease): say so,
          // rather than leave its row running. Browser calls wait on the ledger, not here.
          for (const entry of this.transcript.unsettled()) {
            if (entry.el.dataset.state === "running") entry.cutOff();
          }
        } else this.pendingInputs = Math.max(0, this.pendingInputs - 1);
        this.transcript.closeStreaming();
        const onCard = run.runId ? this.actionRuns.has(run.runId) : this.lastInputWasAction;
        this.transcript.errorLine(runErrorLabel(event.code, onCard), event.message);
        if (run.runId) this.transcript.offerRetry();
        if (!run.runId && this.ledger.unacknowledged().length) {
          // A refused input may have carried kept results: look again at what the thread waits for.
          this.client.reattach();
        }
        break;
      }
      case "STATE_SNAPSHOT":
        this.#setState(event.snapshot ?? {});
        break;
      case "STATE_DELTA":
        try {
          this.#setState(applyPatch(this.state, event.delta ?? []));
        } catch (error) {
          // A patch this page cannot apply: the next snapshot (a reattach) brings the state.
          console.warn("STATE_DELTA not applied", error);
        }
        break;
      case "RUN_FINISHED":
        this.#finish(event, run);
        break;
      default:
        break;
    }
    if ((event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") && run.runId === this.voice.runId) {
      // The turn rejected what it still asked: its cards can no longer be answered.
      withdrawApprovals(this.liveCards.splice(0), LIVE_TURN_ENDED);
    }
    this.voice.event(event, run);
    this.#updateControls();
    this.transcript.scroll();
  }

  /** A browser call of a live turn: performed once (the ledger remembers it across a
   * reload), its result sent as the turn's `liveToolResult`. */
  async #answerLive(entry, runId) {
    if (this.ledger.get(entry.id)) return;
    const call = { id: entry.id, name: entry.name, args: entry.args };
    this.ledger.started(call);
    const result = await this.#runTool(call);
    this.ledger.performed(call.id, result);
    entry.result(result);
    const message = { id: newId("tool"), role: "tool", toolCallId: call.id, content: JSON.stringify(result) };
    if (this.client.liveToolResult(message)) this.ledger.sent(call.id, runId);
  }

  #setState(state) {
    this.state = state && typeof state === "object" ? state : {};
    this.onState(this.state);
  }

  #finish(event, run) {
    this.run = null;
    this.transcript.closeStreaming();
    const outcome = event.outcome ?? { type: "success" };
    // A result sent in this run that the thread no longer waits for: the gateway has it.
    this.ledger.finished(event.runId, run.pending);
    if (outcome.type === "cancelled") {
      this.transcript.stopped();
      this.transcript.offerRetry();
    } else if (outcome.type === "interrupt") {
      // A reattach that missed nothing names the approvals still open: a card on screen
      // that nobody decided asks already.
      const asking = (id) =>
        this.transcript.el.transcript.querySelector(
          `.approval[data-interrupt-id="${CSS.escape(id)}"]:not(.approved, .rejected, .withdrawn)`,
        );
      const interrupts = (outcome.interrupts ?? []).filter((interrupt) => !asking(interrupt.id));
      if (interrupts.length) this.#askApproval(interrupts);
    } else if (run.pending.length && !this.executing) {
      // (While a pass runs, a reattach that missed nothing may list its calls again: that
      // pass answers them.)
      this.#answerPending(run);
    }
    if (!run.own && run.sawLive && !run.sawSnapshot) {
      // Another tab's run: the calls it left open are in the thread as stored.
      this.client.reattach();
    } else if (
      outcome.type === "success" &&
      !run.pending.length &&
      !run.sawSnapshot &&
      this.transcript.unsettled().length
    ) {
      // The run is over and waits for nothing, yet a row still waits for a result this
      // page never saw (a cut between the action and its result): the thread knows it. A
      // run that brought the snapshot drew the rows from the thread already: no asking again.
      this.client.reattach();
    }
  }

  /** Whether a client call's action was another tab's, not this one's. */
  #elsewhere(callId) {
    const entry = this.transcript.entries.get(callId);
    return Boolean(entry && entry.name in this.implemented && !this.ledger.get(callId));
  }

  #onStatus(state, detail) {
    this.panel.showConnection(state, detail);
    this.sidebar?.connection(state);
    if (state !== "open") this.foreignRun = null; // a new connection starts its runs afresh
    this.connected = state === "open";
    if (!this.connected) this.voice.disconnected(); // a live turn is held for the reattach
    // Cut off mid-run, the reconnect reattaches by cursor: the run's stream goes on where
    // it stopped, into the same bubbles.
    const resuming = state === "reconnecting" && detail.resuming;
    if (state === "reconnecting" && this.busy && !resuming) {
      this.transcript.closeStreaming();
      this.transcript.line("notice", "연결이 끊겼습니다. 다시 연결되면 대화를 이어서 보여 드립니다.", "status");
    }
    if ((state === "connecting" || state === "reconnecting") && !resuming) {
      // The run goes on without this connection; the reattach shows where it stands.
      this.run = null;
      this.pendingInputs = 0;
    }
    this.#updateControls();
  }

  #updateControls() {
    const busy = this.busy;
    const typable = this.voice.listening;
    this.panel.showControls({ busy, connected: this.connected, stoppable: Boolean(this.run), typable });
    this.voice.enable(this.connected && !busy);
    this.transcript.surfaces.setEnabled(!busy && this.connected);
    this.branches.setEnabled(!busy && this.connected);
    // A live turn is a conversation, not a reply being written: its words say so.
    this.transcript.showTyping(busy && !this.voice.active);
  }
}
