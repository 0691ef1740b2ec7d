"""A run's outbox: its deliveries, in order, each held until the writes they show commit,
except streamed text, which goes out ahead of its commit (docs/durability.md).

ADK stores every event before yielding it, except streamed (partial) text; the hub stores
the text so far of a streamed message, and every event is also a numbered frame of its
thread's log (``gateway.hub.eventlog``). A delivery waits for those writes to commit, so
what a client is sent survives a crash: a browser action, an approval asked, a run's end,
every frame a reattach replays. A run's deliveries leave in the order they were made, so
while one waits nothing overtakes it, and the store's group commit lets many runs' writes
share one commit.

Streamed text is the exception: waiting for a commit a chunk (the group commit's linger,
a hop to the database) costs each chunk several milliseconds, and what a crash can cut is
only text the model was still writing, which the restart keeps as far as it was stored and
marks interrupted. So a chunk with nothing held before it goes out at once, while at most
``UNSTORED_NUMBERS`` numbers of the thread's log are out ahead of their commit; past that,
it waits as every other delivery does. A later delivery still waits for its own commits
only: the store commits in order, so when they are done, every chunk's before them is.
Nobody waits for the writes of a chunk that goes ahead (``goes_ahead``), so they ride the
store's next write (``GroupCommit.submit``), a few milliseconds at most; ``stored``, whose
caller does wait for them, has the store commit them at once (``hurry``).
A process that takes over a thread a crash cut off numbers its next frames after a gap of
``UNSTORED_NUMBERS`` (``gateway.hub.takeover``), so a cursor a client was sent ahead of
the store never names another frame.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Commit = asyncio.Future[object]

# How many numbers of a thread's log a run may have out ahead of their commit.
UNSTORED_NUMBERS = 32


class Outbox:
    """A run's deliveries, in the order they were made, each held until its writes commit.

    A delivery with nothing held before it and nothing to wait for goes out at once, as does
    streamed text within the bound of numbers out ahead of the store; any other waits for
    its own commits and for every delivery before it.
    """

    def __init__(self) -> None:
        self._held: collections.deque[tuple[tuple[Commit, ...], Callable[[], None]]] = (
            collections.deque()
        )
        self._drained = asyncio.Event()
        self._drained.set()
        # Numbers of the log sent ahead of their commit, and those commits.
        self.unstored = 0
        self._ahead: set[Commit] = set()
        self._behind = False  # streamed text has had to wait for its commit
        # Commits at once what the store holds back because nobody waits for it (streamed
        # text sent ahead rides the store's next write), for ``stored``'s caller, who does.
        self.hurry: Callable[[], None] | None = None

    def send(self, deliver: Callable[[], None], *after: Commit | None, unstored: int = 0) -> None:
        """Delivers once every delivery before it is out and ``after`` (the frames' and
        the streamed text's writes) are committed; with ``unstored`` (the numbers of the
        streamed text it carries), without waiting for ``after`` while the bound allows."""
        commits = tuple(commit for commit in after if commit is not None)
        if not self._held and all(commit.done() for commit in commits):
            _report(commits)
            deliver()
            return
        if unstored and self.goes_ahead(unstored):
            self._go_ahead(commits, unstored)
            deliver()
            return
        if not self._held and unstored and not self._behind:
            # Once a run: the store falls behind its model.
            self._behind = True
            log.info(
                "streamed text waits for the store: %d numbers of its thread's log are"
                " out ahead of their commit",
                self.unstored,
            )
        self._held.append((commits, deliver))
        self._drained.clear()
        for commit in commits:
            if not commit.done():
                commit.add_done_callback(self._release)

    def goes_ahead(self, unstored: int) -> bool:
        """Whether streamed text carrying ``unstored`` numbers, sent now, would go out
        ahead of its commit: nothing is held before it, and the bound allows it. Then
        nobody waits for its writes: they may ride the store's next one."""
        return not self._held and self.unstored + unstored <= UNSTORED_NUMBERS

    def __len__(self) -> int:
        """How many deliveries are waiting."""
        return len(self._held)

    async def drained(self) -> None:
        """Returns once every delivery made so far has gone out."""
        await self._drained.wait()

    async def stored(self) -> None:
        """Returns once every delivery that went out ahead of its commit so far is committed."""
        if self._ahead:
            if self.hurry is not None:
                self.hurry()
            await asyncio.wait(set(self._ahead))

    def _go_ahead(self, commits: tuple[Commit, ...], numbers: int) -> None:
        pending = [commit for commit in commits if not commit.done()]
        self.unstored += numbers
        self._ahead.update(pending)
        left = len(pending)

        def committed(commit: Commit) -> None:
            nonlocal left
            self._ahead.discard(commit)
            left -= 1
            if left == 0:
                self.unstored -= numbers
                _report(commits)

        for commit in pending:
            commit.add_done_callback(committed)

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
