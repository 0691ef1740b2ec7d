// What every page that hosts the chat does first: who the user is (the dev identity, from
// `?user=` or what this browser remembers), GET a JSON door as them, say a failure in a
// banner, and the /ws address for them. The generic page (main.js) and the demo's
// (examples/navigator/web/app.js) both start here.

import { h } from "./dom.js";

const USER_ID = /^[A-Za-z0-9_.@-]{1,64}$/;

/** The signed-in user: `?user=` wins and is remembered, then the remembered one, then "demo". */
export function currentUser() {
  const fromQuery = new URLSearchParams(location.search).get("user");
  if (fromQuery && USER_ID.test(fromQuery)) {
    localStorage.setItem("agw.user", fromQuery);
    return fromQuery;
  }
  const remembered = localStorage.getItem("agw.user");
  return remembered && USER_ID.test(remembered) ? remembered : "demo";
}

/** Whether a user id is one the dev identity accepts. */
export function validUser(userId) {
  return USER_ID.test(userId);
}

/** GET with the dev identity both ways the gateway may read it. */
export async function getJson(path, userId) {
  const response = await fetch(`${path}?user=${encodeURIComponent(userId)}`, {
    headers: { "X-Gateway-User": userId, Accept: "application/json" },
  });
  if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
  return response.json();
}

/** A line at the top of the page that says what could not be loaded. */
export function banner(text) {
  document.querySelector("#banner").append(h("p", { class: "banner", role: "alert" }, text));
}

/** The /ws address of this page's gateway for ``userId``. */
export function socketUrl(userId) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${location.host}/ws?user=${encodeURIComponent(userId)}`;
}
