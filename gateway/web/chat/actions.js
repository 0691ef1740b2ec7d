// What the user can do in the transcript besides typing: ask the same again after a reply
// that did not finish, and approve or reject what a run paused on. Each builder returns
// transcript rows and hands the user's choice to the controller (chat.js) to send.

import { h } from "../dom.js";

/** The offer to ask ``asked`` again; ``ask`` gets it on a click. */
export function retryLine(asked, ask) {
  const button = h("button", { type: "button", class: "btn retry" }, "↻ 다시 시도");
  button.addEventListener("click", () => ask(asked));
  return h("li", { class: "retry-line" }, button);
}

/**
 * A card for each interrupt a run ended on. The batch is answered in one input, once every
 * card is decided: ``onAnswered`` gets it, each entry's ``answer`` the interrupt's resume.
 * @param {object[]} interrupts
 * @param {object} options
 * @param {(toolCallId: string) => import("./tool-activity.js").ToolActivity | undefined} options.activityOf
 * @param {(batch: {interrupt: object, answer: object}[]) => void} options.onAnswered
 * @returns {HTMLLIElement[]}
 */
export function approvalCards(interrupts, { activityOf, onAnswered }) {
  const batch = interrupts.map((interrupt) => ({ interrupt, answer: null }));
  const items = [];
  for (const item of batch) {
    const { interrupt } = item;
    const activity = interrupt.toolCallId ? activityOf(interrupt.toolCallId) : undefined;
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
      if (batch.every((entry) => entry.answer)) onAnswered(batch);
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
    items.push(h("li", { class: "approval-item" }, card));
  }
  return items;
}
