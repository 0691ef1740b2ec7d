"""A worker's event loop, where a run that has not sent its first event goes first.

Theory of operation. A worker runs a hundred runs at once on one loop, and asyncio's ready
queue is first come, first served: each step of a run that has just started (its
``Start`` read, ADK's turns to the model call, the model's first chunk back through ADK's
queues) waits behind every step of every other run that became ready before it, and ADK
takes a dozen turns between a run's start and its first event. At 200 paced users that
was most of a reply's first text: the model's first chunk left the worker ~230 ms (p50)
after its ``Start`` was sent, 30 ms of it the model's pace (docs/first-event.md).

So a worker's loop (``FirstTurnLoop``, asyncio's own loop with its ready queue in two
levels) runs the steps of starting runs before the others: a callback scheduled in a
context that ``go_first`` marked, until that mark's ``end``, joins the first level, and
each turn of the loop takes the first level before the second, including what the first
level's callbacks schedule in that turn (a starting run's chain of steps runs through in
one turn, no longer one step a turn). A turn still runs no more callbacks than were ready
when it began, then polls for I/O, so the second level's work is only ever put off, never
starved: a run goes first for its start alone, which is short in CPU. What is marked:

- a run's task, from its ``Start`` until it sends its first event (its first text, or the
  call the browser makes): ADK's tasks started from it share the mark, since a task
  copies its context when it is made, and the mark is one object all copies point to;
- the pipe's reader: a run's ``Start`` and the answers its steps wait on arrive through
  it, and what it does a message is short (decode it, hand it on).

Everything else (runs past their first event, their appends, the credit) is the second
level, first come, first served among itself as before. The order is by context, which
asyncio gives every callback (``Handle._context``), so nothing of ADK's or a library's
code needs to know. The price is asyncio's loop in Python instead of uvloop's in C for the
worker (uvloop's ready queue is C that no subclass reaches): a worker's CPU a run measured
the same (docs/first-event.md); the main process keeps uvloop, where the sockets are. It
leans on private names of asyncio's, the loop's ``_ready`` deque and ``_run_once`` (whose
turn skips a cancelled handle) and a handle's ``_context`` (CPython 3.11 to 3.13 alike); a
Python that changed them fails ``tests/adk/workers/test_first_turn.py``, which counts the
order.

A turn takes the second level's callbacks for ``TURN_SECONDS`` at most, then ends, the rest
left in order for the next turn, after the loop has polled for I/O and taken the timers due.
A turn used to run every callback ready when it began: with a hundred runs streaming that
was tens of milliseconds of CPU, hundreds of wall time on a loaded machine, and what a
starting run waited on from outside the turn (the model's pace, a timer; the pipe) was
taken only once it ended: the timeline (``gateway.timeline``) had the offline model's 30 ms
pace end 110 ms after the model call at the median and 250 ms at the slowest 1%, and ADK's
steps from a run's start to its model call (some wait for I/O or a timer) took 130 ms at
the median, 490 at the slowest. The first level is not held to the budget (a start's
steps chain through as before); the second level loses nothing but the poll a turn costs
(an ``epoll_wait`` that does not wait), since what it puts off runs first in the next turn.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import math
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["TURN_SECONDS", "FirstTurn", "FirstTurnLoop", "go_first", "going_first", "run"]

T = TypeVar("T")

# The longest a turn takes the second level's callbacks before it polls again (wall time):
# a few of ADK's steps, and a poll a turn costs a few microseconds.
TURN_SECONDS = 0.002


class FirstTurn:
    """The mark of what goes first: on until ``end``."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True

    def end(self) -> None:
        """What runs in the marked context waits its turn from now on."""
        self.on = False


_first: contextvars.ContextVar[FirstTurn | None] = contextvars.ContextVar("first", default=None)


def go_first() -> FirstTurn:
    """Marks the current context (and the tasks it starts from now on) to go first."""
    mark = FirstTurn()
    _first.set(mark)
    return mark


def going_first() -> bool:
    """Whether what the current context schedules goes first."""
    mark = _first.get()
    return mark is not None and mark.on


class _Ready:
    """asyncio's ready queue (a deque, as the loop uses it) in two levels: ``popleft``
    takes the first level's oldest while it has any, then the second's until the turn's
    ``seconds`` are spent; past them it hands the loop ``put_off`` (a cancelled handle,
    which the loop skips) and leaves the second level's for the next turn. Appends may come
    from other threads (``call_soon_threadsafe``), as to a deque."""

    __slots__ = ("ahead", "deferred", "first", "later", "put_off", "seconds", "until")

    def __init__(self, put_off: asyncio.Handle, seconds: float) -> None:
        self.first: collections.deque[asyncio.Handle] = collections.deque()
        self.later: collections.deque[asyncio.Handle] = collections.deque()
        self.ahead = 0  # callbacks that went first, for tests and the worker's last line
        self.put_off, self.seconds = put_off, seconds
        # When this turn stops taking the second level (set at its first such callback).
        self.until = math.inf
        self.deferred = 0  # turns cut short, for tests and the worker's last line

    def turn(self) -> None:
        """A turn of the loop begins."""
        self.until = math.inf

    def append(self, handle: asyncio.Handle) -> None:
        mark = handle._context.get(_first)  # type: ignore[attr-defined]
        if mark is not None and mark.on:
            self.ahead += 1
            self.first.append(handle)
        else:
            self.later.append(handle)

    def popleft(self) -> asyncio.Handle:
        if self.first:
            return self.first.popleft()
        if self.until == math.inf:
            self.until = time.monotonic() + self.seconds
        elif self.until <= 0 or time.monotonic() >= self.until:
            if self.until > 0:
                self.deferred += 1
            self.until = 0.0  # spent: no clock read for the rest of the turn
            return self.put_off
        return self.later.popleft()

    def clear(self) -> None:
        self.first.clear()
        self.later.clear()

    def __len__(self) -> int:
        return len(self.first) + len(self.later)

    def __bool__(self) -> bool:
        return bool(self.first) or bool(self.later)


class FirstTurnLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, whose turns take what goes first (``go_first``) first, and the rest
    for ``turn_seconds`` at most a turn."""

    def __init__(self, turn_seconds: float = TURN_SECONDS) -> None:
        super().__init__()
        put_off = asyncio.Handle(lambda: None, (), self)
        put_off.cancel()
        self._ready: _Ready = _Ready(put_off, turn_seconds)

    @property
    def went_first(self) -> int:
        """Callbacks that went first so far."""
        return self._ready.ahead

    @property
    def turns_cut(self) -> int:
        """Turns ended before the second level's callbacks ready were all run."""
        return self._ready.deferred

    def _run_once(self) -> None:
        self._ready.turn()
        super()._run_once()  # type: ignore[misc]


def run(main: Coroutine[Any, Any, T]) -> T:
    """Runs ``main`` to its end on a new ``FirstTurnLoop``, as ``asyncio.run`` would."""
    with asyncio.Runner(loop_factory=FirstTurnLoop) as runner:
        return runner.run(main)
