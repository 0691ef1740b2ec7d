// Regenerate and edit, and the versions of a thread they leave (docs/branches.md).
//
// The gateway keeps every version: a regenerate or an edit forks the thread before a user
// message, and the turn that was there stays as a sibling branch. What this module draws is
// what the gateway says (`gateway.branches`, after a snapshot and in every fork or switch
// run): for each fork on the active path, "‹ 2/3 ›" where the versions differ, on the
// user's message when its text differs between them (an edit), else on the reply after it
// (regenerations). Pressing ‹ or › asks the gateway to switch; the switch run's snapshot
// redraws the thread. It adds "다시 생성" to the latest reply and "수정" to the user's
// messages, and hands what the user asked for to the controller (chat.js), which sends it.
// While a run is going or the socket is down, these controls are disabled.

import { h } from "../dom.js";

const WORDS = {
  regenerate: "↻ 다시 생성",
  regenerateLabel: "답변 다시 생성",
  edit: "수정",
  editLabel: "메시지 수정",
  editBox: "수정할 메시지",
  send: "보내기",
  cancel: "취소",
  previous: "이전 버전",
  next: "다음 버전",
  replyVersions: "답변 버전",
  messageVersions: "메시지 버전",
};

export class Branches {
  /**
   * @param {import("./transcript.js").Transcript} transcript
   * @param {object} handlers
   * @param {(fork: {before: string, text: string, keep: boolean}) => void} handlers.onFork
   *   a new version of the turn of user message ``before``: ``keep`` for a regenerate (the
   *   same message again), else an edit to ``text``
   * @param {(runId: string) => void} handlers.onSwitch  show branch ``runId``
   */
  constructor(transcript, { onFork, onSwitch }) {
    this.transcript = transcript;
    this.onFork = onFork;
    this.onSwitch = onSwitch;
    this.forks = [];
    this.enabled = false;
  }

  /** Another thread: nothing is known of its forks until the gateway says. */
  forget() {
    this.forks = [];
  }

  /** A ``gateway.branches`` event's value. */
  show(value) {
    this.forks = Array.isArray(value?.forks) ? value.forks : [];
    this.draw();
  }

  setEnabled(enabled) {
    if (enabled === this.enabled) return;
    this.enabled = enabled;
    this.draw();
  }

  /** Puts the controls where the transcript, as it is now, wants them. */
  draw() {
    const items = this.transcript.el.items;
    for (const old of items.querySelectorAll(".msg-regenerate, .branch-nav")) old.remove();
    for (const message of items.querySelectorAll(".msg.user")) {
      if (message.querySelector(".msg-editing")) continue;
      let edit = message.querySelector(".msg-edit");
      if (!edit) {
        edit = h("button", { type: "button", class: "copy msg-edit", "aria-label": WORDS.editLabel }, WORDS.edit);
        edit.addEventListener("click", () => this.#edit(message));
        message.querySelector(".msg-meta")?.append(edit);
      }
      edit.disabled = !this.enabled;
    }
    this.#offerRegenerate(items);
    for (const fork of this.forks) this.#drawFork(fork);
  }

  /** "다시 생성" on the reply to the latest user message, once there is one. */
  #offerRegenerate(items) {
    const asked = [...items.querySelectorAll(".msg.user")].at(-1);
    const reply = asked && repliesAfter(asked).at(-1);
    if (!reply) return;
    const button = h(
      "button",
      { type: "button", class: "copy msg-regenerate", "aria-label": WORDS.regenerateLabel, disabled: !this.enabled },
      WORDS.regenerate,
    );
    button.addEventListener("click", () => {
      if (!this.enabled) return;
      this.onFork({ before: asked.dataset.messageId, text: textOf(asked), keep: true });
    });
    reply.querySelector(".msg-meta")?.append(button);
  }

  #drawFork(fork) {
    const branches = Array.isArray(fork?.branches) ? fork.branches : [];
    const at = branches.findIndex((branch) => branch.active);
    if (branches.length < 2 || at < 0) return;
    const message = this.transcript.bubbles.get(fork.messageId)?.el;
    if (!message) return;
    const edited = new Set(branches.map((branch) => branch.text)).size > 1;
    const host = edited ? message : (repliesAfter(message)[0] ?? message);
    const go = (index) => {
      if (this.enabled && branches[index]) this.onSwitch(branches[index].runId);
    };
    const nav = h(
      "div",
      { class: "branch-nav", role: "group", "aria-label": edited ? WORDS.messageVersions : WORDS.replyVersions },
      h(
        "button",
        { type: "button", "aria-label": WORDS.previous, disabled: !this.enabled || at === 0, onclick: () => go(at - 1) },
        "‹",
      ),
      h("span", { class: "branch-count" }, `${at + 1}/${branches.length}`),
      h(
        "button",
        {
          type: "button",
          "aria-label": WORDS.next,
          disabled: !this.enabled || at === branches.length - 1,
          onclick: () => go(at + 1),
        },
        "›",
      ),
    );
    host.querySelector(".bubble")?.append(nav);
  }

  /** The message becomes a text box in place; sending it forks the thread before it. */
  #edit(message) {
    if (!this.enabled) return;
    const before = message.dataset.messageId;
    const text = message.querySelector(".text");
    const box = h("textarea", { class: "msg-edit-box", rows: 3, "aria-label": WORDS.editBox });
    box.value = textOf(message);
    const close = () => {
      form.remove();
      text.hidden = false;
      this.draw();
    };
    const send = () => {
      const edited = box.value.trim();
      if (!edited || !this.enabled) return;
      close();
      this.onFork({ before, text: edited, keep: false });
    };
    const form = h(
      "form",
      { class: "msg-editing" },
      box,
      h(
        "div",
        { class: "msg-edit-actions" },
        h("button", { type: "button", class: "btn", onclick: close }, WORDS.cancel),
        h("button", { type: "submit", class: "btn primary" }, WORDS.send),
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      send();
    });
    box.addEventListener("keydown", (event) => {
      // Korean input: Enter that ends an IME composition must not send half a word.
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send();
      } else if (event.key === "Escape" && !event.isComposing) {
        close();
        message.querySelector(".msg-edit")?.focus();
      }
    });
    text.hidden = true;
    text.after(form);
    box.focus();
  }
}

/** The replies to a user message: the bot's messages after it, before the next user message. */
function repliesAfter(message) {
  const replies = [];
  for (let row = message.nextElementSibling; row && !row.matches(".msg.user"); row = row.nextElementSibling) {
    if (row.matches(".msg.assistant")) replies.push(row);
  }
  return replies;
}

function textOf(message) {
  return message.querySelector(".text")?.textContent ?? "";
}
