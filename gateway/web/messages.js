// The transcript's messages: who said it, when, the text (markdown for the bot, plain for
// the user) and a copy button.

import { h } from "./dom.js";
import { AGENT } from "./chat/labels.js";
import { StreamedMarkdown } from "./markdown.js";

const TIMES_KEY = "agw.message-times";
const TIMES_KEPT = 1000;
const clock = new Intl.DateTimeFormat("ko-KR", { hour: "numeric", minute: "2-digit" });
const fullDate = new Intl.DateTimeFormat("ko-KR", { dateStyle: "long", timeStyle: "medium" });

/**
 * When each message was said. AG-UI messages carry no time: times seen live are kept in
 * localStorage, and the gateway's snapshots say when each message was stored (their
 * metadata's "gateway.times"), which covers a message this browser never saw live.
 */
export class MessageTimes {
  constructor(storage = globalThis.localStorage) {
    this.storage = storage;
    this.times = new Map();
    try {
      this.times = new Map(JSON.parse(storage.getItem(TIMES_KEY) ?? "[]"));
    } catch {
      // a damaged entry costs the times, nothing else
    }
  }

  /** The time a message was seen live: the first one recorded stays. */
  stamp(id, when = Date.now()) {
    if (!this.times.has(id)) {
      this.times.set(id, when);
      while (this.times.size > TIMES_KEPT) this.times.delete(this.times.keys().next().value);
      this.storage.setItem(TIMES_KEY, JSON.stringify([...this.times]));
    }
    return this.get(id);
  }

  /** Times a snapshot gives ({messageId: ms since the epoch}), for messages not yet timed. */
  learn(times) {
    if (times === null || typeof times !== "object") return;
    for (const [id, when] of Object.entries(times)) {
      if (Number.isFinite(when) && !this.times.has(id)) this.times.set(id, when);
    }
  }

  /** @returns {Date|undefined} */
  get(id) {
    const when = this.times.get(id);
    return when === undefined ? undefined : new Date(when);
  }
}

/** A user's text, which is never markdown: what they typed is what they see. */
class PlainText {
  constructor(el) {
    this.el = el;
    this.text = "";
  }

  set(text) {
    this.text = text;
    this.el.textContent = text;
  }

  append(delta) {
    this.set(this.text + delta);
  }

  draw() {}
}

/**
 * A user's message; ``view`` takes its text (another tab's message streams in).
 * @returns {{el: HTMLLIElement, view: PlainText, setTime: (time?: Date) => void}}
 */
export function userMessage(id, text, time) {
  const body = h("div", { class: "text" });
  const view = new PlainText(body);
  view.set(text);
  const head = meta("나", time, copyButton(() => view.text));
  const el = h("li", { class: "msg user", dataset: { messageId: id } }, h("div", { class: "bubble" }, head, body));
  return { el, view, setTime: (when) => setTime(head, when) };
}

/**
 * A bot message; ``view`` takes its text, whole or chunk by chunk.
 * @returns {{el: HTMLLIElement, view: StreamedMarkdown, setTime: (time?: Date) => void}}
 */
export function botMessage(id, { time, name, onDrawn }) {
  const body = h("div", { class: "text" });
  const view = new StreamedMarkdown(body, onDrawn);
  const head = meta(AGENT.name, time, copyButton(() => view.text), name);
  const el = h(
    "li",
    { class: "msg assistant", dataset: { messageId: id } },
    h("span", { class: "avatar", "aria-hidden": "true" }, "AI"),
    h("div", { class: "bubble" }, head, body),
  );
  return { el, view, setTime: (when) => setTime(head, when) };
}

/** A message's content as text: a string as it is, a list of parts as its text parts, one a line. */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((part) => part.type === "text").map((part) => part.text).join("\n");
  return "";
}

/** The line above a message: who, when, and its copy button. */
function meta(speaker, time, copy, agentName) {
  const head = h(
    "div",
    { class: "msg-meta" },
    h("span", { class: "speaker", title: agentName }, speaker),
    h("span", { class: "when" }),
    copy,
  );
  setTime(head, time);
  return head;
}

function setTime(head, time) {
  const when = head.querySelector(".when");
  when.replaceChildren();
  if (time) when.append(h("time", { datetime: time.toISOString(), title: fullDate.format(time) }, clock.format(time)));
}

function copyButton(textOf) {
  const copy = h("button", { type: "button", class: "copy", "aria-label": "메시지 복사" }, "복사");
  copy.addEventListener("click", async () => {
    const done = await copyText(textOf());
    const said = done ? "✓ 복사됨" : "복사하지 못했습니다";
    copy.textContent = said;
    copy.setAttribute("aria-label", said);
    setTimeout(() => {
      copy.textContent = "복사";
      copy.setAttribute("aria-label", "메시지 복사");
    }, 1500);
  });
  return copy;
}

/** Puts text on the clipboard; the Clipboard API needs a secure page, so fall back to a selection. */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { class: "offscreen", "aria-hidden": "true", readonly: true });
    area.value = text;
    document.body.append(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    return done;
  }
}
