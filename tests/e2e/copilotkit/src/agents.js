// The three agents the page can hand to CopilotKit, chosen by ?agent=: each is a stock
// client an app would use, pointed at the gateway on its own origin (no proxy).
import { HttpAgent } from "@ag-ui/client";
// CopilotKit re-exports the HttpAgent of the @ag-ui/client it bundles (0.0.x): the "older client".
import { HttpAgent as BundledHttpAgent } from "@copilotkit/react-core/v2";

export const VARIANTS = ["http", "http-bundled"];

/**
 * @param {string} variant one of VARIANTS
 * @param {{gateway: string, user: string, threadId: string}} where
 */
export function makeAgent(variant, { gateway, user, threadId }) {
  const http = { url: `${gateway}/invocations`, headers: { "X-Gateway-User": user }, threadId };
  switch (variant) {
    case "http":
      return new HttpAgent(http);
    case "http-bundled":
      return new BundledHttpAgent(http);
    default:
      throw new Error(`unknown agent variant ${variant}: use one of ${VARIANTS.join(", ")}`);
  }
}
