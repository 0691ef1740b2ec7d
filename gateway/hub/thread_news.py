"""Live thread changes: every connection of a user hears that a thread of theirs changed.

Theory of operation. Whatever changes a thread says so here, with its user, its id and the
kind of change (``changed``): the thread door (a rename, archive, pin, metadata, a
delete), the hub (a thread created by a run, a run starting, pausing on the user or
ending), and, through the cluster, the same from other processes. Nothing is sent at once:
a user's changes wait in one small table, one entry per thread (a later change folds into
the earlier one: ``folded``), and go out at most every ``interval`` seconds. Then each
changed thread's summary is read once (``summaries``: the store's truth at that moment, so
a burst of changes costs one read and says the latest) and the same ``gateway.thread``
events are handed to each of the user's ``Listener``s, which sends them between runs
(``gateway.doors.websocket``). Memory is one entry per changed thread of a listening
user; a user with no connection here is not tracked at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from gateway import wire as p
from gateway.wire import threads as t

log = logging.getLogger(__name__)

# A user's changes go out at most this often: a few events a second per connection at most.
INTERVAL_SECONDS = 0.5

# The summaries of a user's threads by id (those it still has), read when changes go out.
Summaries = Callable[[str, list[str]], Awaitable[dict[str, t.ThreadSummary]]]


class Listener(Protocol):
    """A connection of the user: given each batch of changes, one event per thread."""

    def thread_news(self, events: dict[str, p.Custom]) -> None: ...


def folded(earlier: t.Change | None, later: t.Change) -> t.Change:
    """One change for two in a row: a thread created then updated is still new to a listener,
    and a delete (or a creation after one) says all that matters."""
    if earlier == "created" and later == "updated":
        return "created"
    return later


class ThreadNews:
    """The users listening here, and the changes to their threads not yet sent."""

    def __init__(self, summaries: Summaries, interval: float = INTERVAL_SECONDS) -> None:
        self.summaries = summaries
        self.interval = interval
        self.listeners: dict[str, set[Listener]] = {}
        self._pending: dict[str, dict[str, t.Change]] = {}
        self._sending: dict[str, asyncio.Task[None]] = {}
        # Told of each change made here, to tell the other processes (``gateway.cluster``).
        self.elsewhere: Callable[[str, str, t.Change], None] | None = None
        # Told of a user's first listener here, so the other processes tell this one of
        # the user's changes (``Cluster.watch_soon``).
        self.listening: Callable[[str], None] | None = None

    def listen(self, user_id: str, listener: Listener) -> None:
        if user_id not in self.listeners and self.listening is not None:
            self.listening(user_id)
        self.listeners.setdefault(user_id, set()).add(listener)

    def forget(self, user_id: str, listener: Listener) -> None:
        listeners = self.listeners.get(user_id)
        if listeners is None:
            return
        listeners.discard(listener)
        if not listeners:
            del self.listeners[user_id]
            self._pending.pop(user_id, None)

    def changed(self, user_id: str, thread_id: str, change: t.Change) -> None:
        """A thread of ``user_id`` changed here: its listeners here and elsewhere hear of it."""
        if self.elsewhere is not None:
            try:
                self.elsewhere(user_id, thread_id, change)
            except Exception:  # the cluster logged it; the listeners here still hear
                log.exception("a thread change was not told to the other processes")
        self.heard(user_id, thread_id, change)

    def heard(self, user_id: str, thread_id: str, change: t.Change) -> None:
        """A thread of ``user_id`` changed (here, or on another process)."""
        if user_id not in self.listeners:
            return
        pending = self._pending.setdefault(user_id, {})
        pending[thread_id] = folded(pending.get(thread_id), change)
        if user_id not in self._sending:
            self._sending[user_id] = asyncio.create_task(
                self._send(user_id), name=f"thread news of {user_id}"
            )

    async def _send(self, user_id: str) -> None:
        try:
            while self._pending.get(user_id):
                await asyncio.sleep(self.interval)
                changes = self._pending.pop(user_id, {})
                if changes:
                    await self._send_now(user_id, changes)
        finally:
            self._sending.pop(user_id, None)

    async def _send_now(self, user_id: str, changes: dict[str, t.Change]) -> None:
        kept = [thread_id for thread_id, change in changes.items() if change != "deleted"]
        try:
            summaries = await self.summaries(user_id, kept) if kept else {}
        except Exception:  # the store is out: the next change sends the truth again
            log.warning("thread changes of %s not sent: their summaries could not be read", user_id)
            return
        events: dict[str, p.Custom] = {}
        for thread_id, change in changes.items():
            summary = summaries.get(thread_id)
            if summary is None:  # gone meanwhile
                events[thread_id] = t.changed("deleted", None, thread_id)
            else:
                events[thread_id] = t.changed(change, summary, thread_id)
        listeners = list(self.listeners.get(user_id, ()))
        log.debug(
            "thread changes of %s: %d threads to %d connections",
            user_id,
            len(events),
            len(listeners),
        )
        for listener in listeners:
            listener.thread_news(events)

    async def close(self) -> None:
        for task in list(self._sending.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
