// The app's navigation: the user's screen tree, the menu, and the one function that swaps
// the main area. The menu and the chatbot's navigateToScreen both go through `navigate`.

import { h } from "./dom.js";
import { renderHome, renderScreen } from "./screens.js";

// Chat surfaces that may not move the app under the user's feet.
const SURFACE_LABELS = { "full-screen": "전체 화면 채팅", modal: "모달 채팅" };
// This tab's count of main-area swaps; unlike window.__navigations it survives a reload.
const NAVIGATIONS_KEY = "agw.navigations";

export class AppNavigator {
  /**
   * @param {object} options
   * @param {{userId: string, name: string, org: string, screens: object[]}} options.profile
   * @param {HTMLElement} options.menu
   * @param {HTMLElement} options.main
   */
  constructor({ profile, menu, main }) {
    this.profile = profile;
    this.menu = menu;
    this.main = main;
    this.screens = new Map(profile.screens.map((screen) => [screen.screenId, screen]));
    this.current = null;
    this.payload = {};
    this.decisions = {}; // this thread's decisions on work requests: {requestId: status}
    this.storageKey = `agw.screen.${profile.userId}`;
    window.__navigations = window.__navigations ?? 0;
  }

  /**
   * Opens a screen of the user's tree in the main area, without a reload.
   * @param {string} screenId
   * @param {{origin?: string, orgScope?: string, payload?: object}} request
   *   origin: "menu", or the chat surface asking ("side-panel", "full-screen", "modal").
   * @returns {{status: "navigated"|"denied"|"not_allowed_here"|"error", message: string}}
   */
  navigate(screenId, { origin = "menu", orgScope, payload } = {}) {
    if (SURFACE_LABELS[origin]) {
      const name = this.screens.get(screenId)?.name ?? screenId;
      return {
        status: "not_allowed_here",
        message:
          `${SURFACE_LABELS[origin]}에서는 화면을 열 수 없습니다. ` +
          `채팅을 '패널' 보기로 바꾸거나 닫은 뒤 메뉴에서 '${name}' 화면을 열어 주세요.`,
      };
    }
    const screen = typeof screenId === "string" ? this.screens.get(screenId) : undefined;
    if (!screen) {
      return {
        status: "denied",
        message: `'${screenId}' 화면은 ${this.profile.name}(${this.profile.userId}) 님의 메뉴에 없어 열 수 없습니다.`,
      };
    }
    if (orgScope && this.profile.org && orgScope !== this.profile.org) {
      return {
        status: "denied",
        message: `'${screen.name}' 화면은 ${orgScope} 조직으로 열 수 없습니다. 사용자의 조직은 ${this.profile.org}입니다.`,
      };
    }
    try {
      this.#show(screen, payload ?? {});
    } catch (error) {
      console.error("navigation failed", error);
      return { status: "error", message: `'${screen.name}' 화면을 그리지 못했습니다: ${error.message}` };
    }
    window.__navigations += 1;
    sessionStorage.setItem(NAVIGATIONS_KEY, String(Number(sessionStorage.getItem(NAVIGATIONS_KEY) ?? 0) + 1));
    sessionStorage.setItem(this.storageKey, screen.screenId);
    return { status: "navigated", message: `'${screen.name}' 화면을 열었습니다.` };
  }

  /** The first render after load: the screen this tab last showed, or home. Not a navigation. */
  restore() {
    this.renderMenu();
    const screen = this.screens.get(sessionStorage.getItem(this.storageKey) ?? "");
    if (screen) this.#show(screen, {});
    else this.showHome();
  }

  /**
   * The thread's decisions on work requests (its state's ``workRequests``), as the chat
   * hears them: the screen on view is drawn again with them, and is no navigation.
   */
  showDecisions(decisions) {
    const next = decisions && typeof decisions === "object" ? decisions : {};
    if (JSON.stringify(next) === JSON.stringify(this.decisions)) return;
    this.decisions = next;
    if (this.current) this.#show(this.current, this.payload);
    else if (this.main.dataset.screen === "home") this.showHome();
  }

  /** The organisation's work requests as the gateway lists them, this thread's decisions laid over. */
  workRequests() {
    return (this.profile.workRequests ?? []).map((request) => ({
      ...request,
      status: this.decisions[request.requestId] ?? request.status,
    }));
  }

  showHome() {
    this.current = null;
    this.main.replaceChildren(renderHome(this.profile, this.screens, this.workRequests()));
    this.main.dataset.screen = "home";
    sessionStorage.removeItem(this.storageKey);
    this.#markActive();
  }

  renderMenu() {
    const children = new Map();
    for (const screen of this.screens.values()) {
      const parent = this.screens.has(screen.parent) ? screen.parent : null;
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(screen);
    }
    // Groups fold, so a tree of hundreds of screens stays readable; leaves open screens.
    const node = (screen, depth) => {
      if (!children.has(screen.screenId)) {
        return h("li", {}, this.#link(screen.screenId, screen.name, `menu-link depth-${depth}`));
      }
      return h(
        "li",
        {},
        h(
          "details",
          { class: `menu-group depth-${depth}`, dataset: { group: screen.screenId } },
          h("summary", {}, screen.name),
          h("ul", {}, children.get(screen.screenId).map((child) => node(child, depth + 1))),
        ),
      );
    };
    const roots = children.get(null) ?? [];
    const tree = roots.length
      ? h("ul", { class: "menu-tree" }, roots.map((screen) => node(screen, 0)))
      : h("p", { class: "menu-empty" }, "열 수 있는 화면이 없습니다.");
    this.menu.replaceChildren(
      h("div", { class: "menu-section" }, this.#link("home", "홈", "menu-link menu-home")),
      tree,
    );
    const first = this.menu.querySelector("details");
    if (first) first.open = true;
    this.#markActive();
  }

  #link(screenId, label, className) {
    return h(
      "a",
      {
        href: "#",
        class: className,
        dataset: { screenId },
        onclick: (event) => {
          event.preventDefault();
          if (screenId === "home") this.showHome();
          else this.navigate(screenId, { origin: "menu" });
        },
      },
      label,
    );
  }

  /** The ancestors of a screen within the user's tree, root first. */
  trail(screen) {
    const trail = [];
    let parent = this.screens.get(screen.parent);
    while (parent && !trail.includes(parent)) {
      trail.unshift(parent);
      parent = this.screens.get(parent.parent);
    }
    return trail;
  }

  #show(screen, payload) {
    const view = renderScreen(screen, {
      trail: this.trail(screen),
      // Breadcrumbs and sub-screen tiles are the app's own links, like the menu.
      children: [...this.screens.values()].filter((s) => s.parent === screen.screenId),
      payload,
      requests: this.workRequests(),
      open: (screenId) => this.navigate(screenId, { origin: "menu" }),
    });
    const again = this.current === screen;
    this.main.replaceChildren(view);
    this.main.dataset.screen = screen.screenId;
    if (!again) this.main.scrollTop = 0;
    this.current = screen;
    this.payload = payload;
    this.#markActive();
  }

  #markActive() {
    const active = this.current?.screenId ?? "home";
    for (const link of this.menu.querySelectorAll(".menu-link")) {
      const on = link.dataset.screenId === active;
      link.classList.toggle("active", on);
      if (on) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    for (const group of this.menu.querySelectorAll("details")) {
      const holds = group.dataset.group === active || group.querySelector(`[data-screen-id="${active}"]`);
      if (holds) group.open = true;
      group.classList.toggle("holds-active", Boolean(holds));
    }
  }
}
