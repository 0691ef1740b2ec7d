// A tool call's row in the transcript's timeline, for a browser tool and a server tool alike:
// its name, what it is about (a screen, a query, a request id), where it stands (running, in
// the browser, waiting for a result or an approval, another tab's) and, once the result
// comes, how it turned out. A result is final: no later state overwrites it.

import { h } from "../dom.js";
import { textOf } from "../messages.js";
import { AGENT, CUT_OFF, readResult, STATE_LABELS, USER_REJECTED } from "./labels.js";

/** One row of the tool-activity timeline. */
export class ToolActivity {
  constructor(id, name) {
    this.id = id;
    this.titleEl = h("span", { class: "activity-name" });
    this.targetEl = h("span", { class: "activity-target" });
    this.detailEl = h("div", { class: "activity-detail" });
    this.statusEl = h("span", { class: "activity-status" });
    this.el = h(
      "li",
      { class: "activity", dataset: { toolCallId: id } },
      h("span", { class: "activity-icon", "aria-hidden": "true" }),
      h("div", { class: "activity-body" }, h("div", { class: "activity-title" }, this.titleEl, this.targetEl), this.detailEl),
      this.statusEl,
    );
    this.reset(name);
  }

  reset(name) {
    delete this.el.dataset.outcome;
    this.rejectedByUser = false;
    this.name = name;
    this.raw = "";
    this.args = null;
    this.titleEl.textContent = AGENT.toolLabels[name] ?? name;
    this.targetEl.textContent = "";
    this.detailEl.textContent = "";
    this.el.dataset.tool = name;
    this.state("running");
  }

  appendArgs(delta) {
    this.raw += delta;
  }

  endArgs() {
    try {
      this.args = JSON.parse(this.raw || "{}");
    } catch {
      this.args = null;
    }
    this.targetEl.textContent = summarize(this.name, this.args);
  }

  state(state) {
    if (this.el.dataset.outcome) return; // a result is final
    this.el.dataset.state = state;
    this.el.className = `activity state-${state}`;
    this.statusEl.textContent = STATE_LABELS[state] ?? state;
  }

  resultContent(content, error, elsewhere = false) {
    let value = textOf(content);
    try {
      value = JSON.parse(value);
    } catch {
      // plain text stays text
    }
    this.result(value, error, elsewhere);
  }

  result(value, error, elsewhere = false) {
    let { tone, label, detail } = readResult(value, error);
    if (this.rejectedByUser && tone === "failed") {
      // The user said no on the approval card: that is what this failure means.
      ({ label, detail } = USER_REJECTED);
    }
    if (elsewhere) label = `다른 창에서 ${label}`;
    this.#settle(tone, label, detail);
  }

  /** The run ended in an error before this call's result came: it is over, without one. */
  cutOff() {
    if (this.el.dataset.outcome) return;
    this.#settle(CUT_OFF.tone, CUT_OFF.label, CUT_OFF.detail);
  }

  #settle(tone, label, detail) {
    this.el.dataset.outcome = tone;
    this.el.dataset.state = "done";
    this.el.className = `activity outcome-${tone}`;
    this.statusEl.textContent = `${tone === "ok" ? "✓" : tone === "failed" ? "✕" : "•"} ${label}`;
    this.detailEl.textContent = detail;
  }
}

function summarize(name, args) {
  if (!args) return "";
  const target = AGENT.toolTargets[name];
  if (target) return target(args);
  const text = JSON.stringify(args);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
