// A2UI surfaces in the transcript, as docs/a2ui.md has the gateway send them: activity
// messages of type "a2ui-surface" carry A2UI operations. A surface is drawn where the
// message holding its createSurface sits, and every later message's operations for it
// apply to it, in order. Surfaces are always the fold of the messages seen so far, so a
// message replaced (a snapshot) or extended (a delta) redraws them all from the start.

import { applyPatch } from "./a2ui/pointer.js";
import { Surface, SUPPORTED_CATALOGS } from "./a2ui/surface.js";
import { h } from "./dom.js";

export const SURFACE_ACTIVITY = "a2ui-surface";
export const ACTION_ACTIVITY = "a2ui-action";

/** The RunAgentInput.context entry that says which catalogs this client draws. */
export function capabilitiesEntry() {
  return {
    description: "a2uiClientCapabilities",
    value: JSON.stringify({ supportedCatalogIds: SUPPORTED_CATALOGS }),
  };
}

export class SurfaceBoard {
  /** @param {(userAction: object) => void} onAction  a press on a surface's Button */
  constructor(onAction) {
    this.onAction = (userAction) => {
      if (this.enabled) onAction(userAction);
    };
    this.messages = new Map(); // activity message id -> {content, el}, in transcript order
    this.surfaces = new Map(); // surfaceId -> {surface, el}
    this.enabled = true;
  }

  /**
   * An a2ui-surface activity message (ACTIVITY_SNAPSHOT, or one in MESSAGES_SNAPSHOT).
   * Returns the transcript row a message seen for the first time takes, else null.
   */
  receive(messageId, content, { replace = true } = {}) {
    const known = this.messages.get(messageId);
    if (known && !replace) return null;
    const entry = known ?? { el: h("li", { class: "surface", dataset: { messageId } }) };
    entry.content = content;
    this.messages.set(messageId, entry);
    this.#redraw();
    return known ? null : entry.el;
  }

  /** An ACTIVITY_DELTA: a JSON Patch on the message's content (operations appended). */
  patch(messageId, patch) {
    const entry = this.messages.get(messageId);
    if (!entry) {
      console.warn(`ACTIVITY_DELTA for ${messageId}, a message this page has not seen`);
      return;
    }
    entry.content = applyPatch(entry.content ?? { operations: [] }, patch);
    this.#redraw();
  }

  clear() {
    this.messages.clear();
    this.surfaces.clear();
  }

  /** Presses go up only while no run is under way; the buttons stay focusable meanwhile. */
  setEnabled(enabled) {
    if (enabled === this.enabled) return;
    this.enabled = enabled;
    for (const { el } of this.messages.values()) {
      for (const button of el.querySelectorAll(".a2ui-button")) button.setAttribute("aria-disabled", String(!enabled));
    }
  }

  /** How the transcript names a press: the button's own label, else the action's name. */
  describe(userAction) {
    const drawn = this.surfaces.get(userAction?.surfaceId)?.el;
    const id = String(userAction?.sourceComponentId ?? "");
    const label = drawn?.querySelector(`[data-a2ui-id="${CSS.escape(id)}"]`)?.textContent.trim();
    return label ? `'${label}' 버튼을 눌렀습니다` : `'${userAction?.name ?? "?"}' 동작을 보냈습니다`;
  }

  #redraw() {
    // Keep the keyboard where it was: a redraw replaces the element that had focus.
    const focused = document.activeElement?.closest?.("[data-a2ui-id]");
    const focusedAt = focused && [focused.closest("[data-surface-id]")?.dataset.surfaceId, focused.dataset.a2uiId];

    const surfaces = new Map();
    for (const entry of this.messages.values()) {
      for (const operation of entry.content?.operations ?? []) this.#fold(surfaces, entry, operation);
    }
    for (const entry of this.messages.values()) {
      entry.el.replaceChildren();
      entry.el.hidden = true;
    }
    for (const { surface, el } of surfaces.values()) {
      surface.enabled = this.enabled;
      el.append(
        h(
          "div",
          { class: "a2ui-surface", role: "group", "aria-label": "카드", dataset: { surfaceId: surface.surfaceId } },
          surface.draw(),
        ),
      );
      el.hidden = false;
    }
    this.surfaces = surfaces;

    if (focusedAt) {
      const [surfaceId, id] = focusedAt;
      surfaces
        .get(surfaceId)
        ?.el.querySelector(`[data-a2ui-id="${CSS.escape(id)}"]`)
        ?.focus();
    }
  }

  #fold(surfaces, entry, operation) {
    if (!operation || typeof operation !== "object") return;
    if (operation.createSurface) {
      const { surfaceId, catalogId } = operation.createSurface;
      surfaces.set(surfaceId, { surface: new Surface(surfaceId, catalogId, this.onAction), el: entry.el });
    } else if (operation.deleteSurface) {
      surfaces.delete(operation.deleteSurface.surfaceId);
    } else {
      const surfaceId = (operation.updateComponents ?? operation.updateDataModel)?.surfaceId;
      const target = surfaces.get(surfaceId);
      if (target) target.surface.apply(operation);
      else console.warn(`A2UI operation for surface ${surfaceId}, which does not exist here`, operation);
    }
  }
}
