// The page's one browser action, navigateToScreen, and what the tests read that a person
// cannot see: each execution, kept in sessionStorage so the count survives a reload. The
// open screen is kept there too, as an app's router keeps it in the URL, so a reload shows
// it and a call begun before the reload can be settled by looking at it.
const RECORD = "navigations";
const SCREEN = "screen";
const params = new URLSearchParams(location.search);
// ?deny=<screenId>: the page refuses that screen, so a test can see the refusal reach the model.
const denied = params.get("deny");
// ?settleMs=<ms>: the screen opens at once and the handler returns that much later, as a
// router's transition would (a moment a reload can cut the handler in).
const settleMs = Number(params.get("settleMs") ?? 0);
// ?reloadOnReturn=1: the page reloads itself the instant its handler returns (once), the
// sharpest "after the handler" a person's reload can come at: before the result goes out.
const reloadOnReturn = params.get("reloadOnReturn") === "1";
const listeners = new Set();

function kept(key, fallback) {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? "null") ?? fallback;
  } catch {
    return fallback;
  }
}

/** @returns {{toolCallId: string, screenId: string}[]} every navigation this tab performed */
export function navigations() {
  const all = kept(RECORD, []);
  return Array.isArray(all) ? all : [];
}

let shown = { raw: null, screen: null };

/** @returns {{screenId: string, name: string} | null} the screen in the main area (the same
 * object until it changes, as React's useSyncExternalStore needs) */
export function currentScreen() {
  const raw = sessionStorage.getItem(SCREEN);
  if (raw !== shown.raw) shown = { raw, screen: kept(SCREEN, null) };
  return shown.screen;
}

export function onScreenChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Performs a navigateToScreen call; resolves with the browser's account of what happened
 * (``window.__handled`` counts the calls answered so). */
export async function navigate(args, toolCallId) {
  const result = open(args, toolCallId);
  if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
  window.__handled = (window.__handled ?? 0) + 1;
  if (reloadOnReturn && !sessionStorage.getItem("reloadedOnReturn")) {
    sessionStorage.setItem("reloadedOnReturn", "1");
    location.reload();
  }
  return result;
}

function open(args, toolCallId) {
  const name = args?.screenName || args?.screenId;
  if (!args || typeof args.screenId !== "string" || !args.screenId) {
    return { status: "error", message: "screenId가 없는 화면 이동 요청이라 실행하지 않았습니다." };
  }
  if (args.screenId === denied) {
    return { status: "denied", message: `'${name}' 화면은 이 사용자의 메뉴에 없습니다.` };
  }
  const all = [...navigations(), { toolCallId, screenId: args.screenId }];
  sessionStorage.setItem(RECORD, JSON.stringify(all));
  sessionStorage.setItem(SCREEN, JSON.stringify({ screenId: args.screenId, name }));
  window.__navigations = all.length;
  for (const listener of listeners) listener();
  return { status: "navigated", message: `'${name}' 화면을 열었습니다.` };
}

/** A call begun before a reload whose result was lost: the page shows whether it happened. */
export function settle(args) {
  const screen = currentScreen();
  if (!screen || screen.screenId !== args?.screenId) return null;
  return { status: "navigated", message: `'${screen.name}' 화면을 열었습니다.` };
}

window.__navigations = navigations().length;
