"""A run's outbox: its deliveries, in order, each held until the writes they show commit.

Nothing a client is sent is lost in a crash. ADK stores every event before yielding it,
except streamed (partial) text; the hub stores the text so far of a streamed message and
sends each chunk once that write is committed. Every event is also a numbered frame of
its thread's log (``gateway.hub.eventlog``), sent once the frame is committed, so no client
holds a number the store lacks. A run's deliveries leave through its
``Outbox`` in the order they were made, so while a chunk waits for its commit nothing
overtakes it, and the store's group commit lets chunks of many runs share one commit.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Commit = asyncio.Future[object]


class Outbox:
    """A run's deliveries, in the order they were made, each held until its writes commit.

    A delivery with nothing held before it and nothing to wait for goes out at once; any
    other waits for its own commits and for every delivery before it.
    """

    def __init__(self) -> None:
        self._held: collections.deque[tuple[tuple[Commit, ...], Callable[[], None]]] = (
            collections.deque()
        )
        self._drained = asyncio.Event()
        self._drained.set()

    def send(self, deliver: Callable[[], None], *after: Commit | None) -> None:
        """Delivers once every delivery before it is out and ``after`` (the frames' and
        the streamed text's writes) are committed."""
        commits = tuple(commit for commit in after if commit is not None)
        if not self._held and all(commit.done() for commit in commits):
            _report(commits)
            deliver()
            return
        self._held.append((commits, deliver))
        self._drained.clear()
        for commit in commits:
            if not commit.done():
                commit.add_done_callback(self._release)

    def __len__(self) -> int:
        """How many deliveries are waiting."""
        return len(self._held)

    async def drained(self) -> None:
        """Returns once every delivery made so far has gone out."""
        await self._drained.wait()

    def _release(self, _: object = None) -> None:
        while self._held:
            commits, deliver = self._held[0]
            if not all(commit.done() for commit in commits):
                return
            self._held.popleft()
            _report(commits)
            try:
                deliver()
            except Exception:  # one subscriber's failure must not stall the run for all
                log.exception("delivering a run's events failed")
        self._drained.set()


def _report(commits: tuple[Commit, ...]) -> None:
    for commit in commits:
        report_failed(commit, "an event was sent unstored")


def report_failed(commit: Commit | None, what: str) -> None:
    # The run goes on: holding its stream back would not make the write succeed.
    if commit is not None and (commit.cancelled() or commit.exception() is not None):
        log.warning("%s: %r", what, commit)
