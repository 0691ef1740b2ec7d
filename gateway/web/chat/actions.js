// What the user can do in the transcript besides typing: ask the same again after a reply
// that did not finish, and approve or reject what a run paused on, filling in the payload
// its responseSchema asks for. Each builder returns
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
    const fields = payloadFields(interrupt.responseSchema);
    const decide = (approved) => {
      if (activity) activity.rejectedByUser = !approved;
      const answer = approved ? { approved: true } : { approved: false, reason: "사용자가 거절했습니다" };
      if (approved && fields.length) answer.payload = payloadOf(fields);
      item.answer = { interruptId: interrupt.id, status: "resolved", payload: answer };
      for (const control of card.querySelectorAll("button, input")) control.disabled = true;
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
      fields.length ? h("div", { class: "approval-fields" }, fields.map((field) => field.row)) : null,
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

/** Takes the buttons from the cards of ``items`` nobody decided, saying ``why``: what asked
 * them is over (a live turn that ended; the gateway rejected the calls). */
export function withdrawApprovals(items, why) {
  for (const item of items) {
    const card = item.querySelector(".approval");
    if (!card || card.matches(".approved, .rejected, .withdrawn")) continue;
    for (const control of card.querySelectorAll("button, input")) control.disabled = true;
    card.classList.add("withdrawn");
    card.querySelector(".decision").textContent = `✕ ${why}`;
  }
}

// A payload field the card can ask for: the scalar properties of the answer's payload.
const INPUTS = { number: "number", integer: "number", string: "text", boolean: "checkbox" };

/**
 * The fields of the payload a tool asked the person to fill in with their approval
 * (``tool_context.request_confirmation(payload=...)``): the answer's ``responseSchema``
 * gives the payload's shape (``properties.payload``), and each scalar property becomes an
 * input. A property of another kind is left out of the form, so the tool gets none for it.
 */
function payloadFields(schema) {
  const properties = schema?.properties?.payload?.properties;
  if (!properties || typeof properties !== "object") return [];
  return Object.entries(properties)
    .filter(([, shape]) => INPUTS[shape?.type])
    .map(([name, shape]) => {
      const input = h("input", { type: INPUTS[shape.type], name, step: shape.type === "number" ? "any" : undefined });
      return { name, type: shape.type, input, row: h("label", { class: "approval-field" }, h("span", {}, name), input) };
    });
}

/** What the person filled in; an empty field is left out. */
function payloadOf(fields) {
  const payload = {};
  for (const { name, type, input } of fields) {
    if (type === "boolean") payload[name] = input.checked;
    else if (type === "number" || type === "integer") {
      if (!Number.isNaN(input.valueAsNumber)) payload[name] = input.valueAsNumber;
    } else if (input.value !== "") payload[name] = input.value;
  }
  return payload;
}
