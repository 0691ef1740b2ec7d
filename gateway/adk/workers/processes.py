"""A worker's process, as the pool starts it and watches it end (``pool``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Protocol

__all__ = ["Spawn", "WorkerProcess", "end", "exit_of", "watch_exit"]


class WorkerProcess(Protocol):
    """What the pool needs of a started process (``multiprocessing.Process`` is one)."""

    @property
    def pid(self) -> int | None: ...

    @property
    def sentinel(self) -> int:
        """A descriptor that becomes readable when the process ends."""
        ...

    @property
    def exitcode(self) -> int | None:
        """None while it runs (or before it is reaped)."""
        ...

    def is_alive(self) -> bool: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...


# Starts worker ``index`` connecting to the socket at ``path``.
Spawn = Callable[[str, int], WorkerProcess]


def exit_of(process: WorkerProcess) -> asyncio.Future[None]:
    """Done once ``process`` has ended (its sentinel is readable); cancel it to stop
    watching."""
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    sentinel = process.sentinel

    def ended() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(sentinel, ended)
    exited.add_done_callback(lambda _: loop.remove_reader(sentinel))
    return exited


def watch_exit(process: WorkerProcess, ended: Callable[[], None]) -> Callable[[], None]:
    """Calls ``ended`` once ``process`` has ended, from the loop's reading of its
    sentinel; returns what stops watching. The loop watches a copy of the sentinel, so
    that ``exit_of``'s reader of the sentinel itself, and its removal, stay its own."""
    loop = asyncio.get_running_loop()
    copy = os.dup(process.sentinel)
    watching = True

    def unwatch() -> None:
        nonlocal watching
        if watching:
            watching = False
            loop.remove_reader(copy)
            os.close(copy)

    def read() -> None:
        unwatch()
        ended()

    loop.add_reader(copy, read)
    return unwatch


def end(process: WorkerProcess) -> None:
    """Waits a little for a worker to exit, then kills it (runs in a thread)."""
    process.join(timeout=5)
    if process.is_alive():
        process.kill()
        process.join(timeout=5)
