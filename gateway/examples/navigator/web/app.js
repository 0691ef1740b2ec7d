// Boot: who the user is (dev auth), their screen tree from GET /me, the client tools from
// GET /tools, then the menu, the main area and the chatbot.

import { ChatPanel } from "./chat.js";
import { h, newId } from "./dom.js";
import { claimInstance } from "./agui-websocket/ledger.js";
import { AppNavigator } from "./nav.js";
import { clientTools, declaredTools } from "./tools.js";

const DEV_USERS = [
  ["demo", "demo · 데모 사용자"],
  ["guest", "guest · 손님"],
  ["other-org", "other-org · 타 조직(ORG-02)"],
];
const USER_ID = /^[A-Za-z0-9_.@-]{1,64}$/;

window.__navigations = 0;

function currentUser() {
  const fromQuery = new URLSearchParams(location.search).get("user");
  if (fromQuery && USER_ID.test(fromQuery)) {
    localStorage.setItem("agw.user", fromQuery);
    return fromQuery;
  }
  const remembered = localStorage.getItem("agw.user");
  return remembered && USER_ID.test(remembered) ? remembered : "demo";
}

/** GET with the dev identity both ways the gateway may read it. */
async function getJson(path, userId) {
  const response = await fetch(`${path}?user=${encodeURIComponent(userId)}`, {
    headers: { "X-Gateway-User": userId, Accept: "application/json" },
  });
  if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
  return response.json();
}

function setupUserPicker(userId) {
  const select = document.querySelector("#user-select");
  const known = DEV_USERS.some(([id]) => id === userId);
  const options = known ? DEV_USERS : [...DEV_USERS, [userId, userId]];
  select.replaceChildren(...options.map(([id, label]) => h("option", { value: id, selected: id === userId }, label)));
  select.addEventListener("change", () => {
    // Signing in as someone else is a new page: new screen tree, new connection, new thread.
    location.assign(`/?user=${encodeURIComponent(select.value)}`);
  });
}

/**
 * Below 1100 px the menu is a drawer the ☰ button opens; choosing a screen, the backdrop
 * or Escape closes it. Wider, the menu is always there and this changes nothing.
 */
function setupMenuDrawer(app) {
  const toggle = document.querySelector("#menu-toggle");
  const setOpen = (open) => {
    app.dataset.menuOpen = String(open);
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", open ? "메뉴 닫기" : "메뉴 열기");
  };
  setOpen(false);
  toggle.addEventListener("click", () => setOpen(app.dataset.menuOpen !== "true"));
  document.querySelector("#menu-backdrop").addEventListener("click", () => setOpen(false));
  document.querySelector("#menu").addEventListener("click", (event) => {
    if (event.target.closest("a")) setOpen(false);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && app.dataset.menuOpen === "true") {
      setOpen(false);
      toggle.focus();
    }
  });
}

function banner(text) {
  document.querySelector("#banner").append(h("p", { class: "banner", role: "alert" }, text));
}

async function boot() {
  const app = document.querySelector(".app");
  const userId = currentUser();
  setupUserPicker(userId);
  setupMenuDrawer(app);

  const [profile, catalog, clientId] = await Promise.all([
    getJson("/me", userId).catch((error) => {
      banner(`사용자 정보와 메뉴를 불러오지 못했습니다 (${error.message}).`);
      return { userId, name: userId, org: "", screens: [] };
    }),
    getJson("/tools", userId).catch((error) => {
      banner(`브라우저 도구 목록을 불러오지 못했습니다 (${error.message}). 화면 이동을 할 수 없습니다.`);
      return { tools: [] };
    }),
    claimInstance(() => newId("tab")),
  ]);
  document.querySelector("#user-name").textContent = profile.name;
  document.querySelector("#user-org").textContent = profile.org;
  document.querySelector("#user-avatar").textContent = (profile.name || userId).slice(0, 1);

  const navigator = new AppNavigator({
    profile,
    menu: document.querySelector("#menu"),
    main: document.querySelector("#main-content"),
  });
  navigator.restore();

  const implemented = clientTools(navigator);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const chat = new ChatPanel({
    app,
    userId,
    wsUrl: `${scheme}://${location.host}/ws?user=${encodeURIComponent(userId)}`,
    clientId,
    tools: declaredTools(catalog.tools ?? [], implemented),
    implemented,
  });
  chat.start();
}

boot();
