// A consumer of the package, as an app writes it: `npm run typecheck` compiles it against
// index.d.ts, so the hand-written types stay true to how the package is used.
import { AbstractAgent, HttpAgent, type Message } from "@ag-ui/client";
import {
  type A2uiUserAction,
  type ClientCall,
  GatewayHttpAgent,
  NOT_PERFORMED,
  restoreThread,
  type RunView,
  ThreadConnection,
  WebSocketAgent,
} from "@agent-gateway/agui-websocket";

const storage = new Map<string, string>();
const agent = new WebSocketAgent({
  url: "ws://127.0.0.1:8080/ws?user=demo",
  threadId: "thread-1",
  storage,
  settle: (call: ClientCall) => (call.args?.screenId === "MNU-3120" ? { status: "navigated" } : null),
  perform: async (call) => ({ status: "navigated", screenId: call.args?.screenId }),
});
const base: AbstractAgent = agent; // CopilotKit takes any AbstractAgent
const overHttp = new GatewayHttpAgent({
  url: "http://127.0.0.1:8080/invocations",
  headers: { "X-Gateway-User": "demo" },
  threadId: "thread-1",
  settle: (call) => (call.name === "navigateToScreen" ? null : { status: "unknown" }),
});
const stock: HttpAgent = restoreThread(new HttpAgent({ url: "http://127.0.0.1:8080/invocations", threadId: "thread-1" }));
const copies: GatewayHttpAgent = overHttp.clone();
const copy: WebSocketAgent = agent.clone();

async function turn(text: string): Promise<Message[]> {
  agent.addMessage({ id: "m1", role: "user", content: text });
  const { newMessages } = await agent.runAgent({ tools: [] });
  await agent.connectAgent();
  agent.abortRun();
  const id: string = await agent.clientId;
  const view: RunView = { runId: null, own: true, sawSnapshot: false, sawLive: false, pending: [id], answered: new Set(), executable: [] };
  for (const step of agent.ledger.plan(view)) {
    if (step.kind === "resend") void step.result;
    else if (step.kind === "settle" || step.kind === "perform") void step.call.name;
  }
  agent.close();
  return newMessages;
}

function press(connection: ThreadConnection): string {
  const action: A2uiUserAction = { name: "approve", surfaceId: "card", sourceComponentId: "approve", context: { id: 1 } };
  return connection.startUserAction(action, { context: [{ description: "a2uiClientCapabilities", value: "{}" }] });
}

void press;
void stock;
void copies;
void base;
void copy;
void turn;
void NOT_PERFORMED.status;
