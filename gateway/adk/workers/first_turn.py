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
leans on two private names of asyncio's, the loop's ``_ready`` deque and a handle's
``_context`` (CPython 3.11 to 3.13 alike); a Python that changed them fails
``tests/adk/workers/test_first_turn.py``, which counts the order.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["FirstTurn", "FirstTurnLoop", "go_first", "going_first", "run"]

T = TypeVar("T")


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
    takes the first level's oldest while it has any. Appends may come from other threads
    (``call_soon_threadsafe``), as to a deque."""

    __slots__ = ("ahead", "first", "later")

    def __init__(self) -> None:
        self.first: collections.deque[asyncio.Handle] = collections.deque()
        self.later: collections.deque[asyncio.Handle] = collections.deque()
        self.ahead = 0  # callbacks that went first, for tests and the worker's last line

    def append(self, handle: asyncio.Handle) -> None:
        mark = handle._context.get(_first)  # type: ignore[attr-defined]
        if mark is not None and mark.on:
            self.ahead += 1
            self.first.append(handle)
        else:
            self.later.append(handle)

    def popleft(self) -> asyncio.Handle:
        return self.first.popleft() if self.first else self.later.popleft()

    def clear(self) -> None:
        self.first.clear()
        self.later.clear()

    def __len__(self) -> int:
        return len(self.first) + len(self.later)

    def __bool__(self) -> bool:
        return bool(self.first) or bool(self.later)


class FirstTurnLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, whose turns take what goes first (``go_first``) first."""

    def __init__(self) -> None:
        super().__init__()
        self._ready: _Ready = _Ready()

    @property
    def went_first(self) -> int:
        """Callbacks that went first so far."""
        return self._ready.ahead


def run(main: Coroutine[Any, Any, T]) -> T:
    """Runs ``main`` to its end on a new ``FirstTurnLoop``, as ``asyncio.run`` would."""
    with asyncio.Runner(loop_factory=FirstTurnLoop) as runner:
        return runner.run(main)
