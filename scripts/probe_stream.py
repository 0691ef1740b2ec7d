"""Where a run's start and each streamed chunk spend their time in the gateway: stamps on
their way through it (``scripts._stream_probe``), one client, the local provider of
``scripts.bench_providers``, medians over the runs.

    .venv/bin/python -m scripts.probe_stream --provider chat-completions --runs 40

Upstream, from the client's send to the request's arrival at the provider: the door's read,
admission, the claim (the thread opened), the driver, the model call (the gateway's client,
httpx, its connection pool, the request's head), the request's bytes written; beside each
step between two of the gateway's stamps, the CPU its thread spent on it: where the two are
equal the step is the gateway's (or ADK's) Python, and no wait for a turn of the loop or for
a socket is in it (a quiet start is all CPU up to the request's write). Downstream, for each
chunk of text: its bytes read from the provider, the model's response (SDK and ADK's
adapter), ADK's event translated (ADK's flow and runner, the gateway's plugins), written to
the client's socket (the hub, the send queue), and read by the client. The stamps cost a
few microseconds each; compare segments, not totals.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop
from websockets.asyncio.client import connect

from scripts._bench import free_port, local_gateway, user_turn
from scripts.bench_providers import PROMPT, PROVIDERS, provider_process, recorded

WARM_UP_RUNS = 5
# A start's step's CPU, kept under its name with this added (``analyse``).
CPU = " (CPU)"
# Where a run's start goes, in order, from the driver's stream to the model's call.
START_STEPS = (
    "engine.run",
    "adk.run_async",
    "adk._get_or_create_session",
    "adk._setup_context_for_new_invocation",
    "adk._append_new_message_to_session",
    "append_event>",
    "append_event<",
    "adk._preprocess_async",
    "adk._handle_before_model_callback",
    "adk._call_llm_async",
    "model>",
)
# Where the model's call goes before its request's first byte is written (chat completions:
# the gateway's client, then httpx and httpcore; Gemini's SDK has none of these stamps).
MODEL_STEPS = ("sdk.create", "httpx.send", "httpcore.pool", "httpcore.http11")
# Where an emitted event goes before a client's connection is handed it.
DELIVERY_STEPS = ("run._log", "append_frames", "submit", "outbox.send", "run._route", "deliver")


async def one_run(ws: Any) -> dict[str, Any]:
    frame = user_turn(PROMPT)
    sent = time.perf_counter()
    await ws.send(json.dumps(frame))
    frames: list[tuple[float, str, str]] = []
    while True:
        event = json.loads(await ws.recv())
        frames.append((time.perf_counter(), event["type"], event.get("delta", "")))
        if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return {"sent": sent, "frames": frames}


async def drive(url: str, runs: int) -> list[dict[str, Any]]:
    async with connect(url, max_size=None, compression=None) as ws:
        for _ in range(WARM_UP_RUNS):
            await one_run(ws)
        return [await one_run(ws) for _ in range(runs)]


def first(stamps: list[tuple[str, float, Any]], label: str, after: float) -> float | None:
    return next((t for name, t, _ in stamps if name == label and t >= after), None)


def last(stamps: list[tuple[str, float, Any]], label: str, before: float) -> float | None:
    found = [t for name, t, _ in stamps if name == label and t <= before]
    return found[-1] if found else None


def analyse(
    runs: list[dict[str, Any]],
    stamps: list[tuple[str, float, Any]],
    arrivals: list[float],
    cpu_at: dict[float, float] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]]:
    """The steps' times (ms) by name: of each run's start, its first chunk, its later ones.
    With ``cpu_at`` (the gateway's thread CPU at each stamp's time), a start's step between
    two of the gateway's stamps is also given its CPU, under its name + ``CPU``."""
    up: dict[str, list[float]] = {}
    first_chunk: dict[str, list[float]] = {}
    later: dict[str, list[float]] = {}
    cpu_at = cpu_at or {}

    def add(
        table: dict[str, list[float]], name: str, start: float | None, end: float | None
    ) -> None:
        if start is not None and end is not None:
            table.setdefault(name, []).append((end - start) * 1000)
            if table is up and start in cpu_at and end in cpu_at:
                up.setdefault(name + CPU, []).append((cpu_at[end] - cpu_at[start]) * 1000)

    ends = [run["sent"] for run in runs[1:]] + [float("inf")]
    for run, end in zip(runs, ends, strict=True):
        sent = run["sent"]
        mine = [s for s in stamps if sent <= s[1] < end]
        arrived = next((a for a in arrivals if sent <= a < end), None)
        ws_in = first(mine, "ws.in", sent)
        admit = first(mine, "admit", sent)
        claim_in, claim_out = first(mine, "claim>", sent), first(mine, "claim<", sent)
        opened_in, opened_out = first(mine, "open_thread>", sent), first(mine, "open_thread<", sent)
        drive_at, stream_at = first(mine, "drive", sent), first(mine, "stream", sent)
        model_at = first(mine, "model>", sent)
        written = last(mine, "net.write<", arrived) if arrived else None
        write_began = first(mine, "net.write>", model_at) if model_at else None
        add(up, "client send -> door reads", sent, ws_in)
        add(up, "door -> admitted", ws_in, admit)
        add(up, "admitted -> claim begins", admit, claim_in)
        add(up, "claim -> open_thread begins", claim_in, opened_in)
        add(up, "open_thread", opened_in, opened_out)
        add(up, "open_thread -> claimed", opened_out, claim_out)
        add(up, "claimed -> driver", claim_out, drive_at)
        add(up, "driver -> stream (opening emitted)", drive_at, stream_at)
        previous_step, previous_at = "stream", stream_at
        for step in START_STEPS:
            reached = first(mine, step, previous_at) if previous_at else None
            if reached is not None:
                add(up, f"  {previous_step} -> {step}", previous_at, reached)
                previous_step, previous_at = step, reached
        add(up, "stream -> model called", stream_at, model_at)
        for name, t, x in mine:
            if name == "commit>" and arrived and t < arrived:
                done = first(mine, "commit<", t)
                add(up, "  commit before the request: " + "+".join(sorted(set(x))), t, done)
        previous_step, previous_at = "model>", model_at
        for step in MODEL_STEPS:
            reached = first(mine, step, previous_at) if previous_at else None
            if reached is not None and write_began is not None and reached <= write_began:
                add(up, f"  {previous_step} -> {step}", previous_at, reached)
                previous_step, previous_at = step, reached
        if previous_step != "model>":
            add(up, f"  {previous_step} -> net.write>", previous_at, write_began)
        add(up, "model called -> first byte written", model_at, write_began)
        add(up, "first byte -> last written", write_began, written)
        add(up, "last written -> at the provider", written, arrived)
        add(up, "TOTAL client send -> at the provider", sent, arrived)
        # Chunks: each partial text the model yielded.
        client_texts: list[tuple[float, int]] = []
        length = 0
        for at, kind, delta in run["frames"]:
            if kind == "TEXT_MESSAGE_CONTENT":
                length += len(delta)
                client_texts.append((at, length))
        yields = [(t, x) for name, t, x in mine if name == "model" and x and x[0] and x[1]]
        total = 0
        previous = model_at or sent
        for index, (at, (_, text)) in enumerate(yields):
            total += len(text)
            table = first_chunk if index == 0 else later
            read_at = last([s for s in mine if s[1] > previous], "net.read", at)
            translated = next(
                (t for name, t, x in mine if name == "translate" and t >= at and x[1] == text),
                None,
            )
            out = next(
                (
                    t
                    for name, t, x in mine
                    if name == "ws.out" and t >= at and any("TEXT_MESSAGE_CONTENT" in f for f in x)
                ),
                None,
            )
            seen = next((t for t, n in client_texts if n >= total), None)
            emitted = next(
                (
                    t
                    for name, t, x in mine
                    if name == "emit"
                    and translated
                    and t >= translated
                    and "TextMessageContent" in x
                ),
                None,
            )
            delivered = next(
                (
                    t
                    for name, t, x in mine
                    if name == "deliver" and emitted and t >= emitted and x == "TextMessageContent"
                ),
                None,
            )
            add(table, "  translated -> emitted (held)", translated, emitted)
            previous_step, previous_at = "emit", emitted
            for step in DELIVERY_STEPS:
                reached = first(mine, step, previous_at) if previous_at else None
                if reached is not None and delivered and reached <= delivered:
                    add(table, f"    {previous_step} -> {step}", previous_at, reached)
                    previous_step, previous_at = step, reached
            add(table, "  emitted -> delivered (outbox)", emitted, delivered)
            add(table, "  delivered -> written (send queue)", delivered, out)
            add(table, "bytes read -> model yields (SDK, adapter)", read_at, at)
            add(table, "model yields -> translated (ADK flow, runner, plugins)", at, translated)
            add(table, "translated -> written to the client (hub, send queue)", translated, out)
            add(table, "written -> client reads", out, seen)
            add(table, "TOTAL bytes read -> client reads", read_at, seen)
            previous = at
    return up, first_chunk, later


def show(title: str, table: dict[str, list[float]]) -> None:
    print(f"  {title}:")
    for name, values in table.items():
        if name.endswith(CPU):
            continue
        q = (
            statistics.quantiles(values, n=10, method="inclusive")
            if len(values) > 1
            else values * 9
        )
        spent = table.get(name + CPU)
        cpu = f"  CPU p50 {statistics.median(spent):6.3f}" if spent else ""
        print(
            f"    {name:<58} p50 {statistics.median(values):6.3f}  p10 {q[0]:6.3f}"
            f"  p90 {q[-1]:6.3f} ms  (n={len(values)}){cpu}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="chat-completions", choices=list(PROVIDERS))
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--pace-ms", type=float, default=10.0)
    parser.add_argument("--root", type=Path, help="another checkout's gateway to probe")
    parser.add_argument("--profile", type=Path, help="cProfile the gateway into this file")
    parser.add_argument(
        "--profile-start",
        action="store_true",
        help="with --profile: only each run's start, from the door's read to the model's call",
    )
    parser.add_argument("--stamps", type=Path, help="keep the gateway's stamps in this file")
    parser.add_argument(
        "--db", choices=("memory", "file"), default="memory", help="the gateway's store (memory)"
    )
    args = parser.parse_args()
    if args.profile:
        os.environ["STREAM_PROBE_PROFILE"] = "start" if args.profile_start else "1"
    provider = PROVIDERS[args.provider]()
    provider.port = free_port()
    os.environ.update(provider.env())
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        out = Path(tmp) / "stamps.json"
        os.environ["STREAM_PROBE_OUT"] = str(out)
        # This checkout's probe, run as a file, over the gateway of --root (first on the path).
        here = Path(__file__).resolve().parent
        root = args.root.resolve() if args.root else here.parent
        os.environ["PYTHONPATH"] = str(root)
        flags = ("--model", provider.model_name, "--user-rate", "0")
        if args.db == "file":  # after local_gateway's own --db :memory:, so it wins
            flags += ("--db", str(Path(tmp) / "threads.db"))
        with contextlib.ExitStack() as stack:
            stack.enter_context(provider_process(provider, args.pace_ms))
            gateway = stack.enter_context(
                local_gateway(*flags, entry=(str(here / "_stream_probe.py"),), root=root)
            )
            runs = uvloop.run(drive(gateway.ws_url(), args.runs))
            arrivals = recorded(provider)["arrivals"]
            os.kill(gateway.process.pid, signal.SIGUSR1)
            deadline = time.monotonic() + 30
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
        recorded_stamps = json.loads(out.read_text())
        stamps = [tuple(s[:3]) for s in recorded_stamps]
        cpu_at = {s[1]: s[3] for s in recorded_stamps}
        if args.stamps:
            shutil.copy(out, args.stamps)
        if args.profile:
            shutil.copy(str(out) + ".prof", args.profile)
    gcs = [s for s in stamps if s[0] == "gc.start" and s[1] >= runs[0]["sent"]]
    ends = [s for s in stamps if s[0] == "gc.stop" and s[1] >= runs[0]["sent"]]
    spent = sum(e[1] - b[1] for b, e in zip(gcs, ends, strict=False))
    generations = sorted({s[2] for s in gcs})
    print(
        f"garbage collections during the runs: {len(gcs)} (generations {generations}),"
        f" {spent * 1000:.1f} ms in all"
    )
    up, first_chunk, later = analyse(runs, stamps, arrivals, cpu_at)  # type: ignore[arg-type]
    print(f"{args.provider}: {args.runs} runs, pace {args.pace_ms:g} ms, {args.db} ({root})")
    show("from the client's input to the model's request at the provider", up)
    show("the first chunk", first_chunk)
    show("later chunks", later)


if __name__ == "__main__":
    main()
