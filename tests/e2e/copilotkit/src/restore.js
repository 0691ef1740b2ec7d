// A reload with an HttpAgent shows the thread. On load CopilotKit empties the chat and calls
// agent.connectAgent(), which a stock HttpAgent does not implement (no reattach over HTTP):
// so the page reads the thread's latest messages from the gateway (GET /history) and puts
// them into the agent as that connect begins, after the emptying, through the subscriber
// hook every AbstractAgent runs first (onRunInitialized may return the messages to start from).

/**
 * @param {import("@ag-ui/client").AbstractAgent} agent a stock HttpAgent
 * @param {{gateway: string, user: string, threadId: string}} where
 * @returns the same agent
 */
export function restoreThread(agent, { gateway, user, threadId }) {
  const query = new URLSearchParams({ threadId });
  // Asked at once, so the answer is usually in before CopilotKit's connect begins.
  const history = fetch(`${gateway}/history?${query}`, { headers: { "X-Gateway-User": user } })
    .then((response) => (response.ok ? response.json() : null))
    .then((page) => (Array.isArray(page?.messages) ? page.messages : []))
    .catch(() => []);
  let restored = false;
  agent.subscribe({
    async onRunInitialized({ messages }) {
      // Only the connect on load, and only into an empty chat: a run has the user's message.
      if (restored || messages.length > 0) return undefined;
      restored = true;
      const stored = await history;
      return stored.length > 0 ? { messages: stored } : undefined;
    },
  });
  return agent;
}
