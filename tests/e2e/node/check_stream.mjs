#!/usr/bin/env node
// Conformance harness: pass an event stream our server sent (on /ws, say a reattach's
// snapshots) through the OFFICIAL client's checks, the ones HttpAgent runs every stream
// through: @ag-ui/client@1.0.0's enforcement and verifier stages, or with AGUI_CLIENT=0
// 0.0.59's zod schemas (EventSchemas.parse, strict where 0.0.59 is) and verifier.
//
//   node check_stream.mjs <events.json>
//
// Prints exactly ONE JSON line on stdout: {"events": [...], "warnings": [...],
// "failed": null | "<error text>"}. The 1.0 enforcer removes material it does not
// recognise with a console.warn("[ag-ui][enforce] ..."), so a clean stream has no warnings
// and comes out as it went in. rxjs is @ag-ui/client's own dependency.
import { readFileSync } from "node:fs";
import { format } from "node:util";
import { from, lastValueFrom, map, toArray } from "rxjs";
import { OLD_CLIENT, client } from "./client.mjs";

const [eventsPath] = process.argv.slice(2);
if (!eventsPath) {
  process.stderr.write("usage: node check_stream.mjs <events.json>\n");
  process.exit(1);
}
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS; // keep enforcement warnings audible
const warnings = [];
console.warn = (...args) => warnings.push(format(...args));

const input = JSON.parse(readFileSync(eventsPath, "utf8"));
const checks = OLD_CLIENT
  ? [map((event) => client.EventSchemas.parse(event)), client.verifyEvents()]
  : [client.enforceEvents(), client.verifyEvents()];
let events = [];
let failed = null;
try {
  events = await lastValueFrom(from(input).pipe(...checks, toArray()));
} catch (e) {
  failed = String(e?.message ?? e);
}
process.stdout.write(JSON.stringify({ events, warnings, failed }) + "\n");
