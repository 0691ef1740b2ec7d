"""A session as ADK's JSON, its events' part taken from the rows they were read from.

A run handed to a worker carries its session as ADK's JSON (``Start.session``), and that
session was just read from the store, whose rows hold each event's JSON already (ADK's
dump, compact, by alias: what ``model_dump_json`` of the event gives). Dumping the
events again cost 2.6% of the main process's thread at 200 paced users with workers
(py-spy, session 41). So a session decoded from its rows
keeps the texts its events were parsed from (``remember``), and ``session_json`` joins
them with a dump of the rest of the session (its ids, its state, its times): JSON the
worker parses into the same session as ``model_dump_json``'s, its ``events`` key last.

A store keeps them only in a gateway with workers (``SessionService.keeps_texts``): they add
their size to what a session read holds, for as long as it lives. They are kept beside
the session object, and used only for the events it was read with, as long as it holds
those very objects in that order: an event appended since (the hub's, before the run) is
dumped as it is. An event is not changed once stored (the row is what ADK stored of it).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from google.adk.events import Event
from google.adk.sessions import Session

__all__ = ["remember", "session_json"]


class _Texts:
    """The events a session was read with, and the text of each."""

    __slots__ = ("events", "session", "texts")

    def __init__(self, session: weakref.ref[Session], events: list[Event], texts: list[str]):
        self.session = session
        self.events = events
        self.texts = texts


# By the session's id(); an entry goes when its session does (the weak reference's callback).
_kept: dict[int, _Texts] = {}


def remember(session: Session, texts: Sequence[str]) -> None:
    """``session``'s events were parsed from ``texts``, one each, in order."""
    if len(texts) != len(session.events) or not texts:
        return
    key = id(session)

    def gone(_: object) -> None:
        _kept.pop(key, None)

    _kept[key] = _Texts(weakref.ref(session, gone), list(session.events), list(texts))


def session_json(session: Session, after: int = 0) -> bytes:
    """``session.model_dump_json(exclude_none=True, by_alias=True)``, parsed the same,
    with the texts of the events it was read with rather than their dumps; ``after``: the
    events before that index left out (the worker the run goes to holds them:
    ``gateway.adk.workers.kept``)."""
    kept = _kept.get(id(session))
    events = session.events
    if kept is None or kept.session() is not session or not _begins_with(events, kept.events):
        if not after:
            return session.model_dump_json(exclude_none=True, by_alias=True).encode()
        texts: list[str] = []
    else:
        texts = kept.texts
    head = session.model_dump_json(exclude={"events"}, exclude_none=True, by_alias=True)
    later = [
        event.model_dump_json(exclude_none=True, by_alias=True)
        for event in events[max(after, len(texts)) :]
    ]
    listed = ",".join(texts[after:] + later)
    # The head is an object with the session's ids in it: never empty.
    return f'{head[:-1]},"events":[{listed}]}}'.encode()


def _begins_with(events: list[Event], read: list[Event]) -> bool:
    """Whether ``events`` holds the very objects of ``read``, in order, then maybe more."""
    return len(events) >= len(read) and all(a is b for a, b in zip(events, read, strict=False))
