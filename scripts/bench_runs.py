"""Runs per second and time to first event: the gateway over /ws against a plain ADK Runner.

Both sides drive the same agent (``gateway.examples.navigator.agent.build_agent``) and
the scripted model at
pace 0 through one-turn text runs: "안녕" in, the greeting streamed back in 20 chunks (24
AG-UI events). Both run on uvloop, like the server.

- gateway: ``python -m gateway`` in a subprocess (127.0.0.1, a free port, --db :memory:),
  driven from this process by C websocket connections.
- runner: google.adk's Runner over InMemorySessionService in this process, driven by C
  tasks; the floor the gateway's overhead is measured from.

Each client does its runs one after another, and every run is on a new thread (a new ADK
session), so no run reads another's history. A phase's clock starts once every connection
is open.

Start-up is measured on every fresh server (each round's, and more with ``--starts``):
the first run after start-up against warm runs that each follow the same idle pause, and a
new user's first run on a new connection, sent while the machine is busy, against runs
2-10 back to back. On these machines any run after an idle pause is slower than one in a
busy loop (cold caches, a sleeping core), the plain runner's too, so the bench measures
what the pause alone costs each side: that is what tells cold code from a cold machine.

"first event" is RUN_STARTED on the gateway, which it sends before ADK starts, and ADK's
first event (already the first text chunk) on the runner; "first text" compares like with
like. "cpu ms/run" is the serving process's CPU time over the phase, divided by its runs.

    .venv/bin/python -m scripts.bench_runs              # 3 rounds, then their medians
    .venv/bin/python -m scripts.bench_runs --rounds 1 --runs 200
    .venv/bin/python -m scripts.bench_runs --db file     # the store on a SQLite file
    .venv/bin/python -m scripts.bench_runs --db postgres # on PostgreSQL (tests/support/postgres.py)
    .venv/bin/python -m scripts.bench_runs --starts 12   # start-up figures of 12 servers
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
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path

import uvloop
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from websockets.asyncio.client import ClientConnection, connect

from gateway.adk.hosting import Hosted, runnable_app
from gateway.context import RUN_METADATA_KEY
from gateway.doors.warmup import skip_absent_a2a
from gateway.examples.navigator.agent import build_agent, load_catalog
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.tools.client import CLIENT_TOOLS_KEY
from scripts._bench import (
    LocalGateway,
    client_tools,
    cpu_seconds,
    local_gateway,
    percentile,
    user_turn,
)
from tests.support.postgres import Postgres, running_postgres

GREETING = "안녕"
USER = "demo"
WARM_UP_RUNS = 10
PAUSED_RUNS = 5
PAUSE_SECONDS = 0.1
RUN_TIMEOUT = 10.0
# The demo's runs/s against the plain runner's: issue 12 keeps it where it was.
RATE_TARGET = 0.70
# One user sends every run, far faster than a person, each on a new thread: neither the
# per-user rate limit nor the cap on a user's threads is what is measured (the plain
# runner has neither; with the cap, a phase past ~1,000 runs ended in
# SERVICE_QUOTA_EXCEEDED).
# And one process: the plain Runner a gateway is compared with runs in one, and workers
# started on demand in the middle of a phase would time their start (load.py and
# bench_footprint.py measure workers, with --workers).
BENCH_FLAGS: tuple[str, ...] = (
    "--user-rate",
    "0",
    "--user-reattach-bytes",
    "0",
    "--user-threads",
    "0",
    "--workers",
    "0",
)
# A phase compared with another is measured in this many parts, the two taking turns: the
# load of a shared machine moves within seconds, and should fall on both.
SLICES = 4


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
class Pauses:
    """Warm runs one right after another, and warm runs each after an idle pause."""

    back_to_back: list[Timing]
    paused: list[Timing]

    @property
    def cost(self) -> float:
        """How much slower the pause alone makes a warm run."""
        return median_total(self.paused) / median_total(self.back_to_back)


@dataclasses.dataclass(frozen=True)
class StartUp:
    """A fresh server's first runs."""

    ready_after: float
    # The first run after start-up, sent after an idle pause like the paused runs.
    first: Timing
    # Runs 2-10 back to back, then warm runs after the same pause as the first.
    warm: Pauses
    # A new user's first run on a new connection, sent right after runs 2-10.
    new_connection: Timing


@dataclasses.dataclass(frozen=True)
class Round:
    start_up: StartUp
    # The plain runner's warm runs, back to back and after the same pauses.
    runner_pauses: Pauses
    phases: list[Phase]

    def phase(self, door: str, clients: int) -> Phase:
        return find_phase(self.phases, door, clients)


def find_phase(phases: Sequence[Phase], door: str, clients: int) -> Phase:
    return next(p for p in phases if p.door == door and p.clients == clients)


def median_total(timings: Sequence[Timing]) -> float:
    return statistics.median(t.total for t in timings)


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


async def gateway_run(ws: ClientConnection, tools: list[object], text: str = GREETING) -> Timing:
    frame = json.dumps(user_turn(text, tools=tools))
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


async def paused_runs(run: Callable[[], Awaitable[Timing]]) -> list[Timing]:
    timings = []
    for _ in range(PAUSED_RUNS):
        await asyncio.sleep(PAUSE_SECONDS)
        timings.append(await run())
    return timings


async def measure_start_up(gateway: LocalGateway, tools: list[object]) -> StartUp:
    async with connect(gateway.ws_url(USER), max_size=None, compression=None) as ws:
        run = functools.partial(gateway_run, ws, tools)
        await asyncio.sleep(PAUSE_SECONDS)  # the first run follows a pause like the others
        first = await run()
        back_to_back = [await run() for _ in range(WARM_UP_RUNS - 1)]
        async with connect(gateway.ws_url(f"{USER}-2"), max_size=None, compression=None) as new:
            new_connection = await gateway_run(new, tools)
        paused = await paused_runs(run)
    return StartUp(gateway.ready_after, first, Pauses(back_to_back, paused), new_connection)


async def measure_gateway(
    gateway: LocalGateway, runs: int, concurrency: Sequence[int]
) -> tuple[StartUp, list[Phase]]:
    tools = client_tools(gateway)
    start_up = await measure_start_up(gateway, tools)
    return start_up, await gateway_phases(gateway, runs, concurrency, tools)


async def gateway_phases(
    gateway: LocalGateway,
    runs: int,
    concurrency: Sequence[int],
    tools: list[object],
    text: str = GREETING,
) -> list[Phase]:
    """One phase for each number of clients, each client on a connection of its own."""
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
                [functools.partial(gateway_run, ws, tools, text) for ws in sockets],
                runs,
                functools.partial(cpu_seconds, gateway.process.pid),
            )
        phases.append(dataclasses.replace(phase, door="gateway"))
    return phases


# --- a plain in-process ADK Runner ---------------------------------------------------------


def build_runner() -> Runner:
    """The gateway's agent and app on a plain Runner with an in-memory session service.

    The gateway's start-up fix for ADK's per-run failing A2A import applies here too, so
    the ratio compares the gateway's own work only.
    """
    skip_absent_a2a()
    catalog = load_catalog()
    agent = build_agent(ScriptedLlm(pace_ms=0), catalog)
    return Runner(
        app=runnable_app(Hosted(agent, catalog=catalog)),
        session_service=InMemorySessionService(),
        auto_create_session=True,
    )


async def runner_run(runner: Runner, config: RunConfig, text: str = GREETING) -> Timing:
    message = types.Content(role="user", parts=[types.Part(text=text)])
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


async def measure_runner(runs: int, concurrency: Sequence[int]) -> tuple[Pauses, list[Phase]]:
    runner = build_runner()
    # Declares the client tools as a browser would, so both sides give the model one toolset.
    client_tools = [entry.name for entry in load_catalog().client_entries()]
    config = RunConfig(
        streaming_mode=StreamingMode.SSE,
        custom_metadata={RUN_METADATA_KEY: {CLIENT_TOOLS_KEY: client_tools}},
    )
    run = functools.partial(runner_run, runner, config)
    await warm_up_runner(run)
    back_to_back = [await run() for _ in range(WARM_UP_RUNS - 1)]
    pauses = Pauses(back_to_back, await paused_runs(run))
    return pauses, await runner_phases(run, runs, concurrency)


async def warm_up_runner(run: Callable[[], Awaitable[Timing]]) -> None:
    for _ in range(WARM_UP_RUNS):
        await run()
    # The gateway freezes what its start-up built; the floor gets the same treatment.
    gc.collect()
    gc.freeze()


async def runner_phases(
    run: Callable[[], Awaitable[Timing]], runs: int, concurrency: Sequence[int]
) -> list[Phase]:
    """One phase for each number of clients, each client a task running ``run``."""
    phases = []
    for clients in concurrency:
        phase = await measure([run] * clients, runs, cpu_seconds)
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


def start_up_values(start_up: StartUp) -> dict[str, float]:
    return {
        "ready": start_up.ready_after,
        "first": start_up.first.total,
        "first_event": start_up.first.first_event,
        "paused": median_total(start_up.warm.paused),
        "back_to_back": median_total(start_up.warm.back_to_back),
        "new_connection": start_up.new_connection.total,
        "pause_cost": start_up.warm.cost,
    }


def medians(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def print_start_up(start_ups: Sequence[StartUp], runner_pauses: Sequence[Pauses]) -> None:
    """Each figure the median over the servers (of each server's median where it has many)."""
    values = medians([start_up_values(s) for s in start_ups])
    pause = f"{PAUSE_SECONDS * 1000:.0f} ms"
    count = len(start_ups)
    print(f"  start-up, medians of {count} fresh servers:" if count > 1 else "  start-up:")
    print(f"    /ping healthy {values['ready']:.2f} s after spawn")
    print(
        f"    first run {ms(values['first'])} ms (RUN_STARTED {ms(values['first_event'])} ms);"
        f" a warm run after the same {pause} idle pause {ms(values['paused'])} ms: first/paused"
        f" {values['first'] / values['paused']:.2f} (target <= 1.00: no cold code on it)"
    )
    print(
        f"    a new user's first run on a new connection, machine busy,"
        f" {ms(values['new_connection'])} ms; runs 2-{WARM_UP_RUNS} back to back"
        f" {ms(values['back_to_back'])} ms: {values['new_connection'] / values['back_to_back']:.2f}"
    )
    runner = (
        f", the plain runner's {statistics.median(p.cost for p in runner_pauses):.2f}x"
        if runner_pauses
        else ""
    )
    print(
        f"    the {pause} pause alone makes a warm run slower: the gateway's"
        f" {values['pause_cost']:.2f}x{runner}"
    )


def print_round(title: str, rounds: Sequence[Round], concurrency: Sequence[int]) -> None:
    """Prints one round, or the medians of several (each number the median of its own)."""
    print(f"\n{title}")
    print_start_up([r.start_up for r in rounds], [r.runner_pauses for r in rounds])
    print_phases([r.phases for r in rounds], concurrency, RATE_TARGET)


def print_phases(
    rounds: Sequence[Sequence[Phase]], concurrency: Sequence[int], target: float
) -> None:
    """Both sides' phases and their ratios: one round's, or the medians of several."""
    print("  " + HEADER)
    for door in ("gateway", "runner"):
        for clients in concurrency:
            values = medians([phase_values(find_phase(r, door, clients)) for r in rounds])
            runs = len(find_phase(rounds[0], door, clients).timings)
            print("  " + phase_row(door, clients, runs, values))
    for label, ratio, wanted in (
        ("runs per second", rate_ratio, f" (target >= {target:.2f})"),
        ("CPU per run (runner's/gateway's)", cpu_ratio, ""),
    ):
        cells = []
        for clients in concurrency:
            value = statistics.median(
                ratio(find_phase(r, "gateway", clients), find_phase(r, "runner", clients))
                for r in rounds
            )
            cells.append(f"{clients} client{'s' if clients > 1 else ''} {value:.2f}")
        print(f"  gateway/runner {label}: {', '.join(cells)}{wanted}")


def slices(runs: int, clients: int) -> list[int]:
    """The runs of each part of a phase: up to ``SLICES`` parts, each a whole number of
    runs per client (a phase gives each client ``runs // clients``)."""
    each, rest = divmod(max(1, runs // clients), SLICES)
    return [(each + (i < rest)) * clients for i in range(SLICES) if each + (i < rest)]


def joined(parts: Sequence[Phase]) -> Phase:
    """One phase of the runs, seconds and CPU of its parts."""
    timings = [timing for part in parts for timing in part.timings]
    seconds, cpu = sum(part.seconds for part in parts), sum(part.cpu for part in parts)
    return dataclasses.replace(parts[0], seconds=seconds, cpu=cpu, timings=timings)


def rate_ratio(gateway: Phase, runner: Phase) -> float:
    return gateway.rate / runner.rate


def cpu_ratio(gateway: Phase, runner: Phase) -> float:
    return runner.cpu_per_run / gateway.cpu_per_run


def phase_arguments(doc: str) -> argparse.ArgumentParser:
    """The options of a runs-per-second benchmark: rounds, runs per phase, clients."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers to measure (3)")
    parser.add_argument("--runs", type=int, default=400, help="runs per phase (400)")
    parser.add_argument(
        "--clients", default="1,8", help="concurrent clients per phase, comma-separated (1,8)"
    )
    return parser


def main() -> None:
    parser = phase_arguments(__doc__)
    parser.add_argument(
        "--db",
        choices=("memory", "file", "postgres"),
        default="memory",
        help="the gateway's store: ':memory:' like the runner's in-memory sessions (default), "
        "a SQLite file in a temporary directory, as a deployment runs it, or a fresh database "
        "on a throwaway PostgreSQL server (tests/support/postgres.py: fsync off)",
    )
    parser.add_argument(
        "--starts",
        type=int,
        default=6,
        help="fresh servers whose start-up is measured, the rounds' included (6)",
    )
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(running_postgres()) if args.db == "postgres" else None
        measure_rounds(args, functools.partial(served, args.db, server))


def measure_rounds(
    args: argparse.Namespace, serve: Callable[[], contextlib.AbstractContextManager[LocalGateway]]
) -> None:
    concurrency = [int(c) for c in args.clients.split(",")]
    # ADK warns once per run about token usage; the server logs to a file, so do the same here.
    logging.basicConfig(filename=os.devnull, level=logging.INFO)
    rounds = []
    for number in range(1, args.rounds + 1):
        with serve() as gateway:
            start_up, served_phases = uvloop.run(measure_gateway(gateway, args.runs, concurrency))
        pauses, floor_phases = uvloop.run(measure_runner(args.runs, concurrency))
        rounds.append(Round(start_up, pauses, served_phases + floor_phases))
        print_round(f"round {number}", rounds[-1:], concurrency)
    if len(rounds) > 1:
        print_round(f"median of {len(rounds)} rounds", rounds, concurrency)
    if args.starts > len(rounds):
        start_ups = [r.start_up for r in rounds]
        for _ in range(args.starts - len(rounds)):
            with serve() as gateway:
                start_ups.append(uvloop.run(start_up_only(gateway)))
        print(f"\nevery server started (the rounds' and {len(start_ups) - len(rounds)} more)")
        print_start_up(start_ups, [r.runner_pauses for r in rounds])


@contextlib.contextmanager
def served(db: str, server: Postgres | None) -> Iterator[LocalGateway]:
    """A fresh gateway whose store is ':memory:', a file in a temporary directory, or a
    new database of ``server``."""
    with contextlib.ExitStack() as stack:
        flags = list(BENCH_FLAGS)
        if db == "file":
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-"))
            flags += ["--db", str(Path(directory) / "gateway.db")]
        elif server is not None:
            flags += ["--db", server.fresh_database()]
        yield stack.enter_context(local_gateway(*flags))


async def start_up_only(gateway: LocalGateway) -> StartUp:
    return await measure_start_up(gateway, client_tools(gateway))


if __name__ == "__main__":
    main()
