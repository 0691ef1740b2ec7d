// The agents the page can hand to CopilotKit, chosen by ?agent=, each made as the package's
// README says (clients/agui-websocket/README.md), pointed at the gateway on its own origin
// (no proxy).
import { HttpAgent } from "@ag-ui/client";
// CopilotKit re-exports the HttpAgent of the @ag-ui/client it bundles (0.0.x): the "older client".
import { HttpAgent as BundledHttpAgent } from "@copilotkit/react-core/v2";
import { GatewayHttpAgent, restoreThread, WebSocketAgent } from "@agent-gateway/agui-websocket";
import { navigate, settle } from "./navigation.js";

export const VARIANTS = ["http", "http-bundled", "gateway-http", "ws", "ws-oneliner"];

/**
 * @param {string} variant one of VARIANTS
 * @param {{gateway: string, user: string, threadId: string}} where
 */
export function makeAgent(variant, { gateway, user, threadId }) {
  // The dev-mode user (GATEWAY_AUTH=dev): a header over HTTP, ?user= on the socket.
  const http = { url: `${gateway}/invocations`, headers: { "X-Gateway-User": user }, threadId };
  const socket = `${gateway.replace(/^http/, "ws")}/ws?user=${encodeURIComponent(user)}`;
  // What a reload leaves to the page: a call it began whose result was lost (the open screen
  // tells whether it happened), and a call the run made while the page was loading.
  const hooks = { settle: (call) => settle(call.args), perform: (call) => navigate(call.args, call.id) };
  switch (variant) {
    case "http":
      // A stock HttpAgent has no connect(): restoreThread shows the thread after a reload.
      return restoreThread(new HttpAgent(http));
    case "http-bundled":
      return restoreThread(new BundledHttpAgent(http));
    case "gateway-http":
      return new GatewayHttpAgent({ ...http, ...hooks });
    case "ws":
      return new WebSocketAgent({ url: socket, threadId, ...hooks });
    case "ws-oneliner":
      // The README's one line, no hooks at all.
      return new WebSocketAgent({ url: socket });
    default:
      throw new Error(`unknown agent variant ${variant}: use one of ${VARIANTS.join(", ")}`);
  }
}
