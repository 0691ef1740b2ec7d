// The demo's page: the gateway's chat (chat.js and its parts, served from gateway/web/ under
// this folder) beside a work portal. Boot: who the user is (dev auth), their screen tree from
// GET /me, the client tools from GET /tools, then the menu, the main area and the chatbot.

import { claimInstance } from "./agui-websocket/ledger.js";
import { banner, currentUser, getJson, socketUrl } from "./boot.js";
import { ChatPanel } from "./chat.js";
import { describeAgent } from "./chat/labels.js";
import { h, newId } from "./dom.js";
import { AppNavigator } from "./nav.js";
import { examplesFor } from "./screens.js";
import { clientTools, declaredTools } from "./tools.js";

const DEV_USERS = [
  ["demo", "demo · 데모 사용자"],
  ["guest", "guest · 손님"],
  ["other-org", "other-org · 타 조직(ORG-02)"],
];

// The demo's bot, its tools and what it can be asked, in the chat's words.
describeAgent({
  name: "업무 도우미",
  greeting: "안녕하세요! 화면을 찾아 열어 드리거나 업무 요청 승인을 도와드려요.",
  toolLabels: {
    find_screen: "화면 검색",
    navigateToScreen: "화면 이동",
    approveWorkRequest: "업무 요청 승인",
    rejectWorkRequest: "업무 요청 거절",
    show_work_request: "업무 요청 보기",
  },
  toolTargets: {
    navigateToScreen: (args) => (args.screenName ? `${args.screenName} (${args.screenId})` : (args.screenId ?? "")),
    find_screen: (args) => (args.query ? `“${args.query}”` : ""),
    approveWorkRequest: (args) => args.requestId ?? "",
    rejectWorkRequest: (args) => args.requestId ?? "",
    show_work_request: (args) => args.requestId ?? "",
  },
});

window.__navigations = 0;

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
  // The welcome chips offer only what this user can do (a guest cannot open the list).
  describeAgent({ examples: examplesFor(profile, navigator.screens) });

  const implemented = clientTools(navigator);
  const chat = new ChatPanel({
    app,
    userId,
    wsUrl: socketUrl(userId),
    clientId,
    tools: declaredTools(catalog.tools ?? [], implemented),
    implemented,
    // The list screen shows this thread's decisions on work requests as they are made.
    onState: (state) => navigator.showDecisions(state.workRequests),
  });
  chat.start();
}

boot();
