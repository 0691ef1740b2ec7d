// The three agents the page can hand to CopilotKit, chosen by ?agent=: each is a stock
// client an app would use, pointed at the gateway on its own origin (no proxy).
import { HttpAgent } from "@ag-ui/client";
// CopilotKit re-exports the HttpAgent of the @ag-ui/client it bundles (0.0.x): the "older client".
import { HttpAgent as BundledHttpAgent } from "@copilotkit/react-core/v2";
// This repository's WebSocket agent (clients/agui-websocket): reattach and cancel over /ws.
import { WebSocketAgent } from "@agent-gateway/agui-websocket";
import { navigate, settle } from "./navigation.js";
import { restoreThread } from "./restore.js";

export const VARIANTS = ["http", "http-bundled", "ws"];

/**
 * @param {string} variant one of VARIANTS
 * @param {{gateway: string, user: string, threadId: string}} where
 */
export function makeAgent(variant, { gateway, user, threadId }) {
  const http = { url: `${gateway}/invocations`, headers: { "X-Gateway-User": user }, threadId };
  switch (variant) {
    case "http":
      // An HttpAgent has no connect(): the page restores the thread itself.
      return restoreThread(new HttpAgent(http), { gateway, user, threadId });
    case "http-bundled":
      return restoreThread(new BundledHttpAgent(http), { gateway, user, threadId });
    case "ws":
      return new WebSocketAgent({
        url: `${gateway.replace(/^http/, "ws")}/ws?user=${encodeURIComponent(user)}`,
        threadId,
        // A call the page began before a reload: the open screen tells whether it happened.
        settle: (call) => settle(call.args),
        // A call the run made while the page was loading: performed now, once.
        perform: (call) => navigate(call.args, call.id),
      });
    default:
      throw new Error(`unknown agent variant ${variant}: use one of ${VARIANTS.join(", ")}`);
  }
}
