// A consumer of the package, as an app writes it: `npm run typecheck` compiles it against
// index.d.ts, so the hand-written types stay true to how the package is used.
import { AbstractAgent, type Message } from "@ag-ui/client";
import {
  type A2uiUserAction,
  type ClientCall,
  NOT_PERFORMED,
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
void base;
void copy;
void turn;
void NOT_PERFORMED.status;
