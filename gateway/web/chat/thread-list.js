// The thread sidebar: the user's conversations, to find one again and go back to it.
//
// It keeps one list, drawn from the thread door (thread-door.js, docs/threads.md): a page of
// threads, pinned first, then newest activity, or the results of a search. The list is
// the server's; the sidebar only reorders an entry a live change moved. Live changes come
// from the chat's socket as `gateway.thread` events ({change, thread}); each says "this is
// now the thread", so applying one twice changes nothing. While a search is shown, a change
// asks the server again instead (only it knows what matches). Each new socket (after a cut,
// or on another thread) reads the list again: changes made meanwhile were sent to no one.
//
// Where it is shown is the stylesheet's business (thread-list.css): a column beside the chat
// when the chat is wide, a drawer over it when narrow. The drawer holds the keyboard while
// open (the rest of the chat is inert), Escape or choosing a thread closes it, and focus
// goes back to where the user was.

import { h } from "../dom.js";

const SEARCH_DELAY_MS = 250;

// The sidebar's words, by the page's language (<html lang>).
const WORDS = {
  ko: {
    threads: "대화 목록",
    toggleOpen: "대화 목록 열기",
    toggleClose: "대화 목록 닫기",
    search: "대화 검색",
    views: "대화 보기",
    current: "대화",
    archived: "보관함",
    untitled: "새 대화",
    more: "더 보기",
    manage: (title) => `'${title}' 대화 관리`,
    rename: "이름 바꾸기",
    newName: "새 이름",
    pin: "고정",
    unpin: "고정 해제",
    archive: "보관",
    unarchive: "보관 해제",
    remove: "삭제",
    cancel: "취소",
    confirmRemove: (title) => `'${title}' 대화를 삭제할까요?`,
    removeForever: "삭제한 대화는 되돌릴 수 없습니다.",
    pinned: "고정됨",
    running: "응답 중",
    waiting: { approval: "승인 필요", browser_action: "확인 필요", tool_result: "결과 대기" },
    waitingAny: "확인 필요",
    empty: "아직 대화가 없습니다.",
    emptyArchived: "보관한 대화가 없습니다.",
    noMatch: (q) => `'${q}'와 일치하는 대화가 없습니다.`,
    found: (n) => `대화 ${n}개를 찾았습니다.`,
    loadFailed: "대화 목록을 불러오지 못했습니다. 잠시 후 다시 시도해 주세요.",
    changeFailed: "변경하지 못했습니다. 잠시 후 다시 시도해 주세요.",
    tooLong: "검색어가 너무 깁니다.",
  },
  en: {
    threads: "Conversations",
    toggleOpen: "Open conversations",
    toggleClose: "Close conversations",
    search: "Search conversations",
    views: "Show",
    current: "Conversations",
    archived: "Archived",
    untitled: "New conversation",
    more: "Show more",
    manage: (title) => `Manage '${title}'`,
    rename: "Rename",
    newName: "New name",
    pin: "Pin",
    unpin: "Unpin",
    archive: "Archive",
    unarchive: "Unarchive",
    remove: "Delete",
    cancel: "Cancel",
    confirmRemove: (title) => `Delete '${title}'?`,
    removeForever: "A deleted conversation cannot be brought back.",
    pinned: "Pinned",
    running: "Answering",
    waiting: { approval: "Needs approval", browser_action: "Needs you", tool_result: "Waiting" },
    waitingAny: "Needs you",
    empty: "No conversations yet.",
    emptyArchived: "No archived conversations.",
    noMatch: (q) => `No conversation matches '${q}'.`,
    found: (n) => `${n} conversations found.`,
    loadFailed: "Could not load the conversations. Try again in a moment.",
    changeFailed: "Could not change it. Try again in a moment.",
    tooLong: "The search is too long.",
  },
};

export function wordsFor(lang = document.documentElement.lang) {
  return lang?.toLowerCase().startsWith("ko") ? WORDS.ko : WORDS.en;
}

/** Pinned first, then newest activity, then id: the door's own order. */
function before(a, b) {
  if (a.pinned !== b.pinned) return a.pinned ? -1 : 1;
  if (a.lastActivityAt !== b.lastActivityAt) return a.lastActivityAt > b.lastActivityAt ? -1 : 1;
  return a.threadId < b.threadId ? -1 : 1;
}

export class ThreadSidebar {
  /**
   * @param {object} options
   * @param {HTMLElement} options.chat   the chat's section: the sidebar goes inside it, and the
   *   button that opens the drawer into its toolbar (`.chat-tools`)
   * @param {import("./thread-door.js").ThreadDoor} options.door
   */
  constructor({ chat, door }) {
    this.chat = chat;
    this.door = door;
    this.activeId = null;
    this.onOpen = () => {};
    this.onDeleted = () => {};
    this.words = wordsFor();
    this.threads = new Map(); // threadId -> Summary, what the list shows
    this.view = { archived: "false", q: "" };
    this.nextCursor = null;
    this.asked = 0; // the number of the latest listing asked for; older answers are dropped
    this.searchTimer = null;
    this.lastConnection = null;
    this.wasOpen = false;
    this.#build(chat.querySelector(".chat-tools"));
  }

  #build(toolbar) {
    const w = this.words;
    this.toggle = h(
      "button",
      {
        type: "button",
        class: "icon-btn threads-toggle",
        "aria-controls": "threads",
        "aria-expanded": "false",
        "aria-label": w.toggleOpen,
        title: w.threads,
        onclick: () => this.setOpen(this.chat.dataset.threadsOpen !== "true"),
      },
      "☰",
    );
    toolbar.prepend(this.toggle);
    this.search = h("input", {
      type: "search",
      class: "threads-search",
      "aria-label": w.search,
      placeholder: w.search,
      maxlength: 256,
      autocomplete: "off",
    });
    this.viewButtons = [
      ["false", w.current],
      ["true", w.archived],
    ].map(([archived, label]) =>
      h(
        "button",
        {
          type: "button",
          "aria-pressed": String(archived === this.view.archived),
          dataset: { archived },
          onclick: () => this.#showView(archived),
        },
        label,
      ),
    );
    this.status = h("p", { class: "threads-status", role: "status" });
    this.list = h("ul", { class: "threads-list" });
    this.more = h("button", { type: "button", class: "btn threads-more", hidden: true, onclick: () => this.#load({ more: true }) }, w.more);
    this.closeButton = h(
      "button",
      { type: "button", class: "icon-btn threads-close", "aria-label": w.toggleClose, onclick: () => this.setOpen(false) },
      "✕",
    );
    this.el = h(
      "aside",
      { class: "threads", id: "threads", "aria-label": w.threads },
      h("div", { class: "threads-head" }, h("h2", { class: "threads-title" }, w.threads), this.closeButton),
      this.search,
      h("div", { class: "threads-views", role: "group", "aria-label": w.views }, this.viewButtons),
      this.status,
      this.list,
      this.more,
    );
    this.scrim = h("div", { class: "threads-scrim", "aria-hidden": "true", onclick: () => this.setOpen(false) });
    this.confirm = this.#confirmDialog();
    this.chat.prepend(this.el, this.scrim);
    this.chat.append(this.confirm.dialog);
  }

  /**
   * Shows the list; the chat's controller (chat.js) calls it as it starts.
   * @param {object} chat
   * @param {string} chat.activeId  the thread the chat shows now
   * @param {(threadId: string) => void} chat.onOpen     the user chose a thread
   * @param {(threadId: string) => void} chat.onDeleted  the chat's own thread was deleted
   */
  start({ activeId, onOpen, onDeleted }) {
    this.activeId = activeId;
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    // Korean is typed through an IME: a search waits for the composition to end, and the
    // letters composed so far never start one.
    this.search.addEventListener("input", (event) => {
      if (!event.isComposing) this.#searchSoon();
    });
    this.search.addEventListener("compositionend", () => this.#searchSoon());
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing) this.#searchNow();
    });
    this.el.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !event.isComposing) this.#escape(event);
    });
    // The chat changes width (another mode, a rotated phone): a drawer may become a column.
    new ResizeObserver(() => this.#holdKeyboard()).observe(this.chat);
    this.setOpen(false);
    return this.refresh();
  }

  /** Reads the list again from the door, as the view (archived or not, a search) is now. */
  refresh() {
    return this.#load({ more: false });
  }

  /**
   * The chat's connection changed state. Each socket after the first (back from a cut, or
   * on another thread) reads the list again: changes made while none was open were sent to
   * no one.
   */
  connection(state) {
    if (state === "open" && this.lastConnection !== "open" && this.wasOpen) this.refresh();
    if (state === "open") this.wasOpen = true;
    this.lastConnection = state;
  }

  /** The chat now shows ``threadId``: the list marks it. */
  setActive(threadId) {
    this.activeId = threadId;
    for (const item of this.list.children) {
      const open = item.querySelector(".thread-open");
      if (item.dataset.threadId === threadId) open?.setAttribute("aria-current", "true");
      else open?.removeAttribute("aria-current");
    }
  }

  /** The drawer (on a narrow chat) opens or closes; a docked sidebar is always open. */
  setOpen(open) {
    const wasOpen = this.chat.dataset.threadsOpen === "true";
    this.chat.dataset.threadsOpen = String(open);
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.setAttribute("aria-label", open ? this.words.toggleClose : this.words.toggleOpen);
    const drawer = this.#holdKeyboard();
    if (drawer) this.search.focus();
    else if (wasOpen && !this.docked && this.el.contains(document.activeElement)) this.toggle.focus();
  }

  /** An open drawer keeps the chat behind it inert; a docked sidebar leaves it alone. */
  #holdKeyboard() {
    const drawer = this.chat.dataset.threadsOpen === "true" && !this.docked;
    for (const behind of this.chat.querySelectorAll(":scope > :not(.threads, .threads-scrim, dialog)")) {
      behind.inert = drawer;
    }
    return drawer;
  }

  /** Whether the sidebar is a column beside the chat (no drawer): its toggle is not shown. */
  get docked() {
    return !this.toggle.checkVisibility();
  }

  /**
   * A ``gateway.thread`` event's value: a thread of this user's was created, changed or
   * deleted, on this connection or another (another tab, another device).
   */
  applyChange(value) {
    const thread = value?.thread;
    if (!thread || typeof thread.threadId !== "string") return;
    if (value.change === "deleted") {
      this.#forget(thread.threadId);
      if (thread.threadId === this.activeId) this.onDeleted(thread.threadId);
      return;
    }
    if (this.view.q) {
      // Whether it matches the search now is the server's to say.
      this.#searchSoon();
      return;
    }
    const shown = this.view.archived === "all" || String(Boolean(thread.archived)) === this.view.archived;
    if (shown) this.#put(thread);
    else this.#forget(thread.threadId);
  }

  // --- reading the list -----------------------------------------------------------------

  #searchSoon() {
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.#searchNow(), SEARCH_DELAY_MS);
  }

  #searchNow() {
    clearTimeout(this.searchTimer);
    const q = this.search.value.trim();
    if (q === this.view.q && this.list.childElementCount) return;
    this.view.q = q;
    this.refresh();
  }

  #showView(archived) {
    this.view.archived = archived;
    for (const button of this.viewButtons) {
      button.setAttribute("aria-pressed", String(button.dataset.archived === archived));
    }
    this.refresh();
  }

  async #load({ more }) {
    const asked = ++this.asked;
    const query = { q: this.view.q, archived: this.view.archived, cursor: more ? this.nextCursor : null };
    let page;
    try {
      page = await this.door.list(query);
    } catch (error) {
      if (asked !== this.asked) return;
      this.#say(error?.code === "BAD_QUERY" ? this.words.tooLong : this.words.loadFailed);
      console.warn("thread list failed", error);
      return;
    }
    if (asked !== this.asked) return; // the user has asked for something else since
    if (!more) {
      this.threads.clear();
      this.list.replaceChildren();
    }
    for (const thread of page.threads ?? []) {
      this.threads.set(thread.threadId, thread);
      const item = this.#itemOf(thread.threadId) ?? this.#item(thread.threadId);
      this.#fill(item, thread);
      this.list.append(item);
    }
    this.nextCursor = page.nextCursor ?? null;
    this.more.hidden = !this.nextCursor;
    this.#sayCount();
  }

  #sayCount() {
    const w = this.words;
    const count = this.threads.size;
    if (this.view.q) this.#say(count ? w.found(count) : w.noMatch(this.view.q));
    else this.#say(count ? "" : this.view.archived === "true" ? w.emptyArchived : w.empty);
  }

  #say(text) {
    this.status.textContent = text;
    this.status.hidden = !text;
  }

  /**
   * Shows ``thread`` where the order puts it. A thread already shown keeps its row, updated in
   * place, so a live change never closes the menu or the rename box the user has open in it.
   */
  #put(thread) {
    const shown = this.#itemOf(thread.threadId);
    const next = [...this.list.children].find((other) => {
      const summary = this.threads.get(other.dataset.threadId);
      return other !== shown && summary && before(thread, summary) < 0;
    });
    // Below the last row while pages remain unread: it comes in its place with "더 보기".
    if (!shown && !next && this.nextCursor) return;
    this.threads.set(thread.threadId, thread);
    const item = shown ?? this.#item(thread.threadId);
    this.#fill(item, thread);
    if (item.nextElementSibling !== (next ?? null) || !item.isConnected) {
      const focused = item.contains(document.activeElement) ? document.activeElement : null;
      this.list.insertBefore(item, next ?? null);
      focused?.focus(); // moving a row takes the focus out of it
    }
    this.#sayCount();
  }

  #forget(threadId) {
    this.#itemOf(threadId)?.remove();
    this.threads.delete(threadId);
    this.#sayCount();
  }

  #itemOf(threadId) {
    return [...this.list.children].find((item) => item.dataset.threadId === threadId);
  }

  // --- one thread in the list -----------------------------------------------------------

  #titleOf(thread) {
    return thread.title || this.words.untitled;
  }

  /** A thread's row: its button, and its menu of actions, which act on it as it is then. */
  #item(threadId) {
    const w = this.words;
    const current = () => this.threads.get(threadId) ?? {};
    const action = (role, run) =>
      h(
        "button",
        {
          type: "button",
          dataset: { action: role },
          onclick: (event) => {
            event.currentTarget.closest("details").open = false;
            run();
          },
        },
        "",
      );
    const menu = h(
      "details",
      { class: "thread-menu" },
      h("summary", {}, "⋯"),
      h(
        "div",
        { class: "thread-actions" },
        action("rename", () => this.#rename(threadId)),
        action("pin", () => this.#change(threadId, { pinned: !current().pinned })),
        action("archive", () => this.#change(threadId, { archived: !current().archived })),
        action("remove", () => this.#askRemove(threadId)),
      ),
    );
    menu.addEventListener("toggle", () => {
      // One menu open at a time.
      if (!menu.open) return;
      for (const other of this.list.querySelectorAll("details[open]")) if (other !== menu) other.open = false;
    });
    const open = h("button", { type: "button", class: "thread-open", onclick: () => this.#choose(threadId) });
    return h("li", { class: "thread-item", dataset: { threadId } }, open, menu);
  }

  /** Writes what ``thread`` now is into its row. */
  #fill(item, thread) {
    const w = this.words;
    const title = this.#titleOf(thread);
    const badge = this.#badge(thread);
    item.dataset.state = thread.state ?? "idle";
    const open = item.querySelector(".thread-open");
    if (thread.threadId === this.activeId) open.setAttribute("aria-current", "true");
    else open.removeAttribute("aria-current");
    open.replaceChildren(
      h(
        "span",
        { class: "thread-line" },
        thread.pinned ? h("span", { class: "thread-pin" }, w.pinned) : null,
        h("span", { class: "thread-title" }, title),
        this.#time(thread.lastActivityAt),
      ),
      h(
        "span",
        { class: "thread-line" },
        h("span", { class: "thread-preview" }, thread.preview ?? ""),
        badge ? h("span", { class: `thread-badge ${thread.state}` }, badge) : null,
      ),
    );
    const summary = item.querySelector("summary");
    summary.setAttribute("aria-label", w.manage(title));
    summary.title = w.manage(title);
    const label = (role, text) => {
      item.querySelector(`[data-action="${role}"]`).textContent = text;
    };
    label("rename", w.rename);
    label("pin", thread.pinned ? w.unpin : w.pin);
    label("archive", thread.archived ? w.unarchive : w.archive);
    label("remove", w.remove);
  }

  #badge(thread) {
    const w = this.words;
    if (thread.state === "running") return w.running;
    if (thread.state === "waiting") return w.waiting[thread.waitingOn] ?? w.waitingAny;
    return "";
  }

  #time(iso) {
    const when = new Date(iso);
    if (!iso || Number.isNaN(when.valueOf())) return null;
    const lang = document.documentElement.lang || undefined;
    const today = new Date().toDateString() === when.toDateString();
    const short = today
      ? when.toLocaleTimeString(lang, { hour: "numeric", minute: "2-digit" })
      : when.toLocaleDateString(lang, { month: "short", day: "numeric" });
    return h(
      "time",
      { class: "thread-time", datetime: when.toISOString(), title: when.toLocaleString(lang) },
      short,
    );
  }

  #choose(threadId) {
    if (!this.docked) this.setOpen(false);
    this.setActive(threadId);
    this.onOpen(threadId);
  }

  #escape(event) {
    const menu = event.target.closest?.("details[open]");
    if (menu) {
      menu.open = false;
      menu.querySelector("summary").focus();
    } else if (!this.docked && this.chat.dataset.threadsOpen === "true") {
      this.setOpen(false);
    } else {
      return;
    }
    event.stopPropagation();
  }

  /** The title becomes a text box in place: Enter keeps the new name, Escape the old one. */
  #rename(threadId) {
    const item = this.#itemOf(threadId);
    const thread = this.threads.get(threadId);
    if (!item || !thread) return;
    const box = h("input", { type: "text", class: "thread-rename", "aria-label": this.words.newName, maxlength: 200 });
    box.value = thread.title;
    const open = item.querySelector(".thread-open");
    open.hidden = true;
    item.prepend(box);
    box.focus();
    box.select();
    let done = false;
    const finish = async (keep) => {
      if (done) return;
      done = true;
      const title = box.value.trim();
      box.remove();
      open.hidden = false;
      open.focus();
      if (keep && title && title !== thread.title) await this.#change(threadId, { title });
    };
    box.addEventListener("keydown", (event) => {
      if (event.isComposing || (event.key !== "Enter" && event.key !== "Escape")) return;
      // The key must not go on to the thread's button, which takes the focus back now.
      event.preventDefault();
      event.stopPropagation();
      finish(event.key === "Enter");
    });
    box.addEventListener("blur", () => finish(true));
  }

  async #change(threadId, change) {
    try {
      const thread = await this.door.update(threadId, change);
      this.applyChange({ change: "updated", thread });
    } catch (error) {
      console.warn("thread change failed", error);
      this.#say(error?.status === 404 ? "" : this.words.changeFailed);
      if (error?.status === 404) this.#forget(threadId);
    }
  }

  // --- deleting, after a confirmation ----------------------------------------------------

  #confirmDialog() {
    const w = this.words;
    const question = h("p", { class: "threads-confirm-question", id: "threads-confirm-question" });
    const dialog = h(
      "dialog",
      { class: "threads-confirm", "aria-labelledby": "threads-confirm-question" },
      question,
      h("p", { class: "muted small" }, w.removeForever),
      h(
        "form",
        { method: "dialog", class: "threads-confirm-actions" },
        h("button", { type: "submit", class: "btn", value: "cancel" }, w.cancel),
        h("button", { type: "submit", class: "btn danger", value: "delete" }, w.remove),
      ),
    );
    return { dialog, question };
  }

  #askRemove(threadId) {
    const thread = this.threads.get(threadId);
    if (!thread) return;
    const { dialog, question } = this.confirm;
    const returnTo = this.#itemOf(threadId)?.querySelector("summary");
    question.textContent = this.words.confirmRemove(this.#titleOf(thread));
    dialog.returnValue = "";
    dialog.addEventListener(
      "close",
      async () => {
        if (dialog.returnValue !== "delete") {
          returnTo?.focus();
          return;
        }
        try {
          await this.door.remove(threadId);
        } catch (error) {
          if (error?.status !== 404) {
            console.warn("thread delete failed", error);
            this.#say(this.words.changeFailed);
            return;
          }
        }
        this.applyChange({ change: "deleted", thread: { threadId } });
        (this.list.querySelector(".thread-open") ?? this.search).focus();
      },
      { once: true },
    );
    dialog.showModal();
  }
}
