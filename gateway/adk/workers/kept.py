"""A thread's session kept in the worker that ran its last run, and the main process's
account of it: the thread's next run on that worker is sent without the events it holds.

A worker parsed each run's whole session from its ``Start`` (1.5-2.7% of a worker's thread
at 200 paced users, py-spy), though the flagship's reply runs on the very events the
worker built in the run before it, and the main process joined them into the Start for it
(the Starts' sessions were 5,589 of the 5,848 bytes a story sent to workers). So a worker
keeps the session of each run that ended ``Finished`` (``KEPT_SESSIONS`` threads, the
oldest let go first), and the main process keeps, for each worker, the ids of the events
it knows that copy holds. When the thread's next run goes to that worker and its session
begins with exactly those events (by their ids: an event is never changed once stored,
and an edit, a branch or a rewind that drops one changes the list), its ``Start`` carries
the session's head (ids, state, times: always the main process's, as it is now) and only
the events after them (``Start.kept``); the worker puts its copy's events before those.

Any doubt is a whole session, as before: a worker that died (its replacement keeps
nothing, and neither does the account of it), a run that failed, was stopped, or whose
store refused an append (its copy is not what the store holds), a session whose events no
longer begin with the kept ones. Both sides make the same calls, each in its pipe's order
(a ``Start`` takes the thread's entry, whole or not; a ``Finished`` keeps one), so they
hold the same threads, but for messages that cross (a run the hub let go of ends while
the thread's next starts; a Start and another thread's Finished when the oldest is let
go): then the worker finds no copy, or not the one named, and says so (``Unkept``), and
the main process sends that run's Start again with its whole session.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from google.adk.events import Event

__all__ = ["KEPT_EVENTS", "KEPT_SESSIONS", "Account", "Kept", "kept_ids", "kept_prefix"]

# Threads whose session a worker keeps (and the main process accounts for, per worker).
# At 200 paced users a worker keeps ~50 first runs' sessions a second, and a story's reply
# starts a few hundred milliseconds after its first run ends.
KEPT_SESSIONS = 128
# And the events of them all, at most: a long thread's session is its whole history, so a
# count of threads alone bounds nothing in bytes. A flagship session after its reply is 7
# events, ~39 KiB of objects (``scripts/bench_kept.py``): this is ~6 MiB a worker of such
# events; a thread longer than all of it is not kept (its Starts go whole, as before).
KEPT_EVENTS = 1024

V = TypeVar("V")


class Kept(Generic[V]):
    """Values by thread, each with its size in events: the newest kept, at most ``limit``
    of them and ``events`` in all (the oldest go first); ``take`` removes one. Both sides
    keep with the same sizes in the same order, so they let go of the same threads."""

    def __init__(self, limit: int = KEPT_SESSIONS, events: int = KEPT_EVENTS) -> None:
        self.limit = limit
        self.events = events
        self.held = 0  # events of the values kept
        self._kept: collections.OrderedDict[Hashable, tuple[V, int]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._kept

    def keep(self, key: Hashable, value: V, size: int = 1) -> None:
        self.take(key)
        self._kept[key] = (value, size)
        self.held += size
        while len(self._kept) > self.limit or self.held > self.events:
            self.held -= self._kept.popitem(last=False)[1][1]

    def take(self, key: Hashable) -> V | None:
        if (kept := self._kept.pop(key, None)) is None:
            return None
        self.held -= kept[1]
        return kept[0]

    def get(self, key: Hashable) -> V | None:
        kept = self._kept.get(key)
        return kept[0] if kept is not None else None


def kept_ids(events: Sequence[Event], count: int, last: str | None) -> tuple[str, ...] | None:
    """The ids of a run's session's events as its worker kept them, if ``events`` (the
    main process's copy, the run's appends stored in it) are that many ending with
    ``last`` (the worker's word for its copy); else None: not trusted."""
    if len(events) != count or (count and events[-1].id != last) or (not count and last):
        return None
    return tuple(event.id for event in events)


def kept_prefix(events: Sequence[Event], ids: tuple[str, ...] | None) -> int:
    """How many of ``events`` the worker holding ``ids`` holds: all of ``ids`` if the
    events begin with them, else 0 (the whole session goes)."""
    if not ids or len(events) < len(ids):
        return 0
    if any(event.id != kept for event, kept in zip(events, ids, strict=False)):
        return 0
    return len(ids)


class Account:
    """The main process's account of what one worker keeps: the threads, in the order the
    worker keeps them, with the ids of the events it holds of each (None: not trusted)."""

    def __init__(self, limit: int = KEPT_SESSIONS, events: int = KEPT_EVENTS) -> None:
        self.kept: Kept[tuple[str, ...] | None] = Kept(limit, events)
        # Each run's thread, from its Start to its end.
        self._threads: dict[int, Hashable] = {}

    def holds(self, thread: Hashable) -> bool:
        """Whether the worker keeps events of ``thread`` this process trusts."""
        return bool(self.kept.get(thread))

    def started(self, run: int, thread: Hashable, events: Sequence[Event]) -> int:
        """The run's Start goes: it takes what the worker keeps of the thread; how many of
        the session's ``events`` it may leave out."""
        self._threads[run] = thread
        return kept_prefix(events, self.kept.take(thread))

    def finished(
        self, run: int, count: int, last: str | None, events: Sequence[Event] | None
    ) -> None:
        """The run ended ``Finished``: the worker keeps ``count`` events, the last ``last``;
        ``events``, this process's copy of the run's session if it is trusted (None: the
        run was let go of, or its store refused an append)."""
        if (thread := self._threads.pop(run, None)) is not None:
            trusted = kept_ids(events, count, last) if events is not None else None
            self.kept.keep(thread, trusted, count)  # the worker keeps ``count``, trusted or not

    def ended(self, run: int) -> None:
        """The run ended otherwise (``Failed``, or it never started): nothing kept of it."""
        self._threads.pop(run, None)
