// The chatbot: transcript, tool-activity timeline, approval cards, stop. The frame it is
// shown in (side panel, full screen, modal; composer, buttons, status) is chat/panel.js's,
// the words it shows are chat/labels.js's, a tool call's row is chat/tool-activity.js's.
// The /ws protocol and the ledger of browser actions are the @agent-gateway/agui-websocket
// package's (clients/agui-websocket/src/, linked here as agui-websocket/).

import { ThreadConnection } from "./agui-websocket/connection.js";
import { ActionLedger } from "./agui-websocket/ledger.js";
import { ENDED_LINES, NOTICE_LABELS, QUIET_NOTICES, runErrorLabel } from "./chat/labels.js";
import { Panel } from "./chat/panel.js";
import { ToolActivity } from "./chat/tool-activity.js";
import { h, newId } from "./dom.js";
import { botMessage, MessageTimes, textOf, userMessage } from "./messages.js";
import { ACTION_ACTIVITY, capabilitiesEntry, SURFACE_ACTIVITY, SurfaceBoard } from "./surfaces.js";

const EXAMPLES = ["업무 요청 목록 화면 열어줘", "R-1042 보여줘", "R-1042 승인해줘", "자기소개를 길게 해 주세요"];
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
   */
  constructor({ app, userId, wsUrl, clientId, tools, implemented }) {
    this.userId = userId;
    this.tools = tools;
    this.implemented = implemented;
    this.panel = new Panel(app);
    this.el = {
      transcript: app.querySelector("#transcript"),
      items: app.querySelector("#transcript-items"),
      jump: app.querySelector("#jump"),
    };
    this.threadId = initialThread(userId);
    this.ledger = new ActionLedger();
    this.run = null; // the live run on this thread: {runId, own}
    this.pendingInputs = 0; // inputs sent whose run has not started (or been refused) yet
    this.executing = false;
    this.connected = false;
    this.bubbles = new Map(); // message id -> {el, view, setTime} (messages.js)
    this.times = new MessageTimes();
    this.following = true; // the reader is at the transcript's end, so it follows new text
    this.entries = new Map();
    this.streaming = null;
    this.runBubble = null;
    this.surfaces = new SurfaceBoard((userAction) => this.#press(userAction));
    this.actionRuns = new Set(); // runIds of inputs that carried a press on a surface
    this.lastInputWasAction = false; // for a refusal that comes before its run starts
    this.client = new ThreadConnection({
      url: wsUrl,
      clientId,
      threadId: this.threadId,
      onEvent: (event, run) => this.#onEvent(event, run),
      onStatus: (state, detail) => this.#onStatus(state, detail),
    });
  }

  start() {
    this.panel.start({
      onSend: () => this.#submit(),
      onStop: () => this.client.cancel(),
      onNewThread: () => this.newThread(),
    });
    this.el.transcript.addEventListener("scroll", () => this.#noticeScrolling(), { passive: true });
    // A rotated phone or a resized window changes the transcript's height: a reader at the
    // end stays at the end.
    new ResizeObserver(() => this.#scroll()).observe(this.el.transcript);
    this.el.jump.addEventListener("click", () => this.#scroll({ force: true }));
    window.addEventListener("hashchange", () => {
      const threadId = new URLSearchParams(location.hash.slice(1)).get("thread");
      if (threadId && THREAD_ID.test(threadId) && threadId !== this.threadId) this.#join(threadId);
    });
    this.panel.setMode(this.panel.mode);
    this.panel.showThread(this.threadId);
    this.#welcome();
    this.#updateControls();
    this.client.start();
  }

  newThread() {
    // A reload must not bring back the thread named in the address.
    history.replaceState(null, "", location.pathname + location.search);
    this.#join(newId("thread"));
  }

  #join(threadId) {
    this.threadId = threadId;
    sessionStorage.setItem(threadKey(this.userId), threadId);
    this.run = null;
    this.pendingInputs = 0;
    this.#clear();
    this.#welcome();
    this.panel.showThread(this.threadId);
    this.#updateControls();
    this.client.switchThread(this.threadId);
  }

  get busy() {
    return Boolean(this.run) || this.pendingInputs > 0 || this.executing;
  }

  // --- sending --------------------------------------------------------------------------

  #submit() {
    const text = this.panel.el.input.value.trim();
    if (!text || this.busy || !this.connected) return;
    const id = newId("msg");
    this.lastInputWasAction = false;
    this.#userBubble(id, text, { live: true });
    this.panel.el.input.value = "";
    this.#sendInput({ messages: [{ id, role: "user", content: text }] });
    this.#scroll({ force: true }); // who sends a message wants to see what comes back
  }

  #sendInput({ messages = [], resume = undefined, userAction = undefined }) {
    this.pendingInputs += 1;
    // Whatever is sent next moves the thread on: an earlier offer to ask again is moot.
    for (const line of this.el.items.querySelectorAll(".retry-line")) line.remove();
    // Every input says where the chat is shown and which A2UI catalogs this page draws.
    const context = [{ description: "surface", value: this.panel.mode }, capabilitiesEntry()];
    const runId = userAction
      ? this.client.startUserAction(userAction, { tools: this.tools, context })
      : this.client.startRun({ messages, resume, tools: this.tools, context });
    this.#updateControls();
    this.#scroll();
    return runId;
  }

  /** A press on a surface's Button: the thread's next input, with no message of its own. */
  #press(userAction) {
    if (this.busy || !this.connected) return;
    this.actionRuns.add(this.#sendInput({ userAction }));
    this.lastInputWasAction = true;
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
        answers.push([id, kept]);
        continue;
      }
      if (kind === "elsewhere") {
        this.entries.get(id)?.state("elsewhere");
        continue;
      }
      let result = kind === "settle" ? this.#settleByPage(call) : null;
      if (!result) {
        this.ledger.started(call);
        result = await this.#runTool(call);
      }
      this.ledger.performed(id, result);
      this.#entry(call.id, call.name).result(result);
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
    const runId = this.#sendInput({ messages });
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

  #answerApprovals(batch) {
    this.#sendInput({ messages: [], resume: batch.map(({ answer }) => answer) });
  }

  // --- events ---------------------------------------------------------------------------

  #onEvent(event, run) {
    switch (event.type) {
      case "RUN_STARTED":
        this.run = { runId: event.runId, own: run.own };
        if (run.own) this.pendingInputs = Math.max(0, this.pendingInputs - 1);
        this.runBubble = null;
        break;
      case "MESSAGES_SNAPSHOT":
        // What the thread holds an answer for, the gateway has: the ledger can let it go.
        this.ledger.answered(run.answered);
        // When each message was stored (AG-UI messages carry no time): a page that never
        // saw one live, a reload in another browser, still shows when it was said.
        this.times.learn(event.metadata?.["gateway.times"]);
        this.#renderSnapshot(event.messages ?? []);
        break;
      case "TEXT_MESSAGE_START":
        if (event.role === "user") {
          // Another tab's message, as the gateway sends it to the thread's other tabs.
          this.#userBubble(event.messageId, "", { live: true });
          break;
        }
        this.streaming = this.#assistantBubble(event.messageId, { reset: true, live: true, name: event.name }).el;
        this.streaming.classList.add("streaming");
        this.runBubble = this.streaming;
        break;
      case "TEXT_MESSAGE_CONTENT": {
        const bubble = this.bubbles.get(event.messageId) ?? this.#assistantBubble(event.messageId, { live: true });
        bubble.view.append(event.delta);
        break;
      }
      case "TEXT_MESSAGE_END": {
        const bubble = this.bubbles.get(event.messageId);
        bubble?.view.draw();
        bubble?.el.classList.remove("streaming");
        this.streaming = null;
        break;
      }
      case "TOOL_CALL_START":
        this.#entry(event.toolCallId, event.toolCallName, { reset: true }).state("running");
        break;
      case "TOOL_CALL_ARGS":
        this.#entry(event.toolCallId).appendArgs(event.delta);
        break;
      case "TOOL_CALL_END": {
        const entry = this.#entry(event.toolCallId);
        entry.endArgs();
        if (entry.name in this.implemented) entry.state(run.own ? "waiting" : "pending");
        break;
      }
      case "ACTIVITY_SNAPSHOT":
        this.#activity(event.messageId, event.activityType, event.content, { replace: event.replace ?? true });
        break;
      case "ACTIVITY_DELTA":
        if (event.activityType === SURFACE_ACTIVITY) this.surfaces.patch(event.messageId, event.patch ?? []);
        break;
      case "TOOL_CALL_RESULT":
        // Sent to the tabs that did not execute the call: say whose action it was.
        this.#entry(event.toolCallId).resultContent(event.content, undefined, this.#elsewhere(event.toolCallId));
        break;
      case "CUSTOM":
        if (event.name === "gateway.notice" && !QUIET_NOTICES.has(event.value?.code)) {
          this.#notice(event.value ?? {});
        }
        break;
      case "RUN_ERROR": {
        // Inside a run it ends the run; outside one it refuses the input we sent.
        if (run.runId) this.run = null;
        else this.pendingInputs = Math.max(0, this.pendingInputs - 1);
        this.#closeStreaming();
        const onCard = run.runId ? this.actionRuns.has(run.runId) : this.lastInputWasAction;
        this.#errorLine(runErrorLabel(event.code, onCard), event.message);
        if (run.runId) this.#retryLine();
        if (!run.runId && this.ledger.unacknowledged().length) {
          // A refused input may have carried kept results: look again at what the thread waits for.
          this.client.reattach();
        }
        break;
      }
      case "RUN_FINISHED":
        this.#finish(event, run);
        break;
      default:
        break;
    }
    this.#updateControls();
    this.#scroll();
  }

  #finish(event, run) {
    this.run = null;
    this.#closeStreaming();
    const outcome = event.outcome ?? { type: "success" };
    // A result sent in this run that the thread no longer waits for: the gateway has it.
    this.ledger.finished(event.runId, run.pending);
    if (outcome.type === "cancelled") {
      this.runBubble?.classList.add("stopped");
      this.#line(...ENDED_LINES.stopped, "status");
      this.#retryLine();
    } else if (outcome.type === "interrupt") {
      this.#approvalCards(outcome.interrupts ?? []);
    } else if (run.pending.length) {
      this.#answerPending(run);
    }
    if (!run.own && run.sawLive && !run.sawSnapshot) {
      // Another tab's run: the calls it left open are in the thread as stored.
      this.client.reattach();
    }
  }

  /** Whether a client call's action was another tab's, not this one's. */
  #elsewhere(callId) {
    const entry = this.entries.get(callId);
    return Boolean(entry && entry.name in this.implemented && !this.ledger.get(callId));
  }

  #onStatus(state, detail) {
    this.panel.showConnection(state, detail);
    this.connected = state === "open";
    // Cut off mid-run, the reconnect reattaches by cursor: the run's stream goes on where
    // it stopped, into the same bubbles.
    const resuming = state === "reconnecting" && detail.resuming;
    if (state === "reconnecting" && this.busy && !resuming) {
      this.#closeStreaming();
      this.#line("notice", "연결이 끊겼습니다. 다시 연결되면 대화를 이어서 보여 드립니다.", "status");
    }
    if ((state === "connecting" || state === "reconnecting") && !resuming) {
      // The run goes on without this connection; the reattach shows where it stands.
      this.run = null;
      this.pendingInputs = 0;
    }
    this.#updateControls();
  }

  // --- rendering ------------------------------------------------------------------------

  #renderSnapshot(messages) {
    this.#clear();
    this.following = true; // a thread drawn afresh opens at its end
    for (const message of messages) {
      if (message.role === "user") {
        this.#userBubble(message.id, textOf(message.content));
      } else if (message.role === "assistant") {
        if (message.content || message.metadata?.ended) {
          const bubble = this.#assistantBubble(message.id, { name: message.name });
          bubble.view.set(textOf(message.content));
          const ended = ENDED_LINES[message.metadata?.ended];
          if (ended) {
            bubble.el.classList.add(message.metadata.ended);
            this.#line(...ended, "status");
            if (message === messages.at(-1)) this.#retryLine();
          }
        }
        for (const call of message.toolCalls ?? []) {
          const entry = this.#entry(call.id, call.function?.name ?? "?", { reset: true });
          entry.appendArgs(call.function?.arguments ?? "");
          entry.endArgs();
          entry.state("pending");
        }
      } else if (message.role === "tool") {
        const id = message.toolCallId;
        this.entries.get(id)?.resultContent(message.content, message.error, this.#elsewhere(id));
      } else if (message.role === "activity") {
        this.#activity(message.id, message.activityType, message.content);
      }
    }
    if (!messages.length) this.#welcome();
  }

  /** An activity message: an A2UI surface's operations, or a press the gateway accepted. */
  #activity(id, type, content, { replace = true } = {}) {
    if (type === SURFACE_ACTIVITY) {
      const row = this.surfaces.receive(id, content, { replace });
      if (row) this.#append(row);
    } else if (type === ACTION_ACTIVITY && !this.el.transcript.querySelector(`[data-message-id="${CSS.escape(id)}"]`)) {
      const said = this.surfaces.describe(content?.userAction);
      this.#append(h("li", { class: "action-line", dataset: { messageId: id } }, `▸ ${said}`));
    }
  }

  #clear() {
    this.surfaces.clear();
    this.el.items.replaceChildren();
    this.bubbles.clear();
    this.entries.clear();
    this.streaming = null;
    this.runBubble = null;
  }

  #welcome() {
    if (this.el.items.children.length) return;
    this.el.items.append(
      h(
        "li",
        { class: "welcome" },
        h("p", {}, "안녕하세요! 화면을 찾아 열어 드리거나 업무 요청 승인을 도와드려요."),
        h(
          "div",
          { class: "chips" },
          EXAMPLES.map((text) =>
            h(
              "button",
              {
                type: "button",
                class: "chip",
                onclick: () => this.panel.fill(text),
              },
              text,
            ),
          ),
        ),
      ),
    );
  }

  #append(node) {
    this.el.items.querySelector(".welcome")?.remove();
    this.el.items.append(node);
    return node;
  }

  /** ``live``: the message is happening now, so now is its time (a snapshot's has its own). */
  #timeOf(id, live) {
    return live ? this.times.stamp(id) : this.times.get(id);
  }

  #userBubble(id, text, { live = false } = {}) {
    const existing = this.bubbles.get(id);
    if (existing) return existing;
    const bubble = userMessage(id, text, this.#timeOf(id, live));
    this.#append(bubble.el);
    this.bubbles.set(id, bubble);
    return bubble;
  }

  #assistantBubble(id, { reset = false, live = false, name = undefined } = {}) {
    let bubble = this.bubbles.get(id);
    if (!bubble) {
      bubble = botMessage(id, { time: this.#timeOf(id, live), name, onDrawn: () => this.#scroll() });
      this.#append(bubble.el);
      this.bubbles.set(id, bubble);
    } else if (reset) {
      // A reattach re-opens a half-streamed message with its content so far.
      bubble.view.set("");
      bubble.setTime(this.#timeOf(id, live));
    }
    return bubble;
  }

  #entry(id, name, { reset = false } = {}) {
    let entry = this.entries.get(id);
    if (!entry) {
      entry = new ToolActivity(id, name ?? "?");
      this.#append(entry.el);
      this.entries.set(id, entry);
    } else if (reset) {
      entry.reset(name ?? entry.name);
    }
    return entry;
  }

  #notice({ code, message }) {
    this.#line("notice", `ⓘ ${NOTICE_LABELS[code] ?? message ?? code ?? ""}`, "status", message ?? code);
  }

  #line(kind, text, role, title) {
    return this.#append(h("li", { class: kind, role, title }, text));
  }

  /** After a reply that did not finish (stopped, failed, cut off): ask the same again. */
  #retryLine() {
    const asked = [...this.el.items.querySelectorAll(".msg.user .text")].at(-1)?.textContent;
    if (!asked) return;
    const button = h("button", { type: "button", class: "btn retry" }, "↻ 다시 시도");
    button.addEventListener("click", () => {
      if (this.busy || !this.connected) return;
      this.panel.el.input.value = asked;
      this.#submit();
    });
    this.#append(h("li", { class: "retry-line" }, button));
  }

  /** A refusal or failure in the user's words; the gateway's own sentence one click away. */
  #errorLine(said, sentence) {
    return this.#append(
      h(
        "li",
        { class: "error-line", role: "alert" },
        h("span", {}, `⚠ ${said}`),
        sentence ? h("details", {}, h("summary", {}, "자세히"), h("p", { class: "error-detail" }, sentence)) : null,
      ),
    );
  }

  #approvalCards(interrupts) {
    const batch = interrupts.map((interrupt) => ({ interrupt, answer: null }));
    for (const item of batch) {
      const { interrupt } = item;
      const activity = interrupt.toolCallId ? this.entries.get(interrupt.toolCallId) : undefined;
      activity?.state("approval");
      const decide = (approved) => {
        if (activity) activity.rejectedByUser = !approved;
        item.answer = {
          interruptId: interrupt.id,
          status: "resolved",
          payload: approved ? { approved: true } : { approved: false, reason: "사용자가 거절했습니다" },
        };
        for (const button of card.querySelectorAll("button")) button.disabled = true;
        card.classList.add(approved ? "approved" : "rejected");
        decision.textContent = approved ? "✓ 승인했습니다" : "✕ 거절했습니다";
        if (batch.every((entry) => entry.answer)) this.#answerApprovals(batch);
      };
      const decision = h("span", { class: "decision", role: "status" });
      const expires = interrupt.expiresAt ? new Date(interrupt.expiresAt) : null;
      const card = h(
        "div",
        { class: "approval", role: "group", "aria-label": "승인 요청", dataset: { interruptId: interrupt.id } },
        h("div", { class: "approval-head" }, h("span", { class: "approval-icon", "aria-hidden": "true" }, "!"), "승인이 필요합니다"),
        h("p", { class: "approval-message" }, interrupt.message ?? interrupt.reason ?? "이 작업을 진행할까요?"),
        expires && !Number.isNaN(expires.valueOf())
          ? h("p", { class: "muted small" }, `${expires.toLocaleTimeString("ko-KR")}까지 응답해 주세요.`)
          : null,
        h(
          "div",
          { class: "approval-actions" },
          h("button", { type: "button", class: "btn primary", onclick: () => decide(true) }, "승인"),
          h("button", { type: "button", class: "btn", onclick: () => decide(false) }, "거절"),
          decision,
        ),
      );
      this.#append(h("li", { class: "approval-item" }, card));
    }
  }

  #closeStreaming() {
    this.streaming?.classList.remove("streaming");
    this.streaming = null;
  }

  #updateControls() {
    const busy = this.busy;
    this.panel.showControls({ busy, connected: this.connected, stoppable: Boolean(this.run) });
    this.surfaces.setEnabled(!busy && this.connected);
    let typing = this.el.items.querySelector(".typing");
    const showTyping = busy && !this.streaming;
    if (showTyping && (!typing || typing !== this.el.items.lastElementChild)) {
      typing?.remove();
      typing = h("li", { class: "typing", "aria-label": "응답 작성 중" }, h("span"), h("span"), h("span"));
      this.el.items.append(typing);
    } else if (!showTyping) {
      typing?.remove();
    }
  }

  /** Follows new content to the end, unless the reader has scrolled up to read. */
  #scroll({ force = false } = {}) {
    if (force) this.following = true;
    if (this.following) this.el.transcript.scrollTop = this.el.transcript.scrollHeight;
    this.el.jump.hidden = this.following;
  }

  #noticeScrolling() {
    const { scrollTop, scrollHeight, clientHeight } = this.el.transcript;
    // A few pixels of slack: zoom and fractional layouts rarely land exactly on the end.
    this.following = scrollHeight - scrollTop - clientHeight < 24;
    this.el.jump.hidden = this.following;
  }
}
