// The transcript: the thread as the user reads it, one list of rows. Messages stream in
// (a bubble opens, takes text, is drawn) or come whole from a snapshot, which redraws the
// list from the start; between them sit the tool calls' rows (tool-activity.js), A2UI
// surfaces (surfaces.js), approval cards and offers to retry (actions.js), notices and
// errors. It follows new content to the end unless the reader has scrolled up to read.

import { h } from "../dom.js";
import { botMessage, MessageTimes, textOf, userMessage } from "../messages.js";
import { ACTION_ACTIVITY, SURFACE_ACTIVITY, SurfaceBoard } from "../surfaces.js";
import { retryLine } from "./actions.js";
import { AGENT, BARGED_IN, ENDED_LINES, NOTICE_LABELS } from "./labels.js";
import { ToolActivity } from "./tool-activity.js";

export class Transcript {
  /**
   * @param {HTMLElement} app
   * @param {object} handlers  what the user does in the transcript, for the controller
   * @param {(userAction: object) => void} handlers.onPress  a press on a surface's Button
   * @param {(text: string) => void} handlers.onExample      a welcome example chosen
   * @param {(asked: string) => void} handlers.onRetry       "ask the same again"
   */
  constructor(app, { onPress, onExample, onRetry }) {
    this.el = {
      transcript: app.querySelector("#transcript"),
      items: app.querySelector("#transcript-items"),
      jump: app.querySelector("#jump"),
    };
    this.onExample = onExample;
    this.onRetry = onRetry;
    this.bubbles = new Map(); // message id -> {el, view, setTime} (messages.js)
    this.times = new MessageTimes();
    this.following = true; // the reader is at the transcript's end, so it follows new text
    this.entries = new Map(); // tool call id -> ToolActivity
    this.streaming = null; // the bubble whose text is streaming now
    this.runBubble = null; // the bubble of the run under way, marked if it is stopped
    this.surfaces = new SurfaceBoard(onPress);
  }

  start() {
    this.el.transcript.addEventListener("scroll", () => this.#noticeScrolling(), { passive: true });
    // A rotated phone or a resized window changes the transcript's height: a reader at the
    // end stays at the end.
    new ResizeObserver(() => this.scroll()).observe(this.el.transcript);
    this.el.jump.addEventListener("click", () => this.scroll({ force: true }));
  }

  // --- messages as they stream ----------------------------------------------------------

  /** TEXT_MESSAGE_START: a reply begins to stream, or another tab's message arrives. */
  startMessage(id, role, name) {
    if (role === "user") {
      // Another tab's message, as the gateway sends it to the thread's other tabs.
      this.userBubble(id, "", { live: true });
      return;
    }
    this.streaming = this.#assistantBubble(id, { reset: true, live: true, name }).el;
    this.streaming.classList.add("streaming");
    this.runBubble = this.streaming;
  }

  appendText(id, delta) {
    const bubble = this.bubbles.get(id) ?? this.#assistantBubble(id, { live: true });
    bubble.view.append(delta);
  }

  /** TEXT_MESSAGE_END; ``ended`` is its ``metadata.ended``, if the reply was cut off. */
  endMessage(id, ended = undefined) {
    const bubble = this.bubbles.get(id);
    bubble?.view.draw();
    bubble?.el.classList.remove("streaming");
    if (bubble && ended === "bargedIn") bargedIn(bubble);
    this.streaming = null;
  }

  closeStreaming() {
    this.streaming?.classList.remove("streaming");
    this.streaming = null;
  }

  /** A new run: the bubble it streams is the one a cancel marks. */
  startRun() {
    this.runBubble = null;
  }

  /** The run was cancelled: its reply says so. */
  stopped() {
    this.runBubble?.classList.add("stopped");
    this.line(...ENDED_LINES.stopped, "status");
  }

  // --- messages from a snapshot ---------------------------------------------------------

  /**
   * The thread as stored, drawn afresh. ``elsewhere(toolCallId)`` says whether a client
   * call's action was another tab's, not this one's.
   */
  renderSnapshot(messages, elsewhere) {
    this.clear();
    this.following = true; // a thread drawn afresh opens at its end
    for (const message of messages) {
      if (message.role === "user") {
        this.userBubble(message.id, textOf(message.content));
      } else if (message.role === "assistant") {
        if (message.content || message.metadata?.ended) {
          const bubble = this.#assistantBubble(message.id, { name: message.name });
          bubble.view.set(textOf(message.content));
          if (message.metadata?.ended === "bargedIn") bargedIn(bubble);
          const ended = ENDED_LINES[message.metadata?.ended];
          if (ended) {
            bubble.el.classList.add(message.metadata.ended);
            this.line(...ended, "status");
            if (message === messages.at(-1)) this.offerRetry();
          }
        }
        for (const call of message.toolCalls ?? []) {
          const entry = this.entry(call.id, call.function?.name ?? "?", { reset: true });
          entry.appendArgs(call.function?.arguments ?? "");
          entry.endArgs();
          entry.state("pending");
        }
      } else if (message.role === "tool") {
        const id = message.toolCallId;
        this.entries.get(id)?.resultContent(message.content, message.error, elsewhere(id));
      } else if (message.role === "activity") {
        this.activity(message.id, message.activityType, message.content);
      }
    }
    if (!messages.length) this.welcome();
  }

  /** An activity message: an A2UI surface's operations, or a press the gateway accepted. */
  activity(id, type, content, { replace = true } = {}) {
    if (type === SURFACE_ACTIVITY) {
      const row = this.surfaces.receive(id, content, { replace });
      if (row) this.append(row);
    } else if (type === ACTION_ACTIVITY && !this.el.transcript.querySelector(`[data-message-id="${CSS.escape(id)}"]`)) {
      const said = this.surfaces.describe(content?.userAction);
      this.append(h("li", { class: "action-line", dataset: { messageId: id } }, `▸ ${said}`));
    }
  }

  /**
   * Takes the rows from message ``messageId`` on out of the transcript (``keep``: the rows
   * after it), as a fork leaves them on another branch.
   */
  dropFrom(messageId, { keep = false } = {}) {
    const from = this.bubbles.get(messageId)?.el;
    let row = keep ? from?.nextElementSibling : from;
    while (row) {
      const next = row.nextElementSibling;
      if (row.dataset.messageId) this.bubbles.delete(row.dataset.messageId);
      if (row.dataset.toolCallId) this.entries.delete(row.dataset.toolCallId);
      row.remove();
      row = next;
    }
    this.streaming = null;
    this.runBubble = null;
  }

  /** The tool calls whose rows still wait for a result (or an approval). */
  unsettled() {
    return [...this.entries.values()].filter((entry) => !entry.el.dataset.outcome);
  }

  clear() {
    this.surfaces.clear();
    this.el.items.replaceChildren();
    this.bubbles.clear();
    this.entries.clear();
    this.streaming = null;
    this.runBubble = null;
  }

  // --- rows -----------------------------------------------------------------------------

  welcome() {
    if (this.el.items.children.length) return;
    this.el.items.append(
      h(
        "li",
        { class: "welcome" },
        h("p", {}, AGENT.greeting),
        h(
          "div",
          { class: "chips" },
          AGENT.examples.map((text) =>
            h("button", { type: "button", class: "chip", onclick: () => this.onExample(text) }, text),
          ),
        ),
      ),
    );
  }

  append(node) {
    this.el.items.querySelector(".welcome")?.remove();
    this.el.items.append(node);
    return node;
  }

  userBubble(id, text, { live = false } = {}) {
    const existing = this.bubbles.get(id);
    if (existing) return existing;
    const bubble = userMessage(id, text, this.#timeOf(id, live));
    this.append(bubble.el);
    this.bubbles.set(id, bubble);
    return bubble;
  }

  #assistantBubble(id, { reset = false, live = false, name = undefined } = {}) {
    let bubble = this.bubbles.get(id);
    if (!bubble) {
      bubble = botMessage(id, { time: this.#timeOf(id, live), name, onDrawn: () => this.scroll() });
      this.append(bubble.el);
      this.bubbles.set(id, bubble);
    } else if (reset) {
      // A reattach re-opens a half-streamed message with its content so far.
      bubble.view.set("");
      bubble.setTime(this.#timeOf(id, live));
    }
    return bubble;
  }

  /** ``live``: the message is happening now, so now is its time (a snapshot's has its own). */
  #timeOf(id, live) {
    return live ? this.times.stamp(id) : this.times.get(id);
  }

  /** A tool call's row, made on first sight; ``reset`` starts a known one over. */
  entry(id, name, { reset = false } = {}) {
    let entry = this.entries.get(id);
    if (!entry) {
      entry = new ToolActivity(id, name ?? "?");
      this.append(entry.el);
      this.entries.set(id, entry);
    } else if (reset) {
      entry.reset(name ?? entry.name);
    }
    return entry;
  }

  notice({ code, message }) {
    this.line("notice", `ⓘ ${NOTICE_LABELS[code] ?? message ?? code ?? ""}`, "status", message ?? code);
  }

  line(kind, text, role, title) {
    return this.append(h("li", { class: kind, role, title }, text));
  }

  /** After a reply that did not finish (stopped, failed, cut off): ask the same again. */
  offerRetry() {
    const asked = [...this.el.items.querySelectorAll(".msg.user .text")].at(-1)?.textContent;
    if (!asked) return;
    this.append(retryLine(asked, this.onRetry));
  }

  /** Takes back every offer to ask again. */
  withdrawRetries() {
    for (const line of this.el.items.querySelectorAll(".retry-line")) line.remove();
  }

  /** A refusal or failure in the user's words; the gateway's own sentence one click away. */
  errorLine(said, sentence) {
    return this.append(
      h(
        "li",
        { class: "error-line", role: "alert" },
        h("span", {}, `⚠ ${said}`),
        sentence ? h("details", {}, h("summary", {}, "자세히"), h("p", { class: "error-detail" }, sentence)) : null,
      ),
    );
  }

  /** The dots that say a reply is coming: while the thread is busy and nothing streams yet, last. */
  showTyping(busy) {
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
  scroll({ force = false } = {}) {
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

/** Marks a reply the person spoke over: a small note under it (the conversation went on,
 * so it is no line across the transcript, and no offer to ask again). */
function bargedIn(bubble) {
  if (bubble.el.classList.contains("bargedIn")) return;
  bubble.el.classList.add("bargedIn");
  bubble.el.querySelector(".bubble")?.append(h("span", { class: "cut-mark" }, BARGED_IN));
}
