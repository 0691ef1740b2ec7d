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

Within the first level the oldest mark's steps go first (a heap by the order the marks
were made: the pipe's reader, then each start by its ``Start``'s arrival), so a start waits
for the starts older than it alone, first come, first served by run; by step, its dozen
steps were shared out with every start that came in after it while it was under way.

Everything else (runs past their first event, their appends, the credit) is the second
level, first come, first served among itself as before. The order is by context, which
asyncio gives every callback (``Handle._context``), so nothing of ADK's or a library's
code needs to know. The price is asyncio's loop in Python instead of uvloop's in C for the
worker (uvloop's ready queue is C that no subclass reaches; the main process keeps uvloop,
where the sockets are): py-spy puts 6-8% of a worker's CPU in asyncio's Python (its
callbacks, the selector each turn, timers, the pipe's transport, the async generators'
hook), of which the callbacks (~70 a run, ~1 µs each more than uvloop's,
``scripts/bench_worker_loop.py``) are about 1% of a run's ~7 ms. A Python ``call_soon`` on
uvloop, to keep the order beside its C queue, was tried: it costs as much as asyncio's
(docs/multicore.md). What is cheap to cut is cut: ``call_soon``, which every step of every
task comes through, is two Python calls instead of asyncio's six: its own, and the ready
queue's ``place``, the one definition of the order, which asyncio's other ways in
(``call_soon_threadsafe``, timers) reach through the queue's ``append``.
It leans on private names of asyncio's, the loop's ``_ready`` deque, ``_closed`` and
``_debug``, and a handle's fields (CPython 3.11 to 3.13 alike); a Python that changed them
fails ``tests/adk/workers/test_first_turn.py``, which counts the order and compares a
handle with asyncio's own.

Counted (``FirstTurnLoop(counting=True)``, a worker's loop while ``GATEWAY_TIMELINE`` is
on): the loop's turns, the callbacks it ran and how many of them went first, and for each
run's mark the callbacks of the run's own and the CPU they took (the thread's CPU clock
from one callback's start to the next's, or to the turn's end); with the thread's CPU and
its wait for a core (``/proc/thread-self/schedstat``: runnable, not running) and the time
its collector took. ``counts`` reads them for a run's step (``gateway.timeline``): what
the time between two steps was made of. Off, the loop is the one above and costs nothing
more.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import gc
import heapq
import itertools
import os
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["FirstTurn", "FirstTurnLoop", "counts", "go_first", "going_first", "run"]

T = TypeVar("T")

# Each mark's place in the first level's order: made earlier, ahead.
_made = itertools.count()


class FirstTurn:
    """The mark of what goes first: on until ``end``; among the marks, the one made first
    (``rank``) goes first. On a counting loop it also counts the callbacks run in its
    context (``ran``) and the CPU seconds they took (``cpu``)."""

    __slots__ = ("cpu", "on", "ran", "rank")

    def __init__(self) -> None:
        self.on = True
        self.rank = next(_made)
        self.ran = 0
        self.cpu = 0.0

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
    takes the first level while it has any, the oldest mark's first (a heap by the mark's
    ``rank``, then the order placed), then the second level's oldest. Appends may come
    from other threads (``call_soon_threadsafe``), as to a deque: a push on the heap is
    one call of C under the GIL, and its keys are unique, so it never compares handles."""

    __slots__ = ("_placed", "ahead", "first", "later")

    def __init__(self) -> None:
        self.first: list[tuple[int, int, asyncio.Handle]] = []
        self.later: collections.deque[asyncio.Handle] = collections.deque()
        self.ahead = 0  # callbacks that went first, for tests and the worker's last line
        self._placed = itertools.count()  # within a mark, the order placed

    def append(self, handle: asyncio.Handle) -> None:
        """As a deque's: asyncio's ``call_soon_threadsafe`` and timers come this way."""
        self.place(handle, handle._context)  # type: ignore[attr-defined]

    def place(self, handle: asyncio.Handle, context: contextvars.Context) -> None:
        """Puts ``handle``, to be run in ``context``, in its level: the first while the
        context's mark (``go_first``) is on, else the second. The one definition of the
        order: ``append`` and ``FirstTurnLoop.call_soon`` both come here."""
        mark = context.get(_first)
        if mark is not None and mark.on:
            self.ahead += 1
            heapq.heappush(self.first, (mark.rank, next(self._placed), handle))
        else:
            self.later.append(handle)

    def popleft(self) -> asyncio.Handle:
        return heapq.heappop(self.first)[2] if self.first else self.later.popleft()

    def clear(self) -> None:
        self.first.clear()
        self.later.clear()

    def __len__(self) -> int:
        return len(self.first) + len(self.later)

    def __bool__(self) -> bool:
        return bool(self.first) or bool(self.later)


class _Counted(_Ready):
    """The ready queue that counts what it hands out (above: "Counted"). The loop runs a
    handle right after ``popleft``, so the CPU from one ``popleft`` to the next (or to the
    turn's end, ``settle``) is that handle's."""

    __slots__ = ("_owner", "_since", "others", "ran", "ran_first")

    def __init__(self) -> None:
        super().__init__()
        self.ran = 0  # callbacks handed out
        self.ran_first = 0  # of them, from the first level
        self.others = FirstTurn()  # the callbacks of no mark's context
        self._owner: FirstTurn | None = None
        self._since = 0.0

    def popleft(self) -> asyncio.Handle:
        went_first = bool(self.first)
        handle = super().popleft()
        now = time.thread_time()
        if self._owner is not None:
            self._owner.cpu += now - self._since
        owner = handle._context.get(_first) or self.others  # type: ignore[attr-defined]
        owner.ran += 1
        self._owner, self._since = owner, now
        self.ran += 1
        self.ran_first += went_first
        return handle

    def settle(self) -> None:
        """The turn's last callback has returned: its CPU is counted."""
        if self._owner is not None:
            self._owner.cpu += time.thread_time() - self._since
            self._owner = None


_new_handle = object.__new__


class FirstTurnLoop(asyncio.SelectorEventLoop):
    """asyncio's loop, whose turns take what goes first (``go_first``) first; with
    ``counting``, it counts them (``counts``)."""

    def __init__(self, counting: bool = False) -> None:
        super().__init__()
        self._ready: _Ready = _Counted() if counting else _Ready()
        self.turns = 0
        self.collecting = 0.0  # CPU seconds in the garbage collector, counting
        if counting:
            self._schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            self._collection = 0.0
            gc.callbacks.append(self._collected)

    @property
    def went_first(self) -> int:
        """Callbacks that went first so far."""
        return self._ready.ahead

    def call_soon(  # type: ignore[override]
        self, callback: Any, *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        """asyncio's ``call_soon``, which every step of every task comes through, in two
        Python calls instead of six (its checks, ``_call_soon``, ``Handle.__init__`` and its
        ``get_debug``, the ready queue's ``append``): the handle's fields are set here as
        ``Handle.__init__`` sets them outside debug mode, and the queue places it
        (``_Ready.place``: one call more than placing it inline, ~2% of a step in
        ``scripts/bench_worker_loop.py``, for one definition of the order). Debug mode
        takes asyncio's own."""
        if self._closed:  # type: ignore[attr-defined]
            raise RuntimeError("Event loop is closed")
        if self._debug:  # type: ignore[attr-defined]
            return super().call_soon(callback, *args, context=context)
        if context is None:
            context = contextvars.copy_context()
        handle = _new_handle(asyncio.Handle)
        handle._context = context  # type: ignore[attr-defined]
        handle._loop = self  # type: ignore[attr-defined]
        handle._callback = callback  # type: ignore[attr-defined]
        handle._args = args
        handle._cancelled = False
        handle._repr = None  # type: ignore[attr-defined]
        handle._source_traceback = None  # type: ignore[attr-defined]
        self._ready.place(handle, context)
        return handle

    def _run_once(self) -> None:
        super()._run_once()  # type: ignore[misc]
        if isinstance(self._ready, _Counted):
            self.turns += 1
            self._ready.settle()

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collection = time.thread_time()
        else:
            self.collecting += time.thread_time() - self._collection

    def counted(self, mark: FirstTurn) -> list[tuple[str, float]]:
        """What this loop counted so far, and ``mark``'s own; times in milliseconds;
        nothing for a loop that does not count."""
        ready = self._ready
        if not isinstance(ready, _Counted):
            return []
        on_cpu, waited, _ = os.pread(self._schedstat, 128, 0).split()
        return [
            ("turns", self.turns),
            ("callbacks", ready.ran),
            ("went_first", ready.ran_first),
            ("own", mark.ran),
            ("own_cpu", 1000 * mark.cpu),
            ("cpu", 1000 * time.thread_time()),
            ("on_cpu", int(on_cpu) / 1e6),
            ("waited_for_cpu", int(waited) / 1e6),
            ("collecting", 1000 * self.collecting),
            ("=ready", len(ready)),
        ]

    def close(self) -> None:
        if isinstance(self._ready, _Counted):
            gc.callbacks.remove(self._collected)
            os.close(self._schedstat)
        super().close()


def counts(step: str) -> list[tuple[str, float]]:
    """What the running loop counted up to ``step`` of the run whose context marks it, for
    the timeline (``gateway.timeline.count_with``); nothing for a loop that does not count,
    outside a mark, or once the mark's run sent its first event (what the first text
    waits for is before it)."""
    mark = _first.get()
    loop = asyncio._get_running_loop()
    if mark is None or not mark.on or not isinstance(loop, FirstTurnLoop):
        return []
    return loop.counted(mark)


def run(main: Coroutine[Any, Any, T], *, counting: bool = False) -> T:
    """Runs ``main`` to its end on a new ``FirstTurnLoop``, as ``asyncio.run`` would;
    ``counting``: one that counts."""
    with asyncio.Runner(loop_factory=lambda: FirstTurnLoop(counting)) as runner:
        return runner.run(main)
