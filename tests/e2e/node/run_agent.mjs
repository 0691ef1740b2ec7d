#!/usr/bin/env node
// Conformance harness: drive the OFFICIAL @ag-ui/client HttpAgent (1.0.0; 0.0.59 with AGUI_CLIENT=0) once
// against an AG-UI endpoint (our POST /invocations) and report what it saw.
//
//   node run_agent.mjs <url> <input.json>
//
// AGUI_HEADERS, if set, is a JSON object of request headers the client sends
// (e.g. {"Authorization": "Bearer <jwt>"}).
//
// input.json holds a RunAgentInput (camelCase): threadId, runId, messages,
// tools, context, state, forwardedProps, resume.
//
// Prints exactly ONE JSON line on stdout:
//   {
//     "events":   [...],   every event the client emitted to subscribers (onEvent),
//                          i.e. after the client's enforcement + verifier stages
//     "warnings": [...],   console.warn text captured during the run
//     "errors":   [...],   console.error text (+ uncaught errors) captured during the run
//     "messages": [...],   agent.messages after the run
//     "state":    {...},   agent.state after the run
//     "failed":   null | "<error text>" | "timeout",
//     "pendingInterrupts": [...], agent.pendingInterrupts (set by an "interrupt" outcome)
//     "request":  {...},   the RunAgentInput the client actually POSTed (parsed JSON body)
//     "http":     {status, contentType, body, events}  raw response as seen on the wire;
//                          `events` = the body's `data:` frames parsed as JSON. This is
//                          how a non-2xx answer's body is visible in structured form:
//                          the client never parses a non-2xx body as a stream (see below).
//   }
// Exit code 0 whenever the JSON was printed; 1 only for harness misuse/bugs.
//
// Findings about the 1.0.0 API (read from node_modules/@ag-ui/client sources):
// * new HttpAgent({url, headers?, fetch?, agentId?, threadId?, initialMessages?,
//   initialState?, debug?}).
// * agent.runAgent(parameters?, subscriber?) -> Promise<{result, newMessages}>;
//   parameters = {runId?, tools?, context?, forwardedProps?, resume?, abortController?}.
//   `resume` is a first-class RunAgentParameters field (ResumeEntry[]:
//   {interruptId, status:"resolved"|"cancelled", payload?, metadata?}); the client
//   copies it verbatim into RunAgentInput.resume (only when given). The helper
//   buildResumeArray(agent.pendingInterrupts, {id: {status, payload}}) builds it.
//   Before sending, onInitialize() THROWS if agent.pendingInterrupts (filled by a
//   previous run's RUN_FINISHED outcome {type:"interrupt", interrupts:[...]}) is not
//   fully covered by resume entries. A fresh agent (as here) has none, so resume
//   is simply forwarded.
// * protocolVersion:"1.0" is added to the outgoing input by the client itself.
// * A non-2xx response is NOT parsed as SSE: runHttpRequest throws
//   Error("HTTP <status>: <body text or JSON>") with .status/.payload, the run
//   fails (onRunFailed + console.error "Agent execution failed:") and runAgent rejects.
// * A RUN_ERROR event inside a 2xx stream does not reject runAgent: it reaches
//   onEvent/onRunErrorEvent and the run ends normally.
// * The verifier/enforcer is always on; unknown fields are stripped with a
//   console.warn("[ag-ui][enforce] ...") unless SUPPRESS_TRANSFORMATION_WARNINGS
//   is set, so we unset that variable to keep warnings visible.
import { readFileSync } from "node:fs";
import { format } from "node:util";
import { client } from "./client.mjs";

const { HttpAgent } = client;

const [url, inputPath] = process.argv.slice(2);
if (!url || !inputPath) {
  process.stderr.write("usage: node run_agent.mjs <url> <input.json>\n");
  process.exit(1);
}
let input;
try {
  input = JSON.parse(readFileSync(inputPath, "utf8"));
} catch (e) {
  process.stderr.write(`cannot read input ${inputPath}: ${e}\n`);
  process.exit(1);
}

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS; // keep enforcement warnings audible

// --- capture console output -------------------------------------------------
const warnings = [];
const errors = [];
const realStderr = (s) => process.stderr.write(s + "\n");
const verbose = Boolean(process.env.AGUI_VERBOSE);
console.warn = (...args) => { const s = format(...args); warnings.push(s); if (verbose) realStderr("[warn] " + s); };
console.error = (...args) => { const s = format(...args); errors.push(s); if (verbose) realStderr("[error] " + s); };
// stdout is reserved for the single JSON line.
console.log = console.info = console.debug = (...args) => realStderr(format(...args));
process.on("uncaughtException", (e) => errors.push(`uncaughtException: ${e?.stack ?? e}`));
process.on("unhandledRejection", (e) => errors.push(`unhandledRejection: ${e?.stack ?? e}`));

// --- wire capture via the HttpAgent `fetch` option ---------------------------
// We read a clone of the response body incrementally so the output shows what
// the server really sent, even when the client rejects it (e.g. HTTP 409).
let request = null;
const http = { status: null, contentType: null, body: "" };
async function recordingFetch(u, init) {
  try { request = JSON.parse(init.body); } catch { request = init.body ?? null; }
  const res = await fetch(u, init);
  http.status = res.status;
  http.contentType = res.headers.get("content-type");
  if (res.body) {
    (async () => {
      const reader = res.clone().body.getReader();
      const dec = new TextDecoder();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          http.body += dec.decode(value, { stream: true });
        }
      } catch { /* aborted / cancelled: keep what we have */ }
    })();
  }
  return res;
}

// Parse `data:` frames of an SSE body (best effort, for reporting only).
function sseFrames(body) {
  const out = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
    if (!data) continue;
    try { out.push(JSON.parse(data)); } catch { out.push({ unparsable: data }); }
  }
  return out;
}

// --- run ---------------------------------------------------------------------
const agent = new HttpAgent({
  url,
  headers: process.env.AGUI_HEADERS ? JSON.parse(process.env.AGUI_HEADERS) : undefined,
  threadId: input.threadId,
  initialMessages: input.messages ?? [],
  initialState: input.state,
  fetch: recordingFetch,
});

const events = [];
let failed = null;
let printed = false;

function finish(code = 0) {
  if (printed) return;
  printed = true;
  const out = {
    events,
    warnings,
    errors,
    messages: agent.messages,
    state: agent.state,
    failed,
    pendingInterrupts: agent.pendingInterrupts,
    request,
    http: { ...http, events: http.contentType?.includes("json") ? null : sseFrames(http.body) },
  };
  if (http.contentType?.includes("application/json")) {
    try { out.http.json = JSON.parse(http.body); } catch { /* not JSON after all */ }
  }
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(code));
}

const timeoutMs = Number(process.env.AGUI_TIMEOUT_MS) || 20000;
setTimeout(() => {
  failed = "timeout";
  try { agent.abortRun(); } catch { /* ignore */ }
  finish(0);
}, timeoutMs);

const parameters = {
  tools: input.tools ?? [],
  context: input.context ?? [],
  forwardedProps: input.forwardedProps ?? {},
};
if (input.runId) parameters.runId = input.runId;
if (input.resume !== undefined) parameters.resume = input.resume;

try {
  await agent.runAgent(parameters, {
    onEvent: ({ event }) => { events.push(event); },
    onRunFailed: ({ error }) => { failed = String(error?.message ?? error); },
  });
} catch (e) {
  failed ??= String(e?.message ?? e);
}
// Let the body-recording reader drain what is already buffered.
await new Promise((r) => setTimeout(r, 50));
finish(0);
