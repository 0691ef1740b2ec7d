// What the package's tests share: the gateway they run against (started by pytest:
// tests/e2e/test_agui_websocket.py), a WebSocket that a test can cut, and the app side of
// CopilotKit's tool path (perform a handed-out call, add its tool message, run again).
import { enforceEvents, verifyEvents } from "@ag-ui/client";
import assert from "node:assert/strict";
import { format } from "node:util";
import { from, lastValueFrom, toArray } from "rxjs";
import { GatewayHttpAgent, newId, WebSocketAgent } from "../index.js";

export const GATEWAY = process.env.AGUI_GATEWAY_WS;
export const TOOLS = JSON.parse(process.env.AGUI_TOOLS ?? "[]");
if (!GATEWAY) throw new Error("AGUI_GATEWAY_WS names the gateway's /ws URL (pytest sets it)");
// The same gateway's POST /invocations, and the dev-mode user as its header names it.
const socketUrl = new URL(GATEWAY);
export const INVOCATIONS = `http://${socketUrl.host}/invocations`;
export const USER_HEADERS = { "X-Gateway-User": socketUrl.searchParams.get("user") ?? "demo" };

export const NAVIGATE = "업무 요청 목록 화면 열어줘";
export const LONG_REPLY = "자기소개를 길게 해 주세요"; // the demo's scripted model: 94 chunks

/** A WebSocket whose live instances a test can cut, as a network drop would. */
export class CuttableSocket extends globalThis.WebSocket {
  static live = new Set();
  // Sees each frame a socket receives before the agent does: (socket, data) => void.
  static tripwire = null;

  constructor(url, protocols) {
    super(url, protocols);
    this.blackHole = false;
    CuttableSocket.live.add(this);
    this.addEventListener("close", () => CuttableSocket.live.delete(this));
    this.addEventListener("message", (message) => CuttableSocket.tripwire?.(this, message.data));
  }

  /** Resolves when a socket receives a frame ``matches`` picks; that socket is closed
   * there, so the frame is the last its agent is told (a closing socket dispatches no
   * more messages), whatever the agent has yet to process. */
  static closeAfter(matches) {
    return new Promise((resolve) => {
      CuttableSocket.tripwire = (socket, data) => {
        if (!matches(data)) return;
        CuttableSocket.tripwire = null;
        socket.close(4000, "closed by the test");
        resolve();
      };
    });
  }

  send(data) {
    if (!this.blackHole) super.send(data);
  }

  /** The connection dies; frames sent from now on are lost although the socket still
   * looks open for ``openForMs`` (a TCP drop noticed late). */
  static cut(openForMs = 0) {
    for (const socket of CuttableSocket.live) {
      socket.blackHole = true;
      setTimeout(() => socket.close(4000, "cut by the test"), openForMs).unref();
    }
  }
}

/** A new agent as a page (or its reload, on the same storage) would make it. */
export function pageAgent({ storage = new Map(), threadId = newId("thread"), ...options } = {}) {
  return new WebSocketAgent({ url: GATEWAY, storage, threadId, WebSocket: CuttableSocket, ...options });
}

/** A GatewayHttpAgent as a page (or its reload, on the same storage) would make it. */
export function httpPageAgent({ storage = new Map(), threadId = newId("thread"), ...options } = {}) {
  return new GatewayHttpAgent({ url: INVOCATIONS, headers: USER_HEADERS, storage, threadId, ...options });
}

export function userMessage(content) {
  return { id: newId("msg"), role: "user", content };
}

/** The client calls a run result hands the app, as CopilotKit reads them. */
export function handedCalls(result) {
  return result.newMessages
    .filter((message) => message.role === "assistant")
    .flatMap((message) => message.toolCalls ?? [])
    .filter((call) => !result.newMessages.some((m) => m.role === "tool" && m.toolCallId === call.id));
}

/** What CopilotKit 1.74 does with a call it executed (``executeSpecificTool``): the tool
 * message spliced in after its call, in the agent's own array. */
export function addResult(agent, call, result) {
  const at = agent.messages.findIndex((message) => message.toolCalls?.some((made) => made.id === call.id));
  const message = { id: newId("tool"), role: "tool", toolCallId: call.id, content: JSON.stringify(result) };
  agent.messages.splice(at + 1, 0, message);
}

export const NAVIGATED = { status: "navigated", message: "'업무 요청 목록' 화면을 열었습니다." };

/** A page's first turn: the run that hands it navigateToScreen. */
export async function askToNavigate(agent) {
  agent.addMessage(userMessage(NAVIGATE));
  const handed = handedCalls(await agent.runAgent({ tools: TOOLS }));
  assert.deepEqual(handed.map((call) => call.function.name), ["navigateToScreen"]);
  return handed[0];
}

/** The tool messages answering ``callId`` among ``messages``. */
export function resultsFor(messages, callId) {
  return messages.filter((message) => message.role === "tool" && message.toolCallId === callId);
}

/** The thread as a fresh client (another clientId) sees it. */
export async function threadOf(threadId) {
  const observer = pageAgent({ threadId });
  try {
    await observer.connectAgent({ tools: TOOLS });
    return observer.messages;
  } finally {
    observer.close();
  }
}

/** Asserts that ``events`` pass @ag-ui/client 1.0's enforcement and verifier (the stages
 * its HttpAgent runs every stream through) with no warning, and come out unchanged. */
export async function assertOfficiallyValid(events) {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(format(...args));
  try {
    const out = await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()));
    assert.deepEqual(warnings, []);
    assert.deepEqual(out, events);
  } finally {
    console.warn = warn;
  }
}

/** Resolves with the first event ``predicate`` picks from the agent's next runs (a run reads
 * its subscribers when it starts: call this before). */
export function nextEvent(agent, predicate) {
  return new Promise((resolve) => {
    const { unsubscribe } = agent.subscribe({
      onEvent: ({ event }) => {
        if (predicate(event)) {
          unsubscribe();
          resolve(event);
        }
      },
    });
  });
}

export function assistantText(messages) {
  return messages
    .filter((message) => message.role === "assistant" && typeof message.content === "string")
    .map((message) => message.content)
    .join("");
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
