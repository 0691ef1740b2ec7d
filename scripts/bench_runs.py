"""Runs per second and time to first event: the gateway over /ws against a plain ADK Runner.

Both sides drive the same agent (``gateway.runner.build_agent``) and the scripted model at
pace 0 through one-turn text runs: "안녕" in, the greeting streamed back in 20 chunks (24
AG-UI events). Both run on uvloop, like the server.

- gateway: ``python -m gateway`` in a subprocess (127.0.0.1, a free port, --db :memory:),
  driven from this process by C websocket connections.
- runner: google.adk's Runner over InMemorySessionService in this process, driven by C
  tasks; the floor the gateway's overhead is measured from.

Each client does its runs one after another, and every run is on a new thread (a new ADK
session), so no run reads another's history. A phase's clock starts once every connection
is open. Each round starts a fresh server and first measures its warm-up: the first run
after start-up against the median of runs 2-10 on one connection, and against runs that
each follow the same idle pause as the first one did. On these machines any run after a
pause is slower than one in a busy loop (cold caches, a sleeping core), so the paused runs
are what tells cold code from a cold machine.

"first event" is RUN_STARTED on the gateway, which it sends before ADK starts, and ADK's
first event (already the first text chunk) on the runner; "first text" compares like with
like. "cpu ms/run" is the serving process's CPU time over the phase, divided by its runs.

    .venv/bin/python -m scripts.bench_runs              # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_runs --rounds 1 --runs 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import gc
import json
import logging
import math
import os
import statistics
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import uvloop
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from gateway.models.scripted import ScriptedLlm
from gateway.runner import build_agent, resumable_app
from gateway.tools import catalog as tool_catalog
from gateway.tools.adk import CLIENT_TOOLS_KEY, RUN_METADATA_KEY
from gateway.warmup import skip_absent_a2a
from scripts._bench import LocalGateway, local_gateway

GREETING = "안녕"
USER = "demo"
WARM_UP_RUNS = 10
PAUSED_RUNS = 5
PAUSE_SECONDS = 0.1
RUN_TIMEOUT = 10.0


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds from sending a run to its first event, its first text chunk and its end."""

    first_event: float
    first_text: float
    total: float


@dataclasses.dataclass(frozen=True)
class Phase:
    door: str
    clients: int
    seconds: float
    # CPU seconds the serving side (gateway process, or this one for the runner) spent.
    cpu: float
    timings: list[Timing]

    @property
    def rate(self) -> float:
        return len(self.timings) / self.seconds

    @property
    def cpu_per_run(self) -> float:
        return self.cpu / len(self.timings)

    def percentile(self, field: str, q: float) -> float:
        return percentile([getattr(t, field) for t in self.timings], q)


@dataclasses.dataclass(frozen=True)
class Round:
    ready_after: float
    warm_up: list[Timing]
    # Runs after a pause of PAUSE_SECONDS each, once runs 2-10 have warmed everything.
    paused: list[Timing]
    phases: list[Phase]

    def phase(self, door: str, clients: int) -> Phase:
        return next(p for p in self.phases if p.door == door and p.clients == clients)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU time a process has used (Linux /proc); this process when pid is None.

    CPU per run is the steadier figure on a shared machine: it does not move when a
    neighbour takes a core, where runs per second does.
    """
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    clients: Sequence[Callable[[], Awaitable[Timing]]], runs: int, cpu: Callable[[], float]
) -> Phase:
    """Runs ``runs`` in total, split over the clients, each client one run at a time."""
    each = max(1, runs // len(clients))

    async def drive(run: Callable[[], Awaitable[Timing]]) -> list[Timing]:
        return [await asyncio.wait_for(run(), RUN_TIMEOUT) for _ in range(each)]

    cpu_before, started = cpu(), time.perf_counter()
    results = await asyncio.gather(*(drive(run) for run in clients))
    seconds, cpu_used = time.perf_counter() - started, cpu() - cpu_before
    return Phase("", len(clients), seconds, cpu_used, [t for rs in results for t in rs])


# --- the gateway over /ws ------------------------------------------------------------------


async def gateway_run(ws: ClientConnection, tools: list[object]) -> Timing:
    frame = json.dumps(
        {
            "threadId": uuid.uuid4().hex,
            "runId": uuid.uuid4().hex,
            "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": GREETING}],
            "tools": tools,
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
    )
    first_event = first_text = None
    started = time.perf_counter()
    await ws.send(frame)
    while True:
        raw = await ws.recv()
        now = time.perf_counter() - started
        event = json.loads(raw)
        first_event = now if first_event is None else first_event
        if event["type"] == "TEXT_MESSAGE_CONTENT" and first_text is None:
            first_text = now
        elif event["type"] == "RUN_ERROR":
            raise RuntimeError(f"the gateway failed a run: {raw!r}")
        elif event["type"] == "RUN_FINISHED":
            break
    if first_event is None or first_text is None:
        raise RuntimeError("a gateway run finished without streaming any text")
    return Timing(first_event, first_text, now)


async def measure_gateway(gateway: LocalGateway, runs: int, concurrency: Sequence[int]) -> Round:
    with urllib.request.urlopen(f"{gateway.http}/tools", timeout=5) as response:
        tools = json.load(response)["tools"]
    async with connect(gateway.ws_url(USER), max_size=None, compression=None) as ws:
        await asyncio.sleep(PAUSE_SECONDS)  # the first run follows a pause like the others
        warm_up = [await gateway_run(ws, tools) for _ in range(WARM_UP_RUNS)]
        paused = []
        for _ in range(PAUSED_RUNS):
            await asyncio.sleep(PAUSE_SECONDS)
            paused.append(await gateway_run(ws, tools))
    phases = []
    for clients in concurrency:
        async with contextlib.AsyncExitStack() as stack:
            sockets = [
                await stack.enter_async_context(
                    connect(gateway.ws_url(USER), max_size=None, compression=None)
                )
                for _ in range(clients)
            ]
            phase = await measure(
                [functools.partial(gateway_run, ws, tools) for ws in sockets],
                runs,
                functools.partial(cpu_seconds, gateway.process.pid),
            )
        phases.append(dataclasses.replace(phase, door="gateway"))
    return Round(gateway.ready_after, warm_up, paused, phases)


# --- a plain in-process ADK Runner ---------------------------------------------------------


def build_runner() -> Runner:
    """The gateway's agent and app on a plain Runner with an in-memory session service.

    The gateway's start-up fix for ADK's per-run failing A2A import applies here too, so
    the ratio compares the gateway's own work only.
    """
    skip_absent_a2a()
    agent = build_agent(ScriptedLlm(pace_ms=0), tool_catalog.load())
    return Runner(
        app=resumable_app(agent),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )


async def runner_run(runner: Runner, config: RunConfig) -> Timing:
    message = types.Content(role="user", parts=[types.Part(text=GREETING)])
    first_event = first_text = None
    started = time.perf_counter()
    async for event in runner.run_async(
        user_id=USER, session_id=uuid.uuid4().hex, new_message=message, run_config=config
    ):
        now = time.perf_counter() - started
        first_event = now if first_event is None else first_event
        if event.error_code:
            raise RuntimeError(f"the runner failed a run: {event.error_code} {event.error_message}")
        if first_text is None and event.partial and event.content and event.content.parts:
            first_text = now
    if first_event is None or first_text is None:
        raise RuntimeError("a runner run finished without streaming any text")
    return Timing(first_event, first_text, now)


async def measure_runner(runs: int, concurrency: Sequence[int]) -> list[Phase]:
    runner = build_runner()
    # Declares the client tools as a browser would, so both sides give the model one toolset.
    client_tools = [entry.name for entry in tool_catalog.load().client_entries()]
    config = RunConfig(
        streaming_mode=StreamingMode.SSE,
        custom_metadata={RUN_METADATA_KEY: {CLIENT_TOOLS_KEY: client_tools}},
    )
    for _ in range(WARM_UP_RUNS):
        await runner_run(runner, config)
    # The gateway freezes what its start-up built; the floor gets the same treatment.
    gc.collect()
    gc.freeze()
    phases = []
    for clients in concurrency:
        phase = await measure(
            [functools.partial(runner_run, runner, config)] * clients, runs, cpu_seconds
        )
        phases.append(dataclasses.replace(phase, door="runner"))
    return phases


# --- report --------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


HEADER = (
    f"{'door':<8} {'clients':>7} {'runs':>5} {'runs/s':>7} {'cpu ms/run':>10}"
    f"  {'first event p50/p99':>19}  {'first text p50/p99':>18}  {'run p50/p99 ms':>14}"
)


def phase_row(door: str, clients: int, runs: int, values: dict[str, float]) -> str:
    pairs = [
        f"{ms(values[field + '50'])}/{ms(values[field + '99'])}"
        for field in ("first_event", "first_text", "total")
    ]
    return (
        f"{door:<8} {clients:>7} {runs:>5} {values['rate']:>7.1f} {ms(values['cpu']):>10}"
        f"  {pairs[0]:>19}  {pairs[1]:>18}  {pairs[2]:>14}"
    )


def phase_values(phase: Phase) -> dict[str, float]:
    values = {"rate": phase.rate, "cpu": phase.cpu_per_run}
    for field in ("first_event", "first_text", "total"):
        values[field + "50"] = phase.percentile(field, 0.50)
        values[field + "99"] = phase.percentile(field, 0.99)
    return values


def warm_up_values(result: Round) -> dict[str, float]:
    later = [t.total for t in result.warm_up[1:]]
    return {
        "ready": result.ready_after,
        "first": result.warm_up[0].total,
        "first_event": result.warm_up[0].first_event,
        "median": statistics.median(later),
        "low": min(later),
        "high": max(later),
        "paused": statistics.median(t.total for t in result.paused),
    }


def medians(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def print_round(title: str, rounds: Sequence[Round], concurrency: Sequence[int]) -> None:
    """Prints one round, or the medians of several (each number the median of its own)."""
    warm = medians([warm_up_values(r) for r in rounds])
    print(f"\n{title}")
    print(
        f"  start-up: /ping healthy {warm['ready']:.2f} s after spawn; first run "
        f"{ms(warm['first'])} ms (first event {ms(warm['first_event'])} ms), runs 2-"
        f"{WARM_UP_RUNS} median {ms(warm['median'])} ms (range {ms(warm['low'])}-"
        f"{ms(warm['high'])}); first/median {warm['first'] / warm['median']:.2f}"
    )
    print(
        f"  a warm run after the same {PAUSE_SECONDS * 1000:.0f} ms pause: median "
        f"{ms(warm['paused'])} ms of {PAUSED_RUNS}; first/paused "
        f"{warm['first'] / warm['paused']:.2f} (target <= 1.00: no cold code on the first run)"
    )
    print("  " + HEADER)
    for door in ("gateway", "runner"):
        for clients in concurrency:
            values = medians([phase_values(r.phase(door, clients)) for r in rounds])
            runs = len(rounds[0].phase(door, clients).timings)
            print("  " + phase_row(door, clients, runs, values))
    for label, ratio, target in (
        ("runs per second", rate_ratio, " (target >= 0.70)"),
        ("CPU per run (runner's/gateway's)", cpu_ratio, ""),
    ):
        cells = []
        for clients in concurrency:
            value = statistics.median(
                ratio(r.phase("gateway", clients), r.phase("runner", clients)) for r in rounds
            )
            cells.append(f"{clients} client{'s' if clients > 1 else ''} {value:.2f}")
        print(f"  gateway/runner {label}: {', '.join(cells)}{target}")


def rate_ratio(gateway: Phase, runner: Phase) -> float:
    return gateway.rate / runner.rate


def cpu_ratio(gateway: Phase, runner: Phase) -> float:
    return runner.cpu_per_run / gateway.cpu_per_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers to measure (3)")
    parser.add_argument("--runs", type=int, default=400, help="runs per phase (400)")
    parser.add_argument(
        "--clients", default="1,8", help="concurrent clients per phase, comma-separated (1,8)"
    )
    args = parser.parse_args()
    concurrency = [int(c) for c in args.clients.split(",")]
    # ADK warns once per run about token usage; the server logs to a file, so do the same here.
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    rounds = []
    for number in range(1, args.rounds + 1):
        with local_gateway() as gateway:
            result = uvloop.run(measure_gateway(gateway, args.runs, concurrency))
        phases = uvloop.run(measure_runner(args.runs, concurrency))
        rounds.append(dataclasses.replace(result, phases=result.phases + phases))
        print_round(f"round {number}", rounds[-1:], concurrency)
    if len(rounds) > 1:
        print_round(f"median of {len(rounds)} rounds", rounds, concurrency)


if __name__ == "__main__":
    main()
