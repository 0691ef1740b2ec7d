// Hand-written types of @agent-gateway/agui-websocket (the code is plain ESM JavaScript).
// `npm run typecheck` checks them against test/consumer.ts.
import {
  AbstractAgent,
  HttpAgent,
  type HttpAgentConfig,
  type AgentConfig,
  type AgentSubscriber,
  type BaseEvent,
  type RunAgentInput,
  type RunAgentParameters,
  type RunAgentResult,
} from "@ag-ui/client";
import type { Observable } from "rxjs";

/** A client-tool call as the ledger and the hooks see it. */
export interface ClientCall {
  id: string;
  name: string;
  /** The parsed arguments; null when they are not a JSON object. */
  args: Record<string, unknown> | null;
}

/** What the app answers for a call: any JSON value (sent as the tool message's content). */
export type CallResult = unknown;

/** Where the client identity and the ledger live: Web Storage, or a Map outside a browser. */
export type LedgerStorage = Pick<Storage, "getItem" | "setItem" | "removeItem"> | Map<string, string>;

/** What both agents add to @ag-ui/client's AgentConfig: the exactly-once ledger's options. */
export interface ClientCallsConfig {
  /** This client instance; by default one kept in `storage` (the same across reloads). */
  clientId?: string;
  /** sessionStorage in a browser (the default), a Map in node. */
  storage?: LedgerStorage;
  /**
   * A call this client began before a reload whose result was lost: the result the app can
   * see it had, or null if it shows the action did not happen (it is then handed out again
   * on a run, or given to `perform` on connect). Without it the gateway is told
   * {@link UNKNOWN_OUTCOME}.
   */
  settle?: (call: ClientCall) => CallResult | null | Promise<CallResult | null>;
  /**
   * Performs a call the gateway hands this client on connect(): the run made it while the
   * page was loading, where CopilotKit runs no frontend tool. Without it the gateway is
   * told {@link NOT_PERFORMED}.
   */
  perform?: (call: ClientCall) => CallResult | Promise<CallResult>;
}

export interface WebSocketAgentConfig extends AgentConfig, ClientCallsConfig {
  /** The gateway's /ws URL: ws:// or wss://, relative to the page in a browser. */
  url: string;
  /** The WebSocket class; the global one by default. */
  WebSocket?: typeof WebSocket;
}

/** The stock HttpAgent's options (`url`: the gateway's POST /invocations, `headers`: the
 * user's), and the ledger's. */
export interface GatewayHttpAgentConfig extends HttpAgentConfig, ClientCallsConfig {}

/** @ag-ui/client's HttpAgent on agent-gateway's POST /invocations, with `connect()` (the
 * resumable GET /invocations), a Stop that is the explicit cancel, and exactly-once client
 * tools, so a reload loses no result and no reply. */
export declare class GatewayHttpAgent extends HttpAgent {
  constructor(config: GatewayHttpAgentConfig);
  /** This client instance's id (`?clientId=` on every request), once it is claimed. */
  readonly clientId: Promise<string>;
  /** The ledger of the calls this client was handed (shared by agents on one storage). */
  readonly ledger: ActionLedger;
  run(input: RunAgentInput): Observable<BaseEvent>;
  protected connect(input: RunAgentInput): Observable<BaseEvent>;
  /** Sends the explicit cancel; the run's stream ends on it (`cancelled`), its text kept
   * and marked stopped. */
  abortRun(): void;
  runAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber): Promise<RunAgentResult>;
  connectAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber): Promise<RunAgentResult>;
  /** Lets go of the request in progress and of the client identity. */
  close(): void;
  clone(): GatewayHttpAgent;
}

/**
 * For a page that keeps a stock HttpAgent (no `connect()`): on CopilotKit's connect after a
 * reload, the thread's messages from GET /history are put into the agent. Returns `agent`.
 */
export declare function restoreThread<A extends HttpAgent>(
  agent: A,
  where?: {
    /** GET /history's URL; by default `history` next to the agent's `url`. */
    url?: string;
    /** By default the agent's `headers`. */
    headers?: Record<string, string>;
    /** By default the agent's `threadId`. */
    threadId?: string;
  },
): A;

/** An AG-UI 1.0 agent over agent-gateway's /ws, with reattach, cancel and exactly-once
 * client tools. */
export declare class WebSocketAgent extends AbstractAgent {
  constructor(config: WebSocketAgentConfig);
  readonly url: string;
  /** This client instance's id (`?clientId=` on the socket), once it is claimed. */
  readonly clientId: Promise<string>;
  /** The ledger of the calls this client was handed (shared by agents on one storage). */
  readonly ledger: ActionLedger;
  run(input: RunAgentInput): Observable<BaseEvent>;
  protected connect(input: RunAgentInput): Observable<BaseEvent>;
  /** Sends the /ws cancel frame: the run stops on the gateway, its text so far kept. */
  abortRun(): void;
  runAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber): Promise<RunAgentResult>;
  connectAgent(parameters?: RunAgentParameters, subscriber?: AgentSubscriber): Promise<RunAgentResult>;
  /** Closes the connection and lets go of the client identity. */
  close(): void;
  clone(): WebSocketAgent;
}

/** The answer sent for a call begun before a reload when there is no `settle` hook. */
export declare const UNKNOWN_OUTCOME: { status: "unknown"; message: string };
/** The answer sent for a call handed out on connect when there is no `perform` hook. */
export declare const NOT_PERFORMED: { status: "not_performed"; message: string };

export interface LedgerEntry {
  name?: string;
  args?: Record<string, unknown> | null;
  state: "started" | "performed" | "acknowledged";
  at?: number;
  result?: CallResult;
  runId?: string;
  sends?: number;
}

/** What the connection knows of the run an event belongs to (see src/connection.js). */
export interface RunView {
  runId: string | null;
  own: boolean;
  sawSnapshot: boolean;
  sawLive: boolean;
  pending: string[];
  answered: Set<string>;
  executable: ClientCall[];
}

export type PlanStep =
  | { kind: "resend"; id: string; result: CallResult }
  | { kind: "settle" | "perform"; id: string; call: ClientCall }
  | { kind: "elsewhere"; id: string };

/** The exactly-once ledger: started -> performed (with its result) -> acknowledged. */
export declare class ActionLedger {
  constructor(storage?: LedgerStorage);
  get(callId: string): LedgerEntry | undefined;
  plan(view: RunView): PlanStep[];
  started(call: ClientCall): void;
  performed(callId: string, result: CallResult): void;
  sent(callId: string, runId: string): void;
  acknowledged(callId: string): void;
  answered(callIds: Iterable<string>): void;
  finished(runId: string, pending: string[]): void;
  resendable(callId: string): boolean;
  unacknowledged(): Array<LedgerEntry & { id: string }>;
}

/** A person's action on an A2UI surface, as `forwardedProps.a2uiAction.userAction` carries it. */
export interface A2uiUserAction {
  name: string;
  surfaceId: string;
  sourceComponentId: string;
  /** ISO 8601; the time of the call when left out. */
  timestamp?: string;
  context?: Record<string, unknown>;
}

export type ConnectionStatus = "connecting" | "syncing" | "open" | "reconnecting";

/** One /ws connection per thread: reconnect with backoff, reattach, `clientId`. */
export declare class ThreadConnection {
  constructor(options: {
    url: string;
    clientId: string;
    threadId: string;
    onEvent: (event: BaseEvent & Record<string, unknown>, run: RunView) => void;
    onStatus: (state: ConnectionStatus, detail: { inMs?: number; code?: number; reason?: string }) => void;
    WebSocket?: typeof WebSocket;
    /** Audio out of a live turn this connection opened (the gateway's docs/voice.md). */
    onBinary?: (frame: ArrayBuffer) => void;
    /** Where inputs the gateway has not acknowledged are kept, to be sent again (same
     * runId) after a drop or a reload; none: not sent again. */
    storage?: Storage | Map<string, string> | null;
  });
  readonly threadId: string;
  start(): void;
  stop(): void;
  switchThread(threadId: string): void;
  startRun(input: {
    messages?: unknown[];
    tools?: unknown[];
    context?: unknown[];
    resume?: unknown[];
    forwardedProps?: Record<string, unknown>;
    /** False for text typed into a live turn: it starts no run, nothing acknowledges it. */
    kept?: boolean;
  }): string;
  startUserAction(
    userAction: A2uiUserAction,
    input?: { messages?: unknown[]; tools?: unknown[]; context?: unknown[] },
  ): string;
  send(input: RunAgentInput, options?: { kept?: boolean }): boolean;
  /** The cancel frame, naming the run this connection follows (if any). */
  cancel(): void;
  reattach(): void;
  /** Opens a live (voice) turn; its runId, or null with no connection open. */
  startLive(input?: { tools?: unknown[] }): string | null;
  stopLive(): void;
  /** Answers a client call of the live turn with its AG-UI tool message. */
  liveToolResult(message: { id: string; role: "tool"; toolCallId: string; content: string }): boolean;
  /** Answers the approvals the live turn asked, as a RunAgentInput's `resume` would. */
  liveResume(resume: { interruptId: string; status: "resolved" | "cancelled"; payload?: unknown }[]): boolean;
  /** Writes an audio-in frame; false with no connection open. */
  sendBinary(frame: ArrayBufferView | ArrayBuffer): boolean;
}

/** This tab's client instance id: the same across its reloads, a new one in a new tab. */
export declare function claimInstance(
  mint: () => string,
  storage?: LedgerStorage,
  options?: { signal?: AbortSignal },
): Promise<string>;

/** A random id with a prefix, such as `run-1f2e3d4c5b6a7988`. */
export declare function newId(prefix: string): string;
