"""The session store against ADK's SqliteSessionService, side by side, on this machine.

    .venv/bin/python scripts/bench_store.py [--durability normal|full] [--window N ...]
                                            [--asyncio-loop]

1. append_event, one appender: events per second and p99 latency (target: 10x ADK's).
2. 100 concurrent appenders: events per second and p99 enqueue-to-committed latency
   (target: p99 under 15 ms at synchronous=normal).
3. Per-turn time of one thread through an ADK Runner and the scripted model, around
   turns 5, 50 and 200, for each history window given (``--window``, repeatable; the
   gateway's default window without it), next to ADK's own SQLite service (target: turn
   200 at most 1.5x turn 5). A turn's cost follows the events it loads, so the window
   decides whether the target holds.

Each target is printed with PASS or FAIL.

Both services write the same events to a fresh file in a temporary directory. ADK's
service opens a connection per call, so it gets fewer events where that would take
minutes; rates are per second either way. Events are built before timing and frozen out
of the garbage collector (as the gateway freezes its start-up heap), so a collection of
the benchmark's own objects does not land in a store measurement. It runs on uvloop, as
the gateway does. Finishes in well under three minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import itertools
import logging
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import uvloop
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.config import Settings
from gateway.examples.navigator.scripted import ScriptedLlm
from gateway.store import SessionService
from gateway.translate.history import event_messages

APP = "bench"
TURNS_AT = (5, 50, 200)
APPEND_RATE_TARGET = 10.0  # x ADK's events per second
COMMIT_P99_TARGET_MS = 15.0
TURN_GROWTH_TARGET = 1.5  # turn 200 / turn 5
T = TypeVar("T")
TEXT = "업무 요청 목록 화면을 열어 주세요. " * 4


def event(i: int, invocation: str = "inv") -> Event:
    author, role = ("user", "user") if i % 2 == 0 else ("agent", "model")
    return Event(
        invocation_id=invocation,
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=f"{i} {TEXT}")]),
        custom_metadata={"agui": {"runId": "r1", "messageId": f"m{i}"}},
    )


def settle() -> None:
    """Freezes what exists, as the gateway does after start-up, so a full collection of
    the benchmark's own prepared events does not land inside a measurement."""
    gc.collect()
    gc.freeze()


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100)[98] if len(samples) > 1 else samples[0]


@dataclasses.dataclass(frozen=True)
class Appends:
    rate: float  # committed events per second
    p99: float  # ms from calling append_event to its return (committed)
    failed: int
    errors: list[str]


async def sequential(service: BaseSessionService, count: int) -> Appends:
    """One appender awaiting each event in turn."""
    session = await service.create_session(app_name=APP, user_id="u", session_id="seq")
    events = [event(i) for i in range(count)]
    settle()
    latencies = []
    started = time.perf_counter()
    for e in events:
        t0 = time.perf_counter()
        await service.append_event(session, e)
        latencies.append((time.perf_counter() - t0) * 1000)
    return Appends(count / (time.perf_counter() - started), p99(latencies), 0, [])


async def concurrent(service: BaseSessionService, appenders: int, each: int) -> Appends:
    """Many runs at once, each appending its own thread's events; failures are counted."""
    sessions = [
        await service.create_session(app_name=APP, user_id=f"u{i}", session_id=f"c{i}")
        for i in range(appenders)
    ]
    events = [[event(i, invocation=f"inv{n}") for i in range(each)] for n in range(appenders)]
    settle()
    latencies: list[float] = []
    failures: list[str] = []

    async def run(index: int) -> None:
        session = sessions[index]
        for e in events[index]:
            t0 = time.perf_counter()
            try:
                await service.append_event(session, e)
            except Exception as error:  # ADK's service: "database is locked" under load
                failures.append(f"{type(error).__name__}: {error}")
                continue
            latencies.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0)  # a run does other work between events

    started = time.perf_counter()
    await asyncio.gather(*(run(i) for i in range(appenders)))
    elapsed = time.perf_counter() - started
    return Appends(len(latencies) / elapsed, p99(latencies), len(failures), failures[:1])


async def turns(service: BaseSessionService, last: int) -> dict[int, float]:
    """Median ms of the five turns around each of TURNS_AT, one thread, scripted model."""
    agent = LlmAgent(name="bench_agent", model=ScriptedLlm(), instruction="Answer briefly.")
    runner = Runner(app_name=APP, agent=agent, session_service=service, auto_create_session=True)
    message = types.Content(role="user", parts=[types.Part(text="안녕하세요")])
    # A few turns on another thread first: the first turns of a runner pay for its caches.
    for _ in range(5):
        async for _event in runner.run_async(user_id="u", session_id="warm", new_message=message):
            pass
    times: list[float] = []
    settle()
    for _ in range(last + 2):
        t0 = time.perf_counter()
        async for _event in runner.run_async(user_id="u", session_id="turns", new_message=message):
            pass
        times.append((time.perf_counter() - t0) * 1000)
    await runner.close()
    return {n: statistics.median(times[n - 3 : n + 2]) for n in TURNS_AT if n <= last}


def verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def growth(times: dict[int, float]) -> float:
    """How much dearer the last measured turn is than the first."""
    return times[TURNS_AT[-1]] / times[TURNS_AT[0]]


class Table:
    def __init__(self, *columns: str) -> None:
        self.columns = columns
        self.rows: list[tuple[str, ...]] = []

    def add(self, *cells: str) -> None:
        self.rows.append(cells)

    def print(self) -> None:
        widths = [
            max(len(r[i]) for r in [self.columns, *self.rows]) for i in range(len(self.columns))
        ]
        for row in [self.columns, *self.rows]:
            print(
                "  ".join(
                    cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                )
            )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--durability", default="normal", choices=["normal", "full"])
    parser.add_argument(
        "--window",
        type=int,
        action="append",
        dest="windows",
        metavar="N",
        help="a history window to time turns at (repeatable; default: the gateway's)",
    )
    options = parser.parse_args()
    windows: list[int] = options.windows or [Settings().history_window]
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    settle()

    with tempfile.TemporaryDirectory() as tmp:
        files = (Path(tmp) / f"{n}.db" for n in itertools.count())

        async def ours(window: int = windows[0]) -> SessionService:
            service = SessionService(
                str(next(files)),
                messages=event_messages,
                durability=options.durability,
                history_window=window,
            )
            await service.open()
            return service

        async def adk() -> SqliteSessionService:
            return SqliteSessionService(str(next(files)))

        async def on(
            opened: Awaitable[BaseSessionService],
            work: Callable[[BaseSessionService], Awaitable[T]],
        ) -> T:
            service = await opened
            try:
                return await work(service)
            finally:
                closer = getattr(service, "close", None)
                if closer is not None:
                    await closer()

        table = Table("", "ours", "ADK sqlite", "ratio", "target")

        mine, theirs = (
            await on(ours(), lambda s: sequential(s, 5000)),
            await on(adk(), lambda s: sequential(s, 400)),
        )
        ratio = mine.rate / theirs.rate
        table.add(
            "one appender: events/s",
            f"{mine.rate:,.0f}",
            f"{theirs.rate:,.0f}",
            f"{ratio:.1f}x",
            f">= {APPEND_RATE_TARGET:.0f}x ADK's: {verdict(ratio >= APPEND_RATE_TARGET)}",
        )
        table.add("one appender: p99 ms", f"{mine.p99:.2f}", f"{theirs.p99:.2f}", "", "")

        mine, theirs = (
            await on(ours(), lambda s: concurrent(s, 100, 100)),
            await on(adk(), lambda s: concurrent(s, 100, 3)),
        )
        table.add(
            "100 appenders: events/s",
            f"{mine.rate:,.0f}",
            f"{theirs.rate:,.0f}",
            f"{mine.rate / theirs.rate:.1f}x",
            "",
        )
        table.add(
            "100 appenders: p99 ms to commit",
            f"{mine.p99:.2f}",
            f"{theirs.p99:.2f}",
            "",
            f"< {COMMIT_P99_TARGET_MS:.0f} ms: {verdict(mine.p99 < COMMIT_P99_TARGET_MS)}",
        )
        table.add(
            "100 appenders: failed appends",
            str(mine.failed),
            str(theirs.failed),
            "",
            (theirs.errors or mine.errors or [""])[0][:60],
        )

        per_window = [await on(ours(w), lambda s: turns(s, max(TURNS_AT))) for w in windows]
        theirs_turns = await on(adk(), lambda s: turns(s, max(TURNS_AT)))
        turn_table = Table("per-turn ms", *(f"ours, window {w}" for w in windows), "ADK sqlite")
        for n in TURNS_AT:
            turn_table.add(f"turn {n}", *(f"{t[n]:.2f}" for t in [*per_window, theirs_turns]))
        turn_table.add(
            f"turn {TURNS_AT[-1]} / turn {TURNS_AT[0]}",
            *(f"{growth(t):.2f}" for t in [*per_window, theirs_turns]),
        )
        turn_table.add(
            f"target <= {TURN_GROWTH_TARGET}",
            *(verdict(growth(t) <= TURN_GROWTH_TARGET) for t in per_window),
            "",
        )

    print(f"session store vs ADK's SqliteSessionService, durability={options.durability}")
    table.print()
    print()
    turn_table.print()


if __name__ == "__main__":
    if "--asyncio-loop" in sys.argv:
        sys.argv.remove("--asyncio-loop")
        asyncio.run(main())
    else:
        uvloop.run(main())  # the gateway serves on uvloop
