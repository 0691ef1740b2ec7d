#!/usr/bin/env node
// Self-test for run_agent.mjs, independent of our Python server: a tiny fake
// AG-UI 1.0 SSE server on 127.0.0.1 (random port), one path per scenario, and
// run_agent.mjs run against it as a child process.   Usage: node selftest.mjs
// (set SELFTEST_VERBOSE=1 to print every harness output line to stderr).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const HARNESS = join(HERE, "run_agent.mjs");
const tmp = mkdtempSync(join(tmpdir(), "agui-selftest-"));

const requests = {}; // path -> parsed RunAgentInput the client POSTed

// Each scenario maps the request body to [status, contentType, body | null(=hang)].
const sse = (...events) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");
const started = (b) => ({ type: "RUN_STARTED", threadId: b.threadId, runId: b.runId, protocolVersion: "1.0" });
const finished = (b, outcome) => ({ type: "RUN_FINISHED", threadId: b.threadId, runId: b.runId, outcome });
const ES = "text/event-stream";
const busy = { type: "RUN_ERROR", message: "another run is active on this thread", code: "SESSION_BUSY" };

const scenarios = {
  "/text": (b) => [200, ES, sse(
    started(b),
    { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "Hello " },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "world" },
    { type: "TEXT_MESSAGE_END", messageId: "m1" },
    finished(b, { type: "success" }),
  )],
  "/tool": (b) => [200, ES, sse(
    started(b),
    { type: "TOOL_CALL_START", toolCallId: "tc1", toolCallName: "navigateToScreen" },
    { type: "TOOL_CALL_ARGS", toolCallId: "tc1", delta: '{"screen":' },
    { type: "TOOL_CALL_ARGS", toolCallId: "tc1", delta: '"settings"}' },
    { type: "TOOL_CALL_END", toolCallId: "tc1" },
    finished(b, { type: "success", pendingToolCallIds: ["tc1"] }),
  )],
  "/interrupt": (b) => [200, ES, sse(
    started(b),
    finished(b, { type: "interrupt", interrupts: [{ id: "int1", reason: "approval", message: "OK?" }] }),
  )],
  "/run-error": (b) => [200, ES, sse(started(b), { ...busy, code: "BOOM", message: "agent crashed" })],
  "/invalid": (b) => [200, ES, sse(
    started(b),
    { type: "TEXT_MESSAGE_CONTENT", messageId: "nope", delta: "no start" }, // verifier must reject
    finished(b, { type: "success" }),
  )],
  "/unknown-field": (b) => [200, ES, sse({ ...started(b), bogus: 1 }, finished(b, { type: "success" }))],
  "/busy-json": () => [409, "application/json", JSON.stringify({ error: busy })],
  "/busy-sse": () => [409, ES, sse(busy)],
  "/hang": (b) => [200, ES, null],
};

const server = http.createServer((req, res) => {
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    const body = JSON.parse(raw || "{}");
    requests[req.url] = body;
    const [status, ctype, payload] = scenarios[req.url](body);
    res.writeHead(status, { "Content-Type": ctype, "Cache-Control": "no-cache" });
    if (payload === null) { res.write(sse(started(body))); return; } // never ends
    res.end(payload);
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;
after(() => { server.closeAllConnections(); server.close(); rmSync(tmp, { recursive: true, force: true }); });

let n = 0;
function runHarness(path, input, env = {}) {
  const file = join(tmp, `input-${n++}.json`);
  writeFileSync(file, JSON.stringify(input));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [HARNESS, base + path, file], { env: { ...process.env, ...env }, timeout: 30000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`harness exited ${err.code}: ${stderr}`));
        const lines = stdout.trim().split("\n");
        assert.equal(lines.length, 1, `expected one stdout line, got: ${stdout}`);
        if (process.env.SELFTEST_VERBOSE) process.stderr.write(`${path}: ${lines[0]}\n`);
        resolve(JSON.parse(lines[0]));
      });
  });
}

const baseInput = (extra = {}) => ({
  threadId: "t1", runId: "r1", state: { count: 1 }, tools: [], context: [], forwardedProps: {},
  messages: [{ id: "u1", role: "user", content: "hi" }], ...extra,
});
const types = (out) => out.events.map((e) => e.type);

test("text run: events, no warnings, assistant text in messages", async () => {
  const out = await runHarness("/text", baseInput());
  assert.equal(out.failed, null);
  assert.deepEqual(out.warnings, []);
  assert.deepEqual(out.errors, []);
  assert.deepEqual(types(out), ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
  assert.deepEqual(out.messages.map((m) => m.role), ["user", "assistant"]);
  assert.equal(out.messages[1].content, "Hello world");
  assert.deepEqual(out.state, { count: 1 });
  // What the client sent on the wire.
  assert.equal(out.request.threadId, "t1");
  assert.equal(out.request.runId, "r1");
  assert.equal(out.request.protocolVersion, "1.0");
  assert.equal(out.http.status, 200);
});

test("frontend tool call with pendingToolCallIds is accepted", async () => {
  const tools = [{ name: "navigateToScreen", description: "go", parameters: { type: "object", properties: { screen: { type: "string" } } } }];
  const out = await runHarness("/tool", baseInput({ tools, context: [{ description: "d", value: "v" }], forwardedProps: { a: 1 } }));
  assert.equal(out.failed, null);
  assert.deepEqual(out.warnings, []);
  assert.deepEqual(types(out), ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]);
  const call = out.messages.at(-1).toolCalls[0];
  assert.equal(call.id, "tc1");
  assert.equal(call.function.name, "navigateToScreen");
  assert.equal(call.function.arguments, '{"screen":"settings"}');
  assert.deepEqual(out.request.tools, tools);
  assert.deepEqual(out.request.forwardedProps, { a: 1 });
});

test("interrupt outcome fills pendingInterrupts; resume is forwarded verbatim", async () => {
  const resume = [{ interruptId: "prev", status: "resolved", payload: { ok: true } }];
  const out = await runHarness("/interrupt", baseInput({ resume }));
  assert.equal(out.failed, null);
  assert.deepEqual(out.warnings, []);
  assert.deepEqual(out.pendingInterrupts, [{ id: "int1", reason: "approval", message: "OK?" }]);
  assert.deepEqual(out.request.resume, resume);
  assert.deepEqual(requests["/interrupt"].resume, resume);
});

test("RUN_ERROR in a 200 stream: reported as an event, run not failed", async () => {
  const out = await runHarness("/run-error", baseInput());
  assert.deepEqual(types(out), ["RUN_STARTED", "RUN_ERROR"]);
  assert.equal(out.events[1].code, "BOOM");
  assert.equal(out.failed, null);
});

test("verifier is on: invalid stream fails the run", async () => {
  const out = await runHarness("/invalid", baseInput());
  assert.match(out.failed, /TEXT_MESSAGE_CONTENT/);
  assert.ok(out.errors.some((e) => e.includes("Agent execution failed")));
});

test("unknown field is stripped with a warning", async () => {
  const out = await runHarness("/unknown-field", baseInput());
  assert.equal(out.failed, null);
  assert.ok(out.warnings.some((w) => w.includes("bogus")), JSON.stringify(out.warnings));
});

test("HTTP 409 with JSON body", async () => {
  const out = await runHarness("/busy-json", baseInput());
  console.log("409 JSON ->", JSON.stringify(out));
  assert.deepEqual(out.events, []);
  assert.match(out.failed, /^HTTP 409: .*SESSION_BUSY/);
  assert.equal(out.http.status, 409);
  assert.equal(out.http.json.error.code, "SESSION_BUSY");
});

test("HTTP 409 with SSE body holding RUN_ERROR SESSION_BUSY", async () => {
  const out = await runHarness("/busy-sse", baseInput());
  console.log("409 SSE ->", JSON.stringify(out));
  assert.deepEqual(out.events, []); // the client never parses a non-2xx body as events
  assert.match(out.failed, /^HTTP 409: data: .*"code":"SESSION_BUSY"/);
  assert.equal(out.http.status, 409);
  assert.deepEqual(out.http.events, [busy]);
});

test("hard timeout prints JSON with failed: timeout", async () => {
  const out = await runHarness("/hang", baseInput(), { AGUI_TIMEOUT_MS: "700" });
  assert.equal(out.failed, "timeout");
  assert.deepEqual(types(out), ["RUN_STARTED"]);
});
