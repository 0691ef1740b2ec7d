// A minimal CopilotKit 1.74 app with no CopilotKit runtime: an AG-UI agent goes straight to
// the provider, with the demo's frontend tool, an approval through useInterrupt and the chat.
//
// Query parameters: gateway (its origin), user (dev-mode identity), agent (see agents.js),
// thread (else one per tab, kept across reloads), deny (see navigation.js). The user's threads
// are listed beside the screen (threads.jsx); choosing one mounts the chat on it.
import {
  CopilotChat,
  CopilotChatAssistantMessage,
  CopilotKitProvider,
  UseAgentUpdate,
  useAgent,
  useFrontendTool,
  useInterrupt,
} from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { StrictMode, useRef, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
// The gateway's own declaration of the tool, so the page declares exactly what it checks.
import navigateToScreen from "../../../../gateway/examples/navigator/tools/navigateToScreen.json";
import { makeAgent } from "./agents.js";
import { currentScreen, navigate, onScreenChange } from "./navigation.js";
import { ThreadList } from "./threads.jsx";

const params = new URLSearchParams(location.search);
const gateway = params.get("gateway") ?? location.origin;
const user = params.get("user") ?? "demo";
const variant = params.get("agent") ?? "http";
const firstThreadId = params.get("thread") ?? keptThreadId();

function keptThreadId() {
  let id = sessionStorage.getItem("threadId");
  if (!id) {
    id = crypto.randomUUID();
    sessionStorage.setItem("threadId", id);
  }
  return id;
}

// CopilotKit reads a tool's parameters as a Standard JSON Schema; the catalog is JSON already.
const asStandardSchema = (schema) => ({
  "~standard": {
    version: 1,
    vendor: "agent-gateway",
    validate: (value) => ({ value }),
    jsonSchema: { input: () => schema, output: () => schema },
  },
});

function Navigator() {
  useFrontendTool({
    name: navigateToScreen.name,
    description: navigateToScreen.description,
    parameters: asStandardSchema(navigateToScreen.parameters),
    handler: async (args, { toolCall }) => navigate(args, toolCall.id),
  });
  return null;
}

function Approval() {
  useInterrupt({
    render: ({ interrupt, resolve, cancel }) => (
      <div role="group" aria-label="승인 요청" className="approval">
        <p>{interrupt?.message}</p>
        <button type="button" onClick={() => resolve({ approved: true })}>
          승인
        </button>
        <button type="button" onClick={() => cancel()}>
          거절
        </button>
      </div>
    ),
  });
  return null;
}

// A reply cut by Stop is marked so in the thread (metadata.ended), live with the package's
// agents and after a reload with any: the page says so under the cut text.
function Reply(props) {
  // The chat draws a reply again only when its text changes, and the mark comes after it.
  const { agent } = useAgent({ updates: [UseAgentUpdate.OnMessagesChanged] });
  const message = agent.messages.find((m) => m.id === props.message.id) ?? props.message;
  return (
    <>
      <CopilotChatAssistantMessage {...props} />
      {message.metadata?.ended === "stopped" && (
        <p role="note" className="reply-stopped">
          ■ 응답을 중단했습니다
        </p>
      )}
    </>
  );
}

/** Another thread: kept for this tab and in the address, so a reload stays on it. */
function rememberThread(threadId) {
  sessionStorage.setItem("threadId", threadId);
  const query = new URLSearchParams(location.search);
  query.set("thread", threadId);
  history.replaceState(null, "", `?${query}`);
}

function Threads() {
  const [threadId, setThreadId] = useState(firstThreadId);
  const shown = useRef(null); // the agent of the thread on screen
  const onSwitch = (next) => {
    if (next === threadId) return;
    shown.current?.close?.(); // a WebSocketAgent's socket goes with its thread
    rememberThread(next);
    setThreadId(next);
  };
  // A new key mounts a new provider and agent: nothing of the other thread's run carries over.
  return <App key={threadId} threadId={threadId} onSwitch={onSwitch} shown={shown} />;
}

function App({ threadId, onSwitch, shown }) {
  const [agent] = useState(() => makeAgent(variant, { gateway, user, threadId }));
  shown.current = agent;
  const screen = useSyncExternalStore(onScreenChange, currentScreen);
  return (
    <CopilotKitProvider agents__unsafe_dev_only={{ default: agent }} enableInspector={false}>
      <Navigator />
      <Approval />
      <div style={{ display: "flex", height: "100vh" }}>
        <main style={{ flex: 1, padding: 24 }}>
          <h1>{screen?.name ?? "홈"}</h1>
          <p>
            agent <code id="variant">{variant}</code> · thread <code id="thread-id">{threadId}</code>
          </p>
          <ThreadList gateway={gateway} user={user} threadId={threadId} onSwitch={onSwitch} agent={agent} />
        </main>
        <aside style={{ width: 480, borderLeft: "1px solid #ddd" }}>
          <CopilotChat threadId={threadId} messageView={{ assistantMessage: Reply }} />
        </aside>
      </div>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <Threads />
  </StrictMode>,
);
