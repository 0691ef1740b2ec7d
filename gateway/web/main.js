// The gateway's page for any agent (`agent-gateway serve my_agent`, then open /): the chat
// alone, full width, for trying an agent before anyone writes a client, as `adk web` is for
// ADK. It names the agent from GET /capabilities, signs in with the dev identity (the field
// in the top bar, or `?user=`), declares no browser tools of its own and otherwise is the
// same chat as the demo's: transcript, markdown, tool activity, approvals, A2UI surfaces,
// Stop, reattach (chat.js).

import { claimInstance } from "./agui-websocket/ledger.js";
import { banner, currentUser, getJson, socketUrl, validUser } from "./boot.js";
import { ChatPanel } from "./chat.js";
import { describeAgent } from "./chat/labels.js";
import { newId } from "./dom.js";

function setupUserField(userId) {
  const field = document.querySelector("#user-input");
  field.value = userId;
  field.addEventListener("change", () => {
    const next = field.value.trim();
    // Signing in as someone else is a new page: new connection, new thread.
    if (validUser(next) && next !== userId) location.assign(`/?user=${encodeURIComponent(next)}`);
    else field.value = userId;
  });
}

async function boot() {
  const app = document.querySelector(".app");
  const userId = currentUser();
  setupUserField(userId);
  const [capabilities, clientId] = await Promise.all([
    getJson("/capabilities", userId).catch((error) => {
      banner(`에이전트 정보를 불러오지 못했습니다 (${error.message}).`);
      return {};
    }),
    claimInstance(() => newId("tab")),
  ]);
  const identity = capabilities.identity ?? {};
  if (identity.name) {
    describeAgent({ name: identity.name, greeting: identity.description || `${identity.name}에게 무엇이든 물어보세요.` });
    document.title = `${identity.name} · agent-gateway`;
    document.querySelector("#agent-name").textContent = identity.name;
    document.querySelector("#chat-title").textContent = identity.name;
  }
  const chat = new ChatPanel({
    app,
    userId,
    wsUrl: socketUrl(userId),
    clientId,
    tools: [],
    implemented: {},
  });
  chat.start();
}

boot();
