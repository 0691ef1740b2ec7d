// What the tests read that a person cannot see: every execution of the frontend tool,
// kept in sessionStorage so the count survives a reload of the tab.
const KEY = "navigations";

/** @returns {{toolCallId: string, screenId: string}[]} */
export function navigations() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(KEY) ?? "[]");
    return Array.isArray(kept) ? kept : [];
  } catch {
    return [];
  }
}

export function recordNavigation(toolCallId, screenId) {
  const all = [...navigations(), { toolCallId, screenId }];
  sessionStorage.setItem(KEY, JSON.stringify(all));
  window.__navigations = all.length;
}

window.__navigations = navigations().length;
