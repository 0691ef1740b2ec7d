// What the main area shows for each screen. MNU-3120 is a real list; the others are a
// title, a description and their sub-screens, enough for a demo of navigation.

import { h } from "./dom.js";

const WORK_REQUESTS = [
  { id: "R-1042", title: "노트북 교체 요청", team: "정보시스템팀", owner: "김민수", date: "2025-06-12", status: "승인 대기" },
  { id: "R-1041", title: "회의실 프로젝터 수리", team: "총무팀", owner: "이서연", date: "2025-06-11", status: "처리 중" },
  { id: "R-1039", title: "신규 입사자 계정 발급", team: "인사팀", owner: "박지훈", date: "2025-06-09", status: "완료" },
  { id: "R-1036", title: "법인카드 한도 조정", team: "재무팀", owner: "최유진", date: "2025-06-05", status: "반려" },
  { id: "R-1031", title: "사내 VPN 접속 오류", team: "정보시스템팀", owner: "정하늘", date: "2025-06-02", status: "완료" },
];

const STATUS_CLASS = { "승인 대기": "pending", "처리 중": "progress", 완료: "done", 반려: "rejected" };

const CUSTOM_SCREENS = { "MNU-3120": workRequestList };

// The list's columns; on narrower screens app.css hides the team, then the date, then the owner.
const COLUMNS = [
  ["요청 번호"],
  ["제목"],
  ["요청 부서", "col-team"],
  ["요청자", "col-owner"],
  ["요청일", "col-date"],
  ["상태"],
];

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

function workRequestList(screen, { payload }) {
  const selected = typeof payload?.requestId === "string" ? payload.requestId.toUpperCase() : null;
  const counts = WORK_REQUESTS.reduce((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
  return h(
    "div",
    { class: "stack" },
    h(
      "ul",
      { class: "stats" },
      ["승인 대기", "처리 중", "완료", "반려"].map((status) =>
        h("li", { class: `stat ${STATUS_CLASS[status]}` }, h("span", {}, status), h("strong", {}, String(counts[status] ?? 0))),
      ),
    ),
    h(
      "section",
      { class: "card table-card" },
      h(
        "div",
        { class: "table-toolbar" },
        h("h2", {}, `업무 요청 ${WORK_REQUESTS.length}건`),
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
            WORK_REQUESTS.map((r) =>
              h(
                "tr",
                { class: r.id === selected ? "selected" : null, dataset: { requestId: r.id } },
                h("td", { class: "mono" }, r.id),
                h("td", {}, r.title),
                h("td", { class: "col-team" }, r.team),
                h("td", { class: "col-owner" }, r.owner),
                h("td", { class: "mono col-date" }, r.date),
                h("td", {}, h("span", { class: `badge ${STATUS_CLASS[r.status]}` }, r.status)),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}

export function renderHome(profile, screens) {
  const examples = ["업무 요청 목록 화면 열어줘", "R-1042 보여줘", "R-1042 승인해줘", "자기소개를 길게 해 주세요"];
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
      h("li", { class: "stat pending" }, h("span", {}, "승인 대기 요청"), h("strong", {}, "1")),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "업무 도우미에게 이렇게 말해 보세요"),
      h("ul", { class: "examples" }, examples.map((text) => h("li", {}, h("q", {}, text)))),
    ),
  );
}
