"""Where a run's start and each streamed chunk spend their time in the gateway: stamps on
their way through it (``scripts._stream_probe``), one client, the local provider of
``scripts.bench_providers``, medians over the runs.

    .venv/bin/python -m scripts.probe_stream --provider chat-completions --runs 40
    .venv/bin/python -m scripts.probe_stream --side adk    # ADK alone, to hold against it
    .venv/bin/python -m scripts.probe_stream --provider gemini --httpx   # as in the image

Upstream, from the client's send to the request's arrival at the provider: the door's read,
admission, the claim (the thread opened), the driver, the model call (chat completions: the
gateway's client, httpx, its connection pool, the request's head; Gemini: the gateway's
request, google-genai's send, aiohttp's request, its connection and head, or with
``--httpx`` httpx's), the request's bytes written; beside each
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
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import uvloop
from websockets.asyncio.client import connect

from scripts._bench import free_port, local_gateway, user_turn
from scripts.bench_providers import PROMPT, PROVIDERS, adk_runner, provider_process, recorded
from tests.support.providers import Provider

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
# Where the model's call goes before its request's first byte is written: Gemini's request
# built by the gateway, then sent by the SDK (its options patched and headers set, its
# retrying); chat completions' gateway client; httpx and httpcore (chat completions, and
# Gemini where aiohttp is not installed); aiohttp's request (the environment's proxy and
# netrc read), its connection and its head.
MODEL_STEPS = (
    "gemini.request>",
    "gemini.request<",
    "genai.request_streamed",
    "genai.request_once",
    "sdk.create",
    "httpx.send",
    "httpcore.pool",
    "httpcore.http11",
    "aiohttp.request",
    "aiohttp.connect",
    "aiohttp.send",
)
# With --fine, the door's way to the driver's stream, in order.
DOOR_STEPS = (
    "admit",
    "fine.acknowledge",
    "fine.ws_work",
    "claim>",
    "open_thread>",
    "open_thread<",
    "claim<",
    "fine.hub_start",
    "fine.plan",
    "drive",
    "stream",
)


def start_steps() -> tuple[str, ...]:
    """``START_STEPS``, with ``--fine``'s stamps where a start reaches them: the driver's
    consumer and the invocation before ADK's Runner, ADK's node runner, agent and flow
    before its request processors, and each processor."""
    if not os.environ.get("STREAM_PROBE_FINE"):
        return START_STEPS
    from scripts._stream_probe import fine_steps

    agent, processors = fine_steps()
    session = START_STEPS.index("adk._get_or_create_session") + 1
    at = START_STEPS.index("adk._preprocess_async")
    return (
        START_STEPS[0],
        "fine.consume",
        "fine.invocation",
        *START_STEPS[1:session],
        "fine._run_node_async",
        *START_STEPS[session:at],
        *agent,
        START_STEPS[at],
        *processors,
        *START_STEPS[at + 1 :],
    )


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


def add_step(
    table: dict[str, list[float]],
    cpu_at: dict[float, float],
    name: str,
    start: float | None,
    end: float | None,
) -> None:
    """A step's time (ms) under its name, and the CPU the stamping thread spent on it under
    its name + ``CPU`` when both ends are stamps of that thread (in ``cpu_at``)."""
    if start is not None and end is not None:
        table.setdefault(name, []).append((end - start) * 1000)
        if start in cpu_at and end in cpu_at:
            table.setdefault(name + CPU, []).append((cpu_at[end] - cpu_at[start]) * 1000)


def in_steps(
    add: Callable[[str, float | None, float | None], None],
    stamps: list[tuple[str, float, Any]],
    previous_step: str,
    previous_at: float | None,
    steps: tuple[str, ...],
    until: float | None = None,
) -> str:
    """Adds each of ``steps`` the stamps reach in order after ``previous_at`` (and not after
    ``until``) as a step from the one reached before it; returns the last one reached."""
    for step in steps:
        reached = first(stamps, step, previous_at) if previous_at is not None else None
        if reached is not None and (until is None or reached <= until):
            add(f"  {previous_step} -> {step}", previous_at, reached)
            previous_step, previous_at = step, reached
    return previous_step


def request_sent(
    add: Callable[[str, float | None, float | None], None],
    stamps: list[tuple[str, float, Any]],
    model_at: float | None,
    arrived: float | None,
) -> None:
    """Adds the steps from the model's call to its request's arrival at the provider."""
    written = last(stamps, "net.write<", arrived) if arrived else None
    write_began = first(stamps, "net.write>", model_at) if model_at else None
    reached = in_steps(add, stamps, "model>", model_at, MODEL_STEPS, write_began)
    if reached != "model>":
        add(f"  {reached} -> net.write>", last(stamps, reached, write_began or 0.0), write_began)
    add("model called -> first byte written", model_at, write_began)
    add("first byte -> last written", write_began, written)
    add("last written -> at the provider", written, arrived)


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
        add_step(table, cpu_at if table is up else {}, name, start, end)

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
        add(up, "client send -> door reads", sent, ws_in)
        add(up, "door -> admitted", ws_in, admit)
        add(up, "admitted -> claim begins", admit, claim_in)
        add(up, "claim -> open_thread begins", claim_in, opened_in)
        add(up, "open_thread", opened_in, opened_out)
        add(up, "open_thread -> claimed", opened_out, claim_out)
        add(up, "claimed -> driver", claim_out, drive_at)
        add(up, "driver -> stream (opening emitted)", drive_at, stream_at)
        step_to = partial(add_step, up, cpu_at)
        if os.environ.get("STREAM_PROBE_FINE"):
            at_door = first(mine, "fine.data_received", sent)
            add(up, "  client send -> its bytes at the door", sent, at_door)
            add(up, "  its bytes at the door -> door reads", at_door, ws_in)
            in_steps(step_to, mine, "door", ws_in, DOOR_STEPS, stream_at)
        in_steps(step_to, mine, "stream", stream_at, start_steps())
        add(up, "stream -> model called", stream_at, model_at)
        for name, t, x in mine:
            if name == "commit>" and arrived and t < arrived:
                done = first(mine, "commit<", t)
                add(up, "  commit before the request: " + "+".join(sorted(set(x))), t, done)
        request_sent(step_to, mine, model_at, arrived)
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


def analyse_adk(
    starts: list[float],
    stamps: list[tuple[str, float, Any]],
    arrivals: list[float],
    cpu_at: dict[float, float],
) -> dict[str, list[float]]:
    """The steps (ms) of each run of a plain Runner from its call (``starts``) to its
    request's arrival at the provider, by name, with their CPU (see ``add_step``)."""
    up: dict[str, list[float]] = {}
    step_to = partial(add_step, up, cpu_at)
    for start, end in zip(starts, [*starts[1:], float("inf")], strict=True):
        mine = [s for s in stamps if start <= s[1] < end]
        arrived = next((a for a in arrivals if start <= a < end), None)
        in_steps(step_to, mine, "Runner called", start, start_steps())
        model_at = first(mine, "model>", start)
        step_to("Runner called -> model called", start, model_at)
        request_sent(step_to, mine, model_at, arrived)
        step_to("TOTAL Runner called -> at the provider", start, arrived)
    return up


def probe_adk(
    provider: Provider, runs: int, pace_ms: float
) -> tuple[list[float], list[tuple[str, float, Any]], list[float], dict[float, float]]:
    """Runs ``runs`` of bench_providers' plain ADK Runner (the demo's agent and model, no
    gateway) in this process with ADK's stamps (``_stream_probe.install_adk``): when each
    run's Runner was called, the stamps, the requests' arrivals at the provider, and the
    thread's CPU at each stamp's time."""
    from google.adk.sessions import InMemorySessionService

    from scripts import _stream_probe as probe

    probe.install_adk()
    probe.around_async(InMemorySessionService, "append_event", "append_event")
    with provider_process(provider, pace_ms):
        run = adk_runner(provider)

        async def each() -> list[float]:
            starts = []
            for _ in range(WARM_UP_RUNS + runs):
                probe.stamp("runner")
                starts.append(probe.STAMPS[-1][1])
                await run()
            return starts[WARM_UP_RUNS:]

        starts = uvloop.run(each())
        arrivals = recorded(provider)["arrivals"]
    stamps = [(label, at, extra) for label, at, extra, _ in probe.STAMPS]
    return starts, stamps, arrivals, {at: cpu for _, at, _, cpu in probe.STAMPS}


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
        help="with --profile: only each run's start, from the door's read to its request's"
        " first byte",
    )
    parser.add_argument(
        "--fine",
        action="store_true",
        help="stamp more of a start: the door's way to the driver, ADK's node runner, agent,"
        " flow and each of its request processors",
    )
    parser.add_argument("--stamps", type=Path, help="keep the gateway's stamps in this file")
    parser.add_argument(
        "--db", choices=("memory", "file"), default="memory", help="the gateway's store (memory)"
    )
    parser.add_argument(
        "--side",
        choices=("gateway", "adk"),
        default="gateway",
        help="adk: a plain Runner in this process, stamped the same way, to compare (gateway)",
    )
    parser.add_argument(
        "--httpx",
        action="store_true",
        help="google-genai sends through httpx, as in the image, which has no aiohttp"
        " (the test extras install it, and google-genai then sends through it)",
    )
    args = parser.parse_args()
    if args.httpx:
        os.environ["STREAM_PROBE_HTTPX"] = "1"
    if args.fine:
        os.environ["STREAM_PROBE_FINE"] = "1"
    if args.side == "adk":
        provider = PROVIDERS[args.provider]()
        provider.port = free_port()
        os.environ.update(provider.env())
        starts, stamps, arrivals, cpu_at = probe_adk(provider, args.runs, args.pace_ms)
        print(f"{args.provider}: {args.runs} runs, pace {args.pace_ms:g} ms, a plain ADK Runner")
        show(
            "from the Runner's call to the model's request at the provider",
            analyse_adk(starts, stamps, arrivals, cpu_at),
        )
        return
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
        flags: tuple[str, ...] = ("--model", provider.model_name, "--user-rate", "0")
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
    up, first_chunk, later = analyse(runs, stamps, arrivals, cpu_at)
    print(f"{args.provider}: {args.runs} runs, pace {args.pace_ms:g} ms, {args.db} ({root})")
    show("from the client's input to the model's request at the provider", up)
    show("the first chunk", first_chunk)
    show("later chunks", later)


if __name__ == "__main__":
    main()
