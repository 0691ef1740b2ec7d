// What the main area shows for each screen. MNU-3120 is a real list; the others are a
// title, a description and their sub-screens, enough for a demo of navigation.

import { h } from "./dom.js";

// A request's status as the list shows it; its data is the gateway's (GET /me), the same the
// chat's card shows, with this thread's decisions laid over (nav.js).
const STATUS = {
  pending: ["승인 대기", "pending"],
  approved: ["승인됨", "done"],
  rejected: ["거절됨", "rejected"],
};
const CUSTOM_SCREENS = { "MNU-3120": workRequestList };
// The list's columns; on narrower screens app.css hides the amount, then the requester.
const COLUMNS = [["요청 번호"], ["제목"], ["요청자", "col-owner"], ["금액", "col-amount"], ["상태"]];
const won = new Intl.NumberFormat("ko-KR");

/** What the user can ask the chat for, by what the profile lets them do: the welcome chips
 * and the home screen offer a guest nothing it would be refused. */
export function examplesFor(profile, screens) {
  const requests = profile.workRequests ?? [];
  const pending = requests.find((r) => r.status === "pending")?.requestId;
  return [
    screens.has("MNU-3120") ? "업무 요청 목록 화면 열어줘" : null,
    pending ? `${pending} 보여줘` : null,
    pending && profile.mayDecide ? `${pending} 승인해줘` : null,
    "자기소개를 길게 해 주세요",
  ].filter(Boolean);
}

export function renderScreen(screen, context) {
  const body = (CUSTOM_SCREENS[screen.screenId] ?? genericBody)(screen, context);
  return h(
    "article",
    { class: "screen", "aria-labelledby": "screen-title" },
    h(
      "nav",
      { class: "breadcrumb", "aria-label": "위치" },
      context.trail.map((s) =>
        h("button", { type: "button", class: "crumb", onclick: () => context.open(s.screenId) }, s.name),
      ),
      h("span", { class: "crumb current", "aria-current": "page" }, screen.name),
    ),
    h(
      "header",
      { class: "screen-head" },
      h("div", {}, h("h1", { id: "screen-title" }, screen.name), h("p", { class: "screen-desc" }, screen.description)),
      h("span", { class: "screen-id" }, screen.screenId),
    ),
    body,
  );
}

function genericBody(screen, { children, open }) {
  if (children.length) {
    return h(
      "section",
      { class: "card" },
      h("h2", {}, "하위 화면"),
      h(
        "ul",
        { class: "tiles" },
        children.map((child) =>
          h(
            "li",
            {},
            h(
              "button",
              { type: "button", class: "tile", onclick: () => open(child.screenId) },
              h("strong", {}, child.name),
              h("span", {}, child.description),
            ),
          ),
        ),
      ),
    );
  }
  return h(
    "section",
    { class: "card empty-state" },
    h("p", {}, `${screen.name} 화면입니다.`),
    h("p", { class: "muted" }, `경로 ${screen.route} · 데모에서는 내용 없이 제목과 설명만 보여 줍니다.`),
  );
}

function workRequestList(screen, { payload, requests }) {
  const selected = typeof payload?.requestId === "string" ? payload.requestId.toUpperCase() : null;
  const counts = requests.reduce((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
  return h(
    "div",
    { class: "stack" },
    h(
      "ul",
      { class: "stats" },
      Object.entries(STATUS).map(([status, [label, tone]]) =>
        h("li", { class: `stat ${tone}`, dataset: { status } }, h("span", {}, label), h("strong", {}, String(counts[status] ?? 0))),
      ),
    ),
    h(
      "section",
      { class: "card table-card" },
      h(
        "div",
        { class: "table-toolbar" },
        h("h2", {}, `업무 요청 ${requests.length}건`),
        h("input", { type: "search", placeholder: "요청 번호·제목 검색", "aria-label": "업무 요청 검색" }),
      ),
      h(
        "div",
        // Wider than a phone: keyboard users scroll it too, so it takes focus.
        { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "업무 요청 표" },
        h(
          "table",
          { class: "grid", "aria-label": "업무 요청 목록" },
          h(
            "thead",
            {},
            h("tr", {}, COLUMNS.map(([label, column]) => h("th", { scope: "col", class: column }, label))),
          ),
          h(
            "tbody",
            {},
            requests.map((r) => {
              const [label, tone] = STATUS[r.status] ?? [r.status, ""];
              return h(
                "tr",
                { class: r.requestId === selected ? "selected" : null, dataset: { requestId: r.requestId } },
                h("td", { class: "mono" }, r.requestId),
                h("td", {}, r.title),
                h("td", { class: "col-owner" }, r.requester),
                h("td", { class: "mono col-amount" }, `${won.format(r.amount)}원`),
                h("td", {}, h("span", { class: `badge ${tone}` }, label)),
              );
            }),
          ),
        ),
      ),
    ),
  );
}

export function renderHome(profile, screens, requests) {
  const examples = examplesFor(profile, screens);
  return h(
    "article",
    { class: "screen home", "aria-labelledby": "screen-title" },
    h(
      "header",
      { class: "screen-head" },
      h(
        "div",
        {},
        h("h1", { id: "screen-title" }, "홈"),
        h("p", { class: "screen-desc" }, `${profile.name} 님, 안녕하세요. 왼쪽 메뉴나 업무 도우미로 화면을 여세요.`),
      ),
    ),
    h(
      "ul",
      { class: "stats" },
      h("li", { class: "stat" }, h("span", {}, "열 수 있는 화면"), h("strong", {}, String(screens.size))),
      h("li", { class: "stat" }, h("span", {}, "소속 조직"), h("strong", {}, profile.org || "-")),
      h(
        "li",
        { class: "stat pending", dataset: { status: "pending" } },
        h("span", {}, "승인 대기 요청"),
        h("strong", {}, String(requests.filter((r) => r.status === "pending").length)),
      ),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "업무 도우미에게 이렇게 말해 보세요"),
      h("ul", { class: "examples" }, examples.map((text) => h("li", {}, h("q", {}, text)))),
    ),
  );
}
