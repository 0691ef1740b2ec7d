// The components of A2UI v0.9's basic catalog this client draws, each a function from the
// component's definition to DOM. What a component's properties mean is basic_catalog.json's
// (google/A2UI, specification/v0_9/json/); ``ctx`` resolves its dynamic values and draws
// its children (surface.js). A component not listed here is drawn as an error box.

import { h } from "../dom.js";
import { renderSimple, renderSimpleInline } from "../markdown.js";

/** The catalog this client advertises in `a2uiClientCapabilities` (docs/a2ui.md). */
export const BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/basic_catalog.json";

const FLEX = {
  start: "flex-start",
  center: "center",
  end: "flex-end",
  spaceBetween: "space-between",
  spaceAround: "space-around",
  spaceEvenly: "space-evenly",
  stretch: "stretch",
};

// Icon names of the catalog as characters any font has: the page loads no icon font.
const ICONS = {
  accountCircle: "👤", add: "＋", arrowBack: "←", arrowForward: "→", attachFile: "📎",
  calendarToday: "📅", call: "📞", camera: "📷", check: "✓", close: "✕", delete: "🗑",
  download: "⤓", edit: "✎", event: "📅", error: "⛔", fastForward: "⏩", favorite: "♥",
  favoriteOff: "♡", folder: "📁", help: "?", home: "⌂", info: "ℹ", locationOn: "📍",
  lock: "🔒", lockOpen: "🔓", mail: "✉", menu: "☰", moreVert: "⋮", moreHoriz: "⋯",
  notificationsOff: "🔕", notifications: "🔔", pause: "⏸", payment: "💳", person: "👤",
  phone: "📱", photo: "🖼", play: "▶", print: "🖨", refresh: "↻", rewind: "⏪", search: "🔍",
  send: "➤", settings: "⚙", share: "⤴", shoppingCart: "🛒", skipNext: "⏭", skipPrevious: "⏮",
  star: "★", starHalf: "⯪", starOff: "☆", stop: "■", upload: "⤒", visibility: "👁",
  visibilityOff: "⊘", volumeDown: "🔉", volumeMute: "🔇", volumeOff: "🔇", volumeUp: "🔊",
  warning: "⚠",
};

const IMAGE_SCHEMES = new Set(["https:", "http:", "blob:"]);

/** @type {Record<string, (component: object, ctx: import("./surface.js").DrawContext) => Node>} */
export const COMPONENTS = {
  Text(component, ctx) {
    const value = ctx.string(component.text);
    const variant = component.variant ?? "body";
    const level = /^h([1-5])$/.exec(variant)?.[1];
    if (ctx.inline) return h("span", { class: `a2ui-text ${variant}` }, renderSimpleInline(value));
    if (level) {
      // Inside a chat message, a card's h1 is not the page's: the surface (surface.js)
      // sets the level, its headings nested under the chat's.
      return h("div", { class: `a2ui-text ${variant}`, role: "heading", dataset: { level } }, renderSimpleInline(value));
    }
    if (variant === "caption") return h("p", { class: "a2ui-text caption" }, renderSimpleInline(value));
    return h("div", { class: "a2ui-text body" }, renderSimple(value));
  },

  Row(component, ctx) {
    return flexbox("a2ui-row", component, ctx);
  },

  Column(component, ctx) {
    return flexbox("a2ui-column", component, ctx);
  },

  List(component, ctx) {
    const direction = component.direction === "horizontal" ? "horizontal" : "vertical";
    const list = h("div", { class: `a2ui-list ${direction}`, role: "list" });
    list.style.alignItems = FLEX[component.align ?? "stretch"] ?? "stretch";
    for (const child of ctx.children(component.children)) list.append(h("div", { role: "listitem" }, child));
    return list;
  },

  Card(component, ctx) {
    return h("div", { class: "a2ui-card" }, ctx.child(component.child));
  },

  Divider(component) {
    return component.axis === "vertical"
      ? h("div", { class: "a2ui-divider vertical", role: "separator", "aria-orientation": "vertical" })
      : h("hr", { class: "a2ui-divider" });
  },

  Button(component, ctx) {
    const variant = ["primary", "borderless"].includes(component.variant) ? component.variant : "default";
    const button = h(
      "button",
      // aria-disabled, not disabled: a button pressed stays focused while its run goes on.
      { type: "button", class: `a2ui-button ${variant}`, "aria-disabled": String(!ctx.enabled) },
      ctx.child(component.child, { inline: true }),
    );
    button.addEventListener("click", () => ctx.act(component));
    return button;
  },

  Icon(component, ctx) {
    const name = component.name;
    if (name && typeof name === "object" && typeof name.svgPath === "string") {
      const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      svg.setAttribute("viewBox", "0 0 24 24");
      svg.setAttribute("class", "a2ui-icon");
      svg.setAttribute("aria-hidden", "true");
      const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
      path.setAttribute("d", name.svgPath);
      svg.append(path);
      return svg;
    }
    const key = ctx.string(name);
    return h("span", { class: "a2ui-icon", "aria-hidden": "true", title: key }, ICONS[key] ?? "•");
  },

  Image(component, ctx) {
    const url = new URL(ctx.string(component.url), location.href);
    const inline = url.protocol === "data:" && /^data:image\/(png|jpeg|gif|webp);/i.test(url.href);
    if (!IMAGE_SCHEMES.has(url.protocol) && !inline) {
      throw new Error(`이미지 주소(${url.protocol})는 보여 주지 않습니다.`);
    }
    const description = ctx.string(component.description);
    const image = h("img", {
      class: `a2ui-image ${component.variant ?? "mediumFeature"}`,
      src: url.href,
      alt: description,
      loading: "lazy",
      referrerpolicy: "no-referrer",
    });
    image.style.objectFit = component.fit === "scaleDown" ? "scale-down" : (component.fit ?? "fill");
    return image;
  },
};

function flexbox(className, component, ctx) {
  const box = h("div", { class: className });
  box.style.justifyContent = FLEX[component.justify ?? "start"] ?? "flex-start";
  box.style.alignItems = FLEX[component.align ?? "stretch"] ?? "stretch";
  box.append(...ctx.children(component.children));
  return box;
}
