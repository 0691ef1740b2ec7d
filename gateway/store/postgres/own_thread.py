"""One thread of its own for a connection's calls, reached with as little as asyncio allows.

``loop.run_in_executor`` on a one-thread ``ThreadPoolExecutor`` made each call a
``concurrent.futures.Future`` chained to an asyncio one (each side's callbacks run on
each side), a work item, a lock and a look at the pool's size: ~2% of the event loop's
samples on a cluster, a hop for each commit and read. As aiosqlite does: the call goes in
a ``queue.SimpleQueue`` (C, no lock of Python's) to a thread that only ever runs the
connection's calls, in order, and its result comes back by one ``call_soon_threadsafe``.

A caller that stops waiting (cancelled) leaves its call to run: a call that reached the
database cannot be called back, and the connection's next call comes after it anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class OwnThread:
    """A thread that runs the calls given it (``call``), one at a time, in order."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        # The thread holds the queue, not this object: one nobody stops ends with it.
        self._thread = threading.Thread(target=_serve, args=(self._calls,), name=name, daemon=True)
        weakref.finalize(self, self._calls.put, None)
        self._started = False

    def call(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """``fn()`` on the thread; the future resolves to its result, or its error."""
        if not self._started:
            self._started = True
            self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((loop, future, fn))
        return future

    def stop(self) -> None:
        """The thread ends once the calls given it before are done."""
        self._calls.put(None)


def _serve(calls: queue.SimpleQueue[_Call | None]) -> None:
    while (given := calls.get()) is not None:
        _run(*given)
        del given  # not held while the thread waits for the next call


def _run(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], fn: Callable[[], Any]
) -> None:
    try:
        result = fn()
    except BaseException as error:
        _resolve(loop, future, None, error)
    else:
        _resolve(loop, future, result, None)


def _resolve(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: object,
    error: BaseException | None,
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if future.done():  # its caller was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
