"""What the load client itself did while a reply's first text reached it
(``scripts/load.py --timeline``).

Theory of operation. The first text is timed as the client reads it: the user's ``recv``
returns its frame. Between the gateway's write to the socket (``gateway.timeline``'s
``written``) and that read lie the kernel, the client process getting a core, its loop
getting round to the socket, the websockets protocol parsing the bytes, and the loop's
turns to the user's task. To tell those apart:

- ``Stamped``, the client's connection, stamps each data frame as the protocol hands it
  on (``process_event``, called from the loop's ``data_received`` of its bytes), so a
  reply's first text has an ``arrived`` moment between ``written`` and the read;
- ``Process``, one for the round, ticks every ``TICK`` seconds on the client's loop and
  notes, for each tick, how late it woke, the CPU its thread ran and the time it waited
  for a core (``/proc/thread-self/schedstat``: runnable, not running) since the tick
  before; and the garbage collector's collections (``gc.callbacks``), each with its
  generation and its time on the thread's CPU clock.

``spent`` sums, for a reply, what the client did from the gateway's write to its read:
the ticks the span covers (a tick's figures spread evenly over its interval) and the
collections inside it. Off (no ``--timeline``), the connection is websockets' own and
nothing ticks.

What it found (docs/first-event.md, session 50): the client's own CPU and its waits for a
core cost a first text a few ms at most, but its garbage collector stopped every user at
once: the script imports ADK and pydantic (~130,000 objects), its users' runs pile up
more, and once a round a whole-heap collection took 100-190 ms of its loop, every first
text written meanwhile read that much later. So while the users run the client collects
nothing (``collector_paused``): a client on a machine of its own would not make 200
users' reads wait for one collection.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import gc
import os
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.frames import Frame, Opcode
from websockets.protocol import Event

from scripts._bench import percentile

__all__ = ["TICK", "Process", "Stamped", "collector_paused"]

# The frames a message begins with (a continuation is the same message's).
MESSAGE_OPENERS = (Opcode.TEXT, Opcode.BINARY)
# Seconds between the client loop's ticks: fine against a first text's ~10 ms steps, a
# few µs of CPU each.
TICK = 0.005


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection in the block: what is there is collected and frozen first
    (never walked again), and the cycles the block makes wait for its end."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Stamped(ClientConnection):
    """websockets' client connection, each message stamped (``perf_counter``) as its first
    frame arrives, in the order ``recv`` returns them (``arrived``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arrived: deque[float] = deque()

    def process_event(self, event: Event) -> None:
        if isinstance(event, Frame) and event.opcode in MESSAGE_OPENERS:  # not the handshake
            self.arrived.append(time.perf_counter())
        super().process_event(event)


@dataclasses.dataclass(frozen=True)
class Spent:
    """What the client's thread did over a span, in ms."""

    ran: float  # on a core
    waited: float  # runnable, waiting for a core
    collected: float  # in the garbage collector (of ``ran``)
    late: float  # the most a tick in the span woke late


class Process:
    """The client process's loop, ticked (above); ``run`` until cancelled."""

    def __init__(self) -> None:
        # Each tick: its moment, and since the tick before: CPU run, waited for a core
        # (seconds), and how late it woke.
        self.at: list[float] = []
        self.ran: list[float] = []
        self.waited: list[float] = []
        self.late: list[float] = []
        # Each collection: its start, end (perf_counter), generation and CPU seconds.
        self.collections: list[tuple[float, float, int, float]] = []
        self._collecting = (0.0, 0.0)

    async def run(self) -> None:
        schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        gc.callbacks.append(self._collected)
        try:
            on_cpu, waited = _schedstat(schedstat)
            due = time.perf_counter()
            while True:
                due += TICK
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                now = time.perf_counter()
                cpu, wait = _schedstat(schedstat)
                self.at.append(now)
                self.ran.append(cpu - on_cpu)
                self.waited.append(wait - waited)
                self.late.append(now - due)
                on_cpu, waited = cpu, wait
                due = max(due, now - TICK)  # a late tick does not make the next ones early
        finally:
            gc.callbacks.remove(self._collected)
            os.close(schedstat)

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = (time.perf_counter(), time.thread_time())
        else:
            began, cpu = self._collecting
            generation = info["generation"]
            self.collections.append(
                (began, time.perf_counter(), generation, time.thread_time() - cpu)
            )

    def spent(self, began: float, ended: float) -> Spent:
        """What the thread did from ``began`` to ``ended`` (perf_counter)."""
        ran = waited = late = 0.0
        first = bisect.bisect_right(self.at, began)
        for index in range(first, len(self.at)):
            start = self.at[index - 1] if index else self.at[index] - TICK
            end = self.at[index]
            if start >= ended:
                break
            share = (min(end, ended) - max(start, began)) / max(end - start, 1e-9)
            ran += share * self.ran[index]
            waited += share * self.waited[index]
            late = max(late, self.late[index])
        collected = sum(
            max(0.0, min(end, ended) - max(start, began)) for start, end, _, _ in self.collections
        )
        return Spent(1000 * ran, 1000 * waited, 1000 * collected, 1000 * late)

    def summary(self, began: float, ended: float) -> list[str]:
        """The round's lines: the client's CPU and wait for a core, its ticks' lateness and
        its collections by generation, from ``began`` to ``ended``."""
        chosen = [i for i, at in enumerate(self.at) if began <= at <= ended]
        if not chosen:
            return []
        seconds = max(ended - began, 1e-9)
        ran = sum(self.ran[i] for i in chosen) / seconds
        waited = sum(self.waited[i] for i in chosen) / seconds
        late = sorted(1000 * self.late[i] for i in chosen)
        lines = [
            f"  the load client ({seconds:.0f} s): on a core {ran:.2f} of one, waiting for one"
            f" {waited:.2f}; its {TICK * 1000:g} ms tick woke late by"
            f" p50 {percentile(late, 0.5):.1f},"
            f" p99 {percentile(late, 0.99):.1f}, most {late[-1]:.1f} ms",
        ]
        for generation in range(3):
            times = [
                1000 * (end - start)
                for start, end, g, _ in self.collections
                if g == generation and began <= start <= ended
            ]
            if times:
                lines.append(
                    f"    collections of generation {generation}: {len(times)}, {sum(times):.0f}"
                    f" ms in all, the longest {max(times):.1f} ms"
                )
        return lines


def _schedstat(descriptor: int) -> tuple[float, float]:
    """The thread's seconds on a core and runnable waiting for one, so far."""
    on_cpu, waited, _ = os.pread(descriptor, 128, 0).split()
    return int(on_cpu) / 1e9, int(waited) / 1e9
