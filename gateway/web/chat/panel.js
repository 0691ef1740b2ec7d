// The chat's frame on the page: where it is shown (a side panel, full screen, or a modal
// dialog that keeps the keyboard inside), whether it is open, the composer with its Send and
// Stop buttons, and the header's status (the connection, the thread's id). It knows nothing
// of runs: the controller (chat.js) says what to show and hears what the user asked for.

import { AGENT, connectionLabel, MODES } from "./labels.js";

const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";

export class Panel {
  /** @param {HTMLElement} app  the element carrying data-chat-mode / data-chat-open */
  constructor(app) {
    this.app = app;
    this.el = {
      panel: app.querySelector("#chat"),
      form: app.querySelector("#composer"),
      input: app.querySelector("#chat-input"),
      send: app.querySelector("#send"),
      stop: app.querySelector("#stop"),
      status: app.querySelector("#conn-status"),
      modes: [...app.querySelectorAll("[data-mode]")],
    };
    // A page that offers no choice of surface (the generic page) keeps the one it declares.
    const chosen = this.el.modes.length ? sessionStorage.getItem("agw.chat-mode") : null;
    this.mode = MODES[chosen] ? chosen : MODES[app.dataset.chatMode] ? app.dataset.chatMode : "side-panel";
  }

  /**
   * Listens to the panel's own controls; what the user asks the chat to do goes to the caller.
   * @param {object} handlers
   * @param {() => void} handlers.onSend       the composer sent (Enter or the Send button)
   * @param {() => void} handlers.onStop       the Stop button
   * @param {() => void} handlers.onNewThread  the New conversation button
   */
  start({ onSend, onStop, onNewThread }) {
    this.el.form.addEventListener("submit", (event) => {
      event.preventDefault();
      onSend();
    });
    this.el.input.addEventListener("keydown", (event) => {
      // Korean input: Enter that ends an IME composition must not send half a word.
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        onSend();
      }
    });
    this.el.stop.addEventListener("click", () => onStop());
    for (const button of this.el.modes) {
      button.addEventListener("click", () => this.setMode(button.dataset.mode));
    }
    // The page's skip link opens the chat if it is closed and puts the caret in it, without
    // changing the address (its hash names the thread).
    this.app.querySelector(".skip-link")?.addEventListener("click", (event) => {
      event.preventDefault();
      this.setOpen(true);
    });
    // A page that shows only the chat has no close button, launcher or backdrop.
    this.app.querySelector("#new-thread").addEventListener("click", () => onNewThread());
    this.app.querySelector("#chat-close")?.addEventListener("click", () => this.setOpen(false));
    this.app.querySelector("#launcher")?.addEventListener("click", () => this.setOpen(true));
    this.app.querySelector("#backdrop")?.addEventListener("click", () => this.setOpen(false));
    document.addEventListener("keydown", (event) => {
      if (this.mode !== "modal" || this.app.dataset.chatOpen !== "true") return;
      if (event.key === "Escape") this.setOpen(false);
      else if (event.key === "Tab") this.#keepFocusInside(event);
    });
  }

  setMode(mode) {
    if (!MODES[mode]) return;
    this.mode = mode;
    sessionStorage.setItem("agw.chat-mode", mode);
    this.app.dataset.chatMode = mode;
    for (const button of this.el.modes) {
      button.setAttribute("aria-pressed", String(button.dataset.mode === mode));
    }
    this.setOpen(true);
  }

  setOpen(open) {
    const wasOpen = this.app.dataset.chatOpen === "true";
    this.app.dataset.chatOpen = String(open);
    this.#asDialog(open && this.mode === "modal");
    if (open) this.el.input.focus({ preventScroll: true });
    else if (wasOpen) this.app.querySelector("#launcher")?.focus();
  }

  /** Puts an example in the composer, to be edited or sent. */
  fill(text) {
    this.el.input.value = text;
    this.el.input.focus();
  }

  /** The thread on screen, for the page's own use (a link to it, tests); a person does
   * not read a raw id, so it is not shown. */
  showThread(threadId) {
    this.el.panel.dataset.threadId = threadId;
  }

  showConnection(state, detail) {
    this.app.dataset.connection = state;
    this.el.status.textContent = connectionLabel(state, detail);
    this.el.status.dataset.state = state;
  }

  /** While the thread is busy Stop takes Send's place; Stop works once a run has started.
   * In a live turn (``typable``) Send stays beside Stop: what is typed goes into the turn. */
  showControls({ busy, connected, stoppable, typable = false }) {
    this.el.send.hidden = busy && !typable;
    this.el.send.disabled = !connected;
    this.el.stop.hidden = !busy;
    this.el.stop.disabled = !stoppable;
    this.el.panel.dataset.busy = String(busy);
  }

  /** Tab from the dialog's last control goes to its first (Shift+Tab the other way round). */
  #keepFocusInside(event) {
    const controls = [...this.el.panel.querySelectorAll(FOCUSABLE)].filter(
      (el) => !el.disabled && el.checkVisibility(),
    );
    if (!controls.length) return;
    const [first, last] = [controls[0], controls.at(-1)];
    const active = document.activeElement;
    const outside = !this.el.panel.contains(active);
    if (event.shiftKey && (active === first || outside)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || outside)) {
      event.preventDefault();
      first.focus();
    }
  }

  /**
   * The modal is a dialog: announced as one, and the page behind it is inert, so neither
   * Tab nor a screen reader's cursor leaves it until it closes.
   */
  #asDialog(modal) {
    const panel = this.el.panel;
    if (modal) {
      panel.setAttribute("role", "dialog");
      panel.setAttribute("aria-modal", "true");
      panel.setAttribute("aria-labelledby", "chat-title");
      panel.removeAttribute("aria-label");
    } else {
      panel.removeAttribute("role");
      panel.removeAttribute("aria-modal");
      panel.removeAttribute("aria-labelledby");
      panel.setAttribute("aria-label", AGENT.name);
    }
    for (const behind of this.app.querySelectorAll(":scope > :not(#chat, .backdrop)")) {
      behind.inert = modal;
    }
  }
}
