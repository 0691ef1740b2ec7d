// One A2UI v0.9 surface: its components (a flat map by id, the tree drawn from "root"), its
// data model, the operations that change them, and how it is drawn. What is drawn is always
// the whole surface from its state, so an operation never leaves half an update on screen.

import { h } from "../dom.js";
import { BASIC_CATALOG_ID, COMPONENTS } from "./catalog.js";
import { callFunction, text } from "./functions.js";
import { absolute, get, put } from "./pointer.js";

export const SUPPORTED_CATALOGS = [BASIC_CATALOG_ID];

// Deeper than any card a person reads; a loop of ids past this is drawn as an error.
const MAX_DEPTH = 64;

/**
 * What a component's drawing function gets.
 * @typedef {object} DrawContext
 * @property {boolean} enabled   whether a press may go up now (not while a run is under way)
 * @property {boolean} inline    drawn inside a line (a button's label): no block elements
 * @property {(value: unknown) => unknown} value      a dynamic value, resolved
 * @property {(value: unknown) => string} string      a dynamic value as text
 * @property {(id: string, options?: {inline?: boolean}) => Node} child
 * @property {(children: unknown) => Node[]} children  a ChildList: ids, or a template over data
 * @property {(component: object) => void} act        a Button's action
 */

export class Surface {
  /**
   * @param {string} surfaceId
   * @param {string} catalogId
   * @param {(userAction: {name: string, surfaceId: string, sourceComponentId: string,
   *          context: object}) => void} onAction
   */
  constructor(surfaceId, catalogId, onAction) {
    this.surfaceId = surfaceId;
    this.catalogId = catalogId;
    this.onAction = onAction;
    this.components = new Map();
    this.data = {};
    this.enabled = true;
  }

  /** Applies an updateComponents or updateDataModel operation. */
  apply(operation) {
    if (operation.updateComponents) {
      for (const component of operation.updateComponents.components ?? []) {
        if (component && typeof component.id === "string") this.components.set(component.id, component);
      }
    } else if (operation.updateDataModel) {
      const update = operation.updateDataModel;
      // v0.9 as the renderers ship it: one path and value (no value removes it); the
      // protocol's later draft: a list of them.
      const updates = Array.isArray(update.updates) ? update.updates : [update];
      for (const { path = "/", value } of updates) {
        this.data = put(this.data, path, structuredClone(value));
      }
    }
  }

  /** The whole surface as DOM. */
  draw() {
    if (!SUPPORTED_CATALOGS.includes(this.catalogId)) {
      return errorBox(`이 화면은 카탈로그 '${this.catalogId}'의 카드를 그릴 수 없습니다.`);
    }
    if (!this.components.has("root")) {
      return h("p", { class: "a2ui-pending" }, "카드를 불러오는 중…");
    }
    return nestHeadings(this.#draw("root", { scope: "", inline: false, stack: [] }));
  }

  #draw(id, { scope, inline, stack }) {
    if (stack.includes(id) || stack.length > MAX_DEPTH) {
      return errorBox(`구성 요소 '${id}'가 자기 자신을 담고 있어 그리지 않았습니다.`);
    }
    const component = this.components.get(id);
    // Progressive rendering: a child named before its definition arrives is a gap for now.
    if (!component) return h("span", { class: "a2ui-pending", dataset: { a2uiMissing: id } });
    const drawComponent = COMPONENTS[component.component];
    if (!drawComponent) {
      return errorBox(`알 수 없는 구성 요소 '${component.component}' (id: ${id})`);
    }
    const ctx = this.#context(component, { scope, inline, stack: [...stack, id] });
    try {
      const node = drawComponent(component, ctx);
      if (node instanceof Element) {
        node.dataset.a2uiId = id;
        node.dataset.a2uiComponent = component.component;
        if (typeof component.weight === "number") node.style.flexGrow = String(component.weight);
        const label = component.accessibility?.label;
        if (label !== undefined) node.setAttribute("aria-label", ctx.string(label));
        if (ctx.value(component.accessibility?.hidden) === true) node.setAttribute("aria-hidden", "true");
      }
      return node;
    } catch (error) {
      return errorBox(`구성 요소 '${component.component}' (id: ${id})를 그리지 못했습니다: ${error.message}`);
    }
  }

  /** @returns {DrawContext} */
  #context(component, { scope, inline, stack }) {
    const value = (dynamic) => this.#resolve(dynamic, scope);
    return {
      enabled: this.enabled,
      inline,
      value,
      string: (dynamic) => text(value(dynamic)),
      child: (id, options = {}) => this.#draw(String(id), { scope, inline: options.inline ?? inline, stack }),
      children: (children) => this.#children(children, { scope, inline, stack }),
      act: (source) => this.#act(source, scope),
    };
  }

  #children(children, { scope, inline, stack }) {
    if (Array.isArray(children)) return children.map((id) => this.#draw(String(id), { scope, inline, stack }));
    if (children && typeof children === "object" && typeof children.componentId === "string") {
      // A template: the component once per item of the list at `path`, its relative paths
      // read from that item.
      const at = absolute(String(children.path ?? ""), scope);
      const items = get(this.data, at);
      const keys = Array.isArray(items)
        ? items.map((_, index) => String(index))
        : items && typeof items === "object"
          ? Object.keys(items)
          : [];
      return keys.map((key) =>
        this.#draw(children.componentId, { scope: `${at === "/" ? "" : at}/${key}`, inline, stack }),
      );
    }
    return [];
  }

  /** A dynamic value: a literal, `{path}` into the data model, or `{call, args}`. */
  #resolve(dynamic, scope) {
    if (dynamic === null || typeof dynamic !== "object" || Array.isArray(dynamic)) return dynamic;
    if (typeof dynamic.path === "string") return get(this.data, absolute(dynamic.path, scope));
    if (typeof dynamic.call === "string") {
      return callFunction(dynamic.call, dynamic.args, (arg) => this.#resolve(arg, scope));
    }
    return dynamic;
  }

  /** A Button's action: an event goes up to the agent, a function call runs here. */
  #act(component, scope) {
    const action = component.action ?? {};
    if (action.functionCall) {
      callFunction(action.functionCall.call, action.functionCall.args, (arg) => this.#resolve(arg, scope));
      return;
    }
    // v0.9's `{"event": {name, context}}`, and the earlier drafts' `{name, context}`.
    const event = action.event ?? action;
    if (typeof event.name !== "string") return;
    const context = {};
    for (const [key, value] of Object.entries(event.context ?? {})) context[key] = this.#resolve(value, scope);
    this.onAction({ name: event.name, surfaceId: this.surfaceId, sourceComponentId: component.id, context });
  }
}

// A card's top heading sits this deep: under the page's h1 and the chat's h2.
const CARD_LEVEL = 3;

/**
 * A card's headings as an outline under the chat's: its highest becomes level 3 and the
 * others keep their distance from it, so an "h3" title is not a jump from the chat's h2 to
 * an h5 (axe: heading-order).
 */
function nestHeadings(node) {
  const headings = node instanceof Element ? [...node.querySelectorAll("[role=heading]")] : [];
  if (node instanceof Element && node.matches("[role=heading]")) headings.unshift(node);
  if (!headings.length) return node;
  const top = Math.min(...headings.map((el) => Number(el.dataset.level)));
  for (const el of headings) el.setAttribute("aria-level", String(Math.min(6, Number(el.dataset.level) - top + CARD_LEVEL)));
  return node;
}

/** What could not be drawn, said where it would have been: never a silent gap. */
export function errorBox(message) {
  return h("div", { class: "a2ui-error", role: "note" }, h("strong", {}, "⚠ 표시할 수 없는 카드 요소"), h("span", {}, message));
}
