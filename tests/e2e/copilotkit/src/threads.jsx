// The user's threads from the gateway's thread door (GET /threads, docs/threads.md), as an
// app built on CopilotKit would list them: choosing one, or a new conversation, hands its id
// to the page, which mounts the chat again on that thread (CopilotKit's connect, or
// restore.js for an HttpAgent, brings its messages back). The list is read on load, on each
// switch and after each run, so a thread's title is there once its first message was sent.
import { useCallback, useEffect, useState } from "react";

/**
 * @param {{gateway: string, user: string, threadId: string, onSwitch: (threadId: string) => void,
 *          agent: import("@ag-ui/client").AbstractAgent}} props
 */
export function ThreadList({ gateway, user, threadId, onSwitch, agent }) {
  const [threads, setThreads] = useState([]);
  const load = useCallback(async () => {
    try {
      const response = await fetch(`${gateway}/threads?limit=30`, { headers: { "X-Gateway-User": user } });
      if (response.ok) setThreads((await response.json()).threads ?? []);
    } catch {
      // The list is a convenience: the chat works without it.
    }
  }, [gateway, user]);
  useEffect(() => {
    load();
    const { unsubscribe } = agent.subscribe({ onRunFinalized: () => void load() });
    return unsubscribe;
  }, [load, agent]);
  return (
    <nav aria-label="대화 목록" style={{ padding: "8px 0" }}>
      <button type="button" onClick={() => onSwitch(crypto.randomUUID())}>
        새 대화
      </button>
      <ul style={{ listStyle: "none", padding: 0 }}>
        {threads.map((thread) => (
          <li key={thread.threadId}>
            <button
              type="button"
              aria-current={thread.threadId === threadId ? "true" : undefined}
              onClick={() => onSwitch(thread.threadId)}
            >
              {thread.title || thread.threadId}
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
